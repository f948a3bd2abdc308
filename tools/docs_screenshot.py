"""Makes docs/io-tab.png, the README's picture of the I/O tab: a real TensorBoard with the plugin
on a small logdir built from tests/data (the PyTorch trace of a DataLoader with two workers),
headless Chromium through tests/browser/cdp.py, once the timeline and its panels are ready.

    python tools/docs_screenshot.py [--data torch_loader.pt.trace.json.gz] [-o docs/io-tab.png]

Run it with the venv's Python after ./dev.sh setup (TensorBoard, the plugin and its built bundle).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from cdp import Browser  # noqa: E402
from tab import D, tensorboard  # noqa: E402

WIDTH, HEIGHT = 1400, 900


def logdir_with(data: Path, tmp: Path) -> Path:
    """A logdir holding ``data`` (a file of tests/data) where its writer would have put it."""
    logdir = tmp / "logs"
    if data.name.endswith((".pt.trace.json", ".pt.trace.json.gz")):
        (logdir / "train").mkdir(parents=True)
        shutil.copyfile(data, logdir / "train" / f"worker0.1.{data.name.split('.', 1)[1]}")
    elif data.name.endswith(".xplane.pb"):
        (logdir / "plugins" / "profile" / "run").mkdir(parents=True)
        shutil.copyfile(data, logdir / "plugins" / "profile" / "run" / "host.xplane.pb")
    else:
        raise SystemExit(f"{data}: neither a PyTorch trace nor an XPlane capture")
    return logdir


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="torch_loader.pt.trace.json.gz", help="a file of tests/data")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "io-tab.png"))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tbio-shot-"))
    try:
        logdir = logdir_with(ROOT / "tests" / "data" / args.data, tmp)
        with tensorboard(logdir, tmp / "tensorboard.log") as url:
            browser = Browser(WIDTH, HEIGHT)
            try:
                page = browser.new_page()
                page.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1,
                          mobile=False)
                page.navigate(url + "/#iotrace")
                page.wait_for(f"(() => {{ try {{ return {D}.querySelector('.timeline').dataset.state === 'ready'"
                              f" && {D}.querySelector('#iotrace-root').dataset.panels === 'ready'; }}"
                              " catch (e) { return false; } })()", timeout=120)
                page.screenshot(args.output)
            finally:
                browser.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.output}: {Path(args.output).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
