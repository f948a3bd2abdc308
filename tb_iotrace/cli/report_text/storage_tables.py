"""The report's tables of storage beyond files: a host's object-storage requests
(:mod:`tb_iotrace.analysis.object_report`'s ``objects``) and the storage endpoints its process
connected to (:mod:`tb_iotrace.model.endpoints`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tb_iotrace.base.objreqs import MAX_REQUESTS
from tb_iotrace.base.safenames import printable
from tb_iotrace.base.sizes import human_bytes

OBJECTS_SHOWN = 10
ENDPOINTS_SHOWN = 20


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
    for o in objs[:OBJECTS_SHOWN]:
        c, f = o["counters"], o["fcounters"]
        lines.append(f"  {c['OBJ_REQUESTS']:>8} {c['OBJ_GETS']:>6} {c['OBJ_RANGED_GETS']:>6} "
                     f"{human_bytes(c['OBJ_BYTES_READ']):>11} {human_bytes(c['OBJ_REFETCHED_BYTES']):>10} "
                     f"{1e3 * f['OBJ_F_FIRST_BYTE_MEAN']:>7.1f}ms {c['OBJ_MAX_CONCURRENCY']:>11}  {o['object']}")
    lost = int(doc.get("requests_left_out") or 0)
    if lost:
        lines.append(f"  {lost} more requests were made but not recorded (past the cap of "
                     f"{MAX_REQUESTS:,} per process): the counts above leave them out")
    more = len(objs) - OBJECTS_SHOWN + int(doc.get("objects_left_out") or 0)
    if more > 0:
        lines.append(f"  ... {more} more objects (--json for them)")
    lines.append("")
    return "\n".join(lines)


def render_endpoints(endpoints: Sequence[Mapping[str, Any]]) -> str:
    """The text table (the report's ``"endpoints"`` entries, most bytes in first)."""
    width = max([len("endpoint")] + [len(printable(str(e["endpoint"]))) for e in endpoints[:ENDPOINTS_SHOWN]])
    out = ["Storage endpoints (network connections the process opened; the socket calls on them)",
           f"  {'endpoint':<{width}} {'conns':>5} {'calls in':>8} {'bytes in':>10} {'s in':>8} "
           f"{'calls out':>9} {'bytes out':>10} {'s out':>8}"]
    for e in endpoints[:ENDPOINTS_SHOWN]:
        out.append(f"  {printable(str(e['endpoint'])):<{width}} {e['connections']:>5} {e['calls_in']:>8} "
                   f"{human_bytes(e['bytes_in']):>10} {e['time_in_s']:>8.4f} {e['calls_out']:>9} "
                   f"{human_bytes(e['bytes_out']):>10} {e['time_out_s']:>8.4f}")
    if len(endpoints) > ENDPOINTS_SHOWN:
        out.append(f"  ... {len(endpoints) - ENDPOINTS_SHOWN} more endpoints (--json for all)")
    out.append("")
    return "\n".join(out)
