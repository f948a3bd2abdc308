"""Object-storage requests as Darshan POSIX records, for the Darshan exports.

Darshan's stock log has no object-store module (its DAOS/DFS modules are DAOS's own object
API, not S3/GCS/HTTP), and PyDarshan knows only the modules it was built with, so objects go
where a Darshan user already looks: one POSIX record per object and process, named by the
object's URL (``s3://bucket/key``, ``gs://bucket/key``, ``http://host/path``; never a query
string), the way Darshan would record the object if it were read through a FUSE mount:

- ``POSIX_READS`` / ``POSIX_BYTES_READ``: the answered GETs and their bodies' bytes;
  ``POSIX_WRITES`` / ``POSIX_BYTES_WRITTEN``: the answered uploads (PUT, multipart parts,
  POST; a multipart upload's create/complete/list/abort are metadata) and the bytes they
  sent; ``POSIX_STATS``: HEAD, GCS metadata reads and LISTs;
- ``POSIX_MAX_BYTE_READ``: the last byte a GET returned (range start + bytes - 1);
- ``POSIX_SIZE_READ_*`` / ``POSIX_SIZE_WRITE_*``: each GET's / upload's bytes in Darshan's bins;
- ``POSIX_F_READ_TIME`` / ``POSIX_F_WRITE_TIME``: the GETs' / uploads' summed request times
  (sent to body done), ``POSIX_F_META_TIME`` every other request's (failed ones included),
  ``POSIX_F_MAX_READ_TIME`` / ``POSIX_F_MAX_WRITE_TIME`` and ``POSIX_MAX_READ_TIME_SIZE`` /
  ``POSIX_MAX_WRITE_TIME_SIZE`` the slowest one and its bytes;
- ``POSIX_F_READ_START/END_TIMESTAMP``, ``..._WRITE_...``: seconds from the process's start
  (the zero of its file counters), as Darshan's.

Every other counter is 0 (no opens: a request is not an open). Pure.
"""
from __future__ import annotations

from typing import Any

from tb_iotrace.model.object_counters import failed, size_bin

__all__ = ["UPLOADS", "STATS", "posix_records", "is_object_name"]

UPLOADS = frozenset(("PUT", "MPU", "POST"))
STATS = frozenset(("HEAD", "STAT", "LIST"))
SCHEMES = ("s3://", "gs://", "http://", "https://")


def is_object_name(path: str) -> bool:
    return path.startswith(SCHEMES)


def _record(url: str, reqs: list[dict[str, Any]], zero_ns: int) -> dict[str, Any]:
    c: dict[str, int] = {}
    f: dict[str, float] = {}

    def add(k: str, v: int) -> None:
        c[k] = c.get(k, 0) + v

    def span(kind: str, r: dict[str, Any]) -> None:
        s, e = (int(r["start_ns"]) - zero_ns) / 1e9, (int(r["end_ns"]) - zero_ns) / 1e9
        ks, ke = f"POSIX_F_{kind}_START_TIMESTAMP", f"POSIX_F_{kind}_END_TIMESTAMP"
        f[ks] = min(f.get(ks, s), s)
        f[ke] = max(f.get(ke, e), e)

    for r in sorted(reqs, key=lambda x: int(x["start_ns"])):
        dur = max(0, int(r["end_ns"]) - int(r["start_ns"])) / 1e9
        n, op = int(r["bytes"]), str(r["op"])
        if failed(r) or (op != "GET" and op not in UPLOADS) or (op == "MPU" and not n):
            f["POSIX_F_META_TIME"] = f.get("POSIX_F_META_TIME", 0.0) + dur
            if op in STATS and not failed(r):
                add("POSIX_STATS", 1)
            continue
        kind, k = ("READ", "READ") if op == "GET" else ("WRITE", "WRITTEN")
        add(f"POSIX_{kind}S", 1)
        add(f"POSIX_BYTES_{k}", n)
        add(f"POSIX_SIZE_{kind}_{size_bin(n)}", 1)
        f[f"POSIX_F_{kind}_TIME"] = f.get(f"POSIX_F_{kind}_TIME", 0.0) + dur
        if dur >= f.get(f"POSIX_F_MAX_{kind}_TIME", -1.0):
            f[f"POSIX_F_MAX_{kind}_TIME"] = dur
            c[f"POSIX_MAX_{kind}_TIME_SIZE"] = n
        span(kind, r)
        if op == "GET" and n:
            last = max(0, int(r["range_start"])) + n - 1
            c["POSIX_MAX_BYTE_READ"] = max(c.get("POSIX_MAX_BYTE_READ", 0), last)
    return {"module": "POSIX", "path": url, "counters": c, "fcounters": f}


def posix_records(reqs: list[dict[str, Any]], zero_ns: int) -> list[dict[str, Any]]:
    """One POSIX record per object of one process's requests (see the module doc); times from
    ``zero_ns`` (CLOCK_REALTIME ns, the process's counters' zero)."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in reqs:
        by.setdefault(str(r["object"]), []).append(r)
    return [_record(url, rs, zero_ns) for url, rs in sorted(by.items())]
