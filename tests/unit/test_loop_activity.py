"""tb_iotrace.recording.loop_activity: the loops' call counts read by the windows' thread.

Proves: the two counts are named as tb_iotrace.recording.window_choice and the framework
profilers name them, start at 0 in a fresh process, and ``snapshot`` is a copy: later counts
do not change a snapshot taken, and changing a snapshot does not change the counts.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tb_iotrace.recording import loop_activity
from tb_iotrace.recording.window_choice import PYTORCH
from tb_iotrace.recording.window_writer import FRAMEWORKS


def test_names_match_the_window_choice() -> None:
    assert loop_activity.TORCH == PYTORCH
    assert loop_activity.TF in FRAMEWORKS
    assert set(loop_activity.COUNTS) == {loop_activity.TORCH, loop_activity.TF}


def test_snapshot_is_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(loop_activity.COUNTS, loop_activity.TF, 5)
    monkeypatch.setitem(loop_activity.COUNTS, loop_activity.TORCH, 1)
    snap = loop_activity.snapshot()
    assert snap == {"tensorflow": 5, "pytorch": 1}
    loop_activity.COUNTS[loop_activity.TF] += 3
    assert snap["tensorflow"] == 5 and loop_activity.snapshot()["tensorflow"] == 8
    snap["pytorch"] = 100
    assert loop_activity.COUNTS[loop_activity.TORCH] == 1


def test_counts_start_at_zero() -> None:
    out = subprocess.run([sys.executable, "-c",
                          "from tb_iotrace.recording.loop_activity import snapshot; print(sorted(snapshot().items()))"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "[('pytorch', 0), ('tensorflow', 0)]"
