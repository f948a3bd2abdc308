"""Several stored traces (the columns :func:`tb_iotrace.store.runrecord.trace_arrays` makes) as one.

A whole-run record's periodic flush carries the trace of every window flushed so far: each
window's columns name operations and files by index into its own ``op_names`` and ``paths``;
the merged trace has one table of each and every row's ids renumbered into them, rows in the
windows' order."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

ID_TABLES = (("op_id", "op_names"), ("file_id", "paths"))


def _renumber(ids: np.ndarray, names: np.ndarray, index: dict[str, int]) -> np.ndarray:
    """``ids`` (into ``names``; -1 = none) as ids into the growing table ``index``."""
    lut = np.array([index.setdefault(str(n), len(index)) for n in names.tolist()] + [-1], dtype=np.int64)
    return lut[np.where(ids < 0, len(names), ids)].astype(np.int32) if len(ids) else np.zeros(0, np.int32)


def merge(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray] | None:
    """One trace of ``parts`` in order (None when there is none)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    if len(parts) == 1:
        return dict(parts[0])
    out: dict[str, np.ndarray] = {}
    for ids_key, names_key in ID_TABLES:
        index: dict[str, int] = {}
        out[ids_key] = np.concatenate([_renumber(np.asarray(p[ids_key]), np.asarray(p[names_key]), index)
                                       for p in parts])
        out[names_key] = np.array(list(index), dtype=object).astype(str)
    for key in parts[0]:
        if key not in out:
            out[key] = np.concatenate([np.asarray(p[key]) for p in parts])
    return out
