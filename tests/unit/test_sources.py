"""Every kind of source (tb_iotrace.model.sources) gives the same things: a profile capture, a
PyTorch trace's processes and a whole-run record, opened from the held data of tests/data."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tb_iotrace.model.open_source import open_source
from tb_iotrace.model.capture_source import CaptureSource
from tb_iotrace.model.record_source import RecordSource
from tb_iotrace.model.sources import IO_COLUMNS, SourceError
from tb_iotrace.model.torch_trace_source import TorchTraceSource

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sources")
    (d / "plugins" / "profile" / "r").mkdir(parents=True)
    shutil.copyfile(DATA / "jax_io.xplane.pb", d / "plugins" / "profile" / "r" / "vm.xplane.pb")
    (d / "t").mkdir()
    shutil.copyfile(DATA / "torch_loader.pt.trace.json.gz", d / "t" / "w0.1.pt.trace.json.gz")
    return d


def _same_calls(src) -> None:
    """Its calls as columns are its IoTrace's, column for column, and it counts them."""
    tr = src.io_trace()
    cols, threads = src.io_columns()
    assert set(cols) == set(IO_COLUMNS)
    for k in IO_COLUMNS:
        assert list(cols[k]) == list(getattr(tr, k)), k
    assert src.nevents() == len(tr)
    assert isinstance(threads, dict) and all(isinstance(t, int) for t in threads)


def test_a_capture(logdir: Path) -> None:
    [src] = [s for s in open_source(str(logdir)) if isinstance(s, CaptureSource)]
    assert (src.kind, src.run, src.host, src.part) == ("xplane", "r", "vm", "")
    assert src.has_timeline and src.space() is not None and src.analysis_input() is not None
    assert src.nevents() == 41 and len(src.files()) == 5
    _same_calls(src)
    assert src.process() is None and src.dropped() == 0 and not src.partial()


def test_a_pytorch_traces_processes(logdir: Path) -> None:
    procs = [s for s in open_source(str(logdir)) if isinstance(s, TorchTraceSource)]
    main = [s for s in procs if s.is_main]
    workers = [s for s in procs if not s.is_main]
    assert len(main) == 1 and len(workers) == 2
    # the main process carries the timeline and the analysis; its workers their own I/O only
    assert main[0].has_timeline and main[0].analysis_input() is not None
    assert all(not w.has_timeline and w.analysis_input() is None for w in workers)
    assert {w.part for w in workers} == {f"pid{w.process()['pid']}" for w in workers}
    assert all(w.kind == "kineto" and w.process()["role"] != "main" for w in workers)
    for w in workers:
        assert w.nevents() == 32 and len(w.files()) == 4
        _same_calls(w)


def test_a_whole_run_record() -> None:
    [src] = open_source(str(DATA / "run_v1"))
    assert isinstance(src, RecordSource) and src.kind == "record"
    assert not src.has_timeline and src.space() is None
    cols, threads = src.io_columns()
    assert set(cols) == set(IO_COLUMNS) and len(cols["op"]) == src.nevents() == 24
    # a record's columns name the call and the file, not their codes
    assert all(isinstance(op, str) and op for op in cols["op"])
    _same_calls(src)
    assert src.process()["pid"] == int(src.host.rsplit(".", 1)[1])
    assert len(src.files()) == 3


def test_a_damaged_record_is_one_line(tmp_path: Path) -> None:
    src = RecordSource(run="r", host="vm.1", path=str(tmp_path / "vm.1.json"))
    (tmp_path / "vm.1.json").write_text("{not json")
    with pytest.raises(SourceError) as err:
        src.io_columns()
    assert "\n" not in str(err.value)
