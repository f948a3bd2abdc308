#!/usr/bin/env python3
"""Stop-to-file latency of a TensorFlow profile window holding 1,000,000 I/O events.

    python bench/stop_latency.py              # full run: 3 trials per side x 1,000,000 preads
    python bench/stop_latency.py --quick      # smoke run: 1 trial per side x 100,000 preads
    python bench/stop_latency.py --profile    # also cProfile the stop path of one extra window
    python bench/stop_latency.py --strict     # exit 3 when the target is missed
    python bench/stop_latency.py --json out.json

What is timed
-------------
``tf.profiler.experimental.stop()``: TensorFlow stops its tracers, collects every
profiler's XSpace (with tb_iotrace: the pluggable profiler's stop and collect
callbacks, i.e. copying the native trace out into NumPy columns
(``recording.session.Recording._fill``) and encoding it as an XPlane
(``recording.window.serialize`` -> ``Recording.to_iotrace`` + ``xplane.io_space_bytes``)),
merges the planes, and writes ``<logdir>/plugins/profile/<run>/<host>.xplane.pb``.

Each trial is a fresh interpreter (``--child``), two sides alternated
base/with/base/with...:

  base   TensorFlow alone (tb_iotrace not enabled)
  with   ``tb_iotrace.enable()`` before ``import tensorflow``, trace cap raised
         (``tb_iotrace.set_trace_cap(events + 1000)``)

Both sides do the same thing: load a tiny C library (compiled here with
``gcc -O2 -fPIC -shared``, source below in ``LOOP_C``), open a 64 KiB file in a
temp dir under /tmp and read it once (page cache), run one small warm-up
profile window (1,000 preads; TensorFlow's and tb_iotrace's one-time costs, e.g.
importing the XPlane writer, land there; its stop time is reported as "cold"),
then the measured window: ``start(logdir)``, 1,000,000 preads of 64 bytes from
the C loop (calls through that library's PLT/GOT slot, which the shim patches),
``stop()`` timed with ``time.perf_counter``.  The fd is opened before and closed
after the window, so the window holds exactly the preads.

Added latency = median(with) - median(base); target: under 2 s.  The
process CPU time of the same ``stop()`` call (``time.process_time``, all threads)
is printed beside it: on a loaded machine the wall time also counts the time
other jobs held the CPUs.
The "with" side also reports where its time went: ``_fill`` (stop callback),
``to_iotrace`` and ``io_space_bytes`` (collect callback, measured by wrapping
those functions), and the rest (TensorFlow parsing our plane, merging it into
``/host:CPU``, serializing and writing the file).

Checks on the file of the first "with" trial (a separate child): it holds the
tb_iotrace record (``read_io_info``) with ``num_events`` >= events, the file's
Darshan counter ``POSIX_READS`` == events, and ``read_io_data`` gives back
exactly ``events`` pread rows for the file; xprof loads it
(``xprof.convert.raw_to_tool_data.xspace_to_tool_data([path], "trace_viewer@", {})``
returns data).  Timings of those loads are printed too.  The base file must hold
no I/O record.  A failed check exits 1.

``--profile`` runs one more "with" window under cProfile (the stop() call only;
TensorFlow calls the callbacks on the thread that calls stop()) and prints the
top functions by cumulative and by own time.

Needs gcc, Linux, TensorFlow and xprof (the dev venv).
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import (ChildFailed, apply_affinity, child_env, fmt_list, loadavg, med, parse_cpus,  # noqa: E402
                     repo_on_path, run_child, verdict, work_dir, write_result)

TARGET_ADDED_S = 2.0
FILE_SIZE = 64 * 1024
READ_SIZE = 64
WARMUP_EVENTS = 1000

LOOP_C = r"""
#include <stdint.h>
#include <unistd.h>
/* n preads of `size` bytes at offsets 0, size, 2*size, ... modulo span.
   Returns 0, or -1 when a call did not return `size` bytes. */
