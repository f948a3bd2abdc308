"""tb_iotrace.cli.report_text.host_text: one host's entry of the report's document as text: its
title marks, the per-step table (at most MAX_STEPS_SHOWN rows), findings with their impact, notes."""
from __future__ import annotations

from test_file_totals import FILES

from tb_iotrace.cli.report_text.host_text import MAX_STEPS_SHOWN, render_host


def step(i: int, objects: bool = False) -> dict:
    s = {"index": i, "step_num": 100 + i, "duration_ps": 20 * 10**9, "input_wait_share": 0.25,
         "collective_wait_ps": 2 * 10**9, "io_calls": 3, "io_bytes": 3 << 20}
    if objects:
        s.update(object_requests=2, object_bytes=1 << 20)
    return s


def host(**kw) -> dict:
    h = {"host": "h.1", "dropped": 0, "files": FILES, "steps": [], "has_step_markers": True, "findings": [],
         "notes": []}
    h.update(kw)
    return h


def text_of(h: dict) -> str:
    return "\n".join(render_host("job/run", h))


def test_title_marks():
    assert text_of(host()).startswith("job/run / h.1\n")
    killed = text_of(host(partial=True, process={"exit": {"how": "signal", "signal": "SIGKILL"}}))
    assert "[PARTIAL: the process left no final record" in killed and "ended by" not in killed
    assert "[ended by signal SIGTERM]" in text_of(host(process={"exit": {"how": "signal", "signal": "SIGTERM"}}))
    assert "[ended by exit(3)]" in text_of(host(process={"exit": {"how": "exit", "code": 3}}))
    assert "[ended by exception (ValueError)]" in text_of(host(process={"exit": {"how": "exception",
                                                                                 "exception": "ValueError"}}))


def test_steps_table_cut_with_a_line_for_the_rest():
    text = text_of(host(steps=[step(i) for i in range(MAX_STEPS_SHOWN + 5)], has_step_markers=False))
    assert "Per-step I/O (no step markers: time windows)" in text and "objects" not in text
    rows = [ln for ln in text.splitlines() if ln.strip().startswith("1") and ln.strip().split()[0].isdigit()
            and int(ln.split()[0]) >= 100]
    assert len(rows) == MAX_STEPS_SHOWN
    assert rows[0].split() == ["100", "20.00", "25%", "10%", "3", "3.0", "MiB"]
    assert "  ... 5 more steps (--json for all)" in text
    objs = text_of(host(steps=[step(0, objects=True)]))
    assert "Per-step I/O\n" in objs and "obj. bytes" in objs and objs.count("1.0 MiB") >= 1


def test_findings_with_impact_suggestion_files_and_notes():
    f = {"severity": "warning", "title": "Small reads", "statement": "reads of 4 KiB", "suggestion": "batch them",
         "impact": {"step_share": 0.125, "ms_per_step": 2.5}, "files": ["/a", "/b", "/c", "/d\x1b[2J"]}
    text = text_of(host(findings=[f, {"title": "x", "impact": {"step_share": 0.5, "basis": "spans"}}, "plain"],
                        notes=["kept \x07 safe"]))
    lines = text.splitlines()
    at = lines.index("Findings")
    assert lines[at + 1:at + 5] == ["  - [warning] Small reads: reads of 4 KiB",
                                    "      impact: 12.5% of step time, 2.500 ms per step",
                                    "      suggestion: batch them", "      files: /a, /b, /c (+1 more)"]
    assert lines[at + 5:at + 8] == ["  - x", "      impact: 50.0% of step time (spans)", "  - plain"]
    assert lines[-1] == "note: kept \\x07 safe"          # a control character shown, not sent
    assert "\x07" not in text and "\x1b" not in text
