"""Bounds on what reading one input file may cost (issue 25): a file in a logdir is input
from whoever could write there, and TensorBoard reads it in its own process.

- Expanded size: a Kineto trace's JSON after gunzip, and the arrays of a whole-run record's
  ``.npz`` files (its trace and its file table) together, at most :func:`max_trace_bytes`
  (``TBIO_MAX_TRACE_BYTES``, bytes with an optional K/M/G suffix; by default a sixteenth of
  the machine's memory, within [256 MiB, 1 GiB]: parsing a trace's JSON takes about 7x its text). A
  2 MB gzip that unpacks to 2 GiB is refused once the limit is read, not after; an ``.npz``
  is checked from its declared sizes before anything is allocated.
- JSON: :func:`json_loads` turns what ``json.loads`` fails with on hostile text (nesting
  deeper than Python's recursion limit, integers longer than its 4,300-digit limit) into
  :class:`LimitError`, a ValueError with a one-line reason.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from typing import Any, BinaryIO

MAX_TRACE_ENV = "TBIO_MAX_TRACE_BYTES"
MAX_TRACE_CAP = 1 << 30
MAX_TRACE_FLOOR = 256 << 20


class LimitError(ValueError):
    """An input over one of the bounds (says which, and how to raise it)."""


def parse_bytes(raw: str, name: str) -> int:
    """``raw`` (an integer with an optional K/M/G suffix) in bytes; ValueError naming ``name``."""
    raw = raw.strip()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(raw[-1:].upper(), 1)
    try:
        value = int(float(raw[:-1] if mult > 1 else raw) * mult)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a byte count such as 2G or 536870912") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r}: expected a positive byte count")
    return value


def max_trace_bytes() -> int:
    """The most bytes one trace may expand to (see the module docstring)."""
    raw = os.environ.get(MAX_TRACE_ENV, "")
    if raw.strip():
        return parse_bytes(raw, MAX_TRACE_ENV)
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = 16 * MAX_TRACE_CAP
    return max(MAX_TRACE_FLOOR, min(MAX_TRACE_CAP, phys // 16))


def too_big(what: str, size: int | str, limit: int) -> LimitError:
    return LimitError(f"{what} expands to {size} bytes, over the limit of {limit} "
                      f"({MAX_TRACE_ENV} raises it)")


def gunzip(raw: bytes, limit: int, what: str = "the file") -> bytes:
    """The gzip data ``raw`` decompressed, at most ``limit`` bytes of it: LimitError as soon
    as more would come, before it is held; ValueError for a broken stream."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
            data = gz.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:   # gzip.BadGzipFile is an OSError
        raise ValueError(f"broken gzip data ({type(exc).__name__}: {exc})") from None
    if len(data) > limit:
        raise too_big(what, f"more than {limit}", limit)
    return data


def read_limited(fh: BinaryIO, limit: int, what: str = "the file") -> bytes:
    """At most ``limit`` bytes of ``fh``; LimitError when there is more."""
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise too_big(what, f"more than {limit}", limit)
    return data


def json_loads(raw: bytes | str, what: str = "JSON") -> Any:
    """``json.loads``, with nesting too deep and numbers too long as :class:`LimitError`
    (other malformed text: ``json.JSONDecodeError`` as usual)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise LimitError(f"{what} nests deeper than Python's recursion limit") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except ValueError as exc:   # "Exceeds the limit (4300 digits) for integer string conversion"
        raise LimitError(f"{what}: {str(exc).splitlines()[0][:200]}") from None


__all__ = ["LimitError", "MAX_TRACE_ENV", "gunzip", "json_loads", "max_trace_bytes", "parse_bytes",
           "read_limited", "too_big"]