int64_t tbsl_pread_loop(int fd, int64_t n, int64_t size, int64_t span) {
    char buf[4096];
    if (size <= 0 || size > (int64_t)sizeof buf || span < size) return -1;
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        if (pread(fd, buf, (size_t)size, (off_t)off) != (ssize_t)size) return -1;
        off += size;
        if (off + size > span) off = 0;
    }
    return 0;
}
"""


# --------------------------------------------------------------------------- child side
def _load_loop(so: str) -> Any:
    lib = ctypes.CDLL(so)
    lib.tbsl_pread_loop.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    lib.tbsl_pread_loop.restype = ctypes.c_int64
    return lib


def _xplanes(logdir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")))


def _install_timers(times: dict[str, float]) -> None:
    """Wrap the stop path's Python stages with timers (same calls, same order)."""
    from tb_iotrace.store import xplane
    from tb_iotrace.recording import session as recorder

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                times[name] = times.get(name, 0.0) + time.perf_counter() - t0
        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapper

    recorder.Recording._fill = timed("fill", recorder.Recording._fill)            # type: ignore[method-assign]
    recorder.Recording.to_iotrace = timed("to_iotrace", recorder.Recording.to_iotrace)  # type: ignore[method-assign]
    # recording.window.serialize does `from ..xplane import io_space_bytes` at each call
    xplane.io_space_bytes = timed("io_space_bytes", xplane.io_space_bytes)


