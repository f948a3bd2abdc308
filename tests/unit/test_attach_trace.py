"""tb_iotrace.recording.attach_trace: ``loader_facts`` reads a DataLoader iterator's settings from
its attributes (defaults when it has none, [] without one; a real PyTorch iterator's settings are
the ones its DataLoader was given); ``AttachTrace``, as ``on_trace_ready``, writes PyTorch's export
with the I/O of the attached process and of every child that handed over its record added, one
trace in a window folder of its own, the temporary export removed; a child that never hands over
its record, a child record that cannot be read, a main record that never comes, an export that
fails or cannot be read: the window goes on or the attach is told why (``att.notes``), and the
window is always marked done. No torch needed except for the one real-iterator test."""
from __future__ import annotations

import calendar
import json
import os
import re
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tb_iotrace.recording import attach_trace
from tb_iotrace.recording.attach_trace import AttachTrace, loader_facts
from tb_iotrace.store.kineto import CATEGORY, FORMAT, read_trace

BASE = 1_790_857_026_000_000_000
MAIN = 4321                     # the attached process's pid (not this test's: the two are told apart)
KINETO_OP = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": MAIN, "tid": MAIN, "ts": 10.0, "dur": 5.0,
             "args": {"External id": 7}}


# ------------------------------------------------------------------------------- loader_facts
def test_loader_facts_without_an_iterator_is_empty() -> None:
    assert loader_facts(None) == []


def test_loader_facts_of_an_iterator_without_the_attributes_gives_defaults() -> None:
    class SomeIter:
        pass

    facts = loader_facts(SomeIter())
    assert facts == [{"id": 0, "num_workers": 0, "prefetch_factor": None, "persistent_workers": False,
                      "pin_memory": False, "batch_size": None, "iterator": "SomeIter", "worker_pids": [],
                      "epochs": [], "worker_stops": []}]


def test_loader_facts_of_a_full_iterator() -> None:
    class _MultiProcessingDataLoaderIter:
        pass

    it = _MultiProcessingDataLoaderIter()
    it._num_workers = 3
    it._prefetch_factor = 4
    it._persistent_workers = 1          # truthy, not a bool: reported as a bool
    it._pin_memory = True
    it._index_sampler = SimpleNamespace(batch_size=32)
    # a worker not started yet (pid None) is left out; the others come as ints, in order
    it._workers = [SimpleNamespace(pid=905), SimpleNamespace(pid=None), SimpleNamespace(pid="17"),
                   SimpleNamespace()]
    [facts] = loader_facts(it)
    assert facts == {"id": 0, "num_workers": 3, "prefetch_factor": 4, "persistent_workers": True,
                     "pin_memory": True, "batch_size": 32, "iterator": "_MultiProcessingDataLoaderIter",
                     "worker_pids": [17, 905], "epochs": [], "worker_stops": []}
    assert isinstance(facts["persistent_workers"], bool) and isinstance(facts["pin_memory"], bool)


def test_loader_facts_with_none_where_a_setting_would_be() -> None:
    """``_num_workers``/``_workers`` of None (an iterator mid-shutdown) and a sampler without a
    batch size (a batch_sampler of its own) still give a record, not an error."""
    it = SimpleNamespace(_num_workers=None, _workers=None, _index_sampler=object())
    [facts] = loader_facts(it)
    assert facts["num_workers"] == 0 and facts["worker_pids"] == [] and facts["batch_size"] is None
    assert facts["iterator"] == "SimpleNamespace"


