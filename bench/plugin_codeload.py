"""A/B of the I/O tab's code loading in one run: the frontend of a baseline commit against the
working tree's, alternating page loads with the browser cache cleared before each, one
TensorBoard on a small capture (the shared GPU capture + 20,000 I/O events, so /capture and
/timeline are quick and the code loading shows).

    python bench/plugin_codeload.py [--baseline 5f4a353] [-n 10]

Prints per variant the median (min, max) of: when /runs is asked (the tab's code has been
fetched and run) and the first timeline paint, in ms since navigation, and their ratios.
``5f4a353`` is the last commit before the bundle (index.js + 10 modules + style.css).

While it runs, ``plugin_frontend`` of this checkout is a link to one of two copies (what the
plugin's ``static`` serves) and the plugin's ``/index.js`` (``tb_iotrace/plugin/frontend-build/index.js``)
is that variant's entry: the baseline's own ``index.js``, this tree's bundle (built first by
``node tools/bundle_frontend.mjs``); both are put back afterwards, also on error or Ctrl-C.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from cdp import Browser  # noqa: E402
from tab import tensorboard  # noqa: E402

from tb_iotrace.plugin.synthetic import make_logdir
from tb_iotrace.plugin.plugin import BUNDLE_PATH

GPU = ROOT / "tests" / "data" / "gpu_multi_worker.xplane.pb"


def frontend_at(rev: str, dst: Path) -> Path:
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "plugin_frontend"], check=True,
                         capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(dst, filter="data")
    return dst / "plugin_frontend"


def load(page, entry: str) -> tuple[float, float]:
    page.navigate("about:blank")
    page.wait_for("document.readyState === 'complete'")
    page.call("Network.clearBrowserCache")
    page.navigate(entry)
    page.wait_for("performance.getEntriesByName('iotrace-first-paint').length > 0", timeout=120, interval=0.01)
    paint = page.evaluate("performance.getEntriesByName('iotrace-first-paint')[0].startTime")
    runs = page.evaluate("performance.getEntriesByType('resource').find((e) => /iotrace\\/runs/.test(e.name)).startTime")
    return runs, paint


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="5f4a353")
    ap.add_argument("-n", type=int, default=10, help="page loads per variant (after one warm-up round)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tbio-codeload-"))
    fe = ROOT / "plugin_frontend"
    saved = ROOT / "plugin_frontend.bench-saved"
    variants = {"baseline": frontend_at(args.baseline, tmp / "a"), "this tree": tmp / "b" / "plugin_frontend"}
    shutil.copytree(fe, variants["this tree"])
    subprocess.run(["node", str(ROOT / "tools" / "bundle_frontend.mjs")], check=True, capture_output=True)
    bundle = Path(BUNDLE_PATH)
    saved_bundle = bundle.read_bytes()
    entries = {"baseline": variants["baseline"] / "index.js", "this tree": None}
    if not entries["baseline"].exists():  # a baseline whose bundle is a build output: build it
        entries["baseline"] = tmp / "baseline-index.js"
        subprocess.run(["node", str(ROOT / "tools" / "bundle_frontend.mjs"), "--root", str(variants["baseline"]),
                        "--out", str(entries["baseline"])], check=True, capture_output=True)
    logdir = tmp / "logdir"
    make_logdir(logdir, GPU, run="r", host="w0", n_events=20_000)
    res: dict[str, dict[str, list[float]]] = {k: {"code": [], "paint": []} for k in variants}
    os.rename(fe, saved)
    try:
        with tensorboard(logdir, tmp / "tensorboard.log") as base:
            browser = Browser(1500, 1000)
            page = browser.new_page()
            page.call("Network.enable")
            page.call("Network.setCacheDisabled", cacheDisabled=True)
            entry = base + "/data/plugin_entry.html?name=iotrace"
            for k in range(args.n + 1):
                for name, src in variants.items():
                    if fe.is_symlink():
                        fe.unlink()
                    fe.symlink_to(src)
                    bundle.write_bytes(entries[name].read_bytes() if entries[name] else saved_bundle)
                    code, paint = load(page, entry)
                    if k:  # round 0 warms TensorBoard up (the capture's decode)
                        res[name]["code"].append(code)
                        res[name]["paint"].append(paint)
            browser.close()
    finally:
        if fe.is_symlink():
            fe.unlink()
        os.rename(saved, fe)
        bundle.write_bytes(saved_bundle)
        shutil.rmtree(tmp, ignore_errors=True)
    med = statistics.median
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {args.n} loads each, alternating, "
          "browser cache cleared before each")
    for name, r in res.items():
        print(f"{name}: /runs asked (code loaded) median {med(r['code']):.0f} ms ({min(r['code']):.0f}-{max(r['code']):.0f}); "
              f"first paint median {med(r['paint']):.0f} ms ({min(r['paint']):.0f}-{max(r['paint']):.0f})")
    a, b = res["baseline"], res["this tree"]
    print(f"this tree / baseline: code loaded {med(b['code']) / med(a['code']):.2f}, "
          f"first paint {med(b['paint']) / med(a['paint']):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