def child_window(a: argparse.Namespace) -> dict[str, Any]:
    cpus = apply_affinity()
    lib = _load_loop(a.so)
    times: dict[str, float] = {}
    with_io = a.side == "with"
    if with_io:
        repo_on_path()
        import tb_iotrace

        tb_iotrace.enable()
        tb_iotrace.set_trace_cap(a.events + 1000)
        if a.mode != "profile":
            _install_timers(times)
    import tensorflow as tf

    if with_io:
        from tb_iotrace.recording.ffi import native

        if not native()[1].tbio_tf_registered():
            raise SystemExit("tb_iotrace is enabled but not registered with TensorFlow")

    fd = os.open(a.file, os.O_RDONLY)
    try:
        if lib.tbsl_pread_loop(fd, FILE_SIZE // READ_SIZE, READ_SIZE, FILE_SIZE) != 0:
            raise SystemExit("pread loop failed")
        # warm-up window: one-time costs of a first profile/stop on both sides
        warm = os.path.join(a.work, "warm")
        tf.profiler.experimental.start(warm)
        lib.tbsl_pread_loop(fd, WARMUP_EVENTS, READ_SIZE, FILE_SIZE)
        t0 = time.perf_counter()
        tf.profiler.experimental.stop()
        cold_stop = time.perf_counter() - t0
        times.clear()

        logdir = os.path.join(a.work, "logs")
        prof = None
        if a.mode == "profile":   # imported before the window: imports are file I/O too
            import cProfile

            prof = cProfile.Profile()
        tf.profiler.experimental.start(logdir)
        t0 = time.perf_counter()
        if lib.tbsl_pread_loop(fd, a.events, READ_SIZE, FILE_SIZE) != 0:
            raise SystemExit("pread loop failed")
        loop_s = time.perf_counter() - t0
        if prof is not None:
            prof.enable()
        t0, c0 = time.perf_counter(), time.process_time()
        tf.profiler.experimental.stop()
        stop_s = time.perf_counter() - t0
        stop_cpu_s = time.process_time() - c0
        if prof is not None:
            prof.disable()
    finally:
        os.close(fd)
    files = _xplanes(logdir)
    if len(files) != 1:
        raise SystemExit(f"expected one xplane under {logdir}, found {files}")
    out: dict[str, Any] = {"side": a.side, "stop_s": stop_s, "stop_cpu_s": stop_cpu_s,
                           "cold_stop_s": cold_stop, "loop_s": loop_s,
                           "xplane": files[0], "size": os.path.getsize(files[0]), "times": times,
                           "cpus": cpus}
    if prof is not None:
        import io
        import pstats

        for key in ("cumulative", "tottime"):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(key).print_stats(22)
            out[f"profile_{key}"] = buf.getvalue()
    return out


def child_verify(a: argparse.Namespace) -> dict[str, Any]:
    """Check what the saved file holds, and that xprof loads it."""
    repo_on_path()
    import numpy as np

    from tb_iotrace.store.xplane import load_xspace, read_io_data, read_io_info

    out: dict[str, Any] = {"path": a.xplane}
    t0 = time.perf_counter()
    space = load_xspace(a.xplane)
    out["load_xspace_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    info = read_io_info(space)
    out["read_io_info_s"] = time.perf_counter() - t0
    if a.side == "base":
        out["has_io"] = info is not None
        return out
    if info is None:
        out["has_io"] = False
        return out
    out["has_io"] = True
    out["num_events"] = int(info["num_events"])
    out["dropped"] = int(info["dropped"])
    out["capped"] = int(info["capped"])
    out["lines"] = [(li["name"], li["num_events"]) for li in info["lines"]]
    recs = [c for c in info["counters"] if c["path"] == a.file and c["module"] == "POSIX"]
    out["posix_reads"] = int(recs[0]["counters"]["POSIX_READS"]) if len(recs) == 1 else None
    t0 = time.perf_counter()
    trace = read_io_data(space)
    out["read_io_data_s"] = time.perf_counter() - t0
    assert trace is not None
    ops = np.asarray(trace.op, dtype=object)
    sel = (np.asarray(trace.path, dtype=object) == a.file) & np.isin(ops, ["pread", "pread64"])
    out["trace_rows"] = len(trace)
    out["pread_rows"] = int(sel.sum())
    out["pread_bytes"] = int(trace.returned[sel].sum())
    del space, trace

    from xprof.convert import raw_to_tool_data

    t0 = time.perf_counter()
    data, ctype = raw_to_tool_data.xspace_to_tool_data([a.xplane], "trace_viewer@", {})
    out["xprof_s"] = time.perf_counter() - t0
    out["xprof_bytes"] = len(data) if data is not None else 0
    out["xprof_content_type"] = str(ctype)
    if data:
        try:
            ev = json.loads(data)["traceEvents"]
            threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
                       if e.get("ph") == "M" and e.get("name") == "thread_name"}
            out["xprof_io_events"] = sum(1 for e in ev if e.get("ph") == "X"
                                         and threads.get((e["pid"], e["tid"]), "").startswith("I/O "))
        except (ValueError, KeyError, TypeError) as exc:
            out["xprof_parse_error"] = repr(exc)
    return out


# --------------------------------------------------------------------------- parent side
def build(work: Path) -> tuple[Path, Path]:
    src = work / "tbsl_loop.c"
    src.write_text(LOOP_C)
    so = work / "libtbsl_loop.so"
    cmd = ["gcc", "-O2", "-fPIC", "-shared", "-o", str(so), str(src)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"compiling the pread loop failed:\n{' '.join(cmd)}\n{r.stderr}")
    data = work / "data.bin"
    data.write_bytes(os.urandom(FILE_SIZE))
    return so, data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 trial per side x 100,000 preads")
    ap.add_argument("--trials", type=int, help="trials per side (default 3, quick 1)")
    ap.add_argument("--events", type=int, help="preads in the window (default 1,000,000, quick 100,000)")
    ap.add_argument("--cpus", help="CPUs for every child, e.g. 1 or 0,1 (default: all allowed)")
    ap.add_argument("--nice", type=int, default=0,
                    help="nice increment of every child (default 0; e.g. -10 as root on a shared machine)")
    ap.add_argument("--profile", action="store_true", help="cProfile the stop() of one extra 'with' window")
    ap.add_argument("--no-verify", action="store_true", help="skip the file checks and the xprof load")
    ap.add_argument("--dir", help="work directory (default: a temp dir under /tmp, removed at the end)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 3 when the target is missed")
    # child mode
    ap.add_argument("--child", choices=["window", "profile", "verify"], help=argparse.SUPPRESS)
    ap.add_argument("--side", choices=["base", "with"], help=argparse.SUPPRESS)
    ap.add_argument("--so", help=argparse.SUPPRESS)
    ap.add_argument("--file", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    ap.add_argument("--xplane", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.child:
        a.mode = a.child
        res = child_verify(a) if a.child == "verify" else child_window(a)
        write_result(a.result, res)
        return 0

    trials = a.trials or (1 if a.quick else 3)
    events = a.events or (100_000 if a.quick else 1_000_000)
    cpus = parse_cpus(a.cpus)
    env = child_env(cpus, a.nice)
    with work_dir("tbio_stop_", a.dir, a.keep) as work:
        try:
            return run(a, work, trials, events, env, cpus)
        except ChildFailed as exc:
            print(f"ERROR: {exc}", file=sys.stderr)
            return 1


def run(a: argparse.Namespace, work: Path, trials: int, events: int, env: dict[str, str],
        cpus: list[int] | None) -> int:
    so, data = build(work)
    script = Path(__file__).resolve()
    print(f"stop-to-file latency: window of {events:,} cached {READ_SIZE}-byte preads from a C loop, "
          f"{trials} trial(s) per side, alternating base/with, fresh interpreter each")
    print(f"python {sys.version.split()[0]}, cpus {cpus}, nice {a.nice}, loadavg {loadavg()}")
    res: dict[str, list[dict[str, Any]]] = {"base": [], "with": []}
    for t in range(trials):
        for side in (("base", "with") if t % 2 == 0 else ("with", "base")):
            d = work / f"{side}{t}"
            d.mkdir()
            r = run_child(script, ["window", "--side", side, "--so", str(so), "--file", str(data),
                                   "--work", str(d), "--events", str(events)],
                          d / "result.json", env=env, timeout=900)
            res[side].append(r)
            extra = ""
            if side == "with":
                tm = r["times"]
                py = tm.get("fill", 0) + tm.get("to_iotrace", 0) + tm.get("io_space_bytes", 0)
                extra = (f"  [fill {tm.get('fill', 0):.3f} + to_iotrace {tm.get('to_iotrace', 0):.3f} + "
                         f"io_space_bytes {tm.get('io_space_bytes', 0):.3f} = {py:.3f} s in tb_iotrace]")
            print(f"  trial {t + 1} {side:4s}: stop {r['stop_s']:.3f} s, cpu {r['stop_cpu_s']:.3f} s  "
                  f"(cold window {r['cold_stop_s']:.3f} s, "
                  f"loop {r['loop_s']:.3f} s, file {r['size'] / 1e6:.1f} MB){extra}", flush=True)

    def col(side: str, key: str) -> list[float]:
        return [r[key] for r in res[side]]

    base, with_ = col("base", "stop_s"), col("with", "stop_s")
    added = med(with_) - med(base)
    paired = med([w - b for w, b in zip(with_, base)])
    summary: dict[str, Any] = {
        "events": events, "trials": trials, "cpus": cpus,
        "stop_s": {"base": base, "with": with_},
        "stop_cpu_s": {"base": col("base", "stop_cpu_s"), "with": col("with", "stop_cpu_s")},
        "median_stop_s": {"base": med(base), "with": med(with_)},
        "added_s": added, "added_paired_s": paired,
        "cold_stop_s": {"base": col("base", "cold_stop_s"), "with": col("with", "cold_stop_s")},
        "loop_s": {"base": col("base", "loop_s"), "with": col("with", "loop_s")},
        "size_bytes": {"base": col("base", "size"), "with": col("with", "size")},
        "with_times": [r["times"] for r in res["with"]],
        "target_s": TARGET_ADDED_S,
    }
    print()
    print(f"stop() base : median {med(base):.3f} s  {fmt_list(base, '{:.3f}')}")
    print(f"stop() with : median {med(with_):.3f} s  {fmt_list(with_, '{:.3f}')}")
    keys = ("fill", "to_iotrace", "io_space_bytes")
    parts = {k: med([t.get(k, 0.0) for t in summary["with_times"]]) for k in keys}
    py = sum(parts.values())
    print("  of which tb_iotrace callbacks (medians): " + ", ".join(f"{k} {v:.3f} s" for k, v in parts.items())
          + f"; total {py:.3f} s; TensorFlow parse/merge/write of the bigger space: "
          f"{med(with_) - py - med(base):.3f} s more than base")
    print(f"added stop latency: {added:.3f} s (median with - median base; paired median {paired:.3f} s), "
          f"target < {TARGET_ADDED_S:.1f} s: {verdict(added < TARGET_ADDED_S)}")
    cpu_added = med(summary["stop_cpu_s"]["with"]) - med(summary["stop_cpu_s"]["base"])
    summary["added_cpu_s"] = cpu_added
    print(f"added stop CPU time: {cpu_added:.3f} s (process CPU time, all threads: what the stop costs "
          f"this process whatever else the machine runs; the target is on wall time above)")
    print(f"file size   : base {med(summary['size_bytes']['base']) / 1e6:.2f} MB, "
          f"with {med(summary['size_bytes']['with']) / 1e6:.2f} MB "
          f"({(med(summary['size_bytes']['with']) - med(summary['size_bytes']['base'])) / events:.1f} bytes/event)")
    print(f"loop in window: base {med(summary['loop_s']['base']):.3f} s, with {med(summary['loop_s']['with']):.3f} s")
    print(f"cold (first, {WARMUP_EVENTS:,}-event) window stop: base {med(summary['cold_stop_s']['base']):.3f} s, "
          f"with {med(summary['cold_stop_s']['with']):.3f} s")

    ok_checks = True
    if not a.no_verify:
        vb = run_child(script, ["verify", "--side", "base", "--xplane", res["base"][0]["xplane"],
                                "--file", str(data)], work / "verify_base.json", env=env, timeout=900)
        vw = run_child(script, ["verify", "--side", "with", "--xplane", res["with"][0]["xplane"],
                                "--file", str(data)], work / "verify_with.json", env=env, timeout=900)
        summary["verify"] = {"base": vb, "with": vw}
        checks = [
            ("base file holds no I/O record", not vb["has_io"]),
            ("with file holds the tb_iotrace record", vw["has_io"]),
        ]
        if vw["has_io"]:
            checks += [
                (f"record: num_events {vw['num_events']:,} >= {events:,} (dropped {vw['dropped']}, "
                 f"capped {vw['capped']})", vw["num_events"] >= events),
                (f"counters: POSIX_READS {vw['posix_reads']} == {events:,}", vw["posix_reads"] == events),
                (f"read_io_data: {vw['pread_rows']:,} pread rows for the file == {events:,} "
                 f"({vw['pread_bytes']:,} bytes; {vw['trace_rows']:,} rows in all)", vw["pread_rows"] == events),
                (f"xprof trace_viewer@ returned {vw['xprof_bytes'] / 1e6:.1f} MB "
                 f"({vw.get('xprof_io_events', '?')} I/O events drawn)", vw["xprof_bytes"] > 0),
            ]
        print()
        for text, ok in checks:
            print(f"  check {'ok  ' if ok else 'FAIL'} {text}")
            ok_checks &= bool(ok)
        if vw["has_io"]:
            print(f"  load times: load_xspace {vw['load_xspace_s']:.2f} s, read_io_info {vw['read_io_info_s']:.2f} s, "
                  f"read_io_data {vw['read_io_data_s']:.2f} s, xprof trace_viewer@ {vw['xprof_s']:.2f} s")

    if a.profile:
        d = work / "profile"
        d.mkdir()
        r = run_child(script, ["profile", "--side", "with", "--so", str(so), "--file", str(data),
                               "--work", str(d), "--events", str(events)], d / "result.json", env=env, timeout=900)
        summary["profile"] = r
        print(f"\ncProfile of stop() ({r['stop_s']:.3f} s under the profiler):")
        print(r["profile_cumulative"])
        print(r["profile_tottime"])

    if a.json:
        Path(a.json).write_text(json.dumps(summary, indent=1, default=str))
    if not ok_checks:
        print("a check failed: the figures above do not measure what they claim", file=sys.stderr)
        return 1
    if a.strict and not added < TARGET_ADDED_S:
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
