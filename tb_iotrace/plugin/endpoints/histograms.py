"""``/histograms``: access-size histograms (read and write), the access pattern and the traced
calls per op, of every file of the view or of one."""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.plugin.request_view import View

__all__ = ["SIZE_BINS", "SIZE_EDGES", "histograms_impl"]

SIZE_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M",
             "100M_1G", "1G_PLUS")
SIZE_EDGES = (100, 1024, 10 * 1024, 100 * 1024, 1024 ** 2, 4 * 1024 ** 2, 10 * 1024 ** 2,
              100 * 1024 ** 2, 1024 ** 3)


def histograms_impl(view: View, path: str | None = None) -> dict[str, Any]:
    """Access-size histograms (read and write) from the POSIX_SIZE_* bins, the access
    pattern (sequential / consecutive / other) and the traced calls per op.

    ``source`` says where the sizes came from: "counters" (Darshan bins, exact), "trace"
    (binned from the per-call trace when no counter record exists) or "none"."""
    read = np.zeros(len(SIZE_BINS))
    write = np.zeros(len(SIZE_BINS))
    pattern = {"reads": 0.0, "seq_reads": 0.0, "consec_reads": 0.0, "writes": 0.0, "seq_writes": 0.0,
               "consec_writes": 0.0}
    any_counters = False
    for p in view.parts:
        ct = p.capture.counters
        if not ct.paths:
            continue
        sel = np.array([(path is None or q == path) and m == "POSIX" for q, m in zip(ct.paths, ct.modules)])
        if not sel.any():
            continue
        any_counters = True
        for i, b in enumerate(SIZE_BINS):
            read[i] += np.nansum(ct.col(f"POSIX_SIZE_READ_{b}")[sel])
            write[i] += np.nansum(ct.col(f"POSIX_SIZE_WRITE_{b}")[sel])
        for k, name in (("reads", "POSIX_READS"), ("seq_reads", "POSIX_SEQ_READS"),
                        ("consec_reads", "POSIX_CONSEC_READS"), ("writes", "POSIX_WRITES"),
                        ("seq_writes", "POSIX_SEQ_WRITES"), ("consec_writes", "POSIX_CONSEC_WRITES")):
            pattern[k] += float(np.nansum(ct.col(name)[sel]))
    source = "counters" if any_counters else "none"
    ops: dict[str, int] = {}
    for p in view.parts:
        io = p.capture.io
        if io is None or len(io) == 0:
            continue
        mask = slice(None)
        if path is not None:
            k = io.paths.index(path) if path in io.paths else None
            if k is None:
                continue
            mask = io.path == k
        codes = io.op[mask]
        cnt = np.bincount(codes, minlength=len(io.ops))
        for name, c in zip(io.ops, cnt.tolist()):
            if c:
                ops[name] = ops.get(name, 0) + int(c)
        if not any_counters:
            source = "trace"
            ret = io.returned[mask]
            rd = io.is_read[codes] & (ret >= 0)
            wr = io.is_write[codes] & (ret >= 0)
            edges = np.array(SIZE_EDGES)
            read += np.bincount(np.searchsorted(edges, ret[rd], side="left"), minlength=len(SIZE_BINS))[:len(SIZE_BINS)]
            write += np.bincount(np.searchsorted(edges, ret[wr], side="left"), minlength=len(SIZE_BINS))[:len(SIZE_BINS)]
            pattern["reads"] += float(rd.sum())
            pattern["writes"] += float(wr.sum())
    return {"bins": list(SIZE_BINS), "read": read.astype(np.int64).tolist(),
            "write": write.astype(np.int64).tolist(), "pattern": {k: int(v) for k, v in pattern.items()},
            "ops": dict(sorted(ops.items(), key=lambda kv: -kv[1])), "source": source, "path": path}
