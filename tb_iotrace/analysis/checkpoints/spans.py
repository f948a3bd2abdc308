"""The spans :mod:`tb_iotrace.analysis.checkpoints.detection` makes phases of: what the job called.

- :func:`hook_spans`: the ``tb_iotrace::checkpoint`` events of a capture's host timeline (a
  PyTorch trace: torch.save/load, DCP, and safetensors/orbax/``tf.train.Checkpoint`` called
  while the profiler recorded; :mod:`tb_iotrace.recording.checkpoint_hooks`), on the line of
  the thread that made the call;
- :func:`call_spans`: the noted library calls (safetensors, orbax, ``tf.train.Checkpoint``:
  :mod:`tb_iotrace.base.ckptcalls`) that a whole-run record or a TensorFlow/JAX capture's I/O
  record carries, on the host line of the calling thread when the capture has one.

A span: ``(start_ps, end_ps, kind, root, line, call, path)`` on the capture clock. Its files
are those under ``root`` (the file itself, or the directory the library writes in: orbax's
temporary directory beside the one named, a safetensors file's directory, TensorFlow's prefix
files); the phase shows ``path``, the one the job named (docs/checkpoints.md).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.analysis.attribution import STEP_EVENT_NAMES
from tb_iotrace.analysis.context import Context
from tb_iotrace.store.xplane import HOST_PLANE, columns, find_plane, thread_line_id

SPAN_NAME = "tb_iotrace::checkpoint"
STEP_PREFIXES = ("ProfilerStep#", *STEP_EVENT_NAMES)

Span = tuple[int, int, str, str, int, str, str]

__all__ = ["SPAN_NAME", "STEP_PREFIXES", "Span", "call_line", "call_spans", "epoch_offset_ps", "extend_async", "hook_spans",
           "noted_calls"]


def hook_spans(space: Any) -> tuple[list[Span], set[int]]:
    """The hook spans on the host plane, and the ids of the lines that hold steps
    (``ProfilerStep#N``, the step events of TF/JAX)."""
    host = find_plane(space, HOST_PLANE) if space is not None else None
    if host is None:
        return [], set()
    pc = columns(host)
    out, step_lines = [], set()
    for ln in pc.lines:
        if not len(ln):
            continue
        names = pc.event_names(ln)
        _, first = np.unique(np.asarray(ln.metadata_id), return_index=True)    # one name per event kind
        kinds = [str(x) for x in names[first].tolist()]
        if any(x.startswith(STEP_PREFIXES) for x in kinds):
            step_lines.add(int(ln.id))
        if SPAN_NAME not in kinds:
            continue
        for i in np.flatnonzero(names == SPAN_NAME).tolist():
            st = pc.event_stats(ln, i)
            kind = str(st.get("kind", "save"))
            kind = kind if kind in ("save", "load") else "save"
            path = str(st.get("path", ""))
            out.append((int(ln.start_ps[i]), int(ln.end_ps[i]), kind, str(st.get("root") or path), int(ln.id),
                        str(st.get("call") or f"torch.{kind}"), path))
    return sorted(out), step_lines


def noted_calls(ctx: Context) -> list[dict[str, Any]]:
    """The noted library calls of ``ctx``: a whole-run record's (given to the analysis), else
    those its capture's I/O record carries."""
    got = ctx.checkpoint_calls or getattr(ctx.trace, "checkpoint_calls", None)
    return [c for c in got if isinstance(c, dict)] if isinstance(got, list) else []


def epoch_offset_ps(ctx: Context) -> int:
    """Epoch ps minus capture-clock ps of ``ctx`` (0 without calls)."""
    tr = ctx.trace
    return int(tr.start_ns[0]) * 1000 - int(ctx.s_ps[0]) if len(tr) else 0


def call_line(ctx: Context, tid: Any) -> int:
    """The host line of the thread ``tid`` (TensorFlow's id of it), -1 when unknown (a record
    has no host timeline)."""
    info = ctx.trace.threads.get(int(tid)) if isinstance(tid, int) else None
    return thread_line_id(info.pthread_id) if info is not None and info.pthread_id else -1


def call_spans(ctx: Context) -> list[Span]:
    """One span per noted save or load call (orbax's waits are not phases:
    :mod:`tb_iotrace.analysis.checkpoints.waits`)."""
    calls = noted_calls(ctx)
    if not calls or not len(ctx.trace):
        return []
    off = epoch_offset_ps(ctx)
    out = []
    for c in calls:
        if c.get("kind") not in ("save", "load"):
            continue
        try:
            lo, hi = int(c["start_ns"]) * 1000 - off, int(c["end_ns"]) * 1000 - off
            kind = str(c["kind"])
            path = str(c.get("path") or "")
            out.append((lo, max(hi, lo), kind, str(c.get("root") or path), call_line(ctx, c.get("tid")),
                        str(c.get("call") or kind), path))
        except (KeyError, TypeError, ValueError):
            continue
    return out


ASYNC_TMP = ".orbax-checkpoint-tmp"     # orbax writes <dir>.orbax-checkpoint-tmp*, then renames it


ASYNC_SAVES = ("orbax.checkpoint", "torch.distributed.checkpoint.async_save")


def _family(ph: dict[str, Any]) -> str:
    """The library of a phase's call (its next call on a directory ends a background save)."""
    src = str(ph.get("source", ""))
    return next((f for f in ("orbax.checkpoint", "torch.distributed.checkpoint") if src.startswith(f)), "")


def extend_async(ctx: Context, phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An orbax save or a DCP ``async_save`` (in place): the call is what the loop waited for;
    the writes its threads make in the background under the directory's temporary twin
    (``<dir>.orbax-checkpoint-tmp``) or the directory (writes, syncs, renames, closes), up to the
    next call of that library on that directory, are the phase's too, however far apart a loaded
    machine spreads them (DCP writes ``.metadata`` after the data files)
    (``background_ns``: its part after the call). Phases found by shape inside it are dropped."""
    tr = ctx.trace
    orbax = [p for p in phases if _family(p)]
    mine = [p for p in orbax if p["kind"] == "save" and p.get("path")
            and str(p.get("source", "")).startswith(ASYNC_SAVES)]
    if not mine or not len(tr):
        return phases
    off = epoch_offset_ps(ctx)
    drop: set[int] = set()
    for ph in mine:
        path = str(ph["path"]).rstrip("/")
        prefixes = (path + "/", path + ASYNC_TMP)
        codes = [c for c, p in enumerate(ctx.paths) if str(p).startswith(prefixes)]
        if not codes:
            continue
        lo = int(ph["start_ns"]) * 1000 - off
        # the next orbax call on this directory (a restore reads these files); a save of
        # another one waits in its call for these writes to finish: they are still this save's
        nxt = [int(q["start_ns"]) * 1000 - off for q in orbax
               if q["start_ns"] > ph["start_ns"] and _family(q) == _family(ph)
               and str(q.get("path", "")).rstrip("/") == path]
        hi = min(nxt) if nxt else None
        sel = np.isin(ctx.path_code, codes) & ctx.ok & (ctx.s_ps >= lo) & (
            (ctx.kind == "write") | np.isin(tr.op, ("rename", "renameat", "renameat2", "close")))
        if hi is not None:
            sel &= ctx.s_ps < hi
        rows = np.flatnonzero(sel)
        if not len(rows):
            continue
        data = rows[(ctx.kind[rows] == "write") & ~ctx.is_sync[rows]]
        nbytes = np.clip(tr.returned[data], 0, None)
        files = sorted({str(p) for p, b in zip(tr.path[data].tolist(), nbytes.tolist()) if b > 0})
        end_ns = (int(ctx.e_ps[rows].max()) + off) // 1000
        call_end = int(ph.get("_span_end_ns", ph["end_ns"]))
        ph.update(files=len(files), bytes=int(nbytes.sum()), io_time_s=float(ctx.dur_s[data].sum()),
                  fsync_time_s=float(ctx.dur_s[rows[ctx.is_sync[rows]]].sum()),
                  rename_time_s=float(ctx.dur_s[rows[np.isin(tr.op[rows], ("rename", "renameat", "renameat2"))]].sum()),
                  calls=int(len(data)), median_call_bytes=float(np.median(nbytes)) if len(nbytes) else 0.0,
                  paths=files[:20], end_ns=max(int(ph["end_ns"]), end_ns),
                  background_ns=max(end_ns - call_end, 0), _rows=np.union1d(ph.get("_rows", rows[:0]), rows))
        for k, q in enumerate(phases):
            if q.get("source") == "shape" and q.get("paths") and all(str(p).startswith(prefixes) for p in q["paths"]) \
                    and ph["start_ns"] <= q["start_ns"] <= ph["end_ns"]:
                drop.add(k)
    return [q for k, q in enumerate(phases) if k not in drop]
