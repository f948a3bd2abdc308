"""Explain the input pipeline: per-step, per-tf.data-stage and per-file-system analysis of a
capture, and findings with evidence (docs/findings.md).

    from tb_iotrace.analysis import analyze
    a = analyze("logs/plugins/profile/<run>/<host>.xplane.pb")   # or an XSpace, or trace=IoTrace
    a.to_dict()   # JSON-ready: summary, steps, stages, filesystems, files, findings, notes, thresholds
"""
from tb_iotrace.analysis.analyze import Analysis, analyze
from tb_iotrace.analysis.context import FileStats, is_library_path, stage_name
from tb_iotrace.analysis.rules import ORDER as FINDING_IDS
from tb_iotrace.analysis.rules import TITLES
from tb_iotrace.analysis.mounts import Mount, MountTable, parse_mountinfo, read_mountinfo
from tb_iotrace.analysis.thresholds import DEFAULT, Thresholds

__all__ = ["Analysis", "DEFAULT", "FINDING_IDS", "FileStats", "Mount", "MountTable", "TITLES", "Thresholds",
           "analyze", "is_library_path", "parse_mountinfo", "read_mountinfo", "stage_name"]
