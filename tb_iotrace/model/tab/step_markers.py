"""The steps of a capture as the tab finds them, by the one rule of :mod:`tb_iotrace.model.stepwait`:
the host's step markers, else the first device plane's ``Steps`` line. Times are the model's
(ns on the capture's clock). The input waits are found by :mod:`tb_iotrace.plugin.endpoints.steps`."""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from tb_iotrace.model.stepwait import STEP_STATS, select_steps, step_kind
from tb_iotrace.model.columnar import MetadataFile, event_stats

MAX_STEP_STATS = 20_000   # step markers whose step_num is read back from the file (one read each)
STEP_NAME_RE = re.compile(r"^(train|test|predict|train_step|test_step|TrainStep|Profiled batch)(\b|$)"
                          r"|^ProfilerStep#\d+$")

__all__ = ["MAX_STEP_STATS", "STEP_NAME_RE", "capture_steps"]


def capture_steps(path: str, names: list[str], lanes: list[Any], planes: dict[int, Any],
                  md_files: dict[int, MetadataFile], device_steps: list[dict[str, Any]],
                  device_source: str) -> tuple[list[dict[str, Any]], str]:
    """(steps as ``{"start", "end", "name"}``, where they came from): of the host lanes'
    markers (train / test / predict TraceMe, Keras "Profiled batch", PyTorch ProfilerStep#N)
    the kind seen most often, non-overlapping (:func:`tb_iotrace.model.stepwait.select_steps`),
    each named by its step number when the file has one; without host markers
    ``device_steps`` (a device plane's Steps line)."""
    steps: list[dict[str, Any]] = []
    marker = [i for i, n in enumerate(names) if STEP_NAME_RE.search(n)]
    rows: list[tuple[int, int, str, tuple[Any, int]]] = []
    if marker:
        mset = np.array(marker, dtype=np.int32)
        for ln in lanes:
            if ln.group != "host":
                continue
            for k in np.flatnonzero(np.isin(ln.name_id, mset)).tolist():
                rows.append((int(ln.start[k]), int(ln.end[k]), names[int(ln.name_id[k])], (ln, k)))
    chosen = select_steps(rows)          # tb_iotrace.model.stepwait's rule, as the report's
    if chosen:
        for s0, e0, _, (ln, k) in chosen:
            num = _step_num(path, planes, md_files, ln, k) if len(chosen) <= MAX_STEP_STATS else None
            steps.append({"start": s0, "end": e0, "name": str(len(steps) if num is None else num)})
        return steps, f"host step markers ({step_kind(chosen[0][2])!r} events)"
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
