#!/usr/bin/env python3
"""The stop of a recording of many files and its whole-run record's write and read, step by step.

    python bench/record_write.py                  # 1,300,000 files on tmpfs (/dev/shm)
    python bench/record_write.py --files 200000

In this process: a recording session while bench/loop.c creates --files files (file i holding
(i % 13) + 1 bytes, removed right after), then each step of what ``tb-iotrace run`` does at a
process's exit, timed in wall-clock and CPU seconds (user + system of this process: on a
loaded machine the wall time is mostly waiting for a core):

  stop     recording.session.end_session: the native session's end, the copy of its counters
           and trace into columns, its memory given back
  write    tb_iotrace.store.runrecord.write_record (the trace .npz, the columnar file table, the JSON)
  read     read_record + its file table, and the sum of the byte column (checked exact)

and the peak RSS. The record goes to a temporary directory on the same tmpfs, removed after
(``--keep LOGDIR``: kept there, for timing its readers: ``tb-iotrace report LOGDIR --json``, ...).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:   # run from a checkout without installing
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import tb_iotrace  # noqa: E402
from tb_iotrace.recording import session
from tb_iotrace.store.runrecord import read_record, table_path, write_record

from scale_files import build_loop, create, expected_bytes  # noqa: E402


def timed(out: dict[str, Any], name: str, fn: Callable[[], Any]) -> Any:
    w, c = time.perf_counter(), time.process_time()
    got = fn()
    out[name] = {"wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c}
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1_300_000)
    ap.add_argument("--dir", help="where to make them (default: a new directory on /dev/shm)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", metavar="LOGDIR", help="keep the record there (LOGDIR/plugins/iotrace/), for the readers")
    args = ap.parse_args(argv)
    base = args.dir or ("/dev/shm" if os.path.isdir("/dev/shm") else None)
    d = Path(tempfile.mkdtemp(prefix="tbio-recw-", dir=base))
    out_dir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tbio-recw-out-", dir=base))
    steps: dict[str, Any] = {}
    try:
        work = Path(tempfile.mkdtemp(prefix="tbio-recw-work-"))
        lib = build_loop(work)
        shutil.rmtree(work, ignore_errors=True)
        tb_iotrace.enable()
        tb_iotrace.set_filters(include=[str(d) + "/"], exclude=["/"])
        sess = session.begin_session()
        create(lib, d, 0, args.files)
        shutil.rmtree(d, ignore_errors=True)
        recording = session.Recording()
        timed(steps, "stop", lambda: session.end_session(sess, recording))
        tb_iotrace.disable()
        jpath = timed(steps, "write", lambda: write_record(out_dir, recording, partial=False, exit={"how": "exit"}))
        del recording

        def read() -> int:
            posix = read_record(jpath).table().module("POSIX")
            return int(posix.column("POSIX_BYTES_WRITTEN").sum()) if posix is not None else -1
        got = timed(steps, "read", read)
        size = jpath.stat().st_size + table_path(jpath).stat().st_size
        trace = jpath.with_suffix(".npz").stat().st_size if jpath.with_suffix(".npz").exists() else 0
    finally:
        tb_iotrace.disable()
        shutil.rmtree(d, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)
    want = expected_bytes(0, args.files)
    fig = {"files": args.files, "loadavg": os.getloadavg(), "steps": steps, "record_bytes": size,
           "trace_bytes": trace, "bytes_ok": got == want, "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    if args.json:
        print(json.dumps(fig, indent=1))
    else:
        load = fig["loadavg"][0]
        print(f"record of {args.files:,} files; load average {load:.1f} on {os.cpu_count()} CPUs"
              f"{' (LOADED: wall times are mostly waiting)' if load > 1 else ''}")
        for k, v in steps.items():
            print(f"  {k:<6} {v['wall_s']:7.2f} s wall  {v['cpu_s']:7.2f} s CPU")
        print(f"  record {size / 1e6:.1f} MB ({size / max(args.files, 1):.1f} B/file) + trace {trace / 1e6:.1f} MB; "
              f"bytes {'exact' if fig['bytes_ok'] else 'WRONG'}; peak RSS {fig['peak_rss_kib'] / 2**20:.2f} GiB")
    return 0 if fig["bytes_ok"] else 3


if __name__ == "__main__":
    sys.exit(main())
