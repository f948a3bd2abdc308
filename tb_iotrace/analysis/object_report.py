"""A host's object-storage requests for the report: ``"objects"`` in ``report --json`` and the
"Objects" table of the text (docs/objects.md; drawn by :mod:`tb_iotrace.cli.report_text.storage_tables`). Pure.

    {"requests": int, "bytes_read": int, "ops": {op: count},
     "ranged_gets": int, "errors": int, "throttled": int, "retries": int,
     "max_concurrency": int,                 # the host's requests in flight at once, most
     "first_byte_ms_mean": float | None,
     "objects": [per-object records (tb_iotrace.model.object_counters)], "objects_left_out": int,
     "requests_left_out": int}              # made but not recorded, past the per-process cap
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from tb_iotrace.model.object_counters import failed, max_concurrency, object_records, throttled

__all__ = ["MAX_OBJECTS", "objects_doc"]

MAX_OBJECTS = 1000       # per host in the JSON (most bytes first); the rest counted


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
