"""tb_iotrace.cli.report_text.file_tables: a host's files and verdict as text, every figure from
the records and the verdict given (the sections, their order, what is left out and said)."""
from __future__ import annotations

from test_file_totals import FILES, posix

from tb_iotrace.cli.report_text.file_tables import render_files, render_verdict


def test_sections_in_order_with_code_loading_in_one_line():
    text = render_files(FILES, title="run / host", top=1)
    lines = text.splitlines()
    assert lines[:2] == ["run / host", "=========="]
    assert lines[2].startswith("Code loading (Python imports") and "1 files, 1.0 MiB read" in lines[2]
    assert lines[2].endswith("left out below (--all-files shows them)")
    rows = [ln for ln in lines if ln.startswith(("POSIX ", "STDIO ")) and ln.split()[1].isdigit()]
    assert [r.split()[0] for r in rows] == ["POSIX", "STDIO"]
    posix_row = rows[0]
    assert posix_row.split()[1] == "2" and "20.0 MiB" in posix_row       # the two data files, not the .so
    busiest = lines[lines.index("Busiest files (top 1 by bytes moved)") + 1]
    assert "16.0 MiB" in busiest and busiest.endswith("'/data/b'")       # quoted
    assert "x.so" not in text
    assert "POSIX read sizes" in text and "POSIX read pattern: 40 reads, 95% sequential, 48% consecutive" in text
    order = [text.index(s) for s in ("Code loading", "module", "Busiest", "POSIX read sizes", "POSIX read pattern")]
    assert order == sorted(order)
    every = render_files(FILES, all_files=True)
    assert "x.so" in every and "left out below" not in every


def test_what_is_said_when_nothing_is_shown():
    assert "No file I/O was recorded" in render_files([])
    assert "No data file I/O was recorded." in render_files([posix("/usr/lib/x.so", 1, 1, code=True)])
    assert render_files([], empty="the job read nothing\x1b[31m").splitlines()[-1].startswith("the job read nothing")
    assert "\x1b" not in render_files([], empty="x\x1b[31m")
    assert "(trace cap reached: 7 calls" in render_files(FILES, dropped=7)
    assert "NOT TRACKED: files not tracked" in render_files(FILES, untracked={"files": 2, "calls": 5})


def test_the_verdict_lines():
    v = {"bound": "input", "input_wait_share": 0.62, "input_wait_ms_per_step": 12.5, "steps": 40,
         "wait_breakdown": {"file_io": 0.5, "object_io": 0.0, "decode": 0.3, "starved": 0.0, "copy": 0.0,
                            "other": 0.05},
         "unmeasured": ["decode"], "unmeasured_share": 0.15, "reason": "no Python stacks",
         "advice": "num_workers=2 -> 4"}
    text = render_verdict(v)
    assert text.splitlines()[0] == ("Verdict: INPUT-BOUND: the step waits for input 62.0% of its time "
                                    "(12.50 ms per step over 40 steps)")
    assert "  the wait: file I/O 50%, decode 30%, starved 0%, copy 0%, other 5%, decode (not measured) 15%" in text
    assert "object I/O" not in text            # named only where some of the wait is on objects
    assert "  not measured: no Python stacks" in text and text.endswith("  advice: num_workers=2 -> 4")
    other = render_verdict({"bound": "not input", "input_wait_share": 0.0, "basis": "input waits",
                            "waits_for": {"label": "rank 3"}})
    assert other == "Verdict: WAITS FOR RANK 3'S INPUT (job verdict): the step waits for input 0.0% of its time (input waits)"
    assert render_verdict({"bound": "unknown"}) == "Verdict: NO VERDICT"
