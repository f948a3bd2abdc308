"""Job facts kept per capture version (tb_iotrace.store.jobfacts, tb_iotrace.analysis.job_facts):
the job verdict made from them equals the one made from the decoded captures; facts of another
version of a capture are made again, never trusted; damaged ones are ignored with one note and
made again."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_job_verdict import _doc, _job

from tb_iotrace.analysis.job_facts import doc_of, facts_of
from tb_iotrace.analysis.job_verdict import job_verdict
from tb_iotrace.cli import hostrows
from tb_iotrace.cli.report_text.document import render_host_table
from tb_iotrace.analysis import run_result
from tb_iotrace.analysis.host_result import summary_row
from tb_iotrace.model.open_source import open_source
from tb_iotrace.plugin.synthetic_ranks import make_ranks
from tb_iotrace.store import jobfacts, summaries

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "ddp_rank0.pt.trace.json.gz"


def _through_facts(docs: list[dict]) -> list[dict]:
    out = []
    for d in docs:
        facts = facts_of(d)
        assert facts is not None and jobfacts.check(json.loads(json.dumps(facts))) == ""
        out.append(doc_of(d["host"], json.loads(json.dumps(facts))))
    return out


def _with_workers() -> list[dict]:
    docs = [_doc(f"rank{r}", r, [1.0] * 6, [3.0] * 6) for r in range(4)]
    docs += [_doc(f"rank{r}.w", r, [], [], role="worker", bytes_read=(4 << 20) if r == 1 else 0) for r in range(4)]
    return docs


def _no_steps() -> list[dict]:
    docs = [_doc(f"rec{r}", r, [], [], bytes_read=(64 << 10) * (3 if r == 0 else 1)) for r in range(3)]
    for d in docs:
        d["summary"]["bytes_read"] = d["files"][0]["counters"]["POSIX_BYTES_READ"]
    return docs


@pytest.mark.parametrize("docs", [_job(), _job(heavy=2.0), _with_workers(), _no_steps(),
                                  [_doc(f"w{k}", None, [400.0 if k == 1 else 1.0] * 6, [2.0 if k == 1 else 400.0] * 6)
                                   for k in range(3)]],
                         ids=["straggler", "heavy-shard", "workers", "no-steps", "ranks-by-host"])
def test_job_verdict_from_facts_equals_the_one_from_documents(docs) -> None:
    want = job_verdict(docs)
    assert want is not None
    assert job_verdict(_through_facts(docs)) == want


def test_steps_that_are_not_counts_keep_no_facts() -> None:
    d = _job()[0]
    d["steps"][0]["duration_ps"] = float("nan")
    assert facts_of(d) is None


def _report_then_hosts(logs: Path) -> tuple[dict, dict]:
    full = run_result.build(open_source(str(logs)), jobs=1, make=hostrows.kept)   # as `report` keeps them
    (run,) = full["runs"]
    got = hostrows.build(open_source(str(logs)), summary_row, jobs=1, full=hostrows.kept)
    return run, got


def test_report_hosts_job_verdict_from_facts_equals_the_full_report(tmp_path) -> None:
    """A real gloo rank's trace made into 4 ranks, rank 2 slow: ``report`` keeps every rank's
    facts; ``report --hosts`` then reads nothing but the stored summaries and facts and gives
    the same job verdict."""
    make_ranks(TRACE, tmp_path / "logs", 4, 2)
    run, got = _report_then_hosts(tmp_path / "logs")
    assert got["computed"] == 0, got
    (hrun,) = got["runs"]
    assert run["job_verdict"]["straggler"]["rank"] == 2
    assert hrun["job_verdict"] == run["job_verdict"] and hrun["notes"] == []
    text = render_host_table(got)
    assert "Job verdict (4 ranks, 6 steps matched by number): INPUT-BOUND on rank 2" in text


def test_hosts_without_facts_analyses_them_and_keeps_them(tmp_path) -> None:
    make_ranks(TRACE, tmp_path / "logs", 3, 1)
    first = hostrows.build(open_source(str(tmp_path / "logs")), summary_row, jobs=1, full=hostrows.kept)
    assert first["computed"] == 3 and first["runs"][0]["job_verdict"]["straggler"]["rank"] == 1
    again = hostrows.build(open_source(str(tmp_path / "logs")), summary_row, jobs=1, full=hostrows.kept)
    assert again["computed"] == 0 and again["runs"][0]["job_verdict"] == first["runs"][0]["job_verdict"]


def _facts_file(path: Path, part: str) -> Path:
    files = [f for f, _ in summaries.locations(str(path), part, jobfacts.SUFFIX) if f.exists()]
    assert len(files) == 1, files
    return files[0]


def test_stale_facts_are_made_again_not_trusted(tmp_path) -> None:
    """Rank 2's trace replaced by a balanced rank's (same size, its mtime put back): its stored
    facts are of another version; ``report --hosts`` analyses it again: no straggler any more."""
    logs = tmp_path / "logs"
    paths = make_ranks(TRACE, logs, 4, 2)
    _report_then_hosts(logs)
    (src,) = [s for s in open_source(str(logs)) if s.path == str(paths[2])]
    fact_file = _facts_file(paths[2], src.part)
    old = json.loads(fact_file.read_text())
    balanced = make_ranks(TRACE, tmp_path / "balanced", 4, None)[2]
    st = os.stat(paths[2])
    shutil.copyfile(balanced, paths[2])
    os.utime(paths[2], ns=(st.st_atime_ns, st.st_mtime_ns))
    assert jobfacts.load(str(paths[2]), src.part).state == "stale"
    # a new process, as a second `report --hosts` is (this one keeps the last traces it decoded
    # by size and mtime, which the rewrite put back)
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(logs), "--hosts", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["computed"] == 1 and got["runs"][0]["job_verdict"]["straggler"] is None, got["runs"][0]["job_verdict"]
    new = json.loads(fact_file.read_text())
    assert new["identities"] != old["identities"] and jobfacts.load(str(paths[2]), src.part).state == "ok"


@pytest.mark.parametrize("damage", ["not json", "bad rank", "uneven steps", "wrong capture"])
def test_damaged_facts_are_ignored_with_a_note_and_made_again(tmp_path, damage) -> None:
    logs = tmp_path / "logs"
    paths = make_ranks(TRACE, logs, 4, 2)
    run, _ = _report_then_hosts(logs)
    (src,) = [s for s in open_source(str(logs)) if s.path == str(paths[0])]
    f = _facts_file(paths[0], src.part)
    doc = json.loads(f.read_text())
    if damage == "not json":
        f.write_text('{"format": "tb_iotrace.jobfacts/1", "facts": [')
    elif damage == "bad rank":
        doc["facts"]["rank"] = -3          # the identity still matches: only the checks catch it
        f.write_text(json.dumps(doc))
    elif damage == "uneven steps":
        doc["facts"]["steps"]["input_wait_ps"].pop()
        f.write_text(json.dumps(doc))
    else:
        doc["path"] = "/elsewhere/rank9.pt.trace.json"
        f.write_text(json.dumps(doc))
    assert jobfacts.load(str(paths[0]), src.part).state == "damaged"
    got = hostrows.build(open_source(str(logs)), summary_row, jobs=1, full=hostrows.kept)
    (hrun,) = got["runs"]
    assert got["computed"] == 1 and hrun["job_verdict"] == run["job_verdict"]
    (note,) = hrun["notes"]
    assert note.startswith(f"The stored job facts of {src.host} are damaged (") and "made again" in note, note
    assert f"Note: {note}" in render_host_table(got)
    assert jobfacts.load(str(paths[0]), src.part).state == "ok"


def test_facts_are_not_saved_when_invalid_or_unwritable(tmp_path, monkeypatch) -> None:
    p = tmp_path / "x.pt.trace.json"
    p.write_text("{}")
    good = facts_of(_job()[0])
    assert good is not None
    assert jobfacts.save(str(p), {**good, "rank": True}) is None
    monkeypatch.setenv(summaries.ENV, "0")
    assert jobfacts.save(str(p), good) is None and jobfacts.load(str(p)).state == "missing"
