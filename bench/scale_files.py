#!/usr/bin/env python3
"""tb_iotrace with an ImageNet-sized number of files.

    python bench/scale_files.py                  # 1,300,000 files on tmpfs (/dev/shm)
    python bench/scale_files.py --files 200000   # fewer, on a small machine

The files (<dir>/f<9 digits>, file i holding (i % 13) + 1 bytes) are made by
bench/loop.c through its own PLT slots (the slots the shim patches) in a
temporary directory on tmpfs, and removed afterwards.  Four figures:

  1. whole-run record: a child run under ``tb-iotrace run --flush 0`` creates
     every file; the record must list each one (by name) with its exact bytes.
     Its size, the time from the child's last line to its end (the stop of the
     whole-run recording and the record's write at exit), the child's peak RSS,
     and the time to read the record back (tb_iotrace.store.runrecord: the JSON and
     its columnar file table) and to sum its byte columns.
  2. in that child, after it made them: the exit of an empty ``capture()``
     (target < 50 ms), and a capture that creates --new more files must list
     all of them.
  3. RSS per file: the child's RSS growth while it made the files (every file
     tracked by the whole-run recording), and this process's while it opens
     them all idle (enabled, nothing recording: nothing is kept).
  4. idle open+close vs plain, paired in this process: blocks of files opened
     and closed with the hooks installed but idle and with them removed,
     interleaved round by round (order alternated); the median of the paired
     differences in ns per open+close (target <= +50 ns), timed in the
     thread's CPU time.

Then, in this process, after it opened every file idle: the empty capture's
exit and the capture of --new files again.  Ratios are measured in one run;
on a loaded machine the absolute figures move, the paired differences less.
Prints PASS/FAIL per check and exits 0 (3 with --strict when one fails).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:   # run from a checkout without installing
    sys.path.insert(0, str(REPO))

import tb_iotrace  # noqa: E402
from tb_iotrace.store.runrecord import read_record, table_path

EMPTY_EXIT_TARGET_MS = 50.0
IDLE_OPEN_TARGET_NS = 50.0
CLOCK_THREAD_CPUTIME_ID = 3


class BenchError(RuntimeError):
    """The benchmark would measure something else than it claims."""


def build_loop(workdir: Path) -> ctypes.CDLL:
    so = workdir / "libtbio_scale_loop.so"
    r = subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-o", str(so), str(HERE / "loop.c")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"compiling bench/loop.c failed:\n{r.stderr}")
    lib = ctypes.CDLL(str(so))
    for name in ("tb_create_files", "tb_open_close_loop"):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int]
        fn.restype = ctypes.c_int64
    return lib


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError("/proc/self/status has no VmRSS")


def expected_bytes(first: int, n: int) -> int:
    return sum(i % 13 + 1 for i in range(first, first + n))


def create(lib: ctypes.CDLL, d: Path, first: int, n: int) -> float:
    ns = lib.tb_create_files(os.fsencode(d), first, n, CLOCK_THREAD_CPUTIME_ID)
    if ns < 0:
        raise BenchError(f"creating files {first}..{first + n - 1} in {d} failed")
    return ns / 1e9


def captures_after(lib: ctypes.CDLL, d: Path, first_new: int, new: int) -> dict[str, Any]:
    """The exit of an empty capture, and a capture that creates `new` files."""
    exits = []
    for _ in range(5):
        with tb_iotrace.capture():
            t = time.perf_counter()
        exits.append((time.perf_counter() - t) * 1e3)
    with tb_iotrace.capture() as cap:
        create(lib, d, first_new, new)
        t = time.perf_counter()
    new_exit_ms = (time.perf_counter() - t) * 1e3
    names = {f.path for f in cap.files if f.module == "POSIX"}
    want = {str(d / f"f{i:09d}") for i in range(first_new, first_new + new)}
    got = sum(f.counters["POSIX_BYTES_WRITTEN"] for f in cap.files if f.path in want)
    return {"empty_exit_ms": statistics.median(exits), "empty_exit_ms_max": max(exits),
            "new_listed": len(names & want), "new_expected": new, "new_extra": len(names - want),
            "new_bytes_ok": got == expected_bytes(first_new, new), "new_exit_ms": new_exit_ms,
            "untracked": cap.untracked.to_dict() if cap.untracked else None}


# ---------------------------------------------------------------- the child under `tb-iotrace run`
def child(args: argparse.Namespace) -> int:
    d = Path(args.dir)
    lib = build_loop(Path(args.workdir))
    rss0 = rss_kib()
    create_s = create(lib, d, 0, args.files)
    rss1 = rss_kib()
    out = {"create_s": create_s, "rss_growth_kib": rss1 - rss0,
           **captures_after(lib, d, args.files, args.new)}
    out["last_line_at"] = time.time()
    Path(args.result).write_text(json.dumps(out))
    return 0


def whole_run(args: argparse.Namespace, d: Path, work: Path) -> dict[str, Any]:
    logdir, result = work / "logs", work / "child.json"
    env = dict(os.environ, TBIO_INCLUDE=str(d) + "/", TBIO_TENSORFLOW="0")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    cmd = [sys.executable, "-m", "tb_iotrace", "run", "--flush", "0", "--logdir", str(logdir), "--",
           sys.executable, str(Path(__file__).resolve()), "--child", "--dir", str(d), "--files", str(args.files),
           "--new", str(args.new), "--workdir", str(work), "--result", str(result)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    ended_at = time.time()
    if r.returncode != 0:
        raise BenchError(f"the traced child failed ({r.returncode}):\n{r.stderr[-3000:]}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = json.loads(result.read_text())
    (rec_path,) = sorted((logdir / "plugins" / "iotrace").glob("*.json"))
    t1 = time.perf_counter()
    rec = read_record(rec_path)
    posix = rec.table().module("POSIX")
    if posix is None:
        raise BenchError(f"{rec_path}: no POSIX files")
    read_s = time.perf_counter() - t1
    total = args.files + args.new
    prefix = str(d) + "/f"
    names = posix.path_strings()
    mine = np.array([n.startswith(prefix) for n in names], dtype=bool)
    want = {f"{prefix}{i:09d}" for i in range(total)}
    out.update({
        "child_wall_s": wall, "record_bytes": rec_path.stat().st_size + table_path(rec_path).stat().st_size,
        "record_json_bytes": rec_path.stat().st_size, "record_read_s": read_s,
        "exit_after_last_line_s": ended_at - out["last_line_at"], "child_peak_rss_kib": peak_kib,
        "record_files": len(want & {n for n, m in zip(names, mine) if m}), "record_files_expected": total,
        "record_extra_files": int(mine.sum()) - len(want & {n for n, m in zip(names, mine) if m}),
        "record_bytes_written": int(posix.column("POSIX_BYTES_WRITTEN")[mine].sum()),
        "record_bytes_expected": expected_bytes(0, total),
        "record_untracked": rec.doc.get("untracked"),
    })
    return out


# ---------------------------------------------------------------- idle, in this process
def idle_vs_plain(lib: ctypes.CDLL, d: Path, files: int, rounds: int, block: int) -> dict[str, Any]:
    enc = os.fsencode(d)

    def one(idle: bool, first: int, n: int) -> float:
        if idle:
            tb_iotrace.enable()
        else:
            tb_iotrace.disable()
        ns = lib.tb_open_close_loop(enc, first, n, CLOCK_THREAD_CPUTIME_ID)
        if ns < 0:
            raise BenchError("an open or close in the loop failed")
        return ns / n

    block = min(block, files)
    one(True, 0, block), one(False, 0, block)    # warm
    diffs, idle, plain = [], [], []
    for r in range(rounds):
        first = (r * block) % max(files - block + 1, 1)
        a, b = (one(True, first, block), one(False, first, block)) if r % 2 == 0 else \
            tuple(reversed((one(False, first, block), one(True, first, block))))
        idle.append(a)
        plain.append(b)
        diffs.append(a - b)
    # every file opened idle once ("after the process opened them"), RSS before and after
    tb_iotrace.enable()
    rss0 = rss_kib()
    for first in range(0, files, block):
        lib.tb_open_close_loop(enc, first, min(block, files - first), CLOCK_THREAD_CPUTIME_ID)
    rss1 = rss_kib()
    return {"rounds": rounds, "block": block, "idle_ns": statistics.median(idle),
            "plain_ns": statistics.median(plain), "added_ns": statistics.median(diffs),
            "added_ns_spread": [min(diffs), max(diffs)], "ratio": statistics.median(idle) / statistics.median(plain),
            "idle_rss_growth_kib": rss1 - rss0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=1_300_000, help="distinct files (default 1,300,000)")
    ap.add_argument("--new", type=int, default=1000, help="files the last capture creates (default 1,000)")
    ap.add_argument("--dir", help="where to make them (default: a new directory on /dev/shm, removed after)")
    ap.add_argument("--rounds", type=int, default=21, help="paired idle/plain rounds (default 21)")
    ap.add_argument("--block", type=int, default=20000, help="open+close per round and mode (default 20,000)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a check fails")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    base = args.dir or ("/dev/shm" if os.path.isdir("/dev/shm") else None)
    d = Path(tempfile.mkdtemp(prefix="tbio-scale-", dir=base))
    work = Path(tempfile.mkdtemp(prefix="tbio-scale-work-"))
    try:
        rec = whole_run(args, d, work)
        lib = build_loop(work)
        tb_iotrace.enable()
        tb_iotrace.set_filters(include=[str(d) + "/"])
        idle = idle_vs_plain(lib, d, args.files, args.rounds, args.block)
        after = captures_after(lib, d, args.files + args.new, args.new)
    finally:
        tb_iotrace.disable()
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    figures = {"files": args.files, "new": args.new, "loadavg": load, "cpus": os.cpu_count(), "record": rec,
               "idle": idle, "after_idle_opens": after}
    checks = {
        "record lists every file": rec["record_files"] == rec["record_files_expected"] and not rec["record_extra_files"],
        "record bytes exact": rec["record_bytes_written"] == rec["record_bytes_expected"],
        "nothing untracked": not rec["record_untracked"] and not rec["untracked"] and not after["untracked"],
        f"empty capture exit < {EMPTY_EXIT_TARGET_MS:.0f} ms (run child)": rec["empty_exit_ms"] < EMPTY_EXIT_TARGET_MS,
        f"empty capture exit < {EMPTY_EXIT_TARGET_MS:.0f} ms (after idle opens)":
            after["empty_exit_ms"] < EMPTY_EXIT_TARGET_MS,
        f"capture of {args.new} new files lists all (run child)": rec["new_listed"] == args.new and rec["new_bytes_ok"],
        f"capture of {args.new} new files lists all (after idle opens)":
            after["new_listed"] == args.new and after["new_bytes_ok"],
        f"idle open+close <= +{IDLE_OPEN_TARGET_NS:.0f} ns": idle["added_ns"] <= IDLE_OPEN_TARGET_NS,
    }
    if args.json:
        print(json.dumps({"figures": figures, "checks": checks}, indent=1))
    else:
        n = args.files
        print(f"tb_iotrace at scale: {n:,} files on {d.parent} (+{args.new:,} new); load average "
              f"{load[0]:.1f} on {os.cpu_count()} CPUs{' (LOADED: absolute times are noisy)' if load[0] > 1 else ''}")
        print(f"  whole-run record: {rec['record_files']:,} of {rec['record_files_expected']:,} files, "
              f"{rec['record_bytes_written']:,} of {rec['record_bytes_expected']:,} bytes written; "
              f"record {rec['record_bytes'] / 1e6:.1f} MB ({rec['record_bytes'] / max(n, 1):.1f} B/file), "
              f"child {rec['child_wall_s']:.1f} s")
        print(f"  record written at exit: {rec['exit_after_last_line_s']:.2f} s from the child's last line to its end "
              f"(stop + write); read back in {rec['record_read_s']:.2f} s; child peak RSS "
              f"{rec['child_peak_rss_kib'] / 1024:.0f} MiB")
        print(f"  RSS per file: {rec['rss_growth_kib'] * 1024 / n:.0f} B tracked (whole-run recording), "
              f"{idle['idle_rss_growth_kib'] * 1024 / n:.1f} B opened idle")
        for name, f in (("in the run child", rec), ("after idle opens", after)):
            print(f"  {name}: empty capture exits in {f['empty_exit_ms']:.2f} ms (max {f['empty_exit_ms_max']:.2f}); "
                  f"capture of {args.new} new files lists {f['new_listed']} (exit {f['new_exit_ms']:.1f} ms)")
        print(f"  idle open+close: {idle['idle_ns']:.0f} ns vs plain {idle['plain_ns']:.0f} ns: "
              f"{idle['added_ns']:+.1f} ns (paired median of {idle['rounds']} x {idle['block']:,}; spread "
              f"{idle['added_ns_spread'][0]:+.0f} .. {idle['added_ns_spread'][1]:+.0f}), ratio {idle['ratio']:.3f}")
        for k, ok in checks.items():
            print(f"  {'PASS' if ok else 'FAIL'}  {k}")
    return 3 if args.strict and not all(checks.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
