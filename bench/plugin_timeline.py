"""Benchmark of the I/O tab: the shared GPU capture plus 1,000,000 synthetic I/O events.

Measures, with a real TensorBoard process and headless Chromium (Debian's chromium):

- time to first timeline paint: opening the tab's iframe (``plugin_entry.html?name=iotrace``)
  until the timeline is drawn with server data, cold (first open: the server decodes the
  capture) and warm (capture cached); also the server part alone (``/capture`` +
  ``/timeline``);
- a zoom step end to end: key ``W`` pressed -> request -> level-of-detail response ->
  canvas repainted (the page's own measurement, ``data-last-latency-ms``), and the server
  part alone;
- server memory: TensorBoard's resident memory growth while loading, and the decoder's
  peak (tracemalloc + RSS in a fresh process), against the file size.

Targets: first paint < 1.5 s, zoom step < 100 ms.

    python bench/plugin_timeline.py [--events 1000000] [--keep DIR] [--numpy]

``--numpy`` runs the decoder's NumPy path (``TBIO_PLUGIN_NATIVE=0``) instead of
native/codec/xdecode.c, in TensorBoard and in the decoder-alone runs: the baseline for the native
scanner.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from cdp import Browser  # noqa: E402

from tb_iotrace.plugin.synthetic import make_logdir

GPU = ROOT / "tests" / "data" / "gpu_multi_worker.xplane.pb"
RUN = "2024_01_01_00_00_00"
PREFETCH_DELAY_S = 3.0

MEM_SCRIPT = """
import json, os, sys, time, tracemalloc
from tb_iotrace.model import columnar as decode
from tb_iotrace.model.tab.of_xplane import decode_xplane
def rss():
    d = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    return int(d["VmRSS"].split()[0]) * 1024, int(d["VmHWM"].split()[0]) * 1024
traced = sys.argv[2] == "memory"
base, _ = rss()
if traced:
    tracemalloc.start()
