"""tb_iotrace.model.record_source: a whole-run record as a Source. Proves its calls as columns
(ids out of range, threads' names), the empty trace that carries its counters when no trace was
kept, its process facts, and that a malformed record (a missing trace, fields of the wrong type)
is one SourceError naming the file, as tb_iotrace.model.sources promises, never a TypeError."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_iotrace.model.record_source import RecordSource
from tb_iotrace.model.sources import SourceError

DATA = Path(__file__).resolve().parents[1] / "data"
T0 = 1_700_000_000_000_000_000


def make(tmp: Path, name: str = "h.7", keep: bool = True, **doc_changes: Any) -> RecordSource:
    """A record of 4 calls on threads 7 and 8 (op 5 and file 9 out of range in the last)."""
    st = T0 + np.arange(4, dtype=np.int64) * 1000
    if keep:
        np.savez(tmp / f"{name}.npz", start_ns=st, end_ns=st + 500, op_id=np.array([0, 1, 0, 5], np.int32),
                 file_id=np.array([0, 1, -1, 9], np.int32), offset=np.zeros(4, np.int64),
                 requested=np.full(4, 10, np.int64), returned=np.full(4, 10, np.int64), fd=np.full(4, 3, np.int64),
                 errno=np.zeros(4, np.int64), tid=np.array([7, 8, 7, 8], np.int64),
                 op_names=np.array(["read", "write"]), paths=np.array(["/a", "/b"]))
    doc: dict[str, Any] = {"format": "tb_iotrace.run/2", "host": "box", "pid": 7, "ppid": 1, "argv": ["train.py", "-x"],
                           "start_ns": T0, "end_ns": T0 + 10_000, "partial": False, "exit": {"how": "exit", "note": "ok"},
                           "files": [{"path": "/a", "module": "POSIX", "counters": {"POSIX_READS": 2}, "fcounters": {}}],
                           "threads": [{"tid": 7, "name": "main"}, {"tid": 8, "name": "loader"}], "nevents": 4,
                           "dropped": 2}
    if keep:
        doc["trace"] = f"{name}.npz"
    doc.update(doc_changes)
    (tmp / f"{name}.json").write_text(json.dumps(doc))
    return RecordSource(run="iotrace", host=name, path=str(tmp / f"{name}.json"))


def test_columns_name_ops_and_files_and_threads(tmp_path: Path) -> None:
    cols, names = make(tmp_path).io_columns()
    assert cols["op"].tolist() == ["read", "write", "read", "?"]
    assert cols["path"].tolist()[2:] == ["", ""] and cols["path"].tolist()[0] == "/a"
    assert names == {7: "main", 8: "loader"}
    tr = make(tmp_path, "h.8").io_trace()
    assert len(tr) == 4 and tr.dropped == 2 and tr.window_ns == (T0, T0 + 10_000)
    assert {t: v.comm for t, v in tr.threads.items()} == {7: "main", 8: "loader"}


def test_without_a_trace_the_analysis_gets_the_counters(tmp_path: Path) -> None:
    src = make(tmp_path, keep=False)
    assert src.io_columns() is None and src.io_trace() is None
    space, tr = src.analysis_input()
    assert space is None and len(tr) == 0 and [f["path"] for f in tr.counters] == ["/a"] and tr.dropped == 2


def test_process_facts(tmp_path: Path) -> None:
    src = make(tmp_path)
    assert src.exe() == "train.py -x" and src.machine_name() == "box" and src.origin_ns() == T0
    assert src.process()["pid"] == 7 and src.process_notes() == ["ok"] and src.life_ns() == (T0, T0 + 10_000)
    assert not src.files_as_columns() and not src.partial() and src.mounts() == ""
    assert make(tmp_path, "h.9", host=None).machine_name() == "h.9"


@pytest.mark.parametrize("change", [{"argv": "train.py -x"}, {"trace": "h.7.npz"}, {"timeseries": {"x": 1}},
                                    {"trace": 5}])
def test_a_malformed_record_is_a_source_error(tmp_path: Path, change: dict[str, Any]) -> None:
    src = make(tmp_path, keep=False, **change)
    with pytest.raises(SourceError) as err:
        src.exe(), src.io_columns(), src.timeseries()
    assert "h.7" in str(err.value) and "\n" not in str(err.value)


def test_a_damaged_trace_is_a_source_error(tmp_path: Path) -> None:
    src = make(tmp_path)
    (tmp_path / "h.7.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(SourceError, match="h.7.npz"):
        src.io_columns()


@pytest.mark.parametrize("change", [{"threads": ["main"]}, {"threads": [{"name": "no tid"}]},
                                    {"dropped": None}, {"exit": "killed"}, {"nevents": None}])
def test_odd_fields_are_a_source_error_not_a_crash(tmp_path: Path, change: dict[str, Any]) -> None:
    """Fields the tab's reader (model/tab/of_record) takes in its stride: a thread that is not an
    object, a null count, an exit that is not an object. Each method either answers or raises
    SourceError; none raises TypeError/AttributeError/KeyError."""
    src = make(tmp_path, **change)
    for ask in (src.io_columns, src.analysis_input, src.dropped, src.nevents, src.process_notes):
        try:
            ask()
        except SourceError:
            pass


def test_the_held_record_copied(tmp_path: Path) -> None:
    shutil.copytree(DATA / "run_v1", tmp_path / "run_v1")
    [p] = (tmp_path / "run_v1" / "plugins" / "iotrace").glob("*.json")
    src = RecordSource(run="iotrace", host=p.stem, path=str(p))
    assert src.table() is not None and len(src.table()) == len(src.files()) == 3
    assert any("\udcff" in f["path"] for f in src.files())         # an odd byte in a name survives
    assert src.nevents() == 24 and src.process()["pid"] == 21889
