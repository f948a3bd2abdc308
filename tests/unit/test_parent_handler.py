"""tb_iotrace.recording.pytorch.parent.handler (``TraceHandler``, ``copy``, ``pytorch_facts``): the
file names it gives (worker name made safe, ``.gz``), the notes and facts it adds to a window's trace
(its own notes, the reason no I/O was recorded, the hooks that are off, the rank, the missing
workers), which worker records of the spool it takes (this window's; an earlier window's and an
unreadable one are named and dropped; every one removed), a trace torch wrote that is not a Kineto
trace copied as it is, and a URL's trace uploaded, or kept in staging when the upload fails. The
window, the workers' answers and the machine are played here; no torch is run."""
from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.recording import landing
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.parent import handler as H
from tb_iotrace.recording.pytorch.parent import loaders as torch_loaders
from tb_iotrace.recording.pytorch.parent.profiler_window import Window
from tb_iotrace.store import remote
from tb_iotrace.store.kineto import io_record, read_trace

TRACE = '{"traceEvents": [], "baseTimeNanoseconds": 0}'
MACHINE = {"format": 1, "cpus": 3, "mounts": []}
NO_START = "no I/O recorded for this window (its start was not seen)"


class Prof:
    """What the handler uses of torch.profiler.profile: its export."""

    def __init__(self, text: str = TRACE) -> None:
        self.text = text

    def export_chrome_trace(self, path: str) -> None:
        Path(path).write_text(self.text)


class Peer:
    def __init__(self, pid: int) -> None:
        self.pid = pid

    def name(self) -> str:
        return f"pid {self.pid}"


