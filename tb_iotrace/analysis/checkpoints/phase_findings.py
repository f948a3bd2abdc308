"""The findings about a host's checkpoint phases (:mod:`tb_iotrace.analysis.checkpoints.detection`)
and the training time they are measured against: ``checkpoint-blocking`` (saves stop the
training loop), ``checkpoint-small-writes`` (saves written in pieces smaller than the file
system's block), ``checkpoint-fsync`` (the saves' time goes to fsync); docs/checkpoints.md gives
the rules. A finding with no impact on training is not made.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.analysis.checkpoints.detection import MiB, checkpoint_phases, train_mask
from tb_iotrace.analysis.checkpoints.spans import epoch_offset_ps
from tb_iotrace.analysis.context import Context
from tb_iotrace.analysis.intervals import clip, merge

# findings
BLOCKING_SHARE = 0.05         # saves block the loop for at least this share of its time
SMALL_WRITE_FACTOR = 0.25     # median write below this share of the file system's block size
SMALL_WRITE_MIN = 64          # ... over at least this many writes
FSYNC_SHARE = 0.5             # sync time over the saves' I/O time (writes + syncs)
BLOCK_BYTES = 4096            # the block size when the mount table gives none

__all__ = ["RULES", "TITLES", "training_time_ns"]


TITLES = {
    "checkpoint-blocking": "Checkpoint saves stop training",
    "checkpoint-small-writes": "Checkpoints written in small pieces",
    "checkpoint-fsync": "Checkpoint time goes to fsync",
}


def _window(ctx: Context) -> tuple[int, int, int | None, str] | None:
    """The run's training time as capture-clock ps [lo, hi], its step count or None, its basis:
    the steps' span when steps are known; else from the first checkpoint load, when it comes
    before every save (a restore starts the training), to the last data-file call; else a
    whole-run record's window (the process's run: the record knows its length; a load after
    the saves, a check of the last one, starts nothing); else the span of the data-file calls."""
    steps = ctx.att.steps if ctx.att is not None else []
    if steps:
        return min(s.start_ps for s in steps), max(s.end_ps for s in steps), len(steps), "steps"
    rows = np.concatenate([ctx.read_rows, ctx.write_rows, ctx.meta_rows])
    if not len(rows):
        return None
    phases = checkpoint_phases(ctx)
    loads = [p["_lo"] for p in phases if p["kind"] == "load"]
    saves = [p["_lo"] for p in phases if p["kind"] == "save"]
    if loads and (not saves or min(loads) < min(saves)):
        return min(loads), int(ctx.e_ps[rows].max()), None, "data I/O from the first load"
    run = getattr(ctx.trace, "window_ns", None)
    if run is not None:
        off = epoch_offset_ps(ctx)
        return int(run[0]) * 1000 - off, int(run[1]) * 1000 - off, None, "the run"
    return int(ctx.s_ps[rows].min()), int(ctx.e_ps[rows].max()), None, "data I/O span"


def training_time_ns(ctx: Context) -> tuple[int, int | None, str]:
    """(the run's training time in ns, its step count or None, basis): :func:`_window`."""
    w = _window(ctx)
    return (0, None, "none") if w is None else ((w[1] - w[0]) // 1000, w[2], w[3])


def _window_ps(ctx: Context) -> tuple[int, int] | None:
    """The training time of :func:`training_time_ns` as capture-clock ps [lo, hi]."""
    w = _window(ctx)
    return None if w is None else (w[0], w[1])


def _within_training(ctx: Context, starts: Any, ends: Any) -> int:
    """ns of the union of the intervals (capture-clock ps) within the training time: a share of
    the training time never exceeds 100%, and overlapping phases count once."""
    w = _window_ps(ctx)
    if w is None or not len(starts):
        return 0
    ms, me = clip(merge(np.asarray(starts, np.int64), np.asarray(ends, np.int64)), *w)
    return int((me - ms).sum()) // 1000


def _blocked_ns(ctx: Context, saves: list[dict[str, Any]]) -> int:
    """The time the saves blocked the loop within the training time (ns)."""
    iv = [b for s in saves for b in s["_block"]]
    return _within_training(ctx, [a for a, _ in iv], [b for _, b in iv])


def _impact(ctx: Context, blocked_ns: int) -> dict[str, Any]:
    total, nsteps, basis = training_time_ns(ctx)
    return {"step_share": blocked_ns / total if total else 0.0,
            "ms_per_step": blocked_ns / 1e6 / nsteps if nsteps else None, "basis": basis}


def _finding(fid: str, severity: str, statement: str, evidence: dict[str, Any], suggestion: str,
             files: list[str], impact: dict[str, Any]) -> dict[str, Any]:
    return {"id": fid, "severity": severity, "title": TITLES[fid], "statement": statement,
            "evidence": evidence, "files": files[:20], "ops": [], "suggestion": suggestion, "impact": impact}


def _block_bytes(fs_type: str) -> int:
    """The write size a file system wants: its stripe/transfer size for parallel and network
    file systems (Lustre, GPFS, BeeGFS, NFS, FUSE object stores: 1 MiB), else a 4 KiB block."""
    net = ("lustre", "gpfs", "beegfs", "nfs", "fuse", "cifs", "smb", "ceph", "9p", "wekafs")
    return MiB if fs_type.lower().startswith(net) else BLOCK_BYTES


def _saves(ctx: Context) -> list[dict[str, Any]]:
    return [p for p in checkpoint_phases(ctx) if p["kind"] == "save"]


def _files(saves: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(p for s in saves for p in s["paths"]))


def checkpoint_blocking(ctx: Context, steps: Any = None) -> dict[str, Any] | None:
    saves = _saves(ctx)
    blocked = _blocked_ns(ctx, saves)
    total, _, basis = training_time_ns(ctx)
    share = blocked / total if total else 0.0
    if not saves or share < BLOCKING_SHARE:
        return None
    nbytes = sum(s["bytes"] for s in saves)
    ev = {"saves": len(saves), "blocking_s": blocked / 1e9, "training_time_s": total / 1e9, "basis": basis,
          "bytes": nbytes, "blocking_share": share,
          "mean_save_s": blocked / 1e9 / len(saves)}
    stmt = (f"{len(saves)} checkpoint save{'s' if len(saves) != 1 else ''} ({nbytes / MiB:.1f} MiB) stopped training for {blocked / 1e9:.2f} s, "
            f"{100 * share:.0f}% of the run's training time ({total / 1e9:.2f} s, {basis}).")
    sug = ("Save asynchronously (torch.distributed.checkpoint.async_save, orbax's async checkpointer, "
           "tf.train.CheckpointOptions(enable_async=True), or torch.save from a background thread after "
           "copying the state to host memory), save to a faster tier (local NVMe, tmpfs) and copy out in the "
           "background, or save less often.")
    sev = "critical" if share >= 0.25 else "warning"
    return _finding("checkpoint-blocking", sev, stmt, ev, sug, _files(saves), _impact(ctx, blocked))


def checkpoint_small_writes(ctx: Context, steps: Any = None) -> dict[str, Any] | None:
    saves = _saves(ctx)
    rows = [s["_rows"] for s in saves]
    if not rows:
        return None
    r = np.concatenate(rows)
    r = r[(ctx.kind[r] == "write") & ~ctx.is_sync[r]]
    if len(r) < SMALL_WRITE_MIN:
        return None
    sizes = np.clip(ctx.trace.returned[r], 0, None)
    block = max(_block_bytes(ctx.path_mount[int(c)].fs_type) for c in np.unique(ctx.path_code[r]).tolist())
    med = float(np.median(sizes))
    if med >= SMALL_WRITE_FACTOR * block:
        return None
    small = r[sizes < block]
    blocked = _blocked_ns(ctx, saves)
    io = sum(s["io_time_s"] for s in saves)
    # what the small writes cost: their share of the saves' write time, of the saves' blocking
    cost = int(blocked * min(float(ctx.dur_s[small].sum()) / io, 1.0)) if io > 0 else 0
    if not cost:        # saves that block no training (in the background): nothing to gain here
        return None
    ev = {"writes": int(len(r)), "small_writes": int(len(small)), "median_bytes": med, "block_bytes": block,
          "write_time_s": float(ctx.dur_s[small].sum())}
    stmt = (f"Checkpoint saves made {len(r)} writes with a median of {med:.0f} B, far below the file system's "
            f"{block} B block ({len(small)} writes under a block).")
    sug = ("Buffer or aggregate the writes: torch.save to an io.BytesIO then one write, open the file with a "
           "large buffer (open(path, 'wb', buffering=16 << 20)), or a checkpointer that coalesces tensors "
           "into large writes (torch.distributed.checkpoint, safetensors).")
    return _finding("checkpoint-small-writes", "warning", stmt, ev, sug, _files(saves), _impact(ctx, cost))


def checkpoint_fsync(ctx: Context, steps: Any = None) -> dict[str, Any] | None:
    saves = _saves(ctx)
    sync = sum(s["fsync_time_s"] for s in saves)
    io = sum(s["io_time_s"] for s in saves) + sync
    if not saves or io <= 0 or sync / io < FSYNC_SHARE:
        return None
    rows = np.concatenate([s["_rows"] for s in saves])
    train = train_mask(ctx)
    mine = rows[ctx.is_sync[rows] & train[rows]]
    cost = _within_training(ctx, ctx.s_ps[mine], ctx.e_ps[mine])     # the syncs the loop waited in
    if not cost:        # synced off the training thread (the advice itself): no finding
        return None
    ev = {"saves": len(saves), "fsync_time_s": sync, "write_time_s": io - sync, "fsync_share": sync / io,
          "fsync_on_training_thread_s": cost / 1e9}
    stmt = (f"fsync/fdatasync took {sync:.2f} s of the saves' {io:.2f} s of I/O ({100 * sync / io:.0f}%): "
            f"the writes land in the page cache and the time goes to flushing them to the device.")
    sug = ("Sync in the background (a thread that fsyncs and renames once the save is written), on a "
           "faster tier, or once per save rather than per file; keep the fsync if the checkpoint must "
           "survive a crash at once.")
    sev = "warning" if sync / io >= 0.8 else "info"
    return _finding("checkpoint-fsync", sev, stmt, ev, sug, _files(saves), _impact(ctx, cost))


RULES = {"checkpoint-blocking": checkpoint_blocking, "checkpoint-small-writes": checkpoint_small_writes,
         "checkpoint-fsync": checkpoint_fsync}
