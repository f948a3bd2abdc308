"""tb_iotrace.analysis.impact: what a finding's calls cost the step (blocked time over step
time), and the severity that follows from it."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tb_iotrace.analysis.impact import blocked_ps, grade, impact_of
from tb_iotrace.analysis.thresholds import Thresholds


def ctx(calls: list[tuple[int, int, bool, int]], waits: list[tuple[int, int]], timeline: bool = True) -> Any:
    """calls: (start, end, on the training thread, step index or -1); waits: input waits."""
    a = np.array(calls, dtype=np.int64).reshape(-1, 4)
    att = SimpleNamespace(step=a[:, 3]) if timeline else None
    return SimpleNamespace(s_ps=a[:, 0], e_ps=a[:, 1], train_rows=a[:, 2].astype(bool), att=att,
                           wait_iv=(np.array([w[0] for w in waits], np.int64), np.array([w[1] for w in waits], np.int64)))


STEPS = [{"start_ps": 0, "end_ps": 100}, {"start_ps": 100, "end_ps": 200}]


def test_blocked_is_the_wait_covered_plus_the_training_threads_own_calls() -> None:
    c = ctx([(10, 30, False, -1),      # a loader read, in the wait [15, 40] from 15 to 30
             (20, 35, False, -1),      # overlapping it: merged, the wait covered 15-35 = 20
             (120, 130, True, 1),      # the training thread, in a step, outside any wait: 10
             (36, 50, True, 0),        # the training thread, in a step: 14, of which 36-40 in the wait
             (300, 400, True, -1)],    # the training thread outside every step: nothing
            waits=[(15, 40)])
    assert blocked_ps(c, np.array([0, 1])) == 20
    assert blocked_ps(c, np.array([2])) == 10
    assert blocked_ps(c, np.array([3])) == 14                     # 4 in the wait, counted once
    assert blocked_ps(c, np.array([4])) == 0
    # the wait covered by any of them (20 + 4), plus the training thread's own in steps (10 + 14)
    # less what of those was already in the wait (4)
    assert blocked_ps(c, np.array([0, 1, 2, 3, 4])) == 24 + 24 - 4
    assert blocked_ps(c, np.array([], dtype=np.int64)) == 0


def test_impact_over_the_steps() -> None:
    c = ctx([(10, 30, False, -1)], waits=[(0, 50), (100, 110)])
    got = impact_of(c, STEPS, {"id": "small-reads"}, np.array([0]))
    assert got == {"step_share": pytest.approx(0.1), "ms_per_step": pytest.approx(20 / 2 / 1e9), "basis": "steps"}
    bound = impact_of(c, STEPS, {"id": "input-bound", "evidence": {"input_wait_s": 60e-12}}, None)
    assert bound["step_share"] == pytest.approx(0.3)
    restarts = impact_of(c, STEPS, {"id": "worker-restarts", "evidence": {"cost_s": 1.0}}, None)
    assert restarts["step_share"] == 1.0                           # capped at the whole step time
    assert impact_of(c, STEPS, {"id": "x"}, None)["step_share"] == 0.0


def test_impact_without_steps_is_over_the_waits_span_and_without_timeline_none() -> None:
    c = ctx([(10, 30, False, -1)], waits=[(0, 50), (150, 200)])
    got = impact_of(c, [], {"id": "small-reads"}, np.array([0]))
    assert got == {"step_share": pytest.approx(0.1), "ms_per_step": None, "basis": "input waits"}
    none = ctx([(10, 30, False, -1)], waits=[(0, 50)], timeline=False)
    assert impact_of(none, STEPS, {"id": "small-reads"}, np.array([0])) == {
        "step_share": None, "ms_per_step": None, "basis": "no timeline"}
    quiet = ctx([(10, 30, False, -1)], waits=[])
    assert impact_of(quiet, [], {"id": "small-reads"}, np.array([0]))["basis"] == "no input waits"


def finding(severity: str, share: float | None, ms: float | None = 1.0) -> dict[str, Any]:
    return {"severity": severity, "statement": "Reads are small.", "impact": {"step_share": share, "ms_per_step": ms}}


@pytest.mark.parametrize("severity,share,want", [
    ("warning", 0.01, "info"), ("info", 0.01, "info"), ("warning", 0.05, "warning"), ("info", 0.05, "warning"),
    ("warning", 0.59, "warning"), ("warning", 0.60, "critical"), ("info", 0.9, "critical"), ("critical", 0.2, "critical"),
    ("warning", None, "warning"),
])
def test_grade(severity: str, share: float | None, want: str) -> None:
    f = finding(severity, share)
    grade(Thresholds(), f)
    assert f["severity"] == want


def test_a_lowered_finding_says_why() -> None:
    f = finding("warning", 0.012, ms=0.05)
    grade(Thresholds(), f)
    assert f["statement"] == ("Reads are small. But the step waits on these calls only 1.2% of its time, 50 us per "
                              "step: under 5% this is info, not a warning.")
    g = finding("critical", 0.02, ms=None)
    grade(Thresholds(), g)
    assert g["statement"].endswith("only 2.0% of its time: under 5% this is info, not a critical.")
    h = finding("info", 0.01)
    grade(Thresholds(), h)
    assert h["statement"] == "Reads are small."                     # already info: nothing to explain
