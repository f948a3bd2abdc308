"""A whole-run record's noted checkpoint calls (safetensors, orbax, ``tf.train.Checkpoint``:
:mod:`tb_iotrace.base.ckptcalls`) as the spans :mod:`tb_iotrace.analysis.checkpoints` makes phases
of, as it does with a PyTorch trace's ``tb_iotrace::checkpoint`` events (docs/checkpoints.md).

A span's files are those under the call's ``root`` (the file itself, or the directory the
library writes in: orbax's temporary directory beside the one named, TensorFlow's prefix
files); the phase then shows the path the job named (:func:`relabel`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.analysis.context import Context

__all__ = ["call_spans", "extend_async", "relabel"]


def _calls(ctx: Context) -> list[dict[str, Any]]:
    got = getattr(ctx, "checkpoint_calls", None)
    return [c for c in got if isinstance(c, dict)] if isinstance(got, list) else []


def call_spans(ctx: Context) -> list[tuple[int, int, str, str, int, str]]:
    """(start_ps, end_ps, kind, root, line, call) on the capture clock of ``ctx``, one per
    noted call (line -1: a record has no host timeline)."""
    tr = ctx.trace
    calls = _calls(ctx)
    if not calls or not len(tr):
        return []
    off = int(tr.start_ns[0]) * 1000 - int(ctx.s_ps[0])        # epoch ps - capture ps
    out = []
    for c in calls:
        try:
            lo, hi = int(c["start_ns"]) * 1000 - off, int(c["end_ns"]) * 1000 - off
            kind = "load" if c.get("kind") == "load" else "save"
            out.append((lo, max(hi, lo), kind, str(c.get("root") or c.get("path") or ""), -1, str(c.get("call") or kind)))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def relabel(ctx: Context, phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The phases made from noted calls (in place) show the path the job named, not the root
    their files were looked for under."""
    calls = _calls(ctx)
    for ph in phases:
        for c in calls:
            if (ph.get("source") == c.get("call") and ph.get("path") == (c.get("root") or c.get("path"))
                    and ph["start_ns"] <= int(c.get("start_ns", 0)) <= ph["end_ns"] and c.get("path")):
                ph["path"] = str(c["path"])
                break
    return phases


ASYNC_TMP = ".orbax-checkpoint-tmp"     # orbax writes <dir>.orbax-checkpoint-tmp*, then renames it


def extend_async(ctx: Context, phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An orbax save (in place): the call is what the loop waited for; the writes its threads
    make in the background under the directory's temporary twin (``<dir>.orbax-checkpoint-tmp``)
    or the directory (writes, syncs, renames, closes), up to the next orbax call, are the phase's too
    (``background_ns``: its part after the call). Phases found by shape inside it are dropped."""
    tr = ctx.trace
    orbax = [p for p in phases if str(p.get("source", "")).startswith("orbax.checkpoint")]
    mine = [p for p in orbax if p["kind"] == "save" and p.get("path")]
    if not mine or not len(tr):
        return phases
    off = int(tr.start_ns[0]) * 1000 - int(ctx.s_ps[0])
    drop: set[int] = set()
    for ph in mine:
        path = str(ph["path"]).rstrip("/")
        prefixes = (path + "/", path + ASYNC_TMP)
        codes = [c for c, p in enumerate(ctx.paths) if str(p).startswith(prefixes)]
        if not codes:
            continue
        lo = int(ph["start_ns"]) * 1000 - off
        nxt = [int(q["start_ns"]) * 1000 - off for q in orbax if q["start_ns"] > ph["start_ns"]]
        hi = min(nxt) if nxt else None      # the next orbax call (a restore reads these files)
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
