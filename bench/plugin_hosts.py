"""Benchmark of the I/O tab's "All hosts" view of a many-host run.

``--hosts`` hosts (64), each the shared GPU capture (tests/data/gpu_multi_worker.xplane.pb)
plus ``--events`` synthetic I/O calls (20,000). A real TensorBoard process and headless
Chromium (as bench/plugin_timeline.py), measured in one run:

- All hosts, first paint: the host menu switched to "All hosts" until the timeline is drawn
  with its data (the server decodes every host: cold), and again after switching to one host
  and back (repeated: the cached view and its memoized answers);
- a zoom step on the All-hosts timeline end to end (key ``W``, the page's own latency);
- the server alone: each All-hosts endpoint cold and repeated, and side by side the same
  repeated requests in a TensorBoard whose capture cache holds 4 captures' worth of bytes
  (``TBIO_PLUGIN_CACHE_BYTES``; the old 4-entry cache's behaviour: every host decoded again
  per request);
- TensorBoard's resident memory growth against the captures' total size;
- per stage (the machine is shared, so wall times swing with its load): TensorBoard's CPU
  seconds for each switch, the page's resource timings of /capture and /timeline (server time
  to the first byte, transfer), the page's work between them (lane layout), the timeline's
  draw, each zoom step's fetch and draw, and one capture's decode CPU time in this process
  (times the hosts: what the cold /capture costs the server whatever the load).

Targets: first paint < 2 s, repeated < 0.5 s, zoom < 100 ms, memory <= 5x the files.

    python bench/plugin_hosts.py [--hosts 64] [--events 20000] [--keep DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, loadavg, med, repo_on_path, work_dir  # noqa: E402

repo_on_path()
sys.path.insert(0, str(REPO / "tests" / "browser"))
from cdp import Browser  # noqa: E402
from plugin_timeline import free_port, proc_cpu, proc_mem  # noqa: E402

from tb_iotrace.model.tab.of_xplane import decode_xplane
from tb_iotrace.plugin.synthetic import make_logdir

GPU = REPO / "tests" / "data" / "gpu_multi_worker.xplane.pb"
RUN = "2024_01_01_00_00_00"
ROUTES = ("capture", "hosts", "files", "steps", "histograms")


def build(d: Path, hosts: int, events: int) -> list[Path]:
    out = []
    for i in range(hosts):
        p = d / "plugins" / "profile" / RUN / f"worker{i:02d}.xplane.pb"
        if not p.exists():
            make_logdir(d, GPU, run=RUN, host=f"worker{i:02d}", n_events=events, seed=i)
        out.append(p)
    return out


def get(base: str, route: str, **q) -> float:
    t = time.perf_counter()
    with urllib.request.urlopen(f"{base}/data/plugin/iotrace/{route}?{urllib.parse.urlencode(q)}", timeout=600) as r:
        r.read()
        if r.status != 200:
            raise SystemExit(f"/{route}: HTTP {r.status}")
    return time.perf_counter() - t


def start_tb(logdir: Path, env_extra: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="", TBIO_PLUGIN_PREFETCH="0", **env_extra)
    tb = subprocess.Popen([str(Path(sys.executable).with_name("tensorboard")), "--logdir", str(logdir),
                           "--host", "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(base + "/data/plugins_listing", timeout=30).read()
            return tb, base
        except OSError:
            if time.monotonic() > deadline or tb.poll() is not None:
                raise SystemExit("TensorBoard did not start")
            time.sleep(0.2)


def stop_tb(tb: subprocess.Popen) -> None:
    tb.terminate()
    try:
        tb.wait(timeout=20)
    except subprocess.TimeoutExpired:
        tb.kill()


def server_only(base: str, repeats: int) -> dict[str, list[float]]:
    q = {"run": RUN, "host": "__all__"}
    return {r: [get(base, r, **q) for _ in range(repeats)] for r in ROUTES}


RESOURCES = """JSON.stringify(performance.getEntriesByType('resource').map((e) => [e.name.split('/iotrace/')[1] || '',
  e.startTime, e.requestStart, e.responseStart, e.responseEnd, e.encodedBodySize, e.decodedBodySize]))"""


def stages(page) -> dict:
    """The /capture and /timeline requests since the resource timings were cleared, and the
    timeline's own figures of its last paint (ms)."""
    got: dict = {}
    for name, start, req, first, end, enc, dec in json.loads(page.evaluate(RESOURCES)):
        route = name.split("?", 1)[0]
        if route in ("capture", "timeline") and route not in got:
            got[route] = {"start": start, "server": first - req, "transfer": end - first, "end": end,
                          "bytes": enc, "decoded": dec}
    ds = json.loads(page.evaluate("JSON.stringify(window.__iotrace.timeline.root.dataset)"))
    got["fetch"], got["draw"] = float(ds.get("lastFetchMs", "nan")), float(ds.get("lastDrawMs", "nan"))
    if "capture" in got and "timeline" in got:
        got["layout"] = got["timeline"]["start"] - got["capture"]["end"]
    return got


