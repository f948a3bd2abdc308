"""The findings about object-storage requests (S3, GCS, HTTP: :mod:`tb_iotrace.analysis.object_io`),
each with its impact (the part of the input wait its requests were in flight, over the steps'
time) and advice in the client's own terms by a stated model (docs/findings.md).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable

from tb_iotrace.model.object_counters import failed, max_concurrency, object_records, throttled
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.object_io import SMALL_REQUEST, blocked_share, requests_of, small_gets

__all__ = ["RULES", "TITLES"]

TITLES = {
    "object-small-requests": "Small object requests pay their latency",
    "object-serial-requests": "Object requests one at a time",
    "object-refetch": "Objects fetched more than once",
    "object-metadata-storm": "LIST/HEAD requests dominate",
    "object-throttled": "The object store throttles",
}
MIN_REQUESTS = 8          # fewer requests than this make no pattern
METADATA_OPS = ("HEAD", "STAT", "LIST")


def _finding(ctx: Context, steps: list[dict[str, Any]], fid: str, statement: str, evidence: dict[str, Any],
             suggestion: str, reqs: list[dict[str, Any]]) -> dict[str, Any]:
    names = sorted({r["object"] for r in reqs}, key=lambda o: -sum(1 for r in reqs if r["object"] == o))
    return {"id": fid, "severity": "warning", "title": TITLES[fid], "statement": statement, "evidence": evidence,
            "files": names[:20], "ops": sorted({r["op"] for r in reqs})[:20], "suggestion": suggestion,
            "impact": blocked_share(ctx, steps, reqs)}


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.1f} ms"


def small_requests(ctx: Context, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    p = small_gets(ctx)
    if not p.latency_bound:
        return None
    after = min(p.target_gets(), p.gets_per_object)
    saved = p.latency_share * (1 - after / p.gets_per_object) if p.gets_per_object else 0.0
    statement = (f"{len(p.small)} of {len(p.gets)} GETs read under {SMALL_REQUEST >> 20} MiB ({p.ranged} of them "
                 f"ranged; median {p.median_bytes // 1024} KiB), {p.gets_per_object:.1f} per object: each waits "
                 f"{p.first_byte_ms:.1f} ms for its first byte on average, {100 * p.latency_share:.0f}% of their "
                 "time. The requests are latency-bound: their size, not the storage's bandwidth, sets the pace.")
    suggestion = (f"{p.change()}. Model: a GET costs its first-byte latency plus its transfer; "
                  f"{p.gets_per_object:.1f} GETs per object -> {after} saves the latency of the others, about "
                  f"{100 * saved:.0f}% of these requests' time"
                  + ("; larger shards (objects of 100 MiB and more) make every request large." if p.object_bytes < (4 << 20)
                     else "."))
    return _finding(ctx, steps, "object-small-requests", statement,
                    {"small_gets": len(p.small), "gets": len(p.gets), "ranged": p.ranged,
                     "median_bytes": p.median_bytes, "gets_per_object": p.gets_per_object,
                     "first_byte_ms_mean": p.first_byte_ms, "latency_share": p.latency_share,
                     "largest_object_bytes": p.object_bytes, "expected_request_time_saved": saved},
                    suggestion, p.small)


def serial_requests(ctx: Context, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in requests_of(ctx):
        by[int(r["pid"])].append(r)
    serial = {pid: v for pid, v in by.items() if len(v) >= MIN_REQUESTS and max_concurrency(v) == 1}
    if not serial:
        return None
    reqs = [r for v in serial.values() for r in v]
    statement = (f"{len(serial)} process(es) (pid {', '.join(map(str, sorted(serial)))}) made their {len(reqs)} "
                 "object requests one at a time: never two in flight at once, so each request's latency adds "
                 "to the next.")
    suggestion = ("Requests in flight at once: more DataLoader workers (num_workers), fetching a sample's objects "
                  "or ranges together (s3fs/gcsfs fs.cat([...]) / fs.cat_ranges(...) run them concurrently; a "
                  "thread pool in __getitem__), or a client that does (s3torchconnector, the AWS CRT). Model: "
                  "with k requests in flight a latency-bound wait falls to about 1/k of now.")
    return _finding(ctx, steps, "object-serial-requests", statement,
                    {"processes": sorted(serial), "requests": len(reqs)}, suggestion, reqs)


def refetch(ctx: Context, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    reqs = [r for r in requests_of(ctx) if r["op"] == "GET" and not failed(r)]
    recs = [o for o in object_records(reqs) if o["counters"]["OBJ_REFETCHED_BYTES"] > 0]
    if not recs:
        return None
    again = sum(o["counters"]["OBJ_REFETCHED_BYTES"] for o in recs)
    total = sum(o["counters"]["OBJ_BYTES_READ"] for o in recs)
    names = {o["object"] for o in recs}
    statement = (f"{len(recs)} object(s) were fetched more than once: {again} of the {total} bytes read from them "
                 "were bytes already fetched in this window.")
    suggestion = ("Keep a local copy of what is read again: fsspec's caching (\"simplecache::s3://...\", "
                  "\"filecache::gs://...\"), a local cache directory, or the decoded samples in memory for the "
                  "next epoch. Model: each byte read again from local storage costs no request latency.")
    return _finding(ctx, steps, "object-refetch", statement, {"objects": len(recs), "refetched_bytes": again},
                    suggestion, [r for r in reqs if r["object"] in names])


def metadata_storm(ctx: Context, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    reqs = requests_of(ctx)
    meta = [r for r in reqs if r["op"] in METADATA_OPS]
    gets = sum(1 for r in reqs if r["op"] == "GET")
    if len(meta) < 2 * MIN_REQUESTS or len(meta) < gets:
        return None
    ops = {op: sum(1 for r in meta if r["op"] == op) for op in METADATA_OPS if any(r["op"] == op for r in meta)}
    statement = (f"{len(meta)} LIST/HEAD requests ({', '.join(f'{k} {v}' for k, v in ops.items())}) against "
                 f"{gets} GETs: finding the data costs more requests than reading it.")
    suggestion = ("A manifest: list the keys and their sizes once (a file beside the data, read at start) instead "
                  "of listing or asking each object's size per epoch and per worker (s3fs/gcsfs: one listing, "
                  "kept with use_listings_cache; fs.open(path, size=...) skips the HEAD). Model: every request "
                  "dropped saves its whole latency.")
    return _finding(ctx, steps, "object-metadata-storm", statement, {"metadata_requests": len(meta), "gets": gets,
                                                                     "ops": ops}, suggestion, meta)


def throttling(ctx: Context, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    reqs = requests_of(ctx)
    hit = [r for r in reqs if throttled(r)]
    if not hit:
        return None
    codes = sorted({int(r["status"]) for r in hit})
    statement = (f"{len(hit)} of {len(reqs)} object requests were answered {', '.join(map(str, codes))} "
                 "(S3 503 SlowDown, GCS 429): the store throttled this job.")
    suggestion = ("Spread the keys over more prefixes (S3 scales request rates per prefix), fewer and larger "
                  "requests, and back off instead of retrying at once (botocore: retries={'mode': 'adaptive'}; "
                  "gcsfs retries with backoff). Model: a throttled request costs its retry's wait on top of its own.")
    return _finding(ctx, steps, "object-throttled", statement, {"throttled": len(hit), "statuses": codes},
                    suggestion, hit)


RULES: dict[str, Callable[[Context, list[dict[str, Any]]], dict[str, Any] | None]] = {
    "object-small-requests": small_requests, "object-serial-requests": serial_requests,
    "object-refetch": refetch, "object-metadata-storm": metadata_storm, "object-throttled": throttling,
}
