"""The job verdict across a run's ranks (tb_iotrace.analysis.job_verdict) on host documents
built here (which event names are collectives: test_collectives)."""
from __future__ import annotations

from typing import Any

import pytest

from tb_iotrace.analysis.job_verdict import annotate, job_verdict
from tb_iotrace.cli.report_text.job_text import render_job_verdict

MS = 10**9     # ps


def _doc(host: str, rank: int | None, waits_ms: list[float], colls_ms: list[float], step_ms: float = 500,
         first: int = 2, bytes_read: int = 64 << 10, files: int = 4, role: str = "main") -> dict[str, Any]:
    steps = [{"step_num": first + i, "start_ps": int(i * step_ms * MS), "end_ps": int((i + 1) * step_ms * MS),
              "duration_ps": int(step_ms * MS), "input_wait_ps": int(w * MS), "collective_wait_ps": int(c * MS)}
             for i, (w, c) in enumerate(zip(waits_ms, colls_ms))]
    n = len(steps) or 1
    return {"host": host, "process": {"rank": rank, "role": role} if rank is not None else None,
            "verdict": {"bound": "not input" if max(waits_ms, default=0) < 50 else "input",
                        "input_wait_share": sum(waits_ms) / n / step_ms, "cause": "file_io",
                        "change": "num_workers=2 -> 4", "advice": "Not input-bound: ...",
                        "collectives": bool(colls_ms)} if role == "main" else None,
            "steps": steps, "has_step_markers": bool(steps), "findings": [],
            "summary": {"bytes_read": bytes_read * n, "files": files * n},
            "files": [{"path": f"/data/{host}/s0.bin", "code": False, "counters": {"POSIX_BYTES_READ": bytes_read * n}}]}


def _job(slow: float = 400, heavy: float = 1.0) -> list[dict[str, Any]]:
    docs = []
    for r in range(4):
        w = slow if r == 2 else 1.0
        c = 2.0 if r == 2 else slow
        docs.append(_doc(f"rank{r}", r, [w] * 6, [c] * 6, bytes_read=int((64 << 10) * (heavy if r == 2 else 1))))
    return docs


def test_straggler_named_with_its_cost_and_others_waiting() -> None:
    jv = job_verdict(_job())
    assert jv is not None and jv["ranks"] == 4 and jv["matched_steps"] == 6 and jv["bound"] == "input"
    st = jv["straggler"]
    assert st["rank"] == 2 and st["excess_ms_per_step"] == pytest.approx(399) and st["cost_share"] == pytest.approx(399 / 500)
    assert sorted(o["rank"] for o in jv["others"]) == [0, 1, 3]
    assert all(o["waiting_share"] == pytest.approx(399 / 500) for o in jv["others"])
    assert "rank 2's loader: num_workers=2 -> 4" in jv["change"] and "/data/rank2" in jv["change"]
    assert jv["imbalance"] is None


def test_annotate_tells_rank_0_it_waits_for_rank_2() -> None:
    run = {"run": "r", "hosts": _job()}
    annotate(run)
    v0 = run["hosts"][0]["verdict"]
    assert v0["waits_for"]["rank"] == 2 and v0["advice"].startswith("Waits for rank 2")
    (f,) = [f for f in run["hosts"][2]["findings"] if f["id"] == "input-straggler"]
    assert f["impact"]["step_share"] == pytest.approx(399 / 500) and f["impact"]["ms_per_step"] == pytest.approx(399)
    assert "waits_for" not in run["hosts"][2]["verdict"]
    assert "INPUT-BOUND on rank 2" in render_job_verdict(run["job_verdict"])


def test_balanced_job_not_input_bound() -> None:
    docs = [_doc(f"rank{r}", r, [1.0] * 6, [3.0] * 6) for r in range(4)]
    run = {"hosts": docs}
    annotate(run)
    jv = run["job_verdict"]
    assert jv["bound"] == "not input" and jv["straggler"] is None and jv["imbalance"] is None
    assert all(not h["findings"] and "waits_for" not in h["verdict"] for h in docs)


def test_every_rank_slow_alike_is_input_bound_without_straggler() -> None:
    docs = [_doc(f"rank{r}", r, [300.0] * 6, [5.0] * 6) for r in range(4)]
    jv = job_verdict(docs)
    assert jv["bound"] == "input" and jv["straggler"] is None and "every rank alike" in jv["advice"]