t = time.perf_counter()
c = time.process_time()
cap = decode_xplane(sys.argv[1], "h")
dt = time.perf_counter() - t
cpu = time.process_time() - c
cur, peak = tracemalloc.get_traced_memory() if traced else (0, 0)
now, hwm = rss()
print(json.dumps({"native": decode._native_lib() is not None, "load_s": dt, "cpu_s": cpu, "py_peak": peak, "py_retained": cur, "rss_retained": now - base,
                  "rss_peak": hwm - base}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_mem(pid: int) -> tuple[int, int]:
    d = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status") if ":" in line)
    return int(d["VmRSS"].split()[0]) * 1024, int(d["VmHWM"].split()[0]) * 1024


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) the process has used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def get(url: str) -> tuple[float, int]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
    return time.perf_counter() - t, len(body)


def mb(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def run_tensorboard(tmp: Path, size: int, mode: str, zoom_steps: int) -> dict:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               TBIO_PLUGIN_PREFETCH="1" if mode == "prefetch" else "0")
    tb_exe = Path(sys.executable).with_name("tensorboard")
    tb = subprocess.Popen([str(tb_exe), "--logdir", str(tmp), "--host", "127.0.0.1", "--port", str(port)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    browser = None
    out: dict = {}
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                get(base + "/data/plugins_listing")  # what TensorBoard's page asks first
                break
            except OSError:
                if time.monotonic() > deadline or tb.poll() is not None:
                    raise SystemExit("TensorBoard did not start")
                time.sleep(0.2)
        out["rss0"], _ = proc_mem(tb.pid)
        if mode == "prefetch":
            time.sleep(PREFETCH_DELAY_S)  # a person reading TensorBoard's page before clicking the tab
        browser = Browser(1500, 1000)
        page = browser.new_page()
        page.call("Emulation.setDeviceMetricsOverride", width=1500, height=1000, deviceScaleFactor=1, mobile=False)
        entry = base + "/data/plugin_entry.html?name=iotrace"

        def first_paint() -> float:
            page.navigate("about:blank")
            page.wait_for("document.readyState === 'complete'")
            page.navigate(entry)
            page.wait_for("performance.getEntriesByName('iotrace-first-paint').length > 0", timeout=120, interval=0.01)
            return page.evaluate("performance.getEntriesByName('iotrace-first-paint')[0].startTime") / 1000

        cpu0 = proc_cpu(tb.pid)
        out["first"] = first_paint()
        out["first_cpu"] = proc_cpu(tb.pid) - cpu0
        out["rss1"], out["hwm1"] = proc_mem(tb.pid)
        # Where the first paint's time went: every request of the page (ms since navigation).
        out["requests"] = page.evaluate(
            "JSON.stringify(performance.getEntriesByType('resource').map(e => [e.name.replace(/^.*\\/data\\//, '')"
            ".replace(/\\?.*$/, ''), Math.round(e.startTime), Math.round(e.responseEnd)]))")
        if mode != "cold":
            return out
        out["warm"], out["warm_cpu"] = [], []
        for _ in range(3):
            cpu0 = proc_cpu(tb.pid)
            out["warm"].append(first_paint())
            out["warm_cpu"].append(proc_cpu(tb.pid) - cpu0)
        page.screenshot(tmp / "bench-first-paint.png")
        q = f"run={RUN}&host=worker0"
        cap_s, _ = get(base + f"/data/plugin/iotrace/capture?{q}")
        capture = json.loads(urllib.request.urlopen(base + f"/data/plugin/iotrace/capture?{q}").read())
        lo, hi = capture["extent"]
        full = [get(base + f"/data/plugin/iotrace/timeline?{q}&start={lo}&end={hi}&width=1250") for _ in range(5)]
        mid = (lo + hi) / 2
        zoom = [get(base + f"/data/plugin/iotrace/timeline?{q}&start={mid}&end={mid + (hi - lo) / 50}&width=1250")
                for _ in range(5)]
        med = statistics.median
        out.update(cap_ms=cap_s * 1000, tl_full_ms=med(t for t, _ in full) * 1000, tl_full_kib=full[0][1] / 1024,
                   tl_zoom_ms=med(t for t, _ in zoom) * 1000, tl_zoom_kib=zoom[0][1] / 1024)
        page.evaluate("window.__iotrace.timeline.root.focus()")
        lat, wall, fetch, draw = [], [], [], []
        for k in range(zoom_steps):
            key = "w" if k < zoom_steps * 2 // 3 else "s"
            seq = int(page.evaluate("window.__iotrace.timeline.root.dataset.paintSeq"))
            t = time.perf_counter()
            page.key(key)
            page.wait_for(f"Number(window.__iotrace.timeline.root.dataset.paintSeq) > {seq}", interval=0.002)
            wall.append(time.perf_counter() - t)
            ds = page.evaluate("Object.assign({}, window.__iotrace.timeline.root.dataset)")
            lat.append(float(ds["lastLatencyMs"]))
            fetch.append(float(ds["lastFetchMs"]))
            draw.append(float(ds["lastDrawMs"]))
        out.update(lat=lat, wall=wall, fetch=fetch, draw=draw)
        page.screenshot(tmp / "bench-zoomed.png")
        out["rss2"], _ = proc_mem(tb.pid)
        return out
    finally:
        if browser is not None:
            browser.close()
        tb.terminate()
        try:
            tb.wait(timeout=20)
        except subprocess.TimeoutExpired:
            tb.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keep", help="build/keep the logdir here (reused when it exists)")
    ap.add_argument("--zoom-steps", type=int, default=12)
    ap.add_argument("--numpy", action="store_true", help="the decoder's NumPy path, not native/codec/xdecode.c")
    args = ap.parse_args()
    if args.numpy:
        os.environ["TBIO_PLUGIN_NATIVE"] = "0"  # inherited by TensorBoard and the decoder runs

    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tbio-bench-"))
    path = tmp / "plugins" / "profile" / RUN / "worker0.xplane.pb"
    if not path.exists():
        t = time.perf_counter()
        make_logdir(tmp, GPU, run=RUN, host="worker0", n_events=args.events, n_files=2000,
                    n_threads=8, hostile=False)
        print(f"built {path} ({mb(path.stat().st_size)}) in {time.perf_counter() - t:.1f} s")
    size = path.stat().st_size
    print(f"capture: shared GPU capture + {args.events:,} I/O events = {mb(size)}")

    # Decoder alone, fresh process.
    runs = []
    for what in ("time", "time", "memory"):
        r = subprocess.run([sys.executable, "-c", MEM_SCRIPT, str(path), what], capture_output=True, text=True,
                           check=True)
        runs.append(json.loads(r.stdout))
    m = dict(runs[2])
    best = min(runs[:2], key=lambda x: x["load_s"])
    m["load_s"], m["cpu_s"] = best["load_s"], best["cpu_s"]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (other jobs inflate wall times)")
    print("decoder: " + ("native/codec/xdecode.c (tb_iotrace._codec)" if m["native"] else
                         "NumPy path (" + ("--numpy" if args.numpy else "tb_iotrace._codec not built") + ")"))
    print(f"decode (fresh process, best of 2): {m['load_s']:.2f} s wall, {m['cpu_s']:.2f} s CPU; python peak {mb(m['py_peak'])} "
          f"({m['py_peak'] / size:.1f}x file), retained {mb(m['py_retained'])}; "
          f"RSS peak +{mb(m['rss_peak'])} ({m['rss_peak'] / size:.1f}x), retained +{mb(m['rss_retained'])} "
          f"({m['rss_retained'] / size:.1f}x)")

    res = {}
    for mode in ("cold", "prefetch"):
        res[mode] = run_tensorboard(tmp, size, mode, args.zoom_steps)
    med = statistics.median
    c, p = res["cold"], res["prefetch"]
    print(f"first timeline paint, cold (prefetch off; the tab's first request decodes the capture): "
          f"{c['first']:.2f} s  (target < 1.5 s); TensorBoard's CPU time meanwhile (all threads): "
          f"{c['first_cpu']:.2f} s")
    for name, a, b in json.loads(c["requests"]):
        if a < c["first"] * 1000:
            print(f"    cold request {name}: {a} -> {b} ms")
    print(f"first timeline paint, tab opened {PREFETCH_DELAY_S:.0f} s after TensorBoard listed its plugins "
          f"(prefetch on): {p['first']:.2f} s")
    print(f"first timeline paint, warm (capture cached): median {med(c['warm']):.2f} s "
          f"({', '.join(f'{w:.2f}' for w in c['warm'])}); TensorBoard's CPU time meanwhile: median "
          f"{med(c['warm_cpu']):.2f} s (what the cold paint costs besides loading the capture)")
    print(f"server alone: /capture {c['cap_ms']:.0f} ms, /timeline full view median {c['tl_full_ms']:.0f} ms "
          f"({c['tl_full_kib']:.0f} KiB), zoomed 1/50 median {c['tl_zoom_ms']:.0f} ms ({c['tl_zoom_kib']:.0f} KiB)")
    print(f"zoom step end to end (key -> repainted with server data), {len(c['lat'])} steps: median "
          f"{med(c['lat']):.0f} ms, max {max(c['lat']):.0f} ms (target < 100 ms); fetch+parse median "
          f"{med(c['fetch']):.0f} ms, decode+draw median {med(c['draw']):.0f} ms; as seen over CDP: median "
          f"{med(c['wall']) * 1000:.0f} ms")
    print(f"TensorBoard memory: RSS before opening the tab {mb(c['rss0'])}, after loading +{mb(c['rss1'] - c['rss0'])} "
          f"({(c['rss1'] - c['rss0']) / size:.1f}x file), peak (HWM) +{mb(c['hwm1'] - c['rss0'])} over that "
          f"baseline ({(c['hwm1'] - c['rss0']) / size:.1f}x file); after the zoom steps +{mb(c['rss2'] - c['rss0'])}")
    print(f"screenshots: {tmp / 'bench-first-paint.png'}, {tmp / 'bench-zoomed.png'}")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
