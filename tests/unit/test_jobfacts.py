"""tb_iotrace.store.jobfacts: check() names what is wrong with each field (type, range, size);
load() tells missing, stale, damaged (with its reason) and ok apart; save() keeps nothing
invalid and what it keeps loads back unchanged."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.store import jobfacts, summaries


def good() -> dict[str, Any]:
    return {"rank": 3, "role": "main",
            "verdict": {"bound": "input", "cause": None, "change": "x", "collectives": False,
                        "input_wait_share": 0.25},
            "has_step_markers": True,
            "steps": {c: [1, 2] for c in jobfacts.STEP_COLUMNS},
            "bytes_read": 10, "files": 2, "data_dirs": {"/data": 10}}


def test_valid_facts_pass() -> None:
    assert jobfacts.check(good()) == ""
    assert jobfacts.check({**good(), "rank": None, "role": None, "verdict": None}) == ""
    assert jobfacts.check({**good(), "steps": {c: [] for c in jobfacts.STEP_COLUMNS}}) == ""


V = good()["verdict"]


@pytest.mark.parametrize("change, why", [
    ({"extra": 1}, "not the expected fields"),
    ({"rank": -1}, "rank: not a rank"),
    ({"rank": True}, "rank: not a rank"),
    ({"rank": 1.0}, "rank: not a rank"),
    ({"role": "boss"}, "role: unknown"),
    ({"verdict": {**V, "more": 1}}, "verdict: not the expected fields"),
    ({"verdict": {**V, "collectives": 1}}, "verdict: a field of the wrong type"),
    ({"verdict": {**V, "bound": "x" * (jobfacts.MAX_TEXT + 1)}}, "verdict: a field of the wrong type"),
    ({"verdict": {**V, "input_wait_share": 1.5}}, "verdict: input_wait_share out of range"),
    ({"verdict": {**V, "input_wait_share": float("nan")}}, "verdict: input_wait_share out of range"),
    ({"verdict": {**V, "input_wait_share": True}}, "verdict: input_wait_share out of range"),
    ({"has_step_markers": 1}, "has_step_markers: not a bool"),
    ({"steps": {"step_num": [1]}}, "steps: not the expected columns"),
    ({"steps": {**{c: [1, 2] for c in jobfacts.STEP_COLUMNS}, "step_num": [1]}}, "steps: columns of different lengths"),
    ({"steps": {**{c: [1] for c in jobfacts.STEP_COLUMNS}, "duration_ps": [-5]}}, "steps: a value that is not a count"),
    ({"steps": {c: (1,) for c in jobfacts.STEP_COLUMNS}}, "steps: a column that is not a list"),
    ({"bytes_read": "10"}, "bytes_read/files: not counts"),
    ({"files": -1}, "bytes_read/files: not counts"),
    ({"data_dirs": {f"/d{i}": 1 for i in range(jobfacts.MAX_DIRS + 1)}}, "data_dirs: not folder -> bytes"),
    ({"data_dirs": {"/d": -1}}, "data_dirs: not folder -> bytes"),
    ({"data_dirs": [["/d", 1]]}, "data_dirs: not folder -> bytes"),
])
def test_each_fault_is_named(change: dict[str, Any], why: str) -> None:
    assert jobfacts.check({**good(), **change}) == why
    assert jobfacts.check([good()]) == "not the expected fields"


def capture(tmp_path: Path) -> str:
    p = tmp_path / "h.xplane.pb"
    p.write_bytes(b"\x0a\x00" * 100)
    return str(p)


def test_save_then_load_round_trips(tmp_path: Path) -> None:
    path = capture(tmp_path)
    assert jobfacts.load(path).state == "missing"
    file = jobfacts.save(path, good())
    assert file is not None and file.name.endswith(jobfacts.SUFFIX)
    got = jobfacts.load(path)
    assert (got.state, got.facts, got.reason) == ("ok", good(), "")
    assert jobfacts.load(path, part="other").state == "missing"     # another part has its own
    Path(path).write_bytes(b"\x0a\x00" * 101)                       # a new version of the capture
    assert jobfacts.load(path).state == "stale"


def test_damaged_documents_say_why(tmp_path: Path) -> None:
    path = capture(tmp_path)
    file = jobfacts.save(path, good())
    assert file is not None
    doc = json.loads(file.read_text())
    cases = [
        (b"{nope", "not a readable JSON object"),
        (json.dumps({**doc, "path": "/elsewhere"}).encode(), "not the job facts of this capture"),
        (json.dumps({**doc, "format": "tb_iotrace.jobfacts/0"}).encode(), "not the job facts of this capture"),
        (json.dumps({**doc, "identities": "x"}).encode(), "not the job facts of this capture"),
        (json.dumps({**doc, "facts": {**good(), "role": "x"}}).encode(), "role: unknown"),
    ]
    for body, why in cases:
        file.write_bytes(body)
        got = jobfacts.load(path)
        assert got.state == "damaged" and got.facts is None and why in got.reason, (body, got.reason)
        assert got.reason.startswith(file.name)


def test_save_refuses_invalid_or_unreadable(tmp_path: Path) -> None:
    path = capture(tmp_path)
    assert jobfacts.save(path, {**good(), "files": -1}) is None
    assert jobfacts.save(str(tmp_path / "gone.xplane.pb"), good()) is None
    assert jobfacts.load(path).state == "missing"
    assert jobfacts.load(str(tmp_path / "gone.xplane.pb")).state == "missing"


def test_make_doc_holds_its_identities(tmp_path: Path) -> None:
    path = capture(tmp_path)
    ident = summaries.identity(path)
    assert ident is not None
    doc = jobfacts.make_doc("n", "p", [ident], good())
    assert doc == {"format": jobfacts.FORMAT, "path": "n", "part": "p", "identities": [ident], "facts": good()}
