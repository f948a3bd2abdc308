"""The "All hosts" job verdict (tb_iotrace.plugin.endpoints.job_tables): the view's hosts' findings
answers read as the ranks of one job, as ``tb-iotrace report`` reads its host documents."""
from __future__ import annotations

from typing import Any

import pytest

from tb_iotrace.plugin.endpoints.job_tables import run_job_verdict

MS = 10**9     # ps


def _answer(rank: int | None, wait_ms: float, coll_ms: float, step_ms: float = 500) -> dict[str, Any]:
    """A host's findings answer: its rank, verdict, steps and bytes read."""
    steps = [{"step_num": 2 + i, "start_ps": int(i * step_ms * MS), "end_ps": int((i + 1) * step_ms * MS),
              "duration_ps": int(step_ms * MS), "input_wait_ps": int(wait_ms * MS),
              "collective_wait_ps": int(coll_ms * MS)} for i in range(6)]
    return {"rank": rank, "steps": steps, "read": {"bytes_read": 64 << 10, "files": 4},
            "verdict": {"bound": "input" if wait_ms >= 50 else "not input", "input_wait_share": wait_ms / step_ms,
                        "cause": "file_io", "change": "num_workers=2 -> 4", "advice": "...", "collectives": True}}


def _job() -> list[tuple[str, dict[str, Any]]]:
    return [(f"host{r}", _answer(r, 400 if r == 2 else 1, 2 if r == 2 else 400)) for r in range(4)]


def test_the_slow_rank_is_named_and_the_others_wait_for_it() -> None:
    done = _job()
    jv, found, verdicts = run_job_verdict(done)
    assert jv is not None and jv["ranks"] == 4
    assert jv["straggler"]["rank"] == 2 and jv["straggler"]["host"] == "host2"
    assert jv["straggler"]["cost_share"] == pytest.approx(399 / 500)
    assert [(f["id"], f["host"]) for f in found if f["id"] == "input-straggler"] == [("input-straggler", "host2")]
    assert verdicts["host0"]["waits_for"]["rank"] == 2
    assert "waits_for" not in verdicts["host2"]
    # the answers themselves are left as they were (they are cached per host)
    assert all("waits_for" not in got["verdict"] for _, got in done)


def test_one_host_is_no_job() -> None:
    assert run_job_verdict([("host0", _answer(0, 400, 2))]) == (None, [], {})
