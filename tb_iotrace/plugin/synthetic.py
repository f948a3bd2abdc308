"""Synthetic I/O traces merged into real captures: test data and benchmarks for the plugin.

``make_logdir(dst, source, n_events=...)`` copies a capture (e.g. the shared GPU capture)
to ``<dst>/plugins/profile/<run>/<host>.xplane.pb`` and merges a synthetic trace into it
with :func:`tb_iotrace.store.xplane.merge_into_capture`, with Darshan-style counters derived
from the synthetic calls (sizes, sequential/consecutive, timers), so every view of the tab
has something to show. Nothing here needs TensorFlow or the native module.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from tb_iotrace.store.logdir import PROFILE_DIR
from tb_iotrace.store.xplane import XPLANE_SUFFIX, IoTrace, ThreadInfo, load_xspace, merge_into_capture
from tb_iotrace.store.xplane.read_xspace import profile_start_ns

HOSTILE_NAME = "/data/<img src=x onerror=alert(1)>.tfrecord"
SIZE_BINS = ((100, "0_100"), (1024, "100_1K"), (10240, "1K_10K"), (102400, "10K_100K"),
             (1048576, "100K_1M"), (4194304, "1M_4M"), (10485760, "4M_10M"),
             (104857600, "10M_100M"), (1073741824, "100M_1G"), (None, "1G_PLUS"))
DEFAULT_BASE_NS = 1_700_000_000_000_000_000


def _extent_ns(path: str | os.PathLike) -> tuple[int, int]:
    from tb_iotrace.model.columnar import decode_xspace

    space = decode_xspace(path)
    lo, hi = None, None
    for p in space.planes:
        if len(p.start_ps):
            a = int(p.start_ps.min()) // 1000
            b = int((p.start_ps + p.duration_ps).max()) // 1000
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    return (lo or 0, hi or 1_000_000_000)


def synthetic_trace(n_events: int, t_lo: int, t_hi: int, *, n_threads: int = 4, n_files: int = 64,
                    seed: int = 0, base_ns: int = 0, hostile: bool = True,
                    with_counters: bool = True) -> IoTrace:
    """``n_events`` calls spread over [t_lo, t_hi] (ns relative to ``base_ns``), per thread
    in sequence: open, then reads/writes, then close, over ``n_files`` files."""
    rng = np.random.default_rng(seed)
    n = int(n_events)
    files = [f"/data/train-{i:05d}-of-{n_files:05d}.tfrecord" for i in range(n_files)]
    if hostile and n_files > 1:
        files[1] = HOSTILE_NAME
    files.append("/ckpt/model.ckpt-1.data")  # written
    tid = rng.integers(0, n_threads, n)
    start = np.sort(rng.integers(t_lo, max(t_lo + 1, t_hi - 200_000), n)).astype(np.int64)
    dur = rng.integers(2_000, 150_000, n).astype(np.int64)
    # per thread: keep calls sequential (no overlap on one thread)
    for t in range(n_threads):
        m = np.flatnonzero(tid == t)
        if len(m) > 1:
            # two calls of a thread drawn at the same ns: the later moves on 2 ns (a 1 ns call between)
            s = np.maximum.accumulate(start[m] - 2 * np.arange(len(m))) + 2 * np.arange(len(m))
            start[m] = s
            gap = np.diff(s)
            dur[m[:-1]] = np.minimum(dur[m[:-1]], np.maximum(gap - 1, 1))
    order = np.argsort(start, kind="stable")     # in time order again after the moves
    tid, start, dur = tid[order], start[order], dur[order]
    kind = rng.random(n)
    op = np.where(kind < 0.05, "open64", np.where(kind < 0.10, "close",
                  np.where(kind < 0.80, "pread64", np.where(kind < 0.93, "read", "write"))))
    fidx = rng.integers(0, n_files, n)
    fidx[op == "write"] = n_files
    path = np.array(files, dtype=object)[fidx]
    size = np.where(op == "write", rng.integers(4096, 1 << 20, n), 1 << rng.integers(6, 21, n))
    returned = np.where((op == "pread64") | (op == "read") | (op == "write"), size, 0)
    returned = np.where(op == "open64", 3 + tid, returned)
    requested = np.where((op == "pread64") | (op == "read") | (op == "write"), size, 0)
    errno = np.zeros(n, dtype=np.int32)
    fail = rng.random(n) < 0.002
    errno[fail & (op == "open64")] = 2
    returned = np.where(errno != 0, -1, returned)
    offset = np.where((op == "pread64") | (op == "read") | (op == "write"), rng.integers(0, 1 << 30, n), -1)
    tids = 4000 + tid
    threads = {4000 + t: ThreadInfo(0x7F0000000000 + t * 0x1000, "tf_data_worker" if t else "python")
               for t in range(n_threads)}
    counters = _counters(files, fidx, op, returned, dur) if with_counters else []
    return IoTrace(op=op.astype(object), path=path, offset=offset, requested=requested,
                   returned=returned, fd=np.where(op == "open64", -1, 3 + tid), errno=errno,
                   start_ns=start + base_ns, end_ns=start + dur + base_ns, tid=tids,
                   threads=threads, dropped=0, counters=counters)


def _counters(files, fidx, op, returned, dur) -> list[dict]:
    out = []
    for k, path in enumerate(files):
        m = fidx == k
        if not m.any():
            continue
        ops = op[m]
        ret = returned[m]
        d = dur[m] / 1e9
        rd = (ops == "pread64") | (ops == "read")
        wr = ops == "write"
        c = {"POSIX_OPENS": int((ops == "open64").sum()), "POSIX_READS": int(rd.sum()),
             "POSIX_WRITES": int(wr.sum()), "POSIX_SEEKS": 0, "POSIX_STATS": 0,
             "POSIX_BYTES_READ": int(np.maximum(ret[rd], 0).sum()),
             "POSIX_BYTES_WRITTEN": int(np.maximum(ret[wr], 0).sum()),
             "POSIX_SEQ_READS": int(rd.sum() * 0.6), "POSIX_CONSEC_READS": int(rd.sum() * 0.4),
             "POSIX_SEQ_WRITES": int(wr.sum()), "POSIX_CONSEC_WRITES": int(wr.sum()),
             "POSIX_MAX_BYTE_READ": int(ret[rd].max()) if rd.any() else 0,
             "POSIX_MAX_BYTE_WRITTEN": int(ret[wr].max()) if wr.any() else 0}
        for kind, sel in (("READ", rd), ("WRITE", wr)):
            vals = np.maximum(ret[sel], 0)
            lo = -1
            for edge, name in SIZE_BINS:
                hi = edge if edge is not None else np.inf
                c[f"POSIX_SIZE_{kind}_{name}"] = int(((vals > lo) & (vals <= hi)).sum()) if lo >= 0 else int((vals <= hi).sum())
                lo = hi
        f = {"POSIX_F_READ_TIME": float(d[rd].sum()), "POSIX_F_WRITE_TIME": float(d[wr].sum()),
             "POSIX_F_META_TIME": float(d[~rd & ~wr].sum())}
        out.append({"path": path, "module": "POSIX", "counters": c, "fcounters": f})
        if k == 0:  # one STDIO record too
            out.append({"path": path, "module": "STDIO",
                        "counters": {"STDIO_OPENS": 1, "STDIO_READS": 3, "STDIO_WRITES": 0,
                                     "STDIO_BYTES_READ": 4096, "STDIO_BYTES_WRITTEN": 0},
                        "fcounters": {"STDIO_F_READ_TIME": 0.0001, "STDIO_F_WRITE_TIME": 0.0,
                                      "STDIO_F_META_TIME": 0.00002}})
    return out


def make_logdir(dst: str | os.PathLike, source: str | os.PathLike, *, run: str = "2024_01_01_00_00_00",
                host: str = "worker0", n_events: int = 20_000, seed: int = 0, **kw) -> Path:
    """Copy ``source`` into ``<dst>/plugins/profile/<run>/<host>.xplane.pb`` and merge a
    synthetic trace of ``n_events`` calls spanning the capture. Returns the file's path."""
    out = Path(dst) / PROFILE_DIR / run / f"{host}{XPLANE_SUFFIX}"
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, out)
    os.chmod(out, 0o644)
    start = profile_start_ns(load_xspace(out))
    base = start if start is not None else DEFAULT_BASE_NS
    lo, hi = _extent_ns(out)
    trace = synthetic_trace(n_events, lo, hi, seed=seed, base_ns=base, **kw)
    merge_into_capture(out, trace, start_ns=base, max_events=max(n_events, 1))
    return out


__all__ = ["HOSTILE_NAME", "make_logdir", "synthetic_trace"]
