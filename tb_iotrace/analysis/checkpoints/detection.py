"""Checkpoint phases: each save and load of a run found in its I/O calls, with what it cost
the training loop, and the findings about them (docs/checkpoints.md gives the rule).

Two ways to know a checkpoint, the first that applies wins for a stretch of time:

- what the job called: ``tb_iotrace::checkpoint`` spans on the host timeline (the PyTorch glue
  wraps ``torch.save``/``torch.load``, :mod:`tb_iotrace.recording.checkpoint_hooks`), stats
  ``kind`` (save/load) and ``path``; the phase is the span, extended by the calls on its files
  that follow it closely (the job's own fsync, rename, close);
- the files' shape, for everything else: per file, its writes split into bursts (a gap over
  :data:`GAP_NS` ends one); a burst is a save when it moves at least :data:`MIN_BYTES`, starts
  at the file's beginning (a new or truncated file) and is followed by fsync/fdatasync or a
  rename of the file, or the file's name says checkpoint (:data:`NAME_HINT`). Read bursts of
  at least :data:`MIN_BYTES` of a file saved in the run or named like a checkpoint are loads.
  Bursts of several files that follow each other within :data:`GROUP_NS` are one phase.

``blocking_ns``: how long the training loop could not run during the phase: the phase's time
on the training thread (from its first to its last call there, or the whole span for a hook
span made there); a phase wholly on another thread blocks the loop only where no step ran
within the training time (steps known). The training thread: the one whose host line holds the
steps (even with no I/O call of its own); without steps, the process's main thread (PyTorch's
main process's first thread; a whole-run record's, whose id is its pid: process ids wrap, and a
writer thread's id may be lower; else the lowest thread id). The findings' blocked time is clipped
to the training time; a finding with no impact on training is not made.
"""
from __future__ import annotations

import bisect
import re
from typing import Any

import numpy as np

from tb_iotrace.analysis.checkpoints.spans import call_spans, hook_spans
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.intervals import clip, merge

MiB = 1 << 20
MIN_BYTES = 1 * MiB           # a burst moving less is not a checkpoint by shape
GAP_NS = 500_000_000          # a pause longer than this ends a file's burst
GROUP_NS = 50_000_000         # files whose bursts follow each other this closely are one phase
TAIL_NS = 2_000_000_000       # calls on a hook span's files this soon after it belong to it
NAME_HINT = re.compile(r"(ckpt|checkpoint|\.pth?$|\.pt\.tmp|\.safetensors$|\.h5$|\.keras$|\.index$"
                       r"|\.data-\d+-of-\d+$|\.distcp$|/\.metadata(\.tmp)?$|optimizer|model_state)", re.I)
RENAME_OPS = ("rename", "renameat", "renameat2")

__all__ = ["checkpoint_phases", "public", "train_mask"]


def _bursts(t0: np.ndarray, t1: np.ndarray, offset: np.ndarray, nbytes: np.ndarray | None = None) -> list[tuple[int, int]]:
    """(first, last+1) index ranges of one file's sorted calls (capture-clock ps) split where a
    gap exceeds GAP_NS or the file is started again from offset 0: a call at offset 0 after one
    at a later offset, or, given the calls' byte counts (writes: the file rewritten), after one
    that reached past 0 (a file rewritten whole by one write each time). Reads are not split
    so: a reader goes back to the start of a file it is reading (a zip's header after its
    directory)."""
    if not len(t0):
        return []
    run_end = np.maximum.accumulate(t1)
    reach = offset[:-1] if nbytes is None else offset[:-1] + np.clip(nbytes[:-1], 0, None)
    again = (offset[1:] == 0) & (offset[:-1] >= 0) & (reach > 0)
    cut = np.flatnonzero((t0[1:] - run_end[:-1] > GAP_NS * 1000) | again) + 1
    edges = [0, *cut.tolist(), len(t0)]
    return list(zip(edges[:-1], edges[1:]))


def _main_tid(ctx: Context) -> int | None:
    tids = ctx.trace.tid
    if not len(tids):
        return None
    if ctx.torch is not None and ctx.torch.main_tids:
        return min(ctx.torch.main_tids)
    pid = getattr(ctx.trace, "pid", None)
    return int(pid) if pid is not None else int(tids.min())