def test_heavy_shard_is_imbalance_and_the_straggler_change_is_the_sharding() -> None:
    run = {"hosts": _job(heavy=2.0)}
    annotate(run)
    jv = run["job_verdict"]
    assert jv["imbalance"]["rank"] == 2 and jv["imbalance"]["ratio"] == pytest.approx(2.0)
    assert jv["straggler"]["imbalanced"] and jv["change"].startswith("rebalance the data sharding")
    ids = [f["id"] for f in run["hosts"][2]["findings"]]
    assert ids.count("imbalanced-shards") == 1 and ids.count("input-straggler") == 1


def test_heavy_shard_within_margin_is_not_named() -> None:
    assert job_verdict(_job(slow=1.0, heavy=1.4))["imbalance"] is None
    assert job_verdict(_job(slow=1.0, heavy=1.6))["imbalance"]["rank"] == 2


def test_steps_matched_by_number_only() -> None:
    docs = _job()
    docs[1] = _doc("rank1", 1, [1.0] * 6, [400.0] * 6, first=4)     # steps 4..9: 4 in common (4..7)
    assert job_verdict(docs)["matched_steps"] == 4


def test_workers_bytes_count_to_their_rank() -> None:
    docs = _job()
    docs.append({**_doc("rank0.worker", 0, [], [], bytes_read=64 << 10, role="worker"), "summary": {"bytes_read": 10 << 20, "files": 4},
                 "files": [{"path": f"/data/w/s{i}.bin", "code": False, "counters": {"POSIX_BYTES_READ": 10 << 18}}
                           for i in range(4)]})
    jv = job_verdict(docs)
    assert jv["ranks"] == 4
    assert jv["imbalance"]["rank"] == 0 and jv["imbalance"]["what"] == "bytes"


def test_whole_run_records_say_what_cannot_be_said() -> None:
    docs = [_doc(f"h.{r}", r, [], [], bytes_read=(128 << 10) if r == 3 else (32 << 10)) for r in range(4)]
    for d in docs:
        d["verdict"] = None
    jv = job_verdict(docs)
    assert jv["basis"] == "totals" and jv["bound"] == "unknown" and jv["straggler"] is None
    assert "cannot be said" in jv["advice"] and jv["imbalance"]["rank"] == 3


def test_captures_without_ranks_are_ranks_by_host() -> None:
    docs = _job()
    for d in docs:
        d["process"] = None
    jv = job_verdict(docs)
    assert jv["straggler"]["label"] == "rank2" and jv["straggler"]["rank"] is None
    for d in docs:                      # no rank and no collective: not taken for one job
        d["verdict"]["collectives"] = False
    assert job_verdict(docs) is None


def test_one_rank_no_job_verdict() -> None:
    assert job_verdict(_job()[:1]) is None


def test_report_names_the_slow_rank_of_ranks_made_from_a_real_trace(tmp_path) -> None:
    """Eight ranks made from a real gloo rank's PyTorch trace (tb_iotrace.plugin.synthetic_ranks),
    rank 5's waits exchanged: the report's job verdict names rank 5, ranks 0-4 and 6-7 wait for it."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from tb_iotrace.plugin.synthetic_ranks import make_ranks

    make_ranks(Path(__file__).resolve().parents[1] / "data" / "ddp_rank0.pt.trace.json.gz", tmp_path / "logs", 8, 5)
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(tmp_path / "logs"), "--json", "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (run,) = json.loads(r.stdout)["runs"]
    jv = run["job_verdict"]
    assert jv["ranks"] == 8 and jv["matched_steps"] == 6 and jv["straggler"]["rank"] == 5, jv
    assert jv["straggler"]["input_wait_ms_per_step"] > 300
    waits = [h["verdict"].get("waits_for", {}).get("rank") for h in run["hosts"]]
    assert waits == [5, 5, 5, 5, 5, None, 5, 5]


def test_network_endpoints_and_code_are_not_a_ranks_data() -> None:
    """The ranks' own gloo/NCCL connections are endpoints too (``tcp://``): equal on every rank, they
    would hide a heavy shard; code loading is not data either."""
    docs = _job(heavy=2.0)
    for d in docs:
        d["files"] += [{"path": "tcp://127.0.0.1:29500", "code": False, "counters": {"POSIX_BYTES_READ": 512 << 20}},
                       {"path": "/venv/lib/python3.11/site-packages/torch/_C.so", "code": True,
                        "counters": {"POSIX_BYTES_READ": 256 << 20}}]
        d["summary"]["bytes_read"] += 768 << 20       # a host's row sums every record, as summaries do
        d["summary"]["files"] += 2
    im = job_verdict(docs)["imbalance"]
    assert im["rank"] == 2 and im["what"] == "bytes" and 1.9 <= im["ratio"] <= 2.1, im
