"""tb_iotrace.recording.pytorch.parent.loaders with real CPU PyTorch: the DataLoaders a window saw
are named when it stops, with their settings, even when the loader itself is gone by then (a
job's loop that ends before its last window: the window is stopped at exit, after the function
that held the loader returned)."""
from __future__ import annotations

import gc

import pytest

from tb_iotrace.recording.pytorch.parent import loaders as torch_loaders


@pytest.fixture()
def hooked():
    torch = pytest.importorskip("torch")
    torch_loaders.install()
    torch_loaders.window_stopped()          # no window left open by another test
    yield torch
    torch_loaders.window_stopped()


def _epoch(torch, batch: int) -> int:
    """One epoch of a loader made and dropped here; the batches it gave."""
    loader = torch.utils.data.DataLoader(list(range(12)), batch_size=batch, num_workers=0)
    return sum(1 for _ in loader)


def test_a_loader_gone_before_the_window_stops_is_still_named(hooked) -> None:
    torch_loaders.window_started()
    assert _epoch(hooked, 4) == 3
    gc.collect()                            # the loader and its iterator are gone
    got = torch_loaders.window_stopped()
    assert [(d["batch_size"], d["num_workers"], d["iterator"], len(d["epochs"])) for d in got] == \
        [(4, 0, "_SingleProcessDataLoaderIter", 1)], got


def test_a_loader_iterated_before_the_window_and_gone_in_it_is_named(hooked) -> None:
    loader = hooked.utils.data.DataLoader(list(range(12)), batch_size=3, num_workers=0)
    it = iter(loader)
    next(it)
    torch_loaders.window_started()          # mid-epoch: the window sees it advance, then go
    assert sum(1 for _ in it) == 3
    del it, loader
    gc.collect()
    got = torch_loaders.window_stopped()
    assert [(d["batch_size"], d["epochs"]) for d in got] == [(3, [])], got


def test_a_loader_outside_every_window_is_not_named(hooked) -> None:
    assert _epoch(hooked, 6) == 2           # before the window: not its loader
    gc.collect()
    torch_loaders.window_started()
    assert torch_loaders.window_stopped() == []
