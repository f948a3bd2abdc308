"""A run's totals over its processes (hosts), whole and partial kept apart.

A partial process (a whole-run record that is a periodic flush: the process was killed, or
still running when the job ended) counts only up to its last flush; adding it to the whole
processes would present a part as a whole. The run's totals are therefore two sums: the whole
processes', and the partial ones' (each partial process named with the time its counts end).

``totals(hosts)`` takes the report's host documents (their ``"totals"``, ``"partial"``,
``"process"``) and gives::

    {"whole": {"processes": int, "modules": {MODULE: {"files", "bytes_read", "bytes_written",
                                                      "reads", "writes", "opens"}}},
     "partial": {"processes": int, "modules": {...},
                 "hosts": [{"host": str, "counted_until_ns": int|null, "missing": str}]}}
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FIELDS = ("files", "bytes_read", "bytes_written", "reads", "writes", "opens")
MISSING = ("everything after its last flush (the process left no final record: killed, still running "
           "when the job ended, or its last write failed)")


def _add(acc: dict[str, dict[str, int]], host_totals: Mapping[str, Any]) -> None:
    for module, t in host_totals.items():
        o = acc.setdefault(module, dict.fromkeys(FIELDS, 0))
        for k in FIELDS:
            o[k] += int(t.get(k) or 0)


def totals(hosts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    whole: dict[str, Any] = {"processes": 0, "modules": {}}
    part: dict[str, Any] = {"processes": 0, "modules": {}, "hosts": []}
    for h in hosts:
        side = part if h.get("partial") else whole
        side["processes"] += 1
        _add(side["modules"], h.get("totals") or {})
        if h.get("partial"):
            proc = h.get("process") or {}
            end = proc.get("end_ns")
            part["hosts"].append({"host": h.get("host"), "counted_until_ns": int(end) if end else None,
                                  "missing": MISSING})
    return {"whole": whole, "partial": part}
