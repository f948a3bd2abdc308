"""tb_iotrace.model.torch_trace_source: one process of a PyTorch trace as a Source. Proves a
worker's calls are its own threads' only and its counters its own, the main process's timeline
holds every process's calls, only the main process has a window and analysis input, a process
unknown to the trace has no calls, odd record fields read as absent, a missing file is a one-line
SourceError, and a rewritten file is converted again (the cache is keyed by size and mtime)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tb_iotrace.model.open_source import kineto_sources
from tb_iotrace.model.sources import SourceError
from tb_iotrace.model.torch_trace_source import TorchTraceSource

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture()
def procs(tmp_path: Path) -> list[TorchTraceSource]:
    p = tmp_path / "w0.1.pt.trace.json.gz"
    shutil.copyfile(DATA / "torch_loader.pt.trace.json.gz", p)
    return kineto_sources(p, "t")   # type: ignore[return-value]


def test_workers_own_calls_and_the_mains_timeline(procs: list[TorchTraceSource]) -> None:
    main = next(s for s in procs if s.is_main)
    workers = [s for s in procs if not s.is_main]
    for w in workers:
        tr = w.io_trace()
        assert len(tr) == 32 and set(tr.tid.tolist()) == {w.proc["pid"]}
        assert tr.counters == list(w.proc["counters"]) and w.timeline_trace() is tr
        assert w.profile_bounds() is None and w.analysis_input() is None
    assert len(main.timeline_trace()) == 64 and len(main.io_trace()) == 0
    assert main.profile_bounds()["start_ns"] is not None and main.analysis_input()[1] is None
    assert main.process()["role"] == "main" and main.part == f"pid{main.proc['pid']}"


def test_a_process_the_trace_does_not_know(procs: list[TorchTraceSource]) -> None:
    src = TorchTraceSource(run="t", host="x", path=procs[0].path,
                           proc={"pid": 1, "role": "worker", "untracked": "lots", "dropped": None})
    assert len(src.io_trace()) == 0 and src.untracked() is None and src.files() == []
    assert src.io_trace().dropped == 0 and src.window_origin() is None


def test_a_missing_file(tmp_path: Path) -> None:
    src = TorchTraceSource(run="t", host="x", path=str(tmp_path / "gone.pt.trace.json"), proc={"pid": 1})
    with pytest.raises(SourceError) as err:
        src.space()
    assert "gone.pt.trace.json" in str(err.value) and "\n" not in str(err.value)


def test_a_rewritten_trace_is_read_again(procs: list[TorchTraceSource], tmp_path: Path) -> None:
    first = procs[0].space()
    assert procs[1].space() is first                 # its processes share one conversion
    Path(procs[0].path).write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(SourceError):
        TorchTraceSource(run="t", host="x", path=procs[0].path, proc={"pid": 1}).space()


def test_the_record_is_parsed_once_for_all_its_processes(procs: list[TorchTraceSource],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every process's window origin and calls come from one parse of the trace's tb_iotrace
    record (the report of a 9-process H200 trace parsed it once per process per question: 0.1 s
    of its 0.28 s)."""
    from tb_iotrace.store.xplane import read_io

    for s in procs:
        s.space()                                       # the conversion itself, before counting
    calls = []
    real = read_io.find_io_record
    monkeypatch.setattr(read_io, "find_io_record", lambda space: calls.append(1) or real(space))
    origins = [s.window_origin() for s in procs]
    traces = [len(s.io_trace()) for s in procs]
    assert origins == [None] * len(procs) and sum(traces) == 64 and len(procs) == 3
    assert len(calls) <= 2, len(calls)                  # the record's info once, its calls once