@pytest.fixture(autouse=True)
def quiet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    """Spools under tmp_path, no summary child, a known machine, no rank, no hook off."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(H, "_SPOOLS", [])
    landed: list[list[str]] = []
    monkeypatch.setattr(landing, "landed", lambda paths: landed.append(list(paths)))
    monkeypatch.setattr(H, "machine_facts", lambda: dict(MACHINE))
    for name in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(state, "off", [])
    monkeypatch.setattr(state, "fetch_note", None)
    monkeypatch.setattr(torch_loaders, "_off", [])
    return landed


def record(path: str) -> dict[str, Any]:
    rec = io_record(read_trace(path))
    assert rec is not None
    return rec


def test_copy_keeps_torchs_bytes_plain_or_gzipped(tmp_path: Path) -> None:
    src = tmp_path / "src.json"
    src.write_bytes(b'{"x": 1}\n')
    H.copy(str(src), str(tmp_path / "a.json"))
    H.copy(str(src), str(tmp_path / "a.json.gz"))
    assert (tmp_path / "a.json").read_bytes() == b'{"x": 1}\n'
    assert gzip.decompress((tmp_path / "a.json.gz").read_bytes()) == b'{"x": 1}\n'


def test_pytorch_facts_name_torchs_version_the_cores_and_the_loaders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="9.8.7"))
    loaders = [{"id": 1}]
    assert H.pytorch_facts(loaders, {"cpus": 6}) == {"version": "9.8.7", "cpus": 6, "dataloaders": loaders}
    assert H.pytorch_facts([], {"cpus": None})["cpus"] == 0
    monkeypatch.delitem(sys.modules, "torch")
    assert H.pytorch_facts([], {}) == {"version": "", "cpus": 0, "dataloaders": []}


def test_file_names_are_safe_unique_and_gzipped_when_asked(tmp_path: Path) -> None:
    h = H.TraceHandler(str(tmp_path), worker_name="../rank/0", use_gzip=True)
    name = h._file_name()
    assert name.startswith("___rank_0.") and name.endswith(".pt.trace.json.gz") and "/" not in name
    plain = H.TraceHandler(str(tmp_path))
    got = plain._file_name()
    assert got.endswith(".pt.trace.json") and got.startswith(f"{plain.worker_name}.")
    assert plain.worker_name is not None and plain.worker_name.endswith(f"_{os.getpid()}")


def test_a_file_url_is_a_local_folder_and_an_unknown_scheme_fails_at_once(tmp_path: Path) -> None:
    h = H.TraceHandler(f"file://{tmp_path}/logs")
    assert h.dir_name == f"{tmp_path}/logs" and h.url is None
    with pytest.raises(remote.RemoteError, match="unknown URL scheme"):
        H.TraceHandler("nosuchscheme-tbio://bucket/traces")


def test_the_spool_is_made_again_when_removed_and_each_is_registered(tmp_path: Path) -> None:
    h = H.TraceHandler(str(tmp_path / "logs"))
    first = h.spool()
    assert h.spool() == first and os.path.dirname(first) == str(tmp_path)
    os.rmdir(first)
    second = h.spool()
    assert second != first and os.path.isdir(second)
    assert H._SPOOLS == [(first, os.getpid()), (second, os.getpid())]


def test_a_trace_without_its_window_says_why_with_every_note_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, quiet: list[list[str]]) -> None:
    monkeypatch.setattr(state, "fetch_note", "no fetch spans")
    monkeypatch.setattr(state, "off", ["hook A off"])
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="9.8.7"))
    monkeypatch.setenv("RANK", "3")
    h = H.TraceHandler(str(tmp_path / "logs"), worker_name="w")
    h.note("mine")
    h.extra = {"origin": "attach"}
    h(Prof())
    [out] = h.written
    rec = record(out)
    assert rec["notes"] == ["mine", "no fetch spans", "torch 9.8.7: hook A off", NO_START]
    assert rec["rank"] == 3 and rec["origin"] == "attach" and rec["machine"] == MACHINE
    assert h.notes == [] and quiet == [[out]]
    assert [f for f in os.listdir(h.spool())] == []        # PyTorch's export removed
    h(Prof())                                              # the next trace: not the notes of the last
    assert record(h.written[1])["notes"] == ["no fetch spans", "torch 9.8.7: hook A off", NO_START]


def test_why_no_io_is_recorded_replaces_the_other_reasons(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(state, "fetch_note", "no fetch spans")
    h = H.TraceHandler(str(tmp_path / "logs"))
    h.unavailable = "the shim did not load"
    h(Prof())
    assert record(h.written[0])["notes"] == ["the shim did not load"]


def test_a_trace_that_is_not_kinetos_is_copied_as_torch_wrote_it(tmp_path: Path, quiet: list[list[str]]) -> None:
    h = H.TraceHandler(str(tmp_path / "logs"), worker_name="w")
    h(Prof("not a trace"))
    [out] = os.listdir(tmp_path / "logs")
    assert (tmp_path / "logs" / out).read_text() == "not a trace"
    assert h.written == [] and quiet == []                 # not whole: no summary asked for
    assert os.listdir(h.spool()) == []


def window(spool: str, **kw: Any) -> Window:
    args: dict[str, Any] = dict(number=2, spool=spool, main={"pid": 1, "role": "main"}, waiting=[],
                                stop_ns=20, start_ns=10, late={}, loaders=[{"id": 5}], machine=dict(MACHINE))
    args.update(kw)
    return Window(**args)


def test_a_windows_records_are_taken_an_earlier_one_dropped_and_every_one_removed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    got: dict[str, Any] = {}

    def add_io(trace: dict[str, Any], procs: list[dict[str, Any]], *, notes: list[str],
               extra: dict[str, Any]) -> dict[str, Any]:
        got.update(procs=procs, notes=notes, extra=extra)
        return trace
    waited: list[Any] = []

    def await_answers(channels: list[Any], answer: str, deadline: float) -> list[Any]:
        waited.append((channels, answer))
        return [Peer(7)]
    monkeypatch.setattr(H, "add_io", add_io)
    monkeypatch.setattr(H, "await_answers", await_answers)
    h = H.TraceHandler(str(tmp_path / "logs"), wait_s=1.5)
    spool = Path(h.spool())
    (spool / "2.11.json").write_text(json.dumps({"pid": 11, "role": "worker", "start_ns": 12}))
    (spool / "1.12.json").write_text("{}")
    (spool / "2.13.json").write_text("{broken")
    (spool / "notes.txt").write_text("left alone")
    peers = [Peer(7)]
    h.pending = window(str(spool), waiting=peers)
    h(Prof())
    assert h.pending is None and waited == [(peers, "D 2")]
    assert got["procs"] == [{"pid": 1, "role": "main"}, {"pid": 11, "role": "worker", "start_ns": 12}]
    notes = got["notes"]
    assert notes[0] == ("DataLoader worker pid 12 handed over its I/O of an earlier window (1) after that "
                        "window's trace was written; dropped")
    assert notes[1].startswith("worker record 2.13.json unreadable: ")
    assert notes[2] == ("DataLoader worker(s) pid 7 did not hand over their I/O within 1.5 s of the window's "
                        "end: their I/O is missing from this trace")
    assert len(notes) == 3 and NO_START not in notes
    extra = got["extra"]
    assert extra["workers_missing"] == [7] and extra["window_start_ns"] == 10
    assert extra["machine"] == MACHINE and extra["pytorch"]["dataloaders"] == [{"id": 5}]
    assert extra["pytorch"]["cpus"] == 3
    assert sorted(os.listdir(spool)) == ["notes.txt"]


def test_a_window_without_the_main_record_carries_its_workers_alone(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    got: list[Any] = []
    monkeypatch.setattr(H, "add_io", lambda trace, procs, *, notes, extra: got.append((procs, extra)) or trace)
    monkeypatch.setattr(H, "await_answers", lambda channels, answer, deadline: [])
    h = H.TraceHandler(str(tmp_path / "logs"))
    spool = Path(h.spool())
    (spool / "4.21.json").write_text(json.dumps({"pid": 21, "role": "worker", "start_ns": 50}))
    h.pending = window(str(spool), number=4, main=None, late={21: "pid 21"}, start_ns=40)
    h(Prof())
    [(procs, extra)] = got
    assert procs == [{"pid": 21, "role": "worker", "start_ns": 50, "late_start_ns": 10}]
    assert "workers_missing" not in extra


def test_a_window_whose_spool_is_gone_still_writes_torchs_trace(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The spool removed under the job (a /tmp cleaner): the workers' records are lost, but
    PyTorch's own trace must still be written and on_trace_ready must not raise into torch."""
    monkeypatch.setattr(H, "await_answers", lambda channels, answer, deadline: [])
    h = H.TraceHandler(str(tmp_path / "logs"))
    spool = h.spool()
    os.rmdir(spool)
    h.pending = window(spool)
    h(Prof())
    assert len(os.listdir(tmp_path / "logs")) == 1


