"""Bounds on what reading one input file may cost: a file in a logdir is input
from whoever could write there, and TensorBoard reads it in its own process.

- Expanded size: a Kineto trace (its file, and its JSON after gunzip), a whole-run record's
  JSON, and the arrays of each of its ``.npz`` files (its trace, its file table), each at most
  :func:`max_trace_bytes`
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
import zipfile
import zlib
from typing import Any, BinaryIO

import numpy as np

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


MAX_NPZ_MEMBERS = 4096   # a record's file table: ~100 counter columns per module; its trace: 12


def load_npz(fh: BinaryIO, limit: int, what: str = "the archive") -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` (as ``np.load(fh, allow_pickle=False)`` reads them, keys
    without ``.npy``), checked before anything is allocated: each member's declared
    uncompressed size, all together at most ``limit`` (LimitError), and each array's shape
    and type no bigger than its member (an ``.npy`` header declaring 2^40 rows in a few
    bytes: ValueError). zipfile never unpacks more than a member declares. ValueError for
    anything else that is not such an archive."""
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ValueError(f"not an .npz archive ({type(exc).__name__}: {exc})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_NPZ_MEMBERS:
            raise LimitError(f"{what} holds {len(infos)} arrays, more than {MAX_NPZ_MEMBERS}")
        total = sum(i.file_size for i in infos)
        if total > limit:
            raise too_big(what, total, limit)
        out: dict[str, np.ndarray] = {}
        for info in infos:
            key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            try:
                with zf.open(info) as m:
                    version = np.lib.format.read_magic(m)
                    if version not in ((1, 0), (2, 0), (3, 0)):
                        raise ValueError(f"unknown .npy version {version}")
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read_header(m)
                    if dtype.hasobject:
                        raise ValueError("an array of Python objects (pickles are not read)")
                    need = dtype.itemsize
                    for n in shape:
                        need *= int(n)
                    if need > info.file_size:
                        raise ValueError(f"its header declares {need} bytes of data, its member holds "
                                         f"{info.file_size}")
                with zf.open(info) as m:
                    out[key] = np.lib.format.read_array(m, allow_pickle=False)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError, TypeError, SyntaxError,
                    zlib.error, NotImplementedError) as exc:
                raise ValueError(f"array {key!r}: {type(exc).__name__}: {exc}") from None
        return out


__all__ = ["LimitError", "load_npz", "MAX_TRACE_ENV", "gunzip", "json_loads", "max_trace_bytes", "parse_bytes",
           "read_limited", "too_big"]
