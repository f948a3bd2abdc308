"""Storage that is not a file in the verdict: the object-storage requests of a capture
(:mod:`tb_iotrace.store.objcolumns`) on the capture's clock, the part of the input wait they
cover (``object_io`` in ``wait_breakdown``), and the change the verdict names when that part is
the largest (docs/diagnosis.md, docs/objects.md).

:func:`storage_intervals` is the one place that says which non-file storage activity counts:
object requests here; storage socket calls join it where the capture has them.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from tb_iotrace.model.stepwait import covered, input_wait, merge
from tb_iotrace.store.objcolumns import ObjectColumnsError, checked, rows
from tb_iotrace.analysis.context import Context

__all__ = ["Pattern", "blocked_share", "object_advice", "object_wait_note", "origin_ns", "requests_of", "small_gets",
           "storage_intervals"]

SMALL_REQUEST = 1 << 20          # a GET under this pays its first-byte latency more than its transfer
LATENCY_BOUND = 0.5              # first byte over request time, summed: the requests wait, not transfer
GOOD_REQUEST = 8 << 20           # what the advice asks a GET to carry (s3fs/gcsfs block_size)


def requests_of(ctx: Context) -> list[dict[str, Any]]:
    """The capture's object requests (rows; [] when none or malformed: a note says so)."""
    got = getattr(ctx, "_object_rows", None)
    if got is None:
        try:
            got = rows(checked(getattr(ctx.trace, "objects", None)))
        except ObjectColumnsError:
            got = []
        ctx._object_rows = got      # type: ignore[attr-defined]
    return got


def origin_ns(ctx: Context) -> int:
    """Where the capture's ps clock starts (epoch ns), as the attribution takes it."""
    start = ctx.profile_start_ns
    if start is None:
        tr = ctx.trace
        start = int(tr.start_ns.min()) if len(tr) else min((int(r["start_ns"]) for r in requests_of(ctx)), default=0)
    return int(start)