def browser_run(base: str, zoom_steps: int, tb_pid: int) -> dict:
    out: dict = {"stages": [], "cpu": []}
    browser = Browser(1500, 1000)
    try:
        page = browser.new_page()
        page.call("Emulation.setDeviceMetricsOverride", width=1500, height=1000, deviceScaleFactor=1, mobile=False)
        page.navigate(base + "/data/plugin_entry.html?name=iotrace")
        page.wait_for("window.__iotrace && window.__iotrace.root.dataset.panels === 'ready'", timeout=300, interval=0.02)

        def switch(host: str) -> tuple[float, float]:
            seq = int(page.evaluate("window.__iotrace.timeline.root.dataset.paintSeq || 0"))
            page.evaluate("window.__iotrace.root.dataset.state = 'switching'; performance.clearResourceTimings()")
            cpu0 = proc_cpu(tb_pid)
            t = time.perf_counter()
            page.evaluate(f"window.__iotrace.pickHost({json.dumps(host)})")
            page.wait_for(f"window.__iotrace.root.dataset.state === 'ready' && window.__iotrace.host === {json.dumps(host)}"
                          f" && Number(window.__iotrace.timeline.root.dataset.paintSeq) > {seq}", timeout=600, interval=0.005)
            paint = time.perf_counter() - t
            if host == "__all__":
                out["cpu"].append(proc_cpu(tb_pid) - cpu0)
                out["stages"].append(stages(page))
            page.wait_for("window.__iotrace.root.dataset.panels === 'ready'", timeout=600, interval=0.02)
            return paint, time.perf_counter() - t

        out["first_paint"], out["first_panels"] = switch("__all__")
        out["lanes"] = page.evaluate("window.__iotrace.capture.lanes.length")
        out["repeat_paint"], out["repeat_panels"] = [], []
        for _ in range(3):
            switch("worker00")
            a, b = switch("__all__")
            out["repeat_paint"].append(a)
            out["repeat_panels"].append(b)
        page.evaluate("window.__iotrace.timeline.root.focus()")
        lat, fetch, draw = [], [], []
        for k in range(zoom_steps):
            seq = int(page.evaluate("window.__iotrace.timeline.root.dataset.paintSeq"))
            page.key("w" if k < zoom_steps * 2 // 3 else "s")
            page.wait_for(f"Number(window.__iotrace.timeline.root.dataset.paintSeq) > {seq}", interval=0.002)
            ds = json.loads(page.evaluate("JSON.stringify(window.__iotrace.timeline.root.dataset)"))
            lat.append(float(ds["lastLatencyMs"]))
            fetch.append(float(ds["lastFetchMs"]))
            draw.append(float(ds["lastDrawMs"]))
        out["zoom_ms"], out["zoom_fetch_ms"], out["zoom_draw_ms"] = lat, fetch, draw
    finally:
        browser.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--keep", help="build/keep the logdir here (reused when it exists)")
    ap.add_argument("--zoom-steps", type=int, default=9)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(keep) if keep is not None else work_dir("tbio-hosts-", None, False)) as d:
        files = build(d, args.hosts, args.events)
        total = sum(p.stat().st_size for p in files)
        one = decode_xplane(str(files[0]), "h").nbytes()
        decode_cpu = []
        for p in files[1:4]:
            c = time.process_time()
            decode_xplane(str(p), "h")
            decode_cpu.append(time.process_time() - c)
        print(f"{args.hosts} hosts x (GPU capture + {args.events} I/O calls): {total / 2**20:.0f} MiB of captures; "
              f"one decoded capture counts {one / 2**20:.1f} MiB")
        print(f"machine: {os.cpu_count()} CPUs, load average {loadavg()} (shared: other jobs inflate wall times)")

        tb, base = start_tb(d, {})
        try:
            rss0, _ = proc_mem(tb.pid)
            res = browser_run(base, args.zoom_steps, tb.pid)
            srv = server_only(base, args.repeats)
            rss1, hwm = proc_mem(tb.pid)
        finally:
            stop_tb(tb)
        small = str(4 * one)
        tb, base = start_tb(d, {"TBIO_PLUGIN_CACHE_BYTES": small})
        try:
            old = server_only(base, args.repeats)
        finally:
            stop_tb(tb)

    ok_first, ok_rep = res["first_paint"] < 2.0, med(res["repeat_paint"]) < 0.5
    ok_zoom, ok_mem = med(res["zoom_ms"]) < 100, (rss1 - rss0) <= 5 * total
    print(f"\nAll hosts ({res['lanes']} lanes), in Chromium:")
    print(f"  first paint (cold: {args.hosts} captures decoded) {res['first_paint']:.2f} s  (panels {res['first_panels']:.2f} s)"
          f"   target < 2 s: {'ok' if ok_first else 'MISSED'}")
    print(f"  repeated paint   {med(res['repeat_paint']):.3f} s median of {res['repeat_paint']}  (panels "
          f"{med(res['repeat_panels']):.3f} s)   target < 0.5 s: {'ok' if ok_rep else 'MISSED'}")
    print(f"  zoom step        {med(res['zoom_ms']):.0f} ms median, max {max(res['zoom_ms']):.0f} ms"
          f"   target < 100 ms: {'ok' if ok_zoom else 'MISSED'}")
    print(f"  server memory    +{(rss1 - rss0) / 2**20:.0f} MiB resident ({(rss1 - rss0) / total:.2f}x the files; "
          f"peak {hwm / 2**20:.0f} MiB)   target <= 5x: {'ok' if ok_mem else 'MISSED'}")
    print(f"\nPer stage (ms; the page's resource timings, TensorBoard's CPU seconds):")
    print(f"  decode one capture in this process: {1000 * min(decode_cpu):.1f} ms CPU (x {args.hosts} hosts = "
          f"{min(decode_cpu) * args.hosts:.2f} s: the cold /capture's server work)")
    for label, st, cpu in zip(["cold"] + ["repeated"] * len(res["repeat_paint"]), res["stages"], res["cpu"]):
        cap, tl = st.get("capture", {}), st.get("timeline", {})
        print(f"  {label:<9} /capture server {cap.get('server', float('nan')):7.0f} + transfer {cap.get('transfer', float('nan')):4.0f}"
              f" ({cap.get('decoded', 0) / 1024:.0f} KiB) | page layout {st.get('layout', float('nan')):4.0f} | /timeline server "
              f"{tl.get('server', float('nan')):4.0f} + transfer {tl.get('transfer', float('nan')):3.0f} ({tl.get('decoded', 0) / 1024:.0f} KiB"
              f") | draw {st['draw']:4.0f} | TensorBoard CPU {cpu:.2f} s")
    print(f"  zoom steps: fetch {med(res['zoom_fetch_ms']):.0f} ms median (request to answer parsed), draw "
          f"{med(res['zoom_draw_ms']):.0f} ms median")
    print(f"\nServer alone, All-hosts requests after the page (median of {args.repeats}, s): byte budget (default) "
          f"vs 4 captures' bytes (TBIO_PLUGIN_CACHE_BYTES={small}: the old 4-entry cache, every host decoded per request)")
    print(f"  {'route':<11} {'budget':>8} {'4 caps':>8} {'ratio':>7}")
    for r in ROUTES:
        a, b = statistics.median(srv[r]), statistics.median(old[r][1:] or old[r])
        print(f"  /{r:<10} {a:>8.3f} {b:>8.3f} {b / max(a, 1e-9):>6.0f}x")
    return 0 if (ok_first and ok_rep and ok_zoom and ok_mem) else 1


if __name__ == "__main__":
    raise SystemExit(main())
