"""Analysis of one capture: per step, per tf.data stage, per file system, per file; then the
findings (see rules.py and docs/findings.md).

Only *data files* count: files of the Python/TF installation that TensorFlow or autograph
read while building functions (``.py``, ``.so``, ``site-packages`` ...) are left out, as
Darshan leaves out /usr and /lib.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tb_iotrace.base.memory import trim_memory
from tb_iotrace.analysis.attribution import Attribution, attribute
from tb_iotrace.store.xplane import IoTrace, read_io_data
from tb_iotrace.analysis.checkpoints.facts import add_facts, training
from tb_iotrace.analysis.checkpoints.spans import extend_async
from tb_iotrace.analysis.collectives import collective_fields
from tb_iotrace.analysis.checkpoints.waits import add_waits
from tb_iotrace.analysis.checkpoints.detection import checkpoint_phases, public
from tb_iotrace.analysis.checkpoints.phase_table import render as render_checkpoints
from tb_iotrace.analysis.context import Context, fs_table, stages_table, steps_table
from tb_iotrace.analysis.mounts import table_for
from tb_iotrace.analysis.rules import evaluate
from tb_iotrace.analysis.slim_xspace import read_slim_xspace
from tb_iotrace.analysis.thresholds import DEFAULT, Thresholds
from tb_iotrace.analysis.verdict import verdict
from tb_iotrace.analysis.worker_advice import NO_MORE
from tb_iotrace.analysis.object_io import object_wait_note


@dataclass
class Analysis:
    """JSON-ready with ``to_dict()``: verdict, steps, stages, filesystems, files, findings (each
    with its impact, ordered by it), notes."""

    steps: list[dict[str, Any]]
    stages: list[dict[str, Any]]
    filesystems: list[dict[str, Any]]
    files: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    thresholds: dict[str, Any] = field(default_factory=dict)
    verdict: dict[str, Any] = field(default_factory=dict)   # tb_iotrace.analysis.verdict
    checkpoints: list[dict[str, Any]] = field(default_factory=list)   # checkpoints.detection
    training: dict[str, Any] = field(default_factory=dict)   # checkpoints.facts.training
    # the I/O attributed to the timeline (None without one), for the steps a caller shows
    # (tb_iotrace.analysis.host_result): not computed twice; not part of to_dict()
    attribution: Attribution | None = field(default=None, repr=False, compare=False)

    @property
    def ids(self) -> list[str]:
        return [f["id"] for f in self.findings]

    def finding(self, fid: str) -> dict[str, Any] | None:
        return next((f for f in self.findings if f["id"] == fid), None)

    def text(self) -> str:
        """Plain-text findings and per-file-system table (for reports and the CLI)."""
        lines = []
        v = self.verdict
        if v:
            lines.append(f"verdict: {v.get('bound')}: {v.get('advice')}")
        s = self.summary
        if s["steps"]:
            lines.append(f"{s['steps']} steps, input wait {s['input_wait_ps'] / max(s['step_time_ps'], 1):.0%} "
                         f"of step time, file I/O during the wait "
                         f"{s['io_during_wait_ps'] / max(s['input_wait_ps'], 1):.0%}")
        for g in self.filesystems:
            bw = g["read_bandwidth"]
            lat = g["meta_latency_median_s"]
            lines.append(f"{g['mount_point']} ({g['fs_type']}): {g['num_files']} files, {g['reads']} reads, "
                         f"{g['bytes_read'] / 2**20:.1f} MiB read"
                         + (f" at {bw / 2**20:.0f} MiB/s" if bw else "")
                         + (f", metadata median {lat * 1e6:.0f} us" if lat is not None else ""))
        if not self.findings:
            lines.append("No findings.")
        for f in self.findings:
            lines.append(f"[{f['severity']}] {f['id']}: {f['statement']}")
            lines.append(f"    suggestion: {f['suggestion']}")
            if f["files"]:
                more = f" (+{len(f['files']) - 3} more)" if len(f["files"]) > 3 else ""
                lines.append(f"    files: {', '.join(f['files'][:3])}{more}")
            if f["ops"]:
                lines.append(f"    ops: {', '.join(f['ops'][:3])}")
        lines.extend(render_checkpoints(self.checkpoints).splitlines())
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "summary": self.summary, "steps": self.steps, "stages": self.stages,
                "filesystems": self.filesystems, "files": self.files, "findings": self.findings,
                "notes": self.notes, "thresholds": self.thresholds, "checkpoints": self.checkpoints}


def analyze(space: Any = None, trace: IoTrace | None = None, *, thresholds: Thresholds | None = None,
            mountinfo: str | None = None, python: dict[str, Any] | None = None,
            checkpoint_calls: list[dict[str, Any]] | None = None) -> Analysis | None:
    """Analyse a capture: ``space`` is an XSpace (or a path to ``*.xplane.pb``); ``trace`` an
    ``IoTrace`` (read from ``space`` when not given). None when there is no I/O data at all.

    The mount table comes from the capture when it carries one (``trace.machine`` or
    ``trace.mounts``: :func:`tb_iotrace.analysis.mounts.table_for`), else from ``mountinfo``
    (text), else from this process's /proc/self/mountinfo.
    ``python``: a whole-run record's interpreter prefixes and sys.path (tb_iotrace.base.codepaths).
    ``checkpoint_calls``: a whole-run record's noted checkpoint calls (tb_iotrace.base.ckptcalls;
    a capture's are in its I/O record).
    """
    th = thresholds or DEFAULT
    if isinstance(space, (str, os.PathLike)):
        # columns, not a protobuf object per I/O event: ~3x the file in memory instead of ~12x
        space, from_file = read_slim_xspace(space)
        trim_memory()      # the decoder's freed columns, before the analysis allocates its own
        if trace is None:
            if from_file is None:
                return None
            trace = from_file
    if trace is None:
        if space is None:
            raise ValueError("analyze() needs an XSpace or an IoTrace")
        trace = read_io_data(space)
        if trace is None:
            return None
    notes: list[str] = []
    mounts, why = table_for(trace, mountinfo)
    if why:
        notes.append(why)
    att = attribute(space, trace) if space is not None else None
    if att is not None:
        notes.extend(att.notes)
    elif space is None:
        notes.append("no TensorFlow host timeline: no steps, stages or input waits")
    if trace.dropped:
        notes.append(f"the trace dropped {trace.dropped} calls: per-call findings see part of the "
                     "window; per-file counters are exact")
    ctx = Context(trace, att, space, mounts, th, python, checkpoint_calls)
    phases = add_waits(ctx, extend_async(ctx, checkpoint_phases(ctx, space)), space)
    ctx.checkpoint_phases = phases      # what the checkpoint findings see
    checkpoints = public(add_facts(ctx, phases))
    steps = steps_table(ctx)
    files = sorted(ctx.files.values(), key=lambda f: -(f.bytes_read + f.bytes_written + f.opens))
    summary = {
        "io_calls": int(len(ctx.read_rows) + len(ctx.write_rows) + len(ctx.meta_rows)),
        "reads": int(len(ctx.read_rows)), "writes": int(len(ctx.write_rows)),
        "meta_calls": int(len(ctx.meta_rows)),
        "bytes_read": int(np.clip(trace.returned[ctx.read_rows], 0, None).sum()),
        "bytes_written": int(np.clip(trace.returned[ctx.write_rows], 0, None).sum()),
        "files": len(ctx.files), "dropped": trace.dropped,
        "library_calls_left_out": int((~ctx.data).sum()),
        "steps": len(steps),
        "step_time_ps": int(sum(s["duration_ps"] for s in steps)),
        "input_wait_ps": int(sum(s["input_wait_ps"] for s in steps)),
        "io_during_wait_ps": int(sum(s["io_during_wait_ps"] for s in steps)),
    }
    fs = fs_table(ctx)
    findings = evaluate(ctx, steps, fs)
    v = verdict(ctx, steps, space)
    v.update(collective_fields(space if att is not None else None, steps))   # and each step's collective_wait_ps
    for f in findings:       # input-bound's first suggestion: the verdict's change and its effect
        if f["id"] == "input-bound" and v.get("advice") and v.get("bound") in ("input", "partly input"):
            # when the cores are the limit, the rule's "raise num_workers" would contradict it
            also = "" if str(v.get("change", "")).startswith(NO_MORE) else f" Also: {f['suggestion']}"
            f["suggestion"] = f"Biggest expected effect: {v['advice']}{also}"
            f["statement"] += object_wait_note(v)
    return Analysis(steps=steps, stages=stages_table(ctx), filesystems=fs,
                    files=[f.to_dict() for f in files], findings=findings, summary=summary,
                    notes=notes, thresholds=th.to_dict(), verdict=v, checkpoints=checkpoints,
                    training=training(ctx) if checkpoints else {}, attribution=att)
