"""The DataLoader worker's fetch timing (tb_iotrace.recording.pytorch): a span per fetched batch
only while the worker records, the samples the batch holds (a short last batch of an iterable
dataset included), nothing while idle, and a torch release without the fetcher names left
untouched with a note in the trace."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("torch")

from torch.utils.data import IterableDataset   # noqa: E402
from torch.utils.data._utils import fetch as torch_fetch   # noqa: E402
from torch.utils.data._utils.collate import default_collate   # noqa: E402

from tb_iotrace.recording import pytorch as cap
from tb_iotrace.recording.pytorch import state as cap_state
from tb_iotrace.recording.pytorch.worker import fetch as cap_fetch


class Count(IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


def test_map_fetch_timed_only_while_recording(monkeypatch) -> None:
    fetcher = torch_fetch._MapDatasetFetcher(list(range(10)), True, default_collate, False)
    fetch = cap_fetch.wrap_fetch(torch_fetch._MapDatasetFetcher.fetch, iterable=False)
    monkeypatch.setattr(cap_state, "spans", None)
    assert fetch(fetcher, [1, 2, 3]).tolist() == [1, 2, 3]
    spans: list = []
    monkeypatch.setattr(cap_state, "spans", spans)
    assert fetch(fetcher, [4, 5]).tolist() == [4, 5]
    (s,) = spans
    start, end, tid, samples = s
    assert start <= end and samples == 2
    assert tid == threading.get_native_id()


def test_span_dropped_when_the_window_ends_during_the_fetch(monkeypatch) -> None:
    spans: list = []

    def real(self, index):
        cap_state.spans = None   # the worker's stop arrives while the batch is fetched
        return index

    monkeypatch.setattr(cap_state, "spans", spans)
    assert cap_fetch.wrap_fetch(real, iterable=False)(object(), [1]) == [1]
    assert spans == []


def test_iterable_short_last_batch_counts_its_samples(monkeypatch) -> None:
    fetcher = torch_fetch._IterableDatasetFetcher(Count(5), True, default_collate, False)
    fetch = cap_fetch.wrap_fetch(torch_fetch._IterableDatasetFetcher.fetch, iterable=True)
    spans: list = []
    monkeypatch.setattr(cap_state, "spans", spans)
    assert fetch(fetcher, [0, 1, 2]).tolist() == [0, 1, 2]
    assert fetch(fetcher, [0, 1, 2]).tolist() == [3, 4]
    with pytest.raises(StopIteration):
        fetch(fetcher, [0, 1, 2])
    assert [s[3] for s in spans] == [3, 2]     # the ended fetch delivered no batch: no span
    assert fetcher.collate_fn is default_collate   # the fetcher's own collate_fn is back


def test_torch_without_the_fetchers_runs_untouched_with_a_note(monkeypatch, tmp_path) -> None:
    monkeypatch.delattr(torch_fetch, "_MapDatasetFetcher")
    why = cap.fetch_spans_unavailable()
    assert why is not None and "torch.utils.data._utils.fetch._MapDatasetFetcher.fetch" in why
    before = torch_fetch._IterableDatasetFetcher.fetch
    monkeypatch.setattr(cap_state, "fetch_note", None)
    cap_fetch.time_fetches((), {"worker_id": 0})
    assert torch_fetch._IterableDatasetFetcher.fetch is before   # nothing wrapped
    monkeypatch.setattr(cap_state, "fetch_note", why)
    handler = cap.TraceHandler(str(tmp_path))

    class Prof:
        def export_chrome_trace(self, path: str) -> None:
            with open(path, "w") as fh:
                fh.write('{"traceEvents": [], "baseTimeNanoseconds": 0}')

    handler(Prof())
    from tb_iotrace.store.kineto import io_record, read_trace
    rec = io_record(read_trace(handler.written[0]))
    assert rec is not None and why in rec["notes"]
