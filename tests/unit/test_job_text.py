"""tb_iotrace.cli.report_text.job_text: the per-host table marks the slowest reader and the
longest input wait (only among two hosts or more); the job verdict's per-rank table."""
from __future__ import annotations

from tb_iotrace.cli.report_text.job_text import render_hosts, render_job_verdict


def row(host: str, read_s: float, wait_ms: float) -> dict:
    return {"host": host, "bytes_read": 3 << 20, "bytes_written": 0, "read_time_s": read_s, "io_calls": 12,
            "input_wait_ns": int(wait_ms * 1e6), "input_wait_pct": 10.0}


def test_hosts_table_marks_the_slowest():
    text = render_hosts([row("a", 0.5, 30.0), row("b", 2.0, 10.0), row("c\x1b", 1.0, 5.0)])
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["host", "bytes", "read"]
    assert lines[1].endswith("<- longest input wait") and lines[1].lstrip().startswith("a ")
    assert lines[2].endswith("<- slowest reads") and "3.0 MiB" in lines[2] and "2.000s" in lines[2]
    assert "<-" not in lines[3] and "c\\x1b" in lines[3] and "\x1b" not in text
    one = render_hosts([row("a", 0.5, 30.0)])
    assert "<-" not in one                        # one host: nothing to stand out from
    assert render_hosts([]) == ""


def test_job_verdict_names_the_straggler_and_lists_ranks():
    jv = {"bound": "input", "ranks": 2, "matched_steps": 9, "straggler": {"label": "rank 1"}, "advice": "fix rank 1",
          "basis": "steps",
          "per_rank": [{"label": "rank 0", "host": "h0", "step_ms": 20.0, "input_wait_share": 0.05,
                        "collective_wait_share": 0.6, "bytes_per_step": 2 << 20, "files_per_step": 1.5},
                       {"label": "rank 1", "host": "h1", "step_ms": None, "input_wait_share": None,
                        "collective_wait_share": None, "bytes_per_step": None, "files_per_step": None}]}
    lines = render_job_verdict(jv).splitlines()
    assert lines[0] == "Job verdict (2 ranks, 9 steps matched by number): INPUT-BOUND on rank 1"
    assert lines[1] == "  fix rank 1"
    assert lines[3].split() == ["rank", "0", "h0", "20.0", "5%", "60%", "2.00", "1.5"]
    assert lines[4].split() == ["rank", "1", "h1", "-", "-", "-", "-", "-"]
    assert render_job_verdict(None) == "" and len(render_job_verdict({**jv, "basis": "none"}).splitlines()) == 2
