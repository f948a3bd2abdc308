"""A compact binary answer: a JSON header and columns of numbers, for answers that are
mostly numbers (``/timeline?enc=bin``). JSON costs the server about a microsecond per
number to write and the browser as much to parse; here a column is one ``tobytes()`` on
the server and one typed-array view in the browser.

Layout (little-endian)::

    b"TBIO" | uint32 header length H | H bytes of UTF-8 JSON | zero padding to a multiple of 8
    | the columns, each starting at a multiple of 8 from there

The header is the answer's other fields plus ``"columns": [[name, dtype, length, offset]]``,
``offset`` counted from the end of the padded header, dtype ``i8``, ``i16``, ``i32`` (the
narrowest that holds every value of an integer column) or ``f64`` (float columns, and
integers beyond 32 bits: exact up to 2**53, as a JSON number is in the browser).
"""
from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

MAGIC = b"TBIO"
CONTENT_TYPE = "application/octet-stream"
DTYPES = {"i8": np.dtype("<i1"), "i16": np.dtype("<i2"), "i32": np.dtype("<i4"), "f64": np.dtype("<f8")}


def _align(n: int) -> int:
    return -(-n // 8) * 8


def narrow(a: np.ndarray) -> tuple[str, np.ndarray]:
    """(dtype name, the column in it): the narrowest integer type that holds every value."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return "f64", a.astype(DTYPES["f64"], copy=False)
    if a.dtype.kind not in "iub":
        raise TypeError(f"cannot pack a column of {a.dtype}")
    if len(a) == 0:
        return "i8", a.astype(DTYPES["i8"])
    lo, hi = int(a.min()), int(a.max())
    for name in ("i8", "i16", "i32"):
        info = np.iinfo(DTYPES[name])
        if info.min <= lo and hi <= info.max:
            return name, a.astype(DTYPES[name], copy=False)
    return "f64", a.astype(DTYPES["f64"])


def pack(fields: dict[str, Any], columns: dict[str, np.ndarray]) -> bytes:
    """``fields`` (JSON-able, without a ``columns`` key) and ``columns`` as one answer."""
    if "columns" in fields:
        raise ValueError("'columns' is the packed answer's own field")
    parts, layout, offset = [], [], 0
    for name, col in columns.items():
        dt, a = narrow(col)
        raw = a.tobytes()
        layout.append([name, dt, int(len(a)), offset])
        parts.append(raw + b"\0" * (_align(len(raw)) - len(raw)))
        offset += _align(len(raw))
    header = json.dumps(dict(fields, columns=layout), separators=(",", ":"), allow_nan=False).encode()
    head = MAGIC + struct.pack("<I", len(header)) + header
    return b"".join([head, b"\0" * (_align(len(head)) - len(head)), *parts])


def unpack(body: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fields and columns of a packed answer (what the browser's decoder does; for tests
    and scripts)."""
    if body[:4] != MAGIC or len(body) < 8:
        raise ValueError("not a packed answer")
    (n,) = struct.unpack_from("<I", body, 4)
    fields = json.loads(body[8:8 + n])
    base = _align(8 + n)
    cols = {}
    for name, dt, length, off in fields.pop("columns"):
        cols[name] = np.frombuffer(body, dtype=DTYPES[dt], count=length, offset=base + off)
    return fields, cols


__all__ = ["CONTENT_TYPE", "MAGIC", "narrow", "pack", "unpack"]
