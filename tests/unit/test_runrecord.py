"""tb_iotrace.store.runrecord: a record written without a recording reads back (JSON, file table,
trace); its companions are read only beside it, never through a link, and only from the same
write; bad documents, parts and traces raise RecordError naming the file; rank, window,
part names, trace bounds and the flush-merge rules hold."""
from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_iotrace.store import runrecord as rr
from tb_iotrace.store.runrecord import RecordError

FILE = {"path": "/data/a.bin", "module": "POSIX", "record_id": 1,
        "counters": {"POSIX_READS": 2, "POSIX_BYTES_READ": 10}, "fcounters": {"POSIX_F_READ_TIME": 0.5}}


def trace(n: int) -> dict[str, np.ndarray]:
    z = np.arange(n, dtype=np.int64)
    cols = {k: z.copy() for k in rr.TRACE_COLUMNS}
    cols["op_id"] = np.zeros(n, np.int32)
    cols["file_id"] = np.zeros(n, np.int32)
    return {**cols, "op_names": np.array(["read"]), "paths": np.array(["/data/a.bin"])}


def write(tmp_path: Path, **kw: Any) -> Path:
    return rr.write_record(tmp_path, None, partial=False, files=[FILE], start_ns=5, end_ns=9,
                           trace=kw.pop("trace", trace(3)), **kw)


def test_written_record_reads_back(tmp_path: Path) -> None:
    jpath = write(tmp_path, exit={"how": "exit", "code": 0})
    assert jpath.parent == tmp_path / "plugins" / "iotrace" and rr.is_record_file(jpath)
    rec = rr.read_record(jpath)
    assert rec.name == jpath.name[:-len(".json")] and not rec.partial and rec.nfiles == 1
    assert rec.doc["exit"] == {"how": "exit", "code": 0} and rr.record_window(rec.doc) == (5, 9)
    assert [f["counters"]["POSIX_BYTES_READ"] for f in rec.files] == [10]
    t = rec.trace()
    assert t is not None and t["start_ns"].tolist() == [0, 1, 2]
    with open(rr.table_path(jpath), "rb") as fh:
        assert rr.stored_generation(fh) == rec.doc["generation"] and fh.tell() == 0


def test_companions_of_another_write_are_refused(tmp_path: Path) -> None:
    jpath = write(tmp_path)
    old = jpath.with_suffix(".npz").read_bytes()
    write(tmp_path, trace=trace(4))
    jpath.with_suffix(".npz").write_bytes(old)
    with pytest.raises(RecordError, match="not from the same write"):
        rr.read_record(jpath).trace()


def test_companions_are_never_read_through_a_link(tmp_path: Path) -> None:
    jpath = write(tmp_path)
    for comp, read in ((jpath.with_suffix(".npz"), lambda r: r.trace()), (rr.table_path(jpath), lambda r: r.table())):
        real = tmp_path / ("elsewhere" + comp.name)
        os.replace(comp, real)
        comp.symlink_to(real)
        with pytest.raises(RecordError) as exc:
            read(rr.read_record(jpath))
        assert str(comp) in str(exc.value)


def test_missing_table_and_trace(tmp_path: Path) -> None:
    jpath = write(tmp_path)
    rr.table_path(jpath).unlink()
    jpath.with_suffix(".npz").unlink()
    rec = rr.read_record(jpath)
    with pytest.raises(RecordError, match="file table is missing"):
        rec.table()
    with pytest.raises(RecordError, match="cannot read the trace"):
        rec.trace()


