"""Chunked access to the I/O trace of a source."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

CHUNK = 100_000
IO_COLUMNS = ("start_ns", "end_ns", "op", "path", "offset", "requested", "returned", "fd", "errno", "tid")


def io_columns(src: Any) -> tuple[dict[str, np.ndarray], dict[int, str]] | None:
    """All trace columns of a source (absolute epoch ns times) and its tid -> thread name."""
    if src.kind == "record":
        rec = src.record()
        t = rec.trace()
        if t is None:
            return None
        ops = t["op_names"].astype(object)
        paths = np.append(t["paths"].astype(object), "")
        cols = {
            "start_ns": t["start_ns"], "end_ns": t["end_ns"],
            "op": ops[t["op_id"]] if len(ops) else np.empty(0, object),
            "path": paths[np.where(t["file_id"] < 0, len(paths) - 1, t["file_id"])],
            "offset": t["offset"], "requested": t["requested"], "returned": t["returned"],
            "fd": t["fd"], "errno": t["errno"], "tid": t["tid"],
        }
        names = {int(th["tid"]): th.get("name", "") for th in rec.doc.get("threads", [])}
        return cols, names
    tr = src.io_trace()
    if tr is None:
        return None
    return ({k: getattr(tr, k) for k in IO_COLUMNS}, {int(k): v.comm for k, v in tr.threads.items()})


def io_rows(cols: dict[str, np.ndarray], chunk: int = CHUNK) -> Iterator[dict[str, np.ndarray]]:
    n = len(cols["start_ns"])
    for lo in range(0, n, chunk):
        yield {k: v[lo:lo + chunk] for k, v in cols.items()}
