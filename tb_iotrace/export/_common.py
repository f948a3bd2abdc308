"""Chunked access to the I/O trace of a source, and terminal progress."""
from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

import numpy as np

CHUNK = 100_000
IO_COLUMNS = ("start_ns", "end_ns", "op", "path", "offset", "requested", "returned", "fd", "errno", "tid")


class Progress:
    """``\\r``-updated progress line on stderr when it is a terminal (silent otherwise)."""

    def __init__(self, what: str, total: int, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.on = bool(getattr(self.stream, "isatty", lambda: False)()) and total > 0
        self.what, self.total, self.done, self.last = what, total, 0, 0.0

    def add(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.on and (now - self.last > 0.2 or self.done >= self.total):
            self.last = now
            pct = 100.0 * self.done / self.total
            self.stream.write(f"\r{self.what}: {self.done:,}/{self.total:,} events ({pct:.0f}%)")
            self.stream.flush()

    def close(self) -> None:
        if self.on:
            self.stream.write("\n")
            self.stream.flush()


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
