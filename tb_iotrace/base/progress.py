"""The progress line of long command-line work (export, report over many hosts).

Written to stderr, and only when stderr is a terminal: a pipe, a file or a CI log gets nothing,
and stdout (the report, a darshan-parser stream) is never touched.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

from tb_iotrace.base.safenames import printable

CLEAR = "\r\x1b[K"      # back to the line start, erase it


class Progress:
    """``\\r``-updated ``what: done/total unit (pct%) [note]``; ``close()`` ends the line
    (``keep=True``) or erases it, so what is printed next starts on a clean line."""

    def __init__(self, what: str, total: int, unit: str = "events", stream: TextIO | None = None,
                 keep: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.on = bool(getattr(self.stream, "isatty", lambda: False)()) and total > 0
        self.what, self.total, self.unit, self.keep = what, total, unit, keep
        self.done, self.last, self.shown = 0, 0.0, False

    def add(self, n: int = 1, note: str = "") -> None:
        self.done += n
        now = time.monotonic()
        if self.on and (now - self.last > 0.2 or self.done >= self.total):
            self.last = now
            pct = 100.0 * self.done / self.total
            tail = f" {printable(note)}" if note else ""   # notes name runs and hosts: no controls
            self.stream.write(f"{CLEAR}{self.what}: {self.done:,}/{self.total:,} {self.unit} ({pct:.0f}%){tail}")
            self.stream.flush()
            self.shown = True

    def close(self) -> None:
        if self.on and self.shown:
            self.stream.write("\n" if self.keep else CLEAR)
            self.stream.flush()
            self.shown = False
