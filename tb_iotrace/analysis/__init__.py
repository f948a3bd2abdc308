"""Explain the input pipeline: per-step, per-tf.data-stage and per-file-system analysis of a
capture, and findings with evidence (docs/findings.md).

    from tb_iotrace.analysis import analyze
    a = analyze("logs/plugins/profile/<run>/<host>.xplane.pb")   # or an XSpace, or trace=IoTrace
    a.to_dict()   # JSON-ready: summary, steps, stages, filesystems, files, findings, notes, thresholds
"""
from .analyze import Analysis, analyze
from .context import FileStats, is_library_path, stage_name
from .rules import ORDER as FINDING_IDS
from .rules import TITLES
from .mounts import Mount, MountTable, parse_mountinfo, read_mountinfo
from .thresholds import DEFAULT, Thresholds

__all__ = ["Analysis", "DEFAULT", "FINDING_IDS", "FileStats", "Mount", "MountTable", "TITLES", "Thresholds",
           "analyze", "is_library_path", "parse_mountinfo", "read_mountinfo", "stage_name"]
