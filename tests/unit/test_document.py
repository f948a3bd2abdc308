"""tb_iotrace.cli.report_text.document: a report's document drawn whole (each host, a run of
several hosts as one after them, the jobs' windows) and ``report --hosts``'s table."""
from __future__ import annotations

from test_host_text import host
from test_job_text import row

from tb_iotrace.cli.report_text.document import render_host_table, render_report

TOTALS = {"whole": {"processes": 2, "modules": {"POSIX": {"files": 2, "bytes_read": 5, "bytes_written": 0,
                                                          "reads": 1, "writes": 0, "opens": 2}}},
          "partial": {"processes": 0, "modules": {}, "hosts": []}}


def test_one_host_has_no_run_section_two_have_one_after_them():
    one = render_report({"runs": [{"run": "r", "hosts": [host()], "totals": TOTALS}]})
    assert one.startswith("r / h.1\n") and "hosts/processes" not in one and one.endswith("\n")
    two = render_report({"runs": [{"run": "r", "totals": TOTALS, "checkpoint_saves": [],
                                   "hosts": [host(summary=row("h.1", 1.0, 1.0)),
                                             host(host="h.2", partial=True, summary=row("h.2", 2.0, 1.0))]}]})
    assert two.index("r / h.1") < two.index("r / h.2") < two.index("r: all 2 hosts/processes  [1 PARTIAL]")
    assert "Per host (POSIX + STDIO counters; input wait within the steps)" in two
    assert "<- slowest reads" in two.split("r: all 2 hosts")[1]


def test_the_hosts_table_document():
    doc = {"runs": [{"run": "r\x1b", "hosts": [row("a", 1.0, 2.0), row("b", 0.5, 1.0)], "notes": ["n1"],
                     "job_verdict": {"bound": "not input", "ranks": 2, "matched_steps": 3, "advice": "none"}}]}
    lines = render_host_table(doc).splitlines()
    assert lines[0] == "r\\x1b: 2 hosts/processes" and lines[1] == "=" * len(lines[0])
    assert lines[2].startswith("Per host") and lines[4].endswith("<- slowest reads, longest input wait")
    assert "Job verdict (2 ranks, 3 steps matched by number): NOT INPUT-BOUND" in lines
    assert lines[-1] == "Note: n1"