@pytest.mark.torch
def test_loader_facts_of_a_real_dataloader_iterator() -> None:
    """The attributes read are those PyTorch's iterator has: the settings are the DataLoader's
    arguments and the worker pids are this process's live child processes."""
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    data = torch.arange(40, dtype=torch.float32)
    loader = DataLoader(data, batch_size=5, num_workers=2, prefetch_factor=3, persistent_workers=True,
                        pin_memory=False)
    it = iter(loader)
    try:
        assert next(it).shape == (5,)
        [facts] = loader_facts(it)
        assert (facts["num_workers"], facts["prefetch_factor"], facts["persistent_workers"],
                facts["pin_memory"], facts["batch_size"]) == (2, 3, True, False, 5)
        assert facts["iterator"] == type(it).__name__
        assert len(facts["worker_pids"]) == 2 and facts["worker_pids"] == sorted(facts["worker_pids"])
        for pid in facts["worker_pids"]:
            stat = Path(f"/proc/{pid}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            assert ppid == os.getpid(), f"pid {pid} is not a child of this process"
    finally:
        it._shutdown_workers()


# ------------------------------------------------------------------------------- AttachTrace
class Prof:
    """torch.profiler.profile as on_trace_ready sees it: only its export is used."""

    def __init__(self, body: bytes | None = None, error: Exception | None = None) -> None:
        self.body = body
        self.error = error
        self.exported: list[str] = []

    def export_chrome_trace(self, path: str) -> None:
        self.exported.append(path)
        if self.error is not None:
            raise self.error
        Path(path).write_bytes(self.body or b"")


class NeverSet:
    """An Event that nobody sets: wait() answers False at once and remembers the timeout."""

    def __init__(self) -> None:
        self.waited: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.append(timeout)
        return False


def kineto() -> bytes:
    return json.dumps({"schemaVersion": 1, "baseTimeNanoseconds": BASE, "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": MAIN, "tid": 0, "args": {"name": "python"}},
        KINETO_OP]}).encode()


def proc(pid: int, role: str, path: str, nbytes: int, start_us: int) -> dict[str, Any]:
    """A process record with one read of ``nbytes`` from ``path`` at ``start_us`` into the trace."""
    s = BASE + start_us * 1000
    return {"pid": pid, "role": role, "start_ns": BASE, "end_ns": BASE + 10**9,
            "threads": [[pid, 1, "python"]],
            "events": {"op": ["read"], "path": [path], "offset": [0], "requested": [nbytes],
                       "returned": [nbytes], "fd": [3], "errno": [0], "start_ns": [s],
                       "end_ns": [s + 1500], "tid": [pid]},
            "counters": [], "dropped": 0}


def make_att(tmp_path: Path, main_rec: dict[str, Any] | None = None, last_iter: Any = None,
             steps: bool = True) -> SimpleNamespace:
    """An Attachment in PyTorch mode as AttachTrace reads it."""
    ctrl = tmp_path / "ctrl"
    ctrl.mkdir()
    ready = threading.Event()
    ready.set()
    return SimpleNamespace(logdir=str(tmp_path / "log"), pid=MAIN, start_ns=time.time_ns() - 10**9, for_s=7.5,
                           ctrl=str(ctrl), notes=[], outputs=[], rec_ready=ready, window_done=threading.Event(),
                           window_written=False,
                           main_rec=main_rec, steps=SimpleNamespace(last_iter=last_iter) if steps else None)


def hand_over(att: SimpleNamespace, rec: dict[str, Any] | None, pid: int, raw: bytes | None = None) -> None:
    """What a child does: says it records (expect.<pid>), then writes its record (rec.<pid>.json)."""
    Path(att.ctrl, f"expect.{pid}").touch()
    if raw is not None:
        Path(att.ctrl, f"rec.{pid}.json").write_bytes(raw)
    elif rec is not None:
        Path(att.ctrl, f"rec.{pid}.json").write_text(json.dumps(rec))


def files_under(root: str) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*") if p.is_file())