@pytest.mark.parametrize("body, words", [
    (b"{broken", "not a tb_iotrace run record (JSONDecodeError"),
    (b"\xff\xfe", "not a tb_iotrace run record"),
    (b"[1]", "format tb_iotrace.run/2 expected"),
    (b'{"format": "tb_iotrace.run/3", "files": []}', "format tb_iotrace.run/2 expected"),
    (b'{"format": "tb_iotrace.run/1", "file_table": "x.files.npz"}', "without its files"),
    (b'{"format": "tb_iotrace.run/2", "file_table": 5}', "without its files"),
])
def test_bad_documents_are_refused(body: bytes, words: str, tmp_path: Path) -> None:
    p = tmp_path / "h.1.json"
    p.write_bytes(body)
    with pytest.raises(RecordError) as exc:
        rr.read_record(p)
    assert words in str(exc.value) and str(exc.value).startswith(str(p))
    with pytest.raises(RecordError, match="no such file"):
        rr.read_record(tmp_path / "gone.json")
    with pytest.raises(RecordError, match="not a tb_iotrace run record"):
        rr.read_record(tmp_path)


def test_bad_entries_in_a_valid_document(tmp_path: Path) -> None:
    p = tmp_path / "h.1.json"
    p.write_text(json.dumps({"format": rr.FORMAT, "files": [FILE], "trace": 5}))
    rec = rr.read_record(p)
    assert rec.nfiles == 1 and rec.table().counts()["POSIX"] == 1
    with pytest.raises(RecordError, match="'trace' entry is not a file name"):
        rec.trace()
    p.write_text(json.dumps({"format": rr.FORMAT, "files": [], "trace_parts": ["../x.part1.npz"]}))
    with pytest.raises(RecordError, match="not a list of its trace parts"):
        rr.read_record(p).trace()


def test_trace_parts_are_the_records_own_and_joined_in_order(tmp_path: Path) -> None:
    p = tmp_path / "h.1.json"
    for k, n in ((1, 2), (2, 3)):
        t = trace(n)
        t["start_ns"] = t["start_ns"] + 10 * k
        np.savez(tmp_path / rr.trace_part_name(p, k), **t)
    p.write_text(json.dumps({"format": rr.FORMAT, "files": [], "partial": False,
                             "trace_parts": ["other.part1.npz", "h.1.part2.npz"]}))
    t = rr.read_record(p).trace()
    assert t is not None and t["start_ns"].tolist() == [10, 11, 20, 21, 22]
    p.write_text(json.dumps({"format": rr.FORMAT, "files": [], "partial": False, "trace_parts": ["h.1.part7.npz"]}))
    with pytest.raises(RecordError, match="h.1.part7.npz: cannot read the trace"):
        rr.read_record(p).trace()
    p.write_text(json.dumps({"format": rr.FORMAT, "files": [], "partial": True, "trace_parts": ["h.1.part7.npz"]}))
    rec = rr.read_record(p)
    assert rec.trace() is None and "h.1.part7.npz is not beside it" in rec.trace_missing


def test_part_names() -> None:
    assert rr.trace_part_name("/x/h.1.exec2.json", 3) == "h.1.exec2.part3.npz"
    assert [rr._part_index(n) for n in ("a.part3.npz", "a.part.npz", "a.part-1.npz", "d/a.part1.npz",
                                        "a.part1.npy", "a.part12345678901.npz")] == [3, None, None, None, None, None]
    assert rr.is_trace_part("/x/h.1.json", "h.1.part4.npz") and not rr.is_trace_part("/x/h.1.json", "h.10.part4.npz")
    assert not rr.is_trace_part("/x/h.1.json", "h.1.part.npz")


def test_checked_trace_bounds_ids() -> None:
    t = trace(3)
    t["op_id"] = np.array([0, 5, -1], np.int32)
    t["file_id"] = np.array([0, 1, -7], np.int32)
    got = rr.checked_trace(t)
    assert got["ops"] == ["read", "?"] and got["op_id"].tolist() == [0, 1, 1]
    assert got["file_id"].tolist() == [0, -1, -1] and got["paths"] == ["/data/a.bin"]
    with pytest.raises(RecordError, match="'fd' is missing"):
        rr.checked_trace({k: v for k, v in trace(1).items() if k != "fd"})
    with pytest.raises(RecordError, match="'tid' has 2 rows, expected 1"):
        rr.checked_trace({**trace(1), "tid": np.zeros(2, np.int64)})


