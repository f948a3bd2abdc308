"""Darshan's record id of a path.

Darshan names every file record by a 64-bit id: Bob Jenkins' 1997 "lookup8" hash of the
cleaned absolute path's bytes, level 0 (``darshan_core_gen_record_id``). The native shim
stores the same id (``native/recordid.c``) as a file's ``record_id`` and in
``POSIX_RENAMED_FROM``; this pure-Python twin serves the exports and readers that have only
a path. Both are checked against the id/name pairs of Darshan's own logs.
"""
from __future__ import annotations

from typing import Any

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C13
# per round: right shift into a, left shift into b, right shift into c
_SHIFTS = ((43, 9, 8), (38, 23, 5), (35, 49, 11), (12, 18, 22))


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    for ra, lb, rc in _SHIFTS:
        a = ((a - b - c) & _M64) ^ (c >> ra)
        b = ((b - c - a) & _M64) ^ ((a << lb) & _M64)
        c = ((c - a - b) & _M64) ^ (b >> rc)
    return a, b, c


def lookup8(data: bytes, level: int = 0) -> int:
    """Jenkins' 64-bit hash of ``data`` (little-endian loads) with initial value ``level``."""
    a = b = level & _M64
    c = _GOLDEN
    n = len(data)
    i = 0
    while n - i >= 24:
        a = (a + int.from_bytes(data[i:i + 8], "little")) & _M64
        b = (b + int.from_bytes(data[i + 8:i + 16], "little")) & _M64
        c = (c + int.from_bytes(data[i + 16:i + 24], "little")) & _M64
        a, b, c = _mix(a, b, c)
        i += 24
    tail = data[i:]
    c = (c + n) & _M64
    a = (a + int.from_bytes(tail[:8], "little")) & _M64
    b = (b + int.from_bytes(tail[8:16], "little")) & _M64
    c = (c + (int.from_bytes(tail[16:23], "little") << 8)) & _M64  # c's low byte holds the length
    return _mix(a, b, c)[2]


def path_bytes(path: str | bytes) -> bytes:
    """The bytes Darshan hashes: a str path as the capture got it (undecodable bytes are kept
    as surrogate escapes)."""
    return path if isinstance(path, bytes) else path.encode("utf-8", "surrogateescape")


def record_id(path: str | bytes) -> int:
    """Darshan's record id of ``path`` (the exact path bytes, level 0)."""
    return lookup8(path_bytes(path))


def darshan_ids(files: list[dict[str, Any]]) -> tuple[list[int], dict[int, int]]:
    """Each per-file record's Darshan id, and ``{stored id: Darshan id}`` for the stored ids
    that differ (to translate ``POSIX_RENAMED_FROM``).

    A record imported from a Darshan log (it carries its ``rank``) keeps the log's id (its
    name may be anonymised); any other gets the hash of its path, also when it stored another
    id (captures made before the shim stored Darshan's ids)."""
    ids: list[int] = []
    remap: dict[int, int] = {}
    for f in files:
        stored = int(f.get("record_id") or 0) % (1 << 64)
        rid = stored if ("rank" in f and stored) else record_id(f["path"])
        if stored and stored != rid:
            remap[stored] = rid
        ids.append(rid)
    return ids, remap


def renamed_from(value: int, remap: dict[int, int]) -> int:
    """A ``POSIX_RENAMED_FROM`` value (int64, as Darshan stores it) with its id translated."""
    u = int(value) % (1 << 64)
    u = remap.get(u, u)
    return u - (1 << 64) if u >= 1 << 63 else u
