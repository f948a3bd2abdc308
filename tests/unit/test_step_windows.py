"""torch.profiler windows started and stopped at the training thread's step boundaries, with no
``prof.step()`` in the loop (:mod:`tb_iotrace.recording.pytorch.parent.step_windows`): the DataLoader's
iterations stand for steps, else the optimizer's ``step()`` calls; a profiler the job starts stops
ours and takes over; everything installed is undone."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from tb_iotrace.recording.pytorch.parent.step_windows import LOADER, OPTIMIZER, StepWindows  # noqa: E402


def windows(tmp: Path) -> tuple[StepWindows, list[tuple[str, list[str]]]]:
    """A StepWindows whose handler keeps (steps' source, event names of PyTorch's export)."""
    got: list[tuple[str, list[str]]] = []

    def make(source: str) -> Any:
        def ready(prof: Any) -> None:
            path = tmp / f"w{len(got)}.json"
            prof.export_chrome_trace(str(path))
            got.append((source, [str(e.get("name")) for e in json.loads(path.read_text())["traceEvents"]]))
        return ready
    return StepWindows(make), got


def untouched() -> bool:
    from torch.optim import optimizer
    from torch.profiler.profiler import _KinetoProfile
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    return (not hasattr(_BaseDataLoaderIter.__next__, "__wrapped__")
            and not hasattr(_KinetoProfile.prepare_trace, "__wrapped__")
            and not optimizer._global_optimizer_post_hooks)


def train(steps: int, loader: Any = None) -> None:
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = loader if loader is not None else (torch.ones(2, 4) for _ in range(steps))
    for batch in batches:
        model(batch).sum().backward()
        opt.step()
        time.sleep(0.01)


def test_optimizer_steps_stand_for_steps_without_a_dataloader(tmp_path: Path) -> None:
    sw, got = windows(tmp_path)
    sw.install()
    try:
        sw.ask(0.3)
        train(120)                # ~1.3 s: the window of 0.3 s starts at the first step, ends after
                                  # (3 steps in it while a step takes under 0.1 s: a loaded machine)
    finally:
        sw.uninstall()
    assert untouched()
    (source, names), = got
    assert source == OPTIMIZER
    steps = [n for n in names if n.startswith("ProfilerStep#")]
    assert len(steps) >= 3 and "aten::addmm" in names
    assert sw.windows == 1 and sw.prof is None


def test_dataloader_iterations_stand_for_steps(tmp_path: Path) -> None:
    data = torch.utils.data.TensorDataset(torch.ones(256, 4))
    loader = torch.utils.data.DataLoader(data, batch_size=2)
    sw, got = windows(tmp_path)
    sw.install()
    try:
        sw.ask(0.3)               # 128 batches, ~1.3 s (3 steps in the window while one takes < 0.1 s)
        train(0, ([b[0] for b in [batch]][0] for batch in loader))
    finally:
        sw.uninstall()
    assert untouched()
    (source, names), = got
    assert source == LOADER
    assert any(n.startswith("enumerate(DataLoader)") for n in names)   # the input wait, inside the steps
    assert len([n for n in names if n.startswith("ProfilerStep#")]) >= 3


def test_the_jobs_own_profiler_is_left_alone(tmp_path: Path) -> None:
    sw, got = windows(tmp_path)
    sw.install()
    try:
        sw.ask(30.0)
        train(3)                                      # our window is open
        assert sw.prof is not None
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            torch.ones(3).sum()
        assert sw.foreign and sw.prof is None         # ours stopped first, no more asked for
        assert any(e.name == "aten::sum" for e in prof.events())
        sw.ask(1.0)
        train(3)
        assert sw.prof is None and len(got) == 1
    finally:
        sw.uninstall()
    assert untouched()