def test_stored_generation_of_odd_files() -> None:
    for blob in (b"", b"not a zip"):
        fh = io.BytesIO(blob)
        assert rr.stored_generation(fh) is None
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a", b"1")
        z.comment = rr.GENERATION_TAG + b"12x"
    buf.seek(3)
    assert rr.stored_generation(buf) is None and buf.tell() == 3


def test_job_rank() -> None:
    assert rr.job_rank({}) is None and rr.job_rank({"RANK": "x", "PMI_RANK": " 4 "}) == 4
    assert rr.job_rank({"RANK": "-1", "SLURM_PROCID": "2"}) == 2 and rr.job_rank({"RANK": 3}) == 3


def test_job_rank_with_a_non_decimal_digit_does_not_crash() -> None:
    """'²' passes str.isdigit() but int() refuses it: an odd environment must not fail the write."""
    assert rr.job_rank({"RANK": "\u00b2", "SLURM_PROCID": "1"}) == 1


def test_record_window_and_is_record_file(tmp_path: Path) -> None:
    assert rr.record_window({"start_ns": 0, "end_ns": 5}) is None
    assert rr.record_window({"start_ns": 6, "end_ns": 5}) is None and rr.record_window({"start_ns": "1"}) is None
    p = tmp_path / "h.1.json"
    p.write_text(" " * 64 + '{"format": "tb_iotrace.run/2"}')
    assert not rr.is_record_file(p) and not rr.is_record_file(tmp_path / "gone.json")
    assert not rr.is_record_file(tmp_path / "h.1.txt")


def test_record_paths_make_the_host_one_safe_component(tmp_path: Path) -> None:
    j, n = rr.record_paths(tmp_path, pid=7, host="../evil/host", suffix=".exec1")
    assert j.parent == n.parent == tmp_path / "plugins" / "iotrace"
    assert "/" not in j.name and j.name.endswith(".7.exec1.json") and n.name == j.name[:-5] + ".npz"
    assert rr.table_path(j).name == j.name[:-5] + ".files.npz"


def test_merge_rules() -> None:
    acc: dict[Any, Any] = {}
    a = {**FILE, "counters": {"POSIX_READS": 2, "POSIX_MAX_BYTE_READ": 9, "POSIX_MODE": 1},
         "fcounters": {"POSIX_F_OPEN_START_TIMESTAMP": 0.0, "POSIX_F_READ_END_TIMESTAMP": 3.0,
                       "POSIX_F_READ_TIME": 1.0, "POSIX_F_MAX_READ_TIME": 2.0}}
    b = {**FILE, "file_type": "fifo", "counters": {"POSIX_READS": 3, "POSIX_MAX_BYTE_READ": 4, "POSIX_MODE": 5},
         "fcounters": {"POSIX_F_OPEN_START_TIMESTAMP": 7.0, "POSIX_F_READ_END_TIMESTAMP": 2.0,
                       "POSIX_F_READ_TIME": 0.5, "POSIX_F_MAX_READ_TIME": 1.0}}
    rr.merge_files(acc, [a])
    rr.merge_files(acc, [b])
    got = acc[("POSIX", "/data/a.bin")]
    assert got["counters"] == {"POSIX_READS": 5, "POSIX_MAX_BYTE_READ": 9, "POSIX_MODE": 5}
    assert got["fcounters"] == {"POSIX_F_OPEN_START_TIMESTAMP": 7.0, "POSIX_F_READ_END_TIMESTAMP": 3.0,
                                "POSIX_F_READ_TIME": 1.5, "POSIX_F_MAX_READ_TIME": 2.0}
    assert got["file_type"] == "fifo" and a["counters"]["POSIX_READS"] == 2      # input not changed
    u: dict[str, Any] = {}
    rr.merge_untracked(u, {"files": 2, "calls": None, "examples": [str(i) for i in range(6)]})
    rr.merge_untracked(u, {"files": 1, "bytes_read": 5, "examples": ["x"] * 6})
    assert (u["files"], u["calls"], u["bytes_read"], len(u["examples"])) == (3, 0, 5, 8)
