"""The text report's table of a host's checkpoint phases
(:mod:`tb_iotrace.analysis.checkpoints.detection`): one line per save or load."""
from __future__ import annotations

from typing import Any

from tb_iotrace.analysis.checkpoints.detection import MiB

__all__ = ["render"]


def render(phases: list[dict[str, Any]]) -> str:
    """The text report's table: one line per save or load (MiB/s: bytes over the time in the
    write or read calls; bg s: an async save's background part)."""
    if not phases:
        return ""
    lines = ["Checkpoints", f"  {'kind':<5} {'start':>9} {'s':>7} {'files':>5} {'MiB':>9} {'MiB/s':>8} "
             f"{'fsync s':>8} {'blocked s':>9} {'bg s':>7}  path"]
    t0 = phases[0]["start_ns"]
    for p in phases:
        dur = (p["end_ns"] - p["start_ns"]) / 1e9
        bw = p["bytes"] / MiB / p["io_time_s"] if p["io_time_s"] > 0 else 0.0
        lines.append(f"  {p['kind']:<5} {(p['start_ns'] - t0) / 1e9:>+8.2f}s {dur:>7.3f} {p['files']:>5} "
                     f"{p['bytes'] / MiB:>9.1f} {bw:>8.0f} {p['fsync_time_s']:>8.3f} "
                     f"{p['blocking_ns'] / 1e9:>9.3f} {p.get('background_ns', 0) / 1e9:>7.3f}  {p['path']}")
    return "\n".join(lines) + "\n"