def io_events(trace: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for e in trace["traceEvents"]:
        if e.get("cat") == CATEGORY:
            out.setdefault(e["pid"], []).append(e)
    return out


def test_window_holds_pytorch_export_and_the_io_of_main_and_children(tmp_path: Path) -> None:
    it = SimpleNamespace(_num_workers=2, _prefetch_factor=2, _persistent_workers=False, _pin_memory=False,
                         _index_sampler=SimpleNamespace(batch_size=8),
                         _workers=[SimpleNamespace(pid=602), SimpleNamespace(pid=601)])
    att = make_att(tmp_path, main_rec=proc(MAIN, "main", "/d/main.bin", 100, 2000), last_iter=it)
    att.notes.append("a note of the attach itself")
    hand_over(att, proc(601, "worker", "/d/a.bin", 700, 3000), 601)
    hand_over(att, proc(602, "worker", "/d/b.bin", 900, 4000), 602)
    t0 = time.time_ns()
    handler = AttachTrace(att, "dataloader")
    t1 = time.time_ns()
    prof = Prof(kineto())
    handler(prof)

    assert att.window_done.is_set()
    [out] = att.outputs
    assert att.window_written
    # one trace, in a window folder of its own under <logdir>/pytorch, named by host and attached pid
    assert files_under(att.logdir) == [Path(out)]
    folder = Path(out).parent
    assert folder.parent == Path(att.logdir, "pytorch")
    m = re.fullmatch(rf"attach_(\d{{4}}_\d\d_\d\d_\d\d_\d\d_\d\d)_{MAIN}_1", folder.name)
    assert m, folder.name
    assert t0 // 10**9 <= calendar.timegm(time.strptime(m.group(1), "%Y_%m_%d_%H_%M_%S")) <= t1 // 10**9
    assert re.fullmatch(rf"{re.escape(socket.gethostname())}_{MAIN}\.\d+\.pt\.trace\.json", Path(out).name)
    # the export went to a temporary file that is gone now, not into the logdir
    assert len(prof.exported) == 1 and not Path(prof.exported[0]).exists()
    assert Path(att.logdir) not in Path(prof.exported[0]).parents

    trace = read_trace(out)
    assert KINETO_OP in trace["traceEvents"]                         # Kineto's own events as they were
    got = io_events(trace)
    assert sorted(got) == [601, 602, MAIN]
    for pid, path, nbytes, start_us in ((MAIN, "/d/main.bin", 100, 2000), (601, "/d/a.bin", 700, 3000),
                                        (602, "/d/b.bin", 900, 4000)):
        [e] = got[pid]
        assert (e["name"], e["tid"], e["args"]["path"], e["args"]["bytes"]) == ("read", pid, path, nbytes)
        assert e["ts"] == pytest.approx(start_us) and e["dur"] == pytest.approx(1.5)

    rec = trace["tb_iotrace"]
    assert rec["format"] == FORMAT
    assert {p["pid"]: p["role"] for p in rec["processes"]} == {MAIN: "main", 601: "worker", 602: "worker"}
    assert "a note of the attach itself" in rec["notes"]
    assert not [n for n in rec["notes"] if "601" in n or "602" in n or "main process" in n], rec["notes"]
    assert rec["steps_from"] == "dataloader"
    origin = rec["window_origin"]
    assert (origin["by"], origin["at_ns"], origin["for_s"], origin["pid"]) == (
        "tb-iotrace attach", att.start_ns, att.for_s, os.getpid())
    assert t0 <= rec["window_start_ns"] <= t1
    assert rec["machine"]["format"] == "tb_iotrace.machine/1"
    assert rec["pytorch"]["cpus"] == rec["machine"]["cpus"]
    [dl] = rec["pytorch"]["dataloaders"]
    assert (dl["num_workers"], dl["prefetch_factor"], dl["batch_size"], dl["worker_pids"]) == (2, 2, 8, [601, 602])


def test_window_without_steps_or_main_record_has_the_children_only(tmp_path: Path) -> None:
    """No main record (the main process recorded nothing) and no step source: the children's
    I/O is still written, and no DataLoader is claimed."""
    att = make_att(tmp_path, main_rec=None, steps=False)
    hand_over(att, proc(700, "child", "/d/c.bin", 50, 1000), 700)
    AttachTrace(att, "optimizer")(Prof(kineto()))
    [out] = att.outputs
    trace = read_trace(out)
    assert sorted(io_events(trace)) == [700]
    rec = trace["tb_iotrace"]
    assert [p["pid"] for p in rec["processes"]] == [700]
    assert rec["pytorch"]["dataloaders"] == [] and rec["steps_from"] == "optimizer"
    assert att.window_done.is_set()


def test_a_child_record_that_comes_late_is_waited_for(tmp_path: Path) -> None:
    att = make_att(tmp_path, main_rec=proc(MAIN, "main", "/d/main.bin", 10, 100))
    hand_over(att, None, 801)                                  # says it records; its record not there yet

    def late() -> None:
        time.sleep(0.3)
        Path(att.ctrl, ".rec.801.tmp").write_text(json.dumps(proc(801, "worker", "/d/late.bin", 55, 500)))
        os.replace(Path(att.ctrl, ".rec.801.tmp"), Path(att.ctrl, "rec.801.json"))

    th = threading.Thread(target=late)
    th.start()
    try:
        AttachTrace(att, "dataloader")(Prof(kineto()))
    finally:
        th.join(timeout=60)
    [out] = att.outputs
    trace = read_trace(out)
    assert sorted(io_events(trace)) == [801, MAIN]
    assert not [n for n in trace["tb_iotrace"]["notes"] if "801" in n]


class Clock:
    """attach_trace's ``time`` with a monotonic clock that moves 1 s per reading and a sleep
    that does not wait: the wait for children's records runs to its end at once."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps = 0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps += 1

    time_ns = staticmethod(time.time_ns)


def test_a_child_that_never_hands_over_its_record_is_named_and_the_rest_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(attach_trace, "time", clock)
    att = make_att(tmp_path, main_rec=proc(MAIN, "main", "/d/main.bin", 10, 100))
    hand_over(att, proc(901, "worker", "/d/ok.bin", 20, 200), 901)
    hand_over(att, None, 902)                                  # expect.902, never rec.902.json
    AttachTrace(att, "dataloader")(Prof(kineto()))
    assert clock.sleeps > 0                                    # it did wait for it before giving up
    [out] = att.outputs
    trace = read_trace(out)
    assert sorted(io_events(trace)) == [901, MAIN]
    assert [n for n in trace["tb_iotrace"]["notes"] if "902" in n], trace["tb_iotrace"]["notes"]
    assert not [n for n in trace["tb_iotrace"]["notes"] if "901" in n]
    assert att.window_done.is_set()


@pytest.mark.parametrize("raw", [b'{"pid": 903, "events": {', b"", b"\xff\xfe not json"],
                         ids=["truncated", "empty", "not-utf8"])
def test_an_unreadable_child_record_is_named_and_the_rest_written(tmp_path: Path, raw: bytes) -> None:
    att = make_att(tmp_path, main_rec=proc(MAIN, "main", "/d/main.bin", 10, 100))
    hand_over(att, proc(904, "worker", "/d/ok.bin", 20, 200), 904)
    hand_over(att, None, 903, raw=raw)
    AttachTrace(att, "dataloader")(Prof(kineto()))
    [out] = att.outputs
    trace = read_trace(out)
    assert sorted(io_events(trace)) == [904, MAIN]
    assert {p["pid"] for p in trace["tb_iotrace"]["processes"]} == {904, MAIN}
    assert [n for n in trace["tb_iotrace"]["notes"] if "903" in n], trace["tb_iotrace"]["notes"]


def test_a_main_record_never_handed_over_is_noted_after_waiting_the_window(tmp_path: Path) -> None:
    att = make_att(tmp_path, main_rec=None)
    att.rec_ready = NeverSet()
    hand_over(att, proc(950, "worker", "/d/w.bin", 20, 200), 950)
    AttachTrace(att, "dataloader")(Prof(kineto()))
    assert len(att.rec_ready.waited) == 1 and att.rec_ready.waited[0] >= att.for_s
    [out] = att.outputs
    trace = read_trace(out)
    assert sorted(io_events(trace)) == [950]
    assert [n for n in trace["tb_iotrace"]["notes"] if "main process" in n], trace["tb_iotrace"]["notes"]


def test_an_export_that_fails_is_told_and_the_window_still_marked_done(tmp_path: Path) -> None:
    att = make_att(tmp_path, main_rec=proc(MAIN, "main", "/d/main.bin", 10, 100))
    AttachTrace(att, "dataloader")(Prof(error=RuntimeError("kineto said no")))
    assert att.window_done.is_set()
    assert att.outputs == [] and files_under(att.logdir) == []
    assert [n for n in att.notes if "RuntimeError" in n and "kineto said no" in n], att.notes
    assert os.listdir(att.ctrl) == [] and not att.window_written


def test_an_unreadable_export_is_told(tmp_path: Path) -> None:
    """PyTorch's export is not a Kineto trace: no window can be written, and the attach must
    say why (its notes are what ``tb-iotrace attach`` reports at ``done``), the temporary
    export removed and the window marked done."""
    att = make_att(tmp_path, main_rec=proc(MAIN, "main", "/d/main.bin", 10, 100))
    AttachTrace(att, "dataloader")(Prof(b'{"no": "traceEvents"}'))
    assert att.window_done.is_set()
    assert att.outputs == [] and files_under(att.logdir) == []
    assert os.listdir(att.ctrl) == []
    assert [n for n in att.notes if "Kineto trace" in n], f"nothing tells why no window was written: {att.notes}"
    assert not att.window_written         # so the agent keeps the main process's I/O as a record
