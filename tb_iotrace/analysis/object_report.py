"""A host's object-storage requests for the report: ``"objects"`` in ``report --json`` and the
"Objects" table of the text (docs/objects.md). Pure.

    {"requests": int, "bytes_read": int, "ops": {op: count},
     "ranged_gets": int, "errors": int, "throttled": int, "retries": int,
     "max_concurrency": int,                 # the host's requests in flight at once, most
     "first_byte_ms_mean": float | None,
     "objects": [per-object records (tb_iotrace.model.object_counters)], "objects_left_out": int,
     "requests_left_out": int}              # made but not recorded, past the per-process cap
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from tb_iotrace.base.objreqs import MAX_REQUESTS
from tb_iotrace.model.object_counters import failed, max_concurrency, object_records, throttled
from tb_iotrace.analysis.text_report import human_bytes

__all__ = ["MAX_OBJECTS", "objects_doc", "render_objects"]

MAX_OBJECTS = 1000       # per host in the JSON (most bytes first); the rest counted
SHOWN = 10


def objects_doc(reqs: list[dict[str, Any]], left_out: int = 0) -> dict[str, Any] | None:
    """The report's ``objects`` entry for one host's requests and the number it left out past
    the cap (None when it recorded none and left none out)."""
    if not reqs and not left_out:
        return None
    recs = object_records(reqs)
    first = [int(r["ttfb_ns"]) - int(r["start_ns"]) for r in reqs if r["ttfb_ns"]]
    c = [r["counters"] for r in recs]
    return {"requests": len(reqs), "bytes_read": sum(x["OBJ_BYTES_READ"] for x in c),
            "ops": dict(sorted(Counter(r["op"] for r in reqs).items())),
            "ranged_gets": sum(x["OBJ_RANGED_GETS"] for x in c),
            "errors": sum(1 for r in reqs if failed(r)), "throttled": sum(1 for r in reqs if throttled(r)),
            "retries": sum(x["OBJ_RETRIES"] for x in c),
            "max_concurrency": max_concurrency(reqs),
            "first_byte_ms_mean": (sum(first) / len(first) / 1e6) if first else None,
            "objects": recs[:MAX_OBJECTS], "objects_left_out": max(0, len(recs) - MAX_OBJECTS),
            "requests_left_out": int(left_out)}


def render_objects(doc: Mapping[str, Any]) -> str:
    """The text's "Objects" table: the totals, then the objects with the most bytes."""
    ops = ", ".join(f"{k} {v}" for k, v in doc["ops"].items())
    fb = doc.get("first_byte_ms_mean")
    lines = [f"Objects: {doc['requests']} requests ({ops}), {human_bytes(doc['bytes_read'])} read, "
             f"{doc['ranged_gets']} ranged GETs, at most {doc['max_concurrency']} in flight"
             + (f", first byte {fb:.1f} ms on average" if fb is not None else "")
             + (f", {doc['errors']} errors ({doc['throttled']} throttled, {doc['retries']} retries)"
                if doc["errors"] else ""),
             f"  {'requests':>8} {'GETs':>6} {'ranged':>6} {'bytes read':>11} {'refetched':>10} "
             f"{'1st byte':>9} {'max at once':>11}  object"]
    objs = doc["objects"]
    for o in objs[:SHOWN]:
        c, f = o["counters"], o["fcounters"]
        lines.append(f"  {c['OBJ_REQUESTS']:>8} {c['OBJ_GETS']:>6} {c['OBJ_RANGED_GETS']:>6} "
                     f"{human_bytes(c['OBJ_BYTES_READ']):>11} {human_bytes(c['OBJ_REFETCHED_BYTES']):>10} "
                     f"{1e3 * f['OBJ_F_FIRST_BYTE_MEAN']:>7.1f}ms {c['OBJ_MAX_CONCURRENCY']:>11}  {o['object']}")
    lost = int(doc.get("requests_left_out") or 0)
    if lost:
        lines.append(f"  {lost} more requests were made but not recorded (past the cap of "
                     f"{MAX_REQUESTS:,} per process): the counts above leave them out")
    more = len(objs) - SHOWN + int(doc.get("objects_left_out") or 0)
    if more > 0:
        lines.append(f"  ... {more} more objects (--json for them)")
    lines.append("")
    return "\n".join(lines)
