"""tb_iotrace.analysis.collectives: which events are collectives (PyTorch, TensorFlow, XLA,
JAX), and the collective wait per step and as a share of step time."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tb_iotrace.analysis import collectives
from tb_iotrace.analysis.collectives import collective_fields, is_collective, per_step


@pytest.mark.parametrize("name", ["gloo:all_reduce", "nccl:all_reduce", "c10d::allreduce_", "record_param_comms",
                                  "ncclKernel_AllReduce_RING_LL_Sum_float", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
                                  "CollectiveReduceV2", "NcclAllReduce", "all-reduce.12", "all-reduce-start.3",
                                  "reduce-scatter.1", "all-gather-done", "collective-permute.2", "all-to-all",
                                  "%all-reduce.7", "psum", "HorovodAllreduce",
                                  "sgd_1/CollectiveReduceV2:CollectiveReduceV2"])
def test_collective_names(name: str) -> None:
    assert is_collective(name)


@pytest.mark.parametrize("name", ["aten::add", "ProfilerStep#3", "DistributedDataParallel.forward", "fusion.12",
                                  "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "IteratorGetNext",
                                  "psummary", "allocate", "CollectiveExecutor::RunClosure",
                                  "EagerLocalExecute: IteratorGetNext", "sequential/dense/MatMul:_MklNativeFusedMatMul"])
def test_not_collective_names(name: str) -> None:
    assert not is_collective(name)


def test_collective_wait_per_step_counts_overlap_once() -> None:
    iv = (np.array([0, 150]), np.array([100, 250]))
    steps = [{"start_ps": 0, "end_ps": 200}, {"start_ps": 200, "end_ps": 400}]
    assert per_step(iv, steps).tolist() == [150, 50]
    assert collective_fields(None, steps)["collective_wait_share"] is None


@pytest.mark.parametrize("name, want", [
    ("all-reduce.3", True), ("%all-reduce-start.1", True), ("reduce-scatter", True),
    ("collective-permute-done", True),
    # XLA's compiler passes on its compiler threads (tests/data/jax_io.xplane.pb has both)
    ("all-reduce-promotion", False), ("all_to_all_decomposer", False),
])
def test_hlo_collectives_by_instruction_name_not_compiler_passes(name: str, want: bool) -> None:
    assert is_collective(name) is want


def test_collective_fields_share_per_step_and_on_each_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collectives, "named_intervals",
                        lambda space, match, where: (np.array([50, 300], np.int64), np.array([100, 320], np.int64)))
    steps: list[dict[str, Any]] = [{"start_ps": 0, "end_ps": 200}, {"start_ps": 200, "end_ps": 400}]
    got = collective_fields(object(), steps)
    assert got == {"collective_wait_share": pytest.approx(70 / 400), "collective_wait_ms_per_step": pytest.approx(35 / 1e9),
                   "collectives": True}
    assert [s["collective_wait_ps"] for s in steps] == [50, 20]
    none = collective_fields(object(), [])                        # collectives but no steps: no share
    assert none == {"collective_wait_share": None, "collective_wait_ms_per_step": None, "collectives": True}
    monkeypatch.setattr(collectives, "named_intervals", lambda space, match, where: (np.zeros(0, np.int64),) * 2)
    assert collective_fields(object(), [{"start_ps": 0, "end_ps": 10}])["collectives"] is False


def test_per_step_without_steps_is_empty() -> None:
    assert per_step((np.array([0]), np.array([5])), []).size == 0
