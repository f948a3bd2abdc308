"""tb_iotrace.analysis.checkpoints.phase_table: the text report's table of checkpoint phases."""
from __future__ import annotations

from tb_iotrace.analysis.checkpoints.phase_table import render

MiB = 1 << 20


def phase(kind: str, start_ns: int, end_ns: int, nbytes: int, io_time_s: float, **kw) -> dict:
    return {"kind": kind, "start_ns": start_ns, "end_ns": end_ns, "files": 3, "bytes": nbytes, "io_time_s": io_time_s,
            "fsync_time_s": 0.25, "blocking_ns": 1_500_000_000, "path": "/ck/step10", **kw}


def test_one_line_per_phase_from_the_first_phases_start() -> None:
    text = render([phase("save", 10**18, 10**18 + 2 * 10**9, 512 * MiB, 2.0, background_ns=500_000_000),
                   phase("load", 10**18 + 5 * 10**9, 10**18 + 6 * 10**9, 64 * MiB, 0.0)])
    lines = text.splitlines()
    assert lines[0] == "Checkpoints" and text.endswith("\n") and len(lines) == 4
    assert lines[1].split() == ["kind", "start", "s", "files", "MiB", "MiB/s", "fsync", "s", "blocked", "s", "bg", "s",
                                "path"]
    assert lines[2].split() == ["save", "+0.00s", "2.000", "3", "512.0", "256", "0.250", "1.500", "0.500", "/ck/step10"]
    assert lines[3].split() == ["load", "+5.00s", "1.000", "3", "64.0", "0", "0.250", "1.500", "0.000", "/ck/step10"]


def test_nothing_without_phases() -> None:
    assert render([]) == ""
