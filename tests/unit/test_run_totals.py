"""A run's totals keep partial processes (counts up to their last flush) apart from whole ones."""
from __future__ import annotations

from tb_iotrace.analysis import run_totals
from tb_iotrace.cli.report_text.job_text import render_run_totals


def _host(name: str, read: int, partial: bool, end_ns: int = 7) -> dict:
    return {"host": name, "partial": partial, "process": {"end_ns": end_ns},
            "totals": {"POSIX": {"files": 2, "bytes_read": read, "bytes_written": 1, "reads": 3, "writes": 1,
                                 "opens": 2, "read_time": 0.5}}}


def test_partial_processes_are_not_added_to_the_whole_ones() -> None:
    t = run_totals.totals([_host("a.1", 1000, False), _host("a.2", 300, True, end_ns=42), _host("a.3", 20, False)])
    assert t["whole"]["processes"] == 2 and t["partial"]["processes"] == 1
    assert t["whole"]["modules"]["POSIX"]["bytes_read"] == 1020
    assert t["partial"]["modules"]["POSIX"]["bytes_read"] == 300
    (p,) = t["partial"]["hosts"]
    assert p["host"] == "a.2" and p["counted_until_ns"] == 42 and "last flush" in p["missing"]
    text = "\n".join(render_run_totals(t))
    assert "whole processes: 2" in text and "PARTIAL processes: 1" in text
    whole_line, part_line = [ln for ln in text.splitlines() if ln.startswith("POSIX")]
    assert whole_line.split()[2] == "1020" and part_line.split()[2] == "300"


def test_no_partial_block_without_partial_processes() -> None:
    t = run_totals.totals([_host("a.1", 5, False)])
    assert t["partial"] == {"processes": 0, "modules": {}, "hosts": []}
    assert "PARTIAL" not in "\n".join(render_run_totals(t))
