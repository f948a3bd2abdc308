"""The spans of a capture's events chosen by name: one walk over the planes and lines of an
XSpace that the analyses share (collectives, py_function kernels, the iterator's Python,
DataLoader fetches).

A plane is walked when ``planes`` accepts its name (by default the host plane only); on it,
every line but tb_iotrace's own I/O lines (:data:`~tb_iotrace.store.xplane.LINE_PREFIX`) and
empty ones. Each name predicate is asked once per distinct event name of a line, not once per
event. Times are the capture's (ps).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tb_iotrace.model.stepwait import merge
from tb_iotrace.store.xplane import HOST_PLANE, LINE_PREFIX, columns

Spans = tuple[np.ndarray, np.ndarray]
NamePredicate = Callable[[str], bool]

__all__ = ["NamePredicate", "Spans", "named_intervals", "named_spans", "on_host", "on_host_or_device"]


def on_host(plane_name: str) -> bool:
    """The host plane (``/host:CPU``) alone."""
    return plane_name == HOST_PLANE


def on_host_or_device(plane_name: str) -> bool:
    """Every host (``/host:*``) and device (``/device:*``) plane."""
    return plane_name.startswith("/host:") or plane_name.startswith("/device:")


def named_spans(space: Any, selects: Sequence[NamePredicate],
                planes: Callable[[str], bool] = on_host) -> list[Spans]:
    """For each predicate of ``selects``, the (starts, ends) of the events whose name it
    accepts, as they are (not sorted, not merged; int64), in one walk of ``space``; empty
    arrays where none is accepted or ``space`` has no planes."""
    found: list[tuple[list[np.ndarray], list[np.ndarray]]] = [([], []) for _ in selects]
    for p in getattr(space, "planes", None) or []:
        if not planes(p.name):
            continue
        pc = columns(p)
        for ln in pc.lines:
            if ln.name.startswith(LINE_PREFIX) or not len(ln):
                continue
            kinds, inverse = np.unique(pc.event_names(ln).astype(str), return_inverse=True)
            names = kinds.tolist()              # few names, many events
            for select, (ss, es) in zip(selects, found):
                hit = np.array([select(k) for k in names], bool)[inverse.reshape(-1)]
                if hit.any():
                    ss.append(ln.start_ps[hit])
                    es.append(ln.end_ps[hit])
    return [(np.concatenate(ss).astype(np.int64), np.concatenate(es).astype(np.int64)) if ss
            else (np.zeros(0, np.int64), np.zeros(0, np.int64)) for ss, es in found]


def named_intervals(space: Any, select: NamePredicate, planes: Callable[[str], bool] = on_host) -> Spans:
    """The union of the spans of the events ``select`` accepts (:func:`named_spans`), as sorted
    disjoint intervals: two that overlap, on one line or on two, count once."""
    return merge(*named_spans(space, [select], planes)[0])
