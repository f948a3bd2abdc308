"""tb_iotrace.recording.pytorch.worker.fetch, what tests/unit/test_fetch_timing.py does not prove:
a batch's sample count (its length, else its index's, else 1; 1 for a fetch without auto-collation),
a fetch that raises leaves no span and the fetcher's collate_fn as it was, ``time_fetches`` notes
the worker's id (keyword or torch's positional argument) and wraps each of torch's fetchers once,
does nothing when fetch spans are off and never fails the worker, and the reasons spans are off
(torch's fetch module not importable, or lacking a fetcher) are said and kept in the state."""
from __future__ import annotations

import logging
import os
import sys
from typing import Any

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")

from torch.utils.data._utils import fetch as torch_fetch   # noqa: E402
from torch.utils.data._utils.collate import default_collate   # noqa: E402

from tb_iotrace.recording.pytorch import state   # noqa: E402
from tb_iotrace.recording.pytorch.worker import fetch as F   # noqa: E402


@pytest.fixture(autouse=True)
def kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's fetchers and the worker's state put back after each test."""
    for name in state.FETCHERS:
        cls = getattr(torch_fetch, name)
        monkeypatch.setattr(cls, "fetch", cls.fetch)
    monkeypatch.setattr(state, "fetch_note", None)
    monkeypatch.setattr(state, "worker_id", None)
    monkeypatch.setattr(state, "spans", None)


class Unsized:
    pass


def test_samples_is_the_batchs_length_else_its_indexs_else_one() -> None:
    assert F.samples([1, 2, 3], None) == 3
    assert F.samples(Unsized(), [0, 1]) == 2
    assert F.samples(Unsized(), Unsized()) == 1
    assert F.samples(Unsized(), None) == 1


def test_a_fetch_without_auto_collation_is_one_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    fetcher = torch_fetch._MapDatasetFetcher(list(range(10)), False, lambda x: x, False)
    fetch = F.wrap_fetch(torch_fetch._MapDatasetFetcher.fetch, iterable=False)
    spans: list[Any] = []
    monkeypatch.setattr(state, "spans", spans)
    assert fetch(fetcher, 4) == 4
    assert [s[3] for s in spans] == [1]
    it = torch_fetch._IterableDatasetFetcher(iter(range(3)), False, lambda x: x, False)
    assert F.wrap_fetch(torch_fetch._IterableDatasetFetcher.fetch, iterable=True)(it, None) == 0
    assert [s[3] for s in spans] == [1, 1] and it.collate_fn is not None


def test_a_fetch_that_raises_leaves_no_span_and_collate_fn_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    def collate(batch: Any) -> Any:
        raise ValueError("bad sample")
    fetcher = torch_fetch._IterableDatasetFetcher(iter(range(5)), True, collate, False)
    fetch = F.wrap_fetch(torch_fetch._IterableDatasetFetcher.fetch, iterable=True)
    spans: list[Any] = []
    monkeypatch.setattr(state, "spans", spans)
    with pytest.raises(ValueError, match="bad sample"):
        fetch(fetcher, [0, 1])
    assert spans == [] and fetcher.collate_fn is collate
    mapped = torch_fetch._MapDatasetFetcher([1], True, default_collate, False)
    with pytest.raises(IndexError):
        F.wrap_fetch(torch_fetch._MapDatasetFetcher.fetch, iterable=False)(mapped, [0, 5])
    assert spans == []


def test_time_fetches_notes_the_worker_and_wraps_each_fetcher_once() -> None:
    real = {n: getattr(torch_fetch, n).fetch for n in state.FETCHERS}
    F.time_fetches((), {"worker_id": 3})
    assert state.worker_id == 3
    wrapped = {n: getattr(torch_fetch, n).fetch for n in state.FETCHERS}
    for name in state.FETCHERS:
        assert wrapped[name].__tbio_wrapper__ is True and wrapped[name].__wrapped__ is real[name]
    args: tuple[Any, ...] = tuple(range(10)) + (7,)            # torch passes worker_id 11th
    F.time_fetches(args, {})
    assert state.worker_id == 7
    assert {n: getattr(torch_fetch, n).fetch for n in state.FETCHERS} == wrapped   # not wrapped again
    F.time_fetches((), {"worker_id": "2"})
    assert state.worker_id is None


def test_time_fetches_does_nothing_when_spans_are_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "fetch_note", "off")
    before = torch_fetch._MapDatasetFetcher.fetch
    F.time_fetches((), {"worker_id": 1})
    assert torch_fetch._MapDatasetFetcher.fetch is before and state.worker_id is None


def test_time_fetches_never_fails_the_worker(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def broken(real: Any, iterable: bool) -> Any:
        raise RuntimeError("cannot wrap")
    monkeypatch.setattr(F, "wrap_fetch", broken)
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        F.time_fetches((), {"worker_id": 0})
    assert [r.getMessage() for r in caplog.records] == [
        f"tb_iotrace: DataLoader worker pid {os.getpid()} will not time its fetches: cannot wrap"]


def test_why_spans_are_off_is_said_and_kept(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    F.note_fetch_spans()
    assert state.fetch_note is None
    monkeypatch.setattr(sys.modules["torch"], "__version__", "9.8.7")
    monkeypatch.setattr(torch_fetch._IterableDatasetFetcher, "fetch", None)   # no callable fetch
    monkeypatch.delattr(torch_fetch, "_MapDatasetFetcher")
    want = ("DataLoader fetch spans not recorded: torch 9.8.7 has no "
            "torch.utils.data._utils.fetch._MapDatasetFetcher.fetch, "
            "torch.utils.data._utils.fetch._IterableDatasetFetcher.fetch")
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        F.note_fetch_spans()
    assert state.fetch_note == want
    assert [r.getMessage() for r in caplog.records] == [f"tb_iotrace: {want}"]


def test_a_torch_without_the_fetch_module_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.utils.data._utils as utils

    monkeypatch.delattr(utils, "fetch")
    monkeypatch.setitem(sys.modules, "torch.utils.data._utils.fetch", None)   # an import that fails
    why = F.fetch_spans_unavailable()
    assert why is not None
    assert why.startswith("DataLoader fetch spans not recorded: torch.utils.data._utils.fetch not importable (")
