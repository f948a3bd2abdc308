"""A tab capture's object-storage requests on its own clock (ns since its profile start, as
its lanes and I/O table): for ``/steps`` and the object lanes of the timeline. Rows are those
of :mod:`tb_iotrace.store.objcolumns` (names already redacted when recorded)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tb_iotrace.model.tab.columns import TabCapture
from tb_iotrace.store.objcolumns import ObjectColumnsError, checked, rows

__all__ = ["CaptureObjects", "capture_objects", "extent_with_objects"]


@dataclass
class CaptureObjects:
    """The requests of one capture, sorted by start (ns, capture clock)."""

    start: np.ndarray
    end: np.ndarray
    bytes: np.ndarray
    rows: list[dict[str, Any]]

    def __len__(self) -> int:
        return len(self.rows)


def _empty() -> CaptureObjects:
    z = np.zeros(0, np.int64)
    return CaptureObjects(z, z, z, [])


def capture_objects(cap: TabCapture) -> CaptureObjects:
    """The capture's requests (none when it has none, its stored columns are malformed (/objects
    names those) or it has no profile start to put them on its clock). Cached on the capture."""
    got = cap.cache.get("objects")
    if got is None:
        try:
            reqs = rows(checked((cap.io_info or {}).get("objects")))
        except ObjectColumnsError:
            reqs = []
        if not reqs or cap.profile_start_ns is None:
            got = _empty()
        else:
            t0 = int(cap.profile_start_ns)
            s = np.array([int(r["start_ns"]) for r in reqs], np.int64) - t0
            e = np.maximum(np.array([int(r["end_ns"]) for r in reqs], np.int64) - t0, s)
            o = np.argsort(s, kind="stable")
            got = CaptureObjects(s[o], e[o], np.array([max(int(r["bytes"]), 0) for r in reqs], np.int64)[o],
                                 [reqs[i] for i in o.tolist()])
        cap.cache["objects"] = got
    return got


def extent_with_objects(cap: TabCapture) -> tuple[int, int]:
    """The capture's extent widened to its object requests (a job whose storage is all objects
    has few other events to span its time)."""
    lo, hi = cap.extent
    objs = capture_objects(cap)
    if len(objs):
        lo, hi = min(lo, int(objs.start[0])), max(hi, int(objs.end.max()))
    return lo, hi
