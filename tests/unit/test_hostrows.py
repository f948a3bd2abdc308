"""tb_iotrace.cli.hostrows (sources faked, summaries kept under tmp_path): rows read from valid
stored summaries and computed (then kept) only where missing or stale, hosts grouped by run
in order, the job verdict only for runs of two or more hosts and only from facts of all of
them, damaged stored job facts named with a hostile host name made printable, unknown or
unwritable versions never failing, and the number of worker processes bounded."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tb_iotrace.cli import hostrows
from tb_iotrace.store import jobfacts, summaries


@pytest.fixture(autouse=True)
def local_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(summaries.ENV, "local")


def source(tmp_path: Path, run: str, host: str, body: bytes = b"capture") -> Any:
    p = tmp_path / f"{run}-{len(list(tmp_path.glob('*.xplane.pb')))}.xplane.pb"
    p.write_bytes(body)
    return SimpleNamespace(run=run, host=host, path=str(p), part="")


def row(n: int) -> dict[str, Any]:
    return {"source": "counters", "bytes_read": n, "bytes_written": 0, "read_time_s": 0.5, "io_calls": 3,
            "files": 1, "input_wait_ns": 0, "input_wait_pct": 0.0, "span_ns": 10, "wait_basis": "none"}


def counting() -> tuple[list[str], Any]:
    seen: list[str] = []

    def compute(src: Any) -> dict[str, Any]:
        seen.append(src.host)
        return {"host": src.host, **row(len(seen))}

    return seen, compute


def test_rows_are_computed_once_then_read_from_their_summaries(tmp_path: Path) -> None:
    srcs = [source(tmp_path, "r1", "a"), source(tmp_path, "r2", "b"), source(tmp_path, "r1", "c\n")]
    seen, compute = counting()
    first = hostrows.build(srcs, compute, jobs=1)
    assert first["format"] == "tb_iotrace.hosts/1" and first["computed"] == 3 and seen == ["a", "b", "c\n"]
    assert [(r["run"], [h["host"] for h in r["hosts"]]) for r in first["runs"]] == [("r1", ["a", "c\n"]), ("r2", ["b"])]
    assert all(r["job_verdict"] is None and r["notes"] == [] for r in first["runs"])
    again = hostrows.build(srcs, compute, jobs=1)
    assert again["computed"] == 0 and len(seen) == 3
    assert again["runs"][0]["hosts"][1] == {"host": "c\n", **row(3)}
    Path(srcs[1].path).write_bytes(b"another version")
    third = hostrows.build(srcs, compute, jobs=1)
    assert third["computed"] == 1 and seen[-1] == "b" and third["runs"][1]["hosts"][0]["bytes_read"] == 4


def test_unknown_versions_and_invalid_rows_never_fail(tmp_path: Path) -> None:
    gone = SimpleNamespace(run="r", host="h", path=str(tmp_path / "gone.xplane.pb"), part="")
    assert hostrows.version(gone) is None and hostrows.stored(gone) is None
    hostrows.keep(gone, row(1), None)
    src = source(tmp_path, "r", "h")
    before = hostrows.version(src)
    assert before is not None
    hostrows.keep(src, {"bytes_read": -1}, before)           # invalid: not kept, not raised
    assert hostrows.stored(src) is None
    hostrows.keep(src, row(5), before)
    assert hostrows.stored(src) == {"host": "h", **row(5)}
    Path(src.path).write_bytes(b"rewritten while it was read")
    assert hostrows.stored(src) is None                      # kept for the version before, not this one


def test_the_job_verdict_needs_the_facts_of_every_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pair = [source(tmp_path, "job", "r0"), source(tmp_path, "job", "r1")]
    solo = source(tmp_path, "solo", "s")
    seen, compute = counting()
    full_of: list[str] = []

    def full(src: Any) -> dict[str, Any]:
        full_of.append(src.host)
        return {"summary": {"host": src.host, **row(9)}, "facts": src.host}

    monkeypatch.setattr(hostrows.job_facts, "facts_of", lambda doc: {"of": doc["facts"]})
    monkeypatch.setattr(hostrows.job_facts, "doc_of", lambda host, facts: (host, facts["of"]))
    verdicts: list[Any] = []
    monkeypatch.setattr(hostrows, "job_verdict", lambda docs: verdicts.append(docs) or {"bound": "input"})
    got = hostrows.build([*pair, solo], compute, jobs=1, full=full)
    assert full_of == ["r0", "r1"] and seen == ["s"] and got["computed"] == 3
    assert verdicts == [[("r0", "r0"), ("r1", "r1")]]
    assert [r["job_verdict"] for r in got["runs"]] == [{"bound": "input"}, None]
    assert got["runs"][0]["hosts"][0]["bytes_read"] == 9

    def no_facts(doc: dict[str, Any]) -> None:
        return None

    monkeypatch.setattr(hostrows.job_facts, "facts_of", no_facts)
    Path(pair[1].path).write_bytes(b"new")
    assert hostrows.build(pair, compute, jobs=1, full=full)["runs"][0]["job_verdict"] is None


def test_damaged_job_facts_are_named_printably(tmp_path: Path) -> None:
    src = source(tmp_path, "job", "h\x1b[31m\nx")
    file, _ = summaries.locations(src.path, "", jobfacts.SUFFIX)[0]
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("{not json")
    facts, note = hostrows._stored_facts(src)
    assert facts is None and note.startswith("The stored job facts of ") and "damaged" in note
    assert "\x1b" not in note and "\n" not in note and "h\\x1b[31m\\nx" in note
    assert hostrows._stored_facts(source(tmp_path, "job", "ok")) == (None, "")


def test_worker_processes_are_bounded_by_the_work() -> None:
    assert hostrows._jobs(8, 3) == 3 and hostrows._jobs(0, 5) == 1 and hostrows._jobs(-2, 5) == 1
    assert hostrows._jobs(4, 0) == 1
    assert 1 <= hostrows._jobs(None, 2) <= 2
