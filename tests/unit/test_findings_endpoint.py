"""``/findings`` (tb_iotrace.plugin.endpoints.findings; named apart from the integration tests'
test_findings.py): the analysis answers of the view's hosts put together: one host's as they
are, several hosts' tagged with their host and ordered by impact, the hosts still being analysed
counted, a failure said in one line. The answers are stood in for here (the analysis children
have their own tests)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tb_iotrace.plugin.endpoints import findings
from tb_iotrace.plugin.endpoints.findings import findings_impl


def _view(*hosts: str) -> SimpleNamespace:
    return SimpleNamespace(parts=[SimpleNamespace(host=h, capture=SimpleNamespace(path=f"/logs/{h}.xplane.pb"))
                                  for h in hosts])


def _finding(fid: str, share: float) -> dict[str, Any]:
    return {"id": fid, "severity": "warning", "title": fid, "statement": "", "evidence": {}, "files": [],
            "ops": [], "suggestion": "", "impact": {"step_share": share}}


def _answer(*found: dict[str, Any], verdict: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"findings": list(found), "verdict": verdict, "notes": ["a note"], "steps": [], "read": {}}


def test_one_host_as_it_is(monkeypatch) -> None:
    monkeypatch.setattr(findings, "findings_for", lambda path: _answer(_finding("small-reads", 0.2),
                                                                      verdict={"bound": "input"}))
    got = findings_impl(_view("h0"))
    assert [f["id"] for f in got["findings"]] == ["small-reads"] and "host" not in got["findings"][0]
    assert got["verdicts"] == [{"bound": "input", "host": "h0"}]
    assert (got["pending"], got["hosts"], got["job_verdict"], got["message"]) == (0, 1, None, "")
    assert got["notes"] == ["a note"]


def test_a_failure_is_one_line(monkeypatch) -> None:
    def boom(path: str) -> dict[str, Any]:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(findings, "findings_for", boom)
    got = findings_impl(_view("h0"))
    assert got["findings"] == [] and got["message"] == "Findings could not be computed: disk on fire"


def test_several_hosts_tagged_and_ordered_by_impact(monkeypatch) -> None:
    answers = {"/logs/a.xplane.pb": _answer(_finding("small-reads", 0.1)),
               "/logs/b.xplane.pb": _answer(_finding("slow-filesystem", 0.5), _finding("small-writes", 0.05))}
    monkeypatch.setattr(findings, "findings_for_all", lambda paths: {p: answers[p] for p in paths})
    got = findings_impl(_view("a", "b"))
    assert [(f["id"], f["host"]) for f in got["findings"]] == \
        [("slow-filesystem", "b"), ("small-reads", "a"), ("small-writes", "b")]
    assert got["pending"] == 0 and got["hosts"] == 2 and got["job_verdict"] is None   # no ranks' steps


def test_hosts_still_analysed_are_counted(monkeypatch) -> None:
    monkeypatch.setattr(findings, "findings_for_all",
                        lambda paths: {"/logs/a.xplane.pb": _answer(_finding("small-reads", 0.1))})
    got = findings_impl(_view("a", "b", "c"))
    assert got["pending"] == 2 and [f["host"] for f in got["findings"]] == ["a"]
    assert got["notes"][0].startswith("Findings of 1 of 3 hosts so far")
    monkeypatch.setattr(findings, "findings_for_all", lambda paths: {})
    got = findings_impl(_view("a", "b"))
    assert got["findings"] == [] and got["message"] == "Findings are being computed for 2 hosts."
