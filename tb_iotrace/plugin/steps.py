"""The steps of a capture as the tab finds them, by the one rule of :mod:`tb_iotrace.stepwait`:
the host's step markers, else the first device plane's ``Steps`` line. Times are the model's
(ns on the capture's clock). The input waits are found by :mod:`.impl.timeseries`."""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..attribution import STEP_STATS
from ..xplane.columnar import MetadataFile, event_stats

MAX_STEP_STATS = 20_000   # step markers whose step_num is read back from the file (one read each)
STEP_NAME_RE = re.compile(r"^(train|test|predict|train_step|test_step|TrainStep|Profiled batch)(\b|$)"
                          r"|^ProfilerStep#\d+$")
# PyTorch names each step ``ProfilerStep#<n>``: one kind of marker whatever the number.
NUMBERED_STEP_RE = re.compile(r"^(ProfilerStep#)\d+$")

__all__ = ["MAX_STEP_STATS", "NUMBERED_STEP_RE", "STEP_NAME_RE", "capture_steps"]


def capture_steps(path: str, names: list[str], lanes: list[Any], planes: dict[int, Any],
                  md_files: dict[int, MetadataFile], device_steps: list[dict[str, Any]],
                  device_source: str) -> tuple[list[dict[str, Any]], str]:
    """(steps as ``{"start", "end", "name"}``, where they came from): of the host lanes'
    markers the name seen most often (train / test / predict TraceMe, Keras "Profiled batch",
    PyTorch ProfilerStep#N), non-overlapping, each named by its step number when the file
    has one; without host markers ``device_steps`` (a device plane's Steps line)."""
    steps: list[dict[str, Any]] = []
    marker = [i for i, n in enumerate(names) if STEP_NAME_RE.search(n)]
    found: dict[str, list[tuple[int, int, Any, int]]] = {}
    if marker:
        mset = np.array(marker, dtype=np.int32)
        for ln in lanes:
            if ln.group != "host":
                continue
            for k in np.flatnonzero(np.isin(ln.name_id, mset)).tolist():
                found.setdefault(NUMBERED_STEP_RE.sub(r"\1", names[int(ln.name_id[k])]), []).append(
                    (int(ln.start[k]), int(ln.end[k]), ln, k))
    if found:
        name, spans = max(found.items(), key=lambda kv: (len(kv[1]), kv[0]))
        last_end = None
        for s0, e0, ln, k in sorted(spans, key=lambda x: (x[0], x[1])):
            if last_end is None or s0 >= last_end:
                num = _step_num(path, planes, md_files, ln, k) if len(spans) <= MAX_STEP_STATS else None
                steps.append({"start": s0, "end": e0, "name": str(len(steps) if num is None else num)})
                last_end = e0
        return steps, f"host step markers ({name!r} events)"
    if device_steps:
        return device_steps, device_source
    return [], ""


def _step_num(path: str, planes: dict[int, Any], md_files: dict[int, MetadataFile], lane: Any,
              k: int) -> int | None:
    """The step number TensorFlow recorded on a step marker (``step_num``, ``iter_num``; Keras
    numbers a window's batches within the epoch from 0), None without one."""
    meta = planes.get(lane.plane_index)
    if meta is None or lane.fpos is None:
        return None
    try:
        stats = event_stats(path, meta, int(lane.fpos[k]), int(lane.flen[k]), md_files.get(lane.plane_index))
    except Exception:  # best effort: the step keeps its position as its name
        return None
    for key in STEP_STATS:
        v = stats.get(key)
        if isinstance(v, int) or (isinstance(v, str) and v.lstrip("-").isdigit()):
            return int(v)
    return None