def _ivs(ctx: Context, reqs: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    if not reqs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    o = origin_ns(ctx)
    s = (np.array([int(r["start_ns"]) for r in reqs], np.int64) - o) * 1000
    e = (np.array([int(r["end_ns"]) for r in reqs], np.int64) - o) * 1000
    return merge(s, np.maximum(e, s))


def storage_intervals(ctx: Context, reqs: list[dict[str, Any]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Non-file storage in flight (merged, capture ps): object requests, any process."""
    return _ivs(ctx, requests_of(ctx) if reqs is None else reqs)


def blocked_share(ctx: Context, steps: list[dict[str, Any]], reqs: list[dict[str, Any]]) -> dict[str, Any]:
    """The impact of ``reqs``: the part of the input wait they were in flight, over the steps'
    time (as a finding's ``impact``: :mod:`tb_iotrace.analysis.impact`)."""
    if ctx.att is None:
        return {"step_share": None, "ms_per_step": None, "basis": "no timeline"}
    iw = input_wait(ctx.wait_iv, [s["start_ps"] for s in steps], [s["end_ps"] for s in steps])
    if iw.basis == "none" or iw.time <= 0:
        return {"step_share": None, "ms_per_step": None, "basis": "no input waits"}
    ws, we = ctx.wait_iv
    cost = int(covered(_ivs(ctx, reqs), ws, we).sum()) if len(ws) and reqs else 0
    per = cost / iw.count / 1e9 if iw.basis == "steps" and iw.count else None
    return {"step_share": min(cost / iw.time, 1.0), "ms_per_step": per, "basis": iw.basis}


class Pattern:
    """The small-GET pattern of a capture: the successful GETs under :data:`SMALL_REQUEST`, their
    first-byte share, and per object how many GETs read how many bytes."""

    def __init__(self, reqs: list[dict[str, Any]]) -> None:
        gets = [r for r in reqs if r["op"] == "GET" and 200 <= int(r["status"]) < 300]
        self.gets = gets
        self.small = [r for r in gets if int(r["bytes"]) < SMALL_REQUEST]
        dur = sum(max(0, int(r["end_ns"]) - int(r["start_ns"])) for r in self.small)
        first = sum(max(0, int(r["ttfb_ns"]) - int(r["start_ns"])) for r in self.small if r["ttfb_ns"])
        self.latency_share = first / dur if dur else 0.0
        self.first_byte_ms = first / len(self.small) / 1e6 if self.small else 0.0
        self.ranged = sum(1 for r in self.small if int(r["range_start"]) >= 0)
        per: dict[str, list[int]] = {}
        for r in gets:
            per.setdefault(r["object"], []).append(int(r["bytes"]))
        self.objects = len(per)
        self.gets_per_object = len(gets) / len(per) if per else 0.0
        # the largest object read (objects read across a window's edge are read in part)
        self.object_bytes = max(sum(v) for v in per.values()) if per else 0
        self.median_bytes = int(np.median([int(r["bytes"]) for r in self.small])) if self.small else 0
        services = {r["service"] for r in self.small}
        clients = {r["client"] for r in self.small}
        self.service = services.pop() if len(services) == 1 else ""
        self.client = clients.pop() if len(clients) == 1 else ""

    @property
    def latency_bound(self) -> bool:
        return len(self.small) >= 8 and len(self.small) >= 0.5 * len(self.gets) and self.latency_share >= LATENCY_BOUND

    def target_gets(self) -> int:
        """GETs per object with requests of :data:`GOOD_REQUEST` (at least one)."""
        return max(1, math.ceil(self.object_bytes / GOOD_REQUEST))

    def change(self) -> str:
        """Fewer, larger requests, in the client's own terms."""
        size = int(min(max(self.object_bytes, 1), GOOD_REQUEST))
        block = f"{size // 1024} KiB" if size < (1 << 20) else f"{size / (1 << 20):.0f} MiB"
        if self.client == "aiohttp" and self.service in ("s3", "gs"):
            fs = "s3fs" if self.service == "s3" else "gcsfs"
            return (f"{fs}: fewer, larger GETs: fs.open(path, block_size={size} ({block}), "
                    f"cache_type=\"readahead\") or {fs}.{'S3' if fs == 's3fs' else 'GCS'}FileSystem("
                    f"default_block_size={size}, default_cache_type=\"readahead\"), or fs.cat_file(path) "
                    "for the whole object")
        if self.client == "urllib3" and self.service == "s3":
            return "boto3: one GetObject per object (no Range), or ranges of 8 MiB and more"
        if self.client == "urllib3" and self.service == "gs":
            return "google-cloud-storage: blob.download_as_bytes() of the whole object, or ranges of 8 MiB and more"
        return "fewer, larger requests: whole objects, or ranges of 8 MiB and more"


def small_gets(ctx: Context) -> Pattern:
    return Pattern(requests_of(ctx))


def object_advice(ctx: Context, s: float, part: float) -> dict[str, Any] | None:
    """The verdict's change when object requests are the largest part of the wait (None: the
    verdict's own applies), by a stated model: a GET costs its first-byte latency plus its
    transfer; reading an object in fewer GETs saves the latency of the ones dropped."""
    p = small_gets(ctx)
    if not p.latency_bound or p.gets_per_object <= 0:
        return None
    after = min(p.target_gets(), p.gets_per_object)
    saved = p.latency_share * (1 - after / p.gets_per_object)
    if p.object_bytes < (4 << 20):
        change = p.change() + "; larger shards (objects of 100 MiB and more, WebDataset/MosaicML-style)"
    else:
        change = p.change()
    cut = s * part * saved
    model = (f"a GET costs its first-byte latency ({p.first_byte_ms:.1f} ms on average here, "
             f"{100 * p.latency_share:.0f}% of the small GETs' time) plus its transfer: {p.gets_per_object:.1f} GETs "
             f"per object -> {after} saves the latency of the others, so the object wait falls by "
             f"{100 * saved:.0f}% and the step time by input_wait_share ({100 * s:.0f}%) x object_io "
             f"({100 * part:.0f}%) x that")
    return {"change": change, "expected_step_time_change": -cut, "model": model,
            "advice": f"{change}: expected step time -{100 * cut:.0f}% (the object wait's latency removed, "
                      f"up to {100 * s * part:.0f}%)."}


def object_wait_note(v: dict[str, Any]) -> str:
    """What the input-bound finding's statement adds when object requests covered part of the
    wait (its own words name file reads only): "" when they covered none."""
    part = (v.get("wait_breakdown") or {}).get("object_io") or 0.0
    if part <= 0.0:
        return ""
    return (f" Object-storage requests (S3, GCS, HTTP) were in flight during {100 * part:.0f}% of the wait: "
            "that part is waiting on storage, not decoding.")