def test_a_url_trace_is_uploaded_and_its_local_copy_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec

    handed: list[Any] = []
    monkeypatch.setattr(landing, "landed_uploaded", lambda items: handed.append(list(items)))
    h = H.TraceHandler("memory://tbio-handler-test/traces/", worker_name="w")
    assert h.url == "memory://tbio-handler-test/traces"
    fs = fsspec.filesystem("memory")
    try:
        h(Prof())
        [url] = h.written
        assert url.startswith("memory://tbio-handler-test/traces/w.") and url.endswith(".pt.trace.json")
        assert json.loads(fs.cat(url))["traceEvents"] == []
        assert os.listdir(h.spool()) == [] and handed == [[]]
    finally:
        fs.rm("/tbio-handler-test", recursive=True)


def test_a_url_trace_that_cannot_be_uploaded_is_kept_and_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache" / "remote"))

    def refused(local: str, url: str) -> int:
        raise remote.RemoteError(f"{url}: access denied")
    monkeypatch.setattr(remote, "upload_file", refused)
    h = H.TraceHandler("memory://tbio-handler-test/denied", worker_name="w")
    h(Prof())
    [kept] = h.written
    assert Path(kept).parent == tmp_path / "cache" / "staging" / "torch"
    assert record(kept)["notes"] == [NO_START]
    assert os.listdir(h.spool()) == []
