"""``/objects``: the object-storage requests of every host of the view, as the report gives
them (:func:`tb_iotrace.analysis.object_report.objects_doc`), the objects with most bytes
first (docs/objects.md)."""
from __future__ import annotations

from typing import Any

from tb_iotrace.analysis.object_report import objects_doc
from tb_iotrace.plugin.request_view import View
from tb_iotrace.store.objcolumns import ObjectColumnsError, checked, left_out, rows

TOP = 100        # objects per host in the answer (the report's --json has them all)


def objects_impl(view: View) -> dict[str, Any]:
    """``{"hosts": [{"host", "requests", "bytes_read", "ops", "ranged_gets", "errors",
    "throttled", "retries", "max_concurrency", "first_byte_ms_mean", "objects": [the top
    :data:`TOP` per-object records], "objects_left_out", "requests_left_out"}], "errors": [str]}``: hosts without
    requests are left out; a host whose stored requests are malformed is named in ``errors``."""
    hosts: list[dict[str, Any]] = []
    errors: list[str] = []
    for part in view.parts:
        info = part.capture.io_info or {}
        try:
            cols = checked(info.get("objects"))
            reqs = rows(cols)
        except ObjectColumnsError as exc:
            errors.append(f"{part.host}: {exc}")
            continue
        doc = objects_doc(reqs, left_out(cols))
        if doc is None:
            continue
        left = len(doc["objects"]) - TOP
        if left > 0:
            doc["objects"] = doc["objects"][:TOP]
            doc["objects_left_out"] += left
        hosts.append({"host": part.host, **doc})
    return {"hosts": hosts, "errors": errors}
