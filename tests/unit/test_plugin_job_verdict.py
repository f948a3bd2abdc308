"""The "All hosts" view's job verdict (/findings of every host): four ranks made from a real
gloo rank's trace (tb_iotrace.plugin.synthetic_ranks), rank 2 slow: the answer's job verdict
names rank 2, its input-straggler finding is on rank 2's host, the other ranks' verdicts say
they wait for it; the same as `tb-iotrace report`."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorboard")
sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from plugin_client import findings_all, make_client  # noqa: E402

from tb_iotrace.plugin.synthetic_ranks import make_ranks  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"


def _all(get, run: str) -> dict:
    return findings_all(get, run, 240)


def test_all_hosts_job_verdict_names_the_slow_rank(tmp_path):
    make_ranks(DATA / "ddp_rank0.pt.trace.json.gz", tmp_path / "logs", 4, 2)
    _, get = make_client(tmp_path / "logs")
    code, runs = get("/runs")
    assert code == 200
    body = _all(get, "logs")
    assert body["pending"] == 0
    jv = body["job_verdict"]
    assert jv is not None and jv["ranks"] == 4 and jv["straggler"]["rank"] == 2, jv
    (f,) = [f for f in body["findings"] if f["id"] == "input-straggler"]
    assert f["host"] == jv["straggler"]["host"]
    told = {v["host"]: v.get("waits_for", {}).get("rank") for v in body["verdicts"]}
    assert sorted(told.values(), key=str) == [2, 2, 2, None], told
    shares = [(x.get("impact") or {}).get("step_share") or 0.0 for x in body["findings"]]
    assert shares == sorted(shares, reverse=True) and f["impact"]["step_share"] > 0.5   # ordered by what they cost


def test_one_host_has_no_job_verdict(tmp_path):
    make_ranks(DATA / "ddp_rank0.pt.trace.json.gz", tmp_path / "logs", 2, None)
    _, get = make_client(tmp_path / "logs")
    body = _all(get, "logs")
    assert body["job_verdict"] is not None and body["job_verdict"]["straggler"] is None
    code, one = get("/findings", run="logs", host="rank0")
    assert code == 200 and one["job_verdict"] is None


def _answer(rank: int, wait_ms: float, coll_ms: float, bytes_read: int) -> dict:
    ms = 10**9
    steps = [{"step_num": 2 + i, "start_ps": i * 500 * ms, "end_ps": (i + 1) * 500 * ms, "duration_ps": 500 * ms,
              "input_wait_ps": int(wait_ms * ms), "collective_wait_ps": int(coll_ms * ms)} for i in range(6)]
    return {"findings": [], "rank": rank, "steps": steps,
            "verdict": {"bound": "input" if wait_ms > 50 else "not input", "cause": "file_io", "change": "x",
                        "collectives": True, "input_wait_share": wait_ms / 500},
            "read": {"bytes_read": bytes_read, "files": 24, "dirs": {f"/data/r{rank}": bytes_read}}}


def test_all_hosts_job_verdict_counts_each_ranks_bytes() -> None:
    """The tab's job verdict reads each host's data bytes from its findings answer: rank 2 reading
    twice the others' bytes per step is an imbalanced shard, named as the report names it
    (failed first: the answer's bytes were read as none, so no shard could differ)."""
    from tb_iotrace.plugin.endpoints.job_tables import run_job_verdict

    done = [(f"h{r}", _answer(r, 400 if r == 2 else 1, 2 if r == 2 else 400, (2 << 20) * (2 if r == 2 else 1)))
            for r in range(4)]
    jv, found, _ = run_job_verdict(done)
    assert jv["imbalance"] is not None and jv["imbalance"]["rank"] == 2 and jv["imbalance"]["ratio"] == 2.0, jv
    assert jv["straggler"]["data_dir"] == "/data/r2"
    assert {f["id"] for f in found} == {"input-straggler", "imbalanced-shards"}


def test_hosts_gives_the_job_verdict_after_a_restart_without_decoding(tmp_path, monkeypatch) -> None:
    """The findings of "All hosts" keep each rank's job facts; a new plugin (TensorBoard
    restarted) answers ``/hosts`` with the same job verdict as the findings gave, from the stored
    summaries and facts alone (no capture loaded)."""
    from tb_iotrace.plugin.cache import LogdirIndex

    make_ranks(DATA / "ddp_rank0.pt.trace.json.gz", tmp_path / "logs", 4, 2)
    _, get = make_client(tmp_path / "logs")
    code, first = get("/hosts", run="logs", host="__all__")
    assert code == 200 and first["job_verdict"] is None and len(first["hosts"]) == 4   # no findings yet
    jv = _all(get, "logs")["job_verdict"]
    assert jv is not None and jv["straggler"]["rank"] == 2

    def no_decoding(self, path, host):
        raise AssertionError(f"{path} decoded")

    monkeypatch.setattr(LogdirIndex, "capture", no_decoding)
    _, get2 = make_client(tmp_path / "logs")
    code, again = get2("/hosts", run="logs", host="__all__")
    assert code == 200, again
    assert again["job_verdict"] == jv and again["job_notes"] == []


@pytest.mark.parametrize("change", ["damaged", "stale"])
def test_hosts_never_trusts_damaged_or_stale_facts(tmp_path, change) -> None:
    """After a restart, a rank whose stored facts are damaged (a note says so) or of another
    version of its trace (rewritten, its mtime put back) gives no job verdict from the facts;
    damaged ones are written again with the findings' next answer."""
    import json
    import os
    import shutil

    from tb_iotrace.store import jobfacts, summaries

    paths = make_ranks(DATA / "ddp_rank0.pt.trace.json.gz", tmp_path / "logs", 4, 2)
    _, get = make_client(tmp_path / "logs")
    jv = _all(get, "logs")["job_verdict"]
    assert jv["straggler"]["rank"] == 2
    (facts,) = [f for f, _ in summaries.locations(str(paths[1]), "", jobfacts.SUFFIX) if f.exists()]
    if change == "damaged":
        doc = json.loads(facts.read_text())
        doc["facts"]["steps"]["duration_ps"] = ["500"] * len(doc["facts"]["steps"]["duration_ps"])
        facts.write_text(json.dumps(doc))
    else:
        st = os.stat(paths[1])
        other = make_ranks(DATA / "ddp_rank0.pt.trace.json.gz", tmp_path / "other", 4, 1)[1]   # rank 1 slow now
        shutil.copyfile(other, paths[1])
        os.utime(paths[1], ns=(st.st_atime_ns, st.st_mtime_ns))
    _, get2 = make_client(tmp_path / "logs")
    code, hosts = get2("/hosts", run="logs", host="__all__")
    assert code == 200 and hosts["job_verdict"] is None, hosts["job_verdict"]
    if change == "damaged":
        (note,) = hosts["job_notes"]
        assert note.startswith("The stored job facts of rank1 are damaged (") and "made again" in note, note
        # the findings (this process still has their answers) write the facts again
        assert _all(get2, "logs")["job_verdict"] == jv
        code, hosts = get2("/hosts", run="logs", host="__all__")
        assert hosts["job_verdict"] == jv and hosts["job_notes"] == []
    else:
        assert hosts["job_notes"] == []