def train_mask(ctx: Context) -> np.ndarray:
    """Per row: on the training thread (the steps' thread, else the main thread). When a line
    holds the steps, that is the training thread even if it made no I/O call (TF's loop often
    makes none: tf.data's threads read): the lowest thread id is then some other thread, a
    background saver's for one."""
    if ctx.train_rows.any() or ctx.step_line_ids:
        return ctx.train_rows
    main = _main_tid(ctx)
    return ctx.trace.tid == main if main is not None else np.zeros(len(ctx.trace), bool)


def _steps_iv(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    steps = ctx.att.steps if ctx.att is not None else []
    return (np.array([s.start_ps for s in steps], np.int64), np.array([s.end_ps for s in steps], np.int64))


def _unstepped(ctx: Context, lo: int, hi: int) -> list[tuple[int, int]]:
    """The stretches of [lo, hi] within the training time (the first step's start to the last
    step's end) when no step ran; none when steps are unknown (nothing says the loop waited).
    Before the first step and after the last the job does other things (start-up, warming up,
    the end): a background save then stops no training."""
    ss, se = _steps_iv(ctx)
    if not len(ss):
        return []
    lo, hi = max(lo, int(ss.min())), min(hi, int(se.max()))
    if hi <= lo:
        return []
    ms, me = clip(merge(ss, se), lo, hi)
    edges_lo = [lo, *me.tolist()]
    edges_hi = [*ms.tolist(), hi]
    return [(a, b) for a, b in zip(edges_lo, edges_hi) if b > a]


def _phase(ctx: Context, kind: str, rows: np.ndarray, lo: int, hi: int, source: str,
           span_on_train: bool | None, train: np.ndarray) -> dict[str, Any]:
    """One phase from its rows (data calls on its files, capture-clock ps [lo, hi])."""
    tr = ctx.trace
    data = rows[(ctx.kind[rows] == kind.replace("save", "write").replace("load", "read")) & ~ctx.is_sync[rows]]
    data_b = np.clip(tr.returned[data], 0, None)
    per_file: dict[str, int] = {}
    for p, b in zip(tr.path[data].tolist(), data_b.tolist()):
        per_file[p] = per_file.get(p, 0) + int(b)
    sync = rows[ctx.is_sync[rows]]
    ren = rows[np.isin(tr.op[rows], RENAME_OPS)]
    mine = rows[train[rows]]
    if span_on_train is not None:
        block = [(lo, hi)] if span_on_train else _unstepped(ctx, lo, hi)
    elif len(mine):
        block = [(int(ctx.s_ps[mine].min()), int(ctx.e_ps[mine].max()))]
    else:
        block = _unstepped(ctx, lo, hi)
    blocking = sum(b - a for a, b in block)
    off = int(tr.start_ns[0]) * 1000 - int(ctx.s_ps[0]) if len(tr) else 0     # capture clock -> epoch ps
    paths = sorted(per_file, key=lambda p: -per_file[p])
    return {"kind": kind, "start_ns": (lo + off) // 1000, "end_ns": (hi + off) // 1000,
            "files": len(per_file), "bytes": int(data_b.sum()),
            "io_time_s": float(ctx.dur_s[data].sum()), "fsync_time_s": float(ctx.dur_s[sync].sum()),
            "rename_time_s": float(ctx.dur_s[ren].sum()), "blocking_ns": int(blocking) // 1000,
            "path": paths[0] if paths else "", "paths": paths[:20], "calls": int(len(data)),
            "median_call_bytes": float(np.median(data_b)) if len(data_b) else 0.0,
            "source": source, "background_ns": 0, "_rows": rows, "_block": block, "_lo": lo}


class _Index:
    """The data calls that succeeded, per file in time order and all in time order, so a phase
    looks up its rows by binary search (a capture may hold millions of calls)."""

    def __init__(self, ctx: Context) -> None:
        rows = np.flatnonzero(ctx.data & ctx.ok)
        self.by_file = rows[np.lexsort((ctx.s_ps[rows], ctx.path_code[rows]))]
        codes = ctx.path_code[self.by_file]
        n = len(ctx.paths)
        self.first = np.searchsorted(codes, np.arange(n + 1))
        self.by_time = rows[np.argsort(ctx.s_ps[rows], kind="stable")]
        self.s_ps = ctx.s_ps

    def of_file(self, code: int, lo: int | None = None, hi: int | None = None) -> np.ndarray:
        """The file's calls (time order) starting in [lo, hi]."""
        fr = self.by_file[self.first[code]:self.first[code + 1]]
        if lo is None or hi is None:
            return fr
        t = self.s_ps[fr]
        return fr[np.searchsorted(t, lo, "left"):np.searchsorted(t, hi, "right")]

    def between(self, lo: int, hi: int) -> np.ndarray:
        t = self.s_ps[self.by_time]
        return self.by_time[np.searchsorted(t, lo, "left"):np.searchsorted(t, hi, "right")]


def _shape_candidates(ctx: Context, ix: _Index, kind: str, saved: set[str]) -> list[tuple[int, int, int, int]]:
    """(start_ps, end_ps, path code, thread) of the bursts that look like a save (or a load)."""
    tr = ctx.trace
    rows = ctx.write_rows if kind == "save" else ctx.read_rows
    rows = rows[~ctx.is_sync[rows]] if kind == "save" else rows
    if not len(rows):
        return []
    order = np.lexsort((ctx.s_ps[rows], ctx.path_code[rows]))
    rows = rows[order]
    codes = ctx.path_code[rows]
    heads = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    bounds = [*heads.tolist(), len(rows)]
    sync_like = ctx.is_sync | np.isin(tr.op, RENAME_OPS)
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        fr = rows[a:b]
        code = int(codes[a])
        path = ctx.paths[code]
        named = bool(NAME_HINT.search(path))
        if kind == "load" and not (named or path in saved):
            continue
        for i, j in _bursts(ctx.s_ps[fr], ctx.e_ps[fr], tr.offset[fr], tr.returned[fr] if kind == "save" else None):
            br = fr[i:j]
            if int(np.clip(tr.returned[br], 0, None).sum()) < MIN_BYTES:
                continue
            lo, hi = int(ctx.s_ps[br[0]]), int(ctx.e_ps[br].max())
            if kind == "save":
                if int(tr.offset[br[0]]) > 0:         # appending to an existing file: not a new copy
                    continue
                if not named:
                    if not sync_like[ix.of_file(code, lo, hi + GAP_NS * 1000)].any():
                        continue
            out.append((lo, hi, code, int(tr.tid[br[0]])))
    return sorted(out)


def _group(cands: list[tuple[int, int, int, int]], paths: list[str]) -> list[tuple[int, int, set[int]]]:
    """Bursts of different files are one phase when they overlap in time (writers in parallel)
    or follow each other within GROUP_NS on one thread; a file written again starts a new one
    (the next save), and so does, following on, a file of the same name as one of the phase's
    in another folder (the same layout saved again elsewhere: DCP's save into ``step8`` right
    after one into ``step7``)."""
    groups: list[tuple[int, int, set[int], set[int]]] = []
    names: list[set[str]] = []
    for lo, hi, code, tid in cands:
        name = paths[code].rsplit("/", 1)[-1]
        if groups and code not in groups[-1][2] and (
                lo < groups[-1][1] or (lo <= groups[-1][1] + GROUP_NS * 1000 and tid in groups[-1][3]
                                       and name not in names[-1])):
            g = groups[-1]
            groups[-1] = (g[0], max(g[1], hi), g[2] | {code}, g[3] | {tid})
            names[-1].add(name)
        else:
            groups.append((lo, hi, {code}, {tid}))
            names.append({name})
    return [(lo, hi, codes) for lo, hi, codes, _ in groups]


def _rows_of(ctx: Context, ix: _Index, codes: set[int], lo: int, hi: int, gap_ns: int = GROUP_NS,
             stop: int | None = None, after: int | None = None) -> np.ndarray:
    """Data calls on the files ``codes`` in [lo, hi] and those just before it (within GROUP_NS:
    the open before the first write, a load's first reads; not past a close, rename or write,
    the end of the file's previous save, nor before ``after``: the end of the job's previous call),
    then the closing calls (write, flush, fsync, close, rename) that the same threads make on
    them within ``gap_ns`` of each other, before ``stop`` (ps: the file's next save)."""
    closing = ("close", "fclose", *RENAME_OPS)
    inside = []
    for c in codes:
        fr = ix.of_file(c, lo - GROUP_NS * 1000 if after is None else max(lo - GROUP_NS * 1000, after), hi)
        n_before = int(np.searchsorted(ctx.s_ps[fr], lo, "left"))
        ended = np.flatnonzero((ctx.kind[fr[:n_before]] == "write") | np.isin(ctx.trace.op[fr[:n_before]], closing))
        inside.append(fr[int(ended[-1]) + 1 if len(ended) else 0:])      # after the previous save's end
    later = np.concatenate([ix.of_file(c, hi + 1, hi + TAIL_NS * 1000) for c in codes] or [np.zeros(0, np.int64)])
    tids = np.unique(ctx.trace.tid[np.concatenate([*inside, np.zeros(0, np.int64)])])
    ops = ctx.trace.op[later]
    later = later[np.isin(ctx.trace.tid[later], tids) & ((ctx.kind[later] == "write") | np.isin(ops, closing))]
    # the flush/fsync/rename/close that end the phase, joined while they follow within a gap
    keep = []
    end = hi
    for r in later[np.argsort(ctx.s_ps[later], kind="stable")].tolist():
        if ctx.s_ps[r] - end > gap_ns * 1000 or (stop is not None and ctx.s_ps[r] >= stop):
            break
        keep.append(r)
        end = max(end, int(ctx.e_ps[r]))
    return np.sort(np.concatenate([*inside, np.asarray(keep, np.int64)])).astype(np.int64)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _own(path: str, root: str, shown: str, named: set[str]) -> bool:
    """Whether ``path`` may be a file of the call that named ``shown`` and writes under ``root``.
    Where the root is the folder around the path named (orbax's temporary twin, safetensors'
    temporary file, TensorFlow's prefix files beside it), neither the folder itself (any save
    there stats it) nor what another save named in it (``<other>``, ``<other>/...``,
    ``<other>.*``: one still writing in the background) is."""
    if not _under(path, root):
        return False
    if not shown or shown == root:
        return True
    if path == root:
        return False
    heads = [path[:i] for i, ch in enumerate(path) if ch in "/."] + [path]     # <other>, <other>/..., <other>.*
    return not any(h != shown and h in named for h in heads)


def _companions(ctx: Context, ix: _Index, codes: set[int], lo: int, hi: int, others: set[int],
                root: str = "") -> set[int]:
    """The phase's files and the small ones written beside them during it (a checkpoint's
    index or metadata file): under ``root`` (the directory a call named), else in the same
    directories with a checkpoint's name (:data:`NAME_HINT`); never the files of other saves
    (``others``)."""
    dirs = {ctx.paths[c].rsplit("/", 1)[0] for c in codes}
    win = ix.between(lo - GROUP_NS * 1000, hi + GROUP_NS * 1000)
    win = win[(ctx.kind[win] == "write") & ~ctx.is_sync[win]]
    more = set()
    for c in set(ctx.path_code[win].tolist()):
        p = ctx.paths[c]
        if (_under(p, root) if root else (p.rsplit("/", 1)[0] in dirs and NAME_HINT.search(p))):
            more.add(c)
    return codes | (more - others)


def _fold_background(phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An async save: the span (what the caller waited for) and, later, the writes of its files
    found by shape (the background part) are one phase; ``background_ns`` the part after the
    span."""
    out: list[dict[str, Any]] = []
    for ph in sorted(phases, key=lambda p: p["start_ns"]):
        host = None
        if ph["source"] == "shape" and ph["kind"] == "save" and ph["paths"]:
            host = next((o for o in reversed(out) if o["source"] != "shape" and o["kind"] == "save"
                         and o["path"] and all(_under(p, o.get("_root") or o["path"]) for p in ph["paths"])
                         and not o["bytes"]), None)
        if host is None:
            out.append(ph)
            continue
        for k in ("files", "bytes", "io_time_s", "fsync_time_s", "rename_time_s", "calls", "blocking_ns"):
            host[k] += ph[k]
        host["paths"] = ph["paths"]
        host["median_call_bytes"] = ph["median_call_bytes"]
        host["background_ns"] = max(ph["end_ns"] - host.get("_span_end_ns", host["end_ns"]), 0)
        host["end_ns"] = max(host["end_ns"], ph["end_ns"])
        host["_rows"] = np.concatenate([host["_rows"], ph["_rows"]])
        host["_block"] = host["_block"] + ph["_block"]
    return out


def checkpoint_phases(ctx: Context, space: Any = None) -> list[dict[str, Any]]:
    """The run's checkpoint saves and loads in time order (cached on ``ctx``; pass ``space``
    the first time so the hook spans are seen)."""
    got = ctx.checkpoint_phases
    if got is not None:
        return got
    train = train_mask(ctx)
    ix = _Index(ctx)
    phases: list[dict[str, Any]] = []
    taken: list[tuple[int, int, set[int]]] = []
    spans, step_lines = hook_spans(space)
    spans = sorted(spans + call_spans(ctx))       # the noted library calls of a record or capture
    nexts = [sp[0] for sp in spans[1:]] + [None]
    named = {sp[6] for sp in spans if sp[6] and sp[2] == "save"}      # another save's files are not a call's
    ends: list[int] = []        # the ends of the spans before, sorted
    for (lo, hi, kind, path, line, call, shown), stop in zip(spans, nexts):
        span_lo = lo
        k = bisect.bisect_right(ends, span_lo)
        after = ends[k - 1] if k else None      # the last end of a call before this one
        bisect.insort(ends, hi)
        win = ix.between(lo, hi)
        win = win[(ctx.e_ps[win] <= hi) & (ctx.kind[win] != "meta")]
        codes = set(ctx.path_code[win].tolist())
        if path:      # the call's own file(s): a background writer's calls in the span are another save's
            codes = {c for c in codes if _own(ctx.paths[c], path, shown, named)} | {
                c for c, p in enumerate(ctx.paths) if p == path}
        # the job's flush/fsync/close right after the call, however long a loaded machine
        # keeps its thread off the CPU between them: up to GAP_NS apart, before the next call;
        # its open just before it, after the calls that ended before it
        rows = _rows_of(ctx, ix, codes, lo, hi, GAP_NS, stop, after) if codes else np.zeros(0, np.int64)
        end = max(hi, int(ctx.e_ps[rows].max())) if len(rows) else hi
        if codes and kind == "save":
            codes = {c for c in _companions(ctx, ix, codes, lo, end, set(), path)
                     if _own(ctx.paths[c], path, shown, named)}
            rows = _rows_of(ctx, ix, codes, lo, hi, GAP_NS, stop, after)
            end = max(hi, int(ctx.e_ps[rows].max())) if len(rows) else hi
        lo = min(lo, int(ctx.s_ps[rows].min())) if len(rows) else lo     # the job's open before the call
        on_train = line in step_lines or not step_lines
        ph = _phase(ctx, kind, rows, lo, end, call, on_train, train)
        if path or shown:
            ph["path"], ph["_root"] = shown or path, path      # the path named; where its files are
        off_train = rows[~train[rows]]
        if len(off_train):     # an async save's writer: its part after the call returned
            ph["background_ns"] = max(int(ctx.e_ps[off_train].max()) - hi, 0) // 1000
        ph["_span_end_ns"] = ph["start_ns"] + (hi - lo) // 1000
        if on_train:     # the call, and the job's own open/flush/fsync/close around it: the loop waits
            own = rows[train[rows]]     # (not for a background writer's calls)
            b_lo = min(span_lo, int(ctx.s_ps[own].min())) if len(own) else span_lo
            b_hi = max(hi, int(ctx.e_ps[own].max())) if len(own) else hi
            ph["blocking_ns"] = (b_hi - b_lo) // 1000
            ph["_block"] = [(b_lo, b_hi)]
        phases.append(ph)
        taken.append((lo, end, codes))

    def free(lo: int, hi: int, codes: set[int]) -> bool:
        return not any(lo < b and hi > a and codes & c for a, b, c in taken)

    saved: set[str] = set()
    for kind in ("save", "load"):
        groups = _group(_shape_candidates(ctx, ix, kind, saved), ctx.paths)
        large = {c for _, _, g in groups for c in g}
        for n, (lo, hi, codes) in enumerate(groups):
            if not free(lo, hi, codes):
                continue
            # a file written again (the next save, the next load) ends this phase's closing calls
            stop = min((g_lo for g_lo, _, g in groups[n + 1:] if g & codes), default=None)
            if kind == "save":
                codes = _companions(ctx, ix, codes, lo, hi, large - codes)
            rows = _rows_of(ctx, ix, codes, lo, hi, stop=stop)
            end = max(hi, int(ctx.e_ps[rows].max())) if len(rows) else hi
            lo = min(lo, int(ctx.s_ps[rows].min())) if len(rows) else lo     # the open before the writes
            ph = _phase(ctx, kind, rows, lo, end, "shape", None, train)
            phases.append(ph)
        if kind == "save":
            saved = {p for ph in phases if ph["kind"] == "save" for p in ph["paths"]}
    phases = _fold_background(phases)
    ctx.checkpoint_phases = phases
    return phases


def public(phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The phases without their private row lists (JSON-ready)."""
    return [{k: v for k, v in p.items() if not k.startswith("_")} for p in phases]
