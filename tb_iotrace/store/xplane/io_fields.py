"""What the stats of an I/O event mean, and what a left-out one stands for: the one rule that
turns an I/O line's decoded events into the calls' columns, for both readers of the events
(the protobuf one, :mod:`tb_iotrace.store.xplane.read_io`, for an XSpace in memory; the
columnar one, :mod:`tb_iotrace.model.io_events`, for a file) and the writer's choice of what
to leave out (:mod:`tb_iotrace.store.xplane.event_rows`).

The "absent" convention, one for every reader:

- while decoding, a stat an event does not carry reads as :data:`STAT_ABSENT` of its name:
  path ref 0, offset -1, fd -1, errno 0, and :data:`ABSENT` for the two byte counts;
- the decoded columns hold no :data:`ABSENT`: a call is its event kind's (format /2: the
  ``event_kinds`` entry of its XEventMetadata name gives call, path, fd and both byte
  counts), else (format /1, or a foreign event) the metadata name is the call, the path and
  fd are the event's own, bytes_returned is 0 when left out and bytes_requested ==
  bytes_returned when left out;
- a call without a path has path "" (code -1 in :class:`IoColumns`), without an offset or fd
  -1, without an error errno 0; an event whose metadata id is unknown has call "".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from tb_iotrace.store.xplane.schema import EVENT_STATS, STAT_ERRNO, STAT_FD, STAT_OFFSET, STAT_PATH, STAT_REQUESTED, STAT_RETURNED, parse_kind

# A left-out byte count while decoding (never in a decoded column).
ABSENT = -(1 << 63)
# Each event stat's value where an event leaves it out.
STAT_ABSENT: dict[str, int] = {STAT_PATH: 0, STAT_OFFSET: -1, STAT_REQUESTED: ABSENT, STAT_RETURNED: ABSENT,
                               STAT_FD: -1, STAT_ERRNO: 0}
# The same in EVENT_STATS order (the columnar decoder's ``stat_defaults``).
STAT_DEFAULTS: tuple[int, ...] = tuple(STAT_ABSENT[name] for name in EVENT_STATS)
UNKNOWN_CALL = ""   # the call of an event whose metadata id the plane does not have


def event_kind(raw: Any, text: str, exact_ops: Mapping[str, str]) -> tuple[str, str, int, int, int]:
    """(call, path, fd, bytes_requested, bytes_returned) of the events of XEventMetadata
    ``text``: its ``event_kinds`` entry ``raw`` (format /2), else the name is the call
    (format /1: path "", fd -1 and the byte counts :data:`ABSENT`, the event's own)."""
    if raw is None:
        return exact_ops.get(text, text), "", -1, ABSENT, ABSENT
    return parse_kind(raw)


def fill_bytes(requested: np.ndarray, returned: np.ndarray, kind_req: np.ndarray | None,
               kind_ret: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """bytes_requested/returned with the absent ones (:data:`ABSENT`) filled in, in place:
    from the event's kind where it has one (``kind_*`` per event, ABSENT where none), else
    returned 0 and requested == returned."""
    for col, kind in ((returned, kind_ret), (requested, kind_req)):
        absent = col == ABSENT
        if absent.any():
            if kind is not None:
                col[absent] = kind[absent]
                absent &= col == ABSENT
            col[absent] = 0 if col is returned else returned[absent]
    return requested, returned


def factorize(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct ids, code of each) like np.unique(return_inverse=True), in O(n) with
    a dense table when the ids are small non-negative integers (metadata ids are)."""
    if len(ids) == 0:
        return ids[:0], np.zeros(0, dtype=np.int64)
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi > 50_000_000:
        uniq, inv = np.unique(ids, return_inverse=True)
        return uniq, inv.reshape(-1)
    present = np.zeros(hi + 1, dtype=bool)
    present[ids] = True
    uniq = np.flatnonzero(present)
    code = np.cumsum(present, dtype=np.int64) - 1
    return uniq.astype(ids.dtype), code[ids]


@dataclass
class IoColumns:
    """The values of I/O calls, one row per call; ``op`` and ``path`` as codes into the
    ``ops``/``paths`` tables (path -1: none)."""

    op: np.ndarray          # int16 into ops
    path: np.ndarray        # int32 into paths, -1: no path
    offset: np.ndarray      # int64, -1: none
    requested: np.ndarray   # int64
    returned: np.ndarray    # int64
    fd: np.ndarray          # int32, -1: none
    errno: np.ndarray       # int32, 0: success
    ops: list[str]
    paths: list[str]

    def op_text(self) -> np.ndarray:
        """The calls as an object array of str."""
        table = np.empty(len(self.ops), dtype=object)
        table[:] = self.ops
        return table[self.op]

    def path_text(self) -> np.ndarray:
        """The paths as an object array of str ("" where none)."""
        table = np.empty(len(self.paths) + 1, dtype=object)
        table[:-1] = self.paths
        table[-1] = ""
        return table[self.path]


def resolve_io_columns(metadata_id: np.ndarray, stat: Callable[[str], np.ndarray],
                       md_ids: np.ndarray, md_names: Sequence[str], stat_metadata: Any,
                       info: Mapping[str, Any]) -> IoColumns:
    """The calls' columns from their events: ``metadata_id`` per event, ``stat(name)`` the
    event stat ``name`` per event (int64, :data:`STAT_ABSENT` where left out; each asked for
    once, so a caller may drop its copy as it hands it over), ``md_ids`` (ascending) and
    ``md_names`` the plane's XEventMetadata names, ``stat_metadata`` its XStatMetadata map
    (path refs) and ``info`` the ``tb_iotrace.io`` record. The module docstring says what a
    left-out stat stands for."""
    exact_ops = info.get("exact_ops", {}) or {}
    exact_paths = info.get("exact_paths", {}) or {}
    # Kinds looked up for the metadata ids present only, column by column (a million-event
    # capture has ~50,000 kinds: a loop of numpy item assignments took ~0.15 s).
    ids, md_code = factorize(metadata_id)
    raw_kinds = info.get("event_kinds") or {}
    at = np.minimum(np.searchsorted(md_ids, ids), max(len(md_ids) - 1, 0))
    found = (md_ids[at] == ids) if len(md_ids) else np.zeros(len(ids), dtype=bool)
    texts = [md_names[i] if hit else None for i, hit in zip(at.tolist(), found.tolist())]
    rows = [event_kind(raw_kinds.get(t), t, exact_ops) if t is not None else (UNKNOWN_CALL, "", -1, ABSENT, ABSENT)
            for t in texts]
    op_index: dict[str, int] = {}
    path_index: dict[str, int] = {}
    md_op = np.array([op_index.setdefault(r[0], len(op_index)) for r in rows], dtype=np.int16)
    md_path = np.array([path_index.setdefault(r[1], len(path_index)) if r[1] else -1 for r in rows],
                       dtype=np.int32)
    md_fd = np.array([r[2] for r in rows], dtype=np.int32)
    md_req = np.array([r[3] for r in rows], dtype=np.int64)
    md_ret = np.array([r[4] for r in rows], dtype=np.int64)
    del rows, texts
    # A path ref names the path (format /1, or a path the kind does not have); ref 0, or a
    # ref to a missing or empty name, leaves the kind's.
    ref_ids, ref_code = factorize(stat(STAT_PATH))
    ref_path = np.full(len(ref_ids), -1, dtype=np.int32)
    for j, k in enumerate(ref_ids.tolist()):
        md = stat_metadata.get(k) if k else None
        text = md.name if md is not None else ""
        text = exact_paths.get(text, text)
        ref_path[j] = path_index.setdefault(text, len(path_index)) if text else -1
    op_code = md_op[md_code]
    path_code = md_path[md_code]
    if (ref_path != -1).any():
        by_ref = ref_path[ref_code]
        path_code = np.where(by_ref != -1, by_ref, path_code)
    del ref_code
    fd = stat(STAT_FD).astype(np.int32)
    stat_fd = fd != -1
    fd = np.where(stat_fd, fd, md_fd[md_code]) if stat_fd.any() else md_fd[md_code]
    has_kind = bool((md_req != ABSENT).any())
    requested, returned = fill_bytes(stat(STAT_REQUESTED), stat(STAT_RETURNED),
                                     md_req[md_code] if has_kind else None,
                                     md_ret[md_code] if has_kind else None)
    return IoColumns(op=op_code, path=path_code, offset=stat(STAT_OFFSET), requested=requested,
                     returned=returned, fd=fd, errno=stat(STAT_ERRNO).astype(np.int32),
                     ops=list(op_index), paths=list(path_index))


__all__ = ["ABSENT", "STAT_ABSENT", "STAT_DEFAULTS", "UNKNOWN_CALL", "IoColumns", "event_kind", "factorize",
           "fill_bytes", "resolve_io_columns"]
