"""Per-object counters in Darshan's spirit: one record per object (``s3://b/k``, ``gs://b/k`` or a
URL) from its requests (:mod:`tb_iotrace.store.objcolumns` rows), the way Darshan's POSIX module
keeps one record per file. Pure.

A record: ``{"object", "service", "bucket", "key", "counters": {...}, "fcounters": {...}}``:

- ``OBJ_REQUESTS``, ``OBJ_GETS``, ``OBJ_RANGED_GETS``, ``OBJ_PUTS`` (PUT and multipart parts),
  ``OBJ_HEADS`` (HEAD and GCS metadata reads), ``OBJ_LISTS``, ``OBJ_OTHER``;
- ``OBJ_BYTES_READ`` (the GETs' bodies), ``OBJ_BYTES_WRITTEN`` (the bodies sent by answered
  PUTs, multipart parts and POSTs), ``OBJ_UNIQUE_BYTES_READ`` (the object's bytes read at
  least once: full GETs cover ``[0, bytes)``, ranged ones their range), ``OBJ_REFETCHED_BYTES``
  (read more than once: the difference);
- ``OBJ_SEQ_RANGES`` (a ranged GET starting where the previous one of the same process ended),
  ``OBJ_RANDOM_RANGES`` (the other ranged GETs after the first);
- ``OBJ_SIZE_GET_0_100`` ... ``OBJ_SIZE_GET_1G_PLUS``: the GETs' bytes in Darshan's bins;
- ``OBJ_ERRORS`` (status >= 400, or no answer), ``OBJ_THROTTLED`` (503 SlowDown, 429),
  ``OBJ_RETRIES`` (a request repeating one of the same process that failed, same op and range),
  ``OBJ_MAX_CONCURRENCY`` (its requests in flight at once, most);
- fcounters (seconds): ``OBJ_F_REQUEST_TIME`` (summed), ``OBJ_F_MAX_REQUEST_TIME``,
  ``OBJ_F_FIRST_BYTE_MEAN``, ``OBJ_F_FIRST_BYTE_MAX`` (answered requests), ``OBJ_F_START``,
  ``OBJ_F_END`` (epoch seconds of its first request and last answer).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

__all__ = ["SIZE_BINS", "THROTTLE_STATUS", "object_records", "max_concurrency", "size_bin", "throttled", "failed"]

SIZE_BINS = (("0_100", 100), ("100_1K", 1 << 10), ("1K_10K", 10 << 10), ("10K_100K", 100 << 10),
             ("100K_1M", 1 << 20), ("1M_4M", 4 << 20), ("4M_10M", 10 << 20), ("10M_100M", 100 << 20),
             ("100M_1G", 1 << 30), ("1G_PLUS", None))
THROTTLE_STATUS = (503, 429)


def throttled(r: dict[str, Any]) -> bool:
    return int(r["status"]) in THROTTLE_STATUS


def failed(r: dict[str, Any]) -> bool:
    return int(r["status"]) >= 400 or int(r["status"]) == 0


def max_concurrency(reqs: list[dict[str, Any]]) -> int:
    """The most of ``reqs`` in flight at once (an end at the same instant as a start: not at once;
    a request whose end is its start, on a coarse clock, is in flight at that instant)."""
    marks = []
    for r in reqs:
        s, e = int(r["start_ns"]), int(r["end_ns"])
        # at one instant: ends of requests that lasted, then starts, then ends of instant ones
        marks += [(s, 1, 1), (max(e, s), 0 if e > s else 2, -1)]
    now = most = 0
    for _, _, d in sorted(marks):
        now += d
        most = max(most, now)
    return most


def size_bin(n: int) -> str:
    """The size bin of ``n`` bytes: upper edges inclusive, as Darshan's and the shim's
    (native/counters.c): 100 bytes is ``0_100``, 1024 ``100_1K``."""
    for name, hi in SIZE_BINS:
        if hi is None or n <= hi:
            return name
    return SIZE_BINS[-1][0]


def _covered(spans: list[tuple[int, int]]) -> int:
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def _kind(op: str) -> str:
    return {"GET": "OBJ_GETS", "PUT": "OBJ_PUTS", "MPU": "OBJ_PUTS", "POST": "OBJ_PUTS", "HEAD": "OBJ_HEADS",
            "STAT": "OBJ_HEADS", "LIST": "OBJ_LISTS"}.get(op, "OBJ_OTHER")


def _record(reqs: list[dict[str, Any]]) -> dict[str, Any]:
    c: dict[str, int] = dict.fromkeys(("OBJ_REQUESTS", "OBJ_GETS", "OBJ_RANGED_GETS", "OBJ_PUTS", "OBJ_HEADS",
                                       "OBJ_LISTS", "OBJ_OTHER", "OBJ_BYTES_READ", "OBJ_BYTES_WRITTEN", "OBJ_UNIQUE_BYTES_READ",
                                       "OBJ_REFETCHED_BYTES", "OBJ_SEQ_RANGES", "OBJ_RANDOM_RANGES",
                                       "OBJ_ERRORS", "OBJ_THROTTLED", "OBJ_RETRIES", "OBJ_MAX_CONCURRENCY"), 0)
    c.update({f"OBJ_SIZE_GET_{name}": 0 for name, _ in SIZE_BINS})
    spans: list[tuple[int, int]] = []
    last_end: dict[int, int] = {}             # pid -> where its previous ranged GET ended
    failed_keys: set[tuple[int, str, int, int]] = set()
    ttfb: list[int] = []
    req_time = max_time = 0
    for r in sorted(reqs, key=lambda x: int(x["start_ns"])):
        c["OBJ_REQUESTS"] += 1
        c[_kind(r["op"])] += 1
        dur = max(0, int(r["end_ns"]) - int(r["start_ns"]))
        req_time += dur
        max_time = max(max_time, dur)
        if r["ttfb_ns"]:
            ttfb.append(int(r["ttfb_ns"]) - int(r["start_ns"]))
        key = (int(r["pid"]), r["op"], int(r["range_start"]), int(r["range_end"]))
        if key in failed_keys:
            c["OBJ_RETRIES"] += 1
        if failed(r):
            c["OBJ_ERRORS"] += 1
            c["OBJ_THROTTLED"] += int(throttled(r))
            failed_keys.add(key)
            continue
        if _kind(r["op"]) == "OBJ_PUTS":
            c["OBJ_BYTES_WRITTEN"] += int(r["bytes"])
            continue
        if r["op"] != "GET":
            continue
        n = int(r["bytes"])
        c["OBJ_BYTES_READ"] += n
        c[f"OBJ_SIZE_GET_{size_bin(n)}"] += 1
        if int(r["range_start"]) >= 0:
            c["OBJ_RANGED_GETS"] += 1
            start = int(r["range_start"])
            pid = int(r["pid"])
            if pid in last_end:
                c["OBJ_SEQ_RANGES" if start == last_end[pid] else "OBJ_RANDOM_RANGES"] += 1
            last_end[pid] = start + n
            spans.append((start, start + n))
        else:
            spans.append((0, n))
    c["OBJ_UNIQUE_BYTES_READ"] = _covered(spans)
    c["OBJ_REFETCHED_BYTES"] = c["OBJ_BYTES_READ"] - c["OBJ_UNIQUE_BYTES_READ"]
    c["OBJ_MAX_CONCURRENCY"] = max_concurrency(reqs)
    f = {"OBJ_F_REQUEST_TIME": req_time / 1e9, "OBJ_F_MAX_REQUEST_TIME": max_time / 1e9,
         "OBJ_F_FIRST_BYTE_MEAN": (sum(ttfb) / len(ttfb) / 1e9) if ttfb else 0.0,
         "OBJ_F_FIRST_BYTE_MAX": (max(ttfb) / 1e9) if ttfb else 0.0,
         "OBJ_F_START": min(int(r["start_ns"]) for r in reqs) / 1e9,
         "OBJ_F_END": max(int(r["end_ns"]) for r in reqs) / 1e9}
    r0 = reqs[0]
    return {"object": r0["object"], "service": r0["service"], "bucket": r0["bucket"], "key": r0["key"],
            "counters": c, "fcounters": f}


def object_records(reqs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per object (see the module doc), most bytes read first, then most requests."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in reqs:
        by[r["object"]].append(r)
    out = [_record(v) for v in by.values()]
    out.sort(key=lambda x: (-x["counters"]["OBJ_BYTES_READ"], -x["counters"]["OBJ_REQUESTS"], x["object"]))
    return out
