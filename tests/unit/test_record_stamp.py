"""A record's trace and file table are written with their generation in the zip comment (set
as each is written, not by reopening it): both read back whole, with the generation of their
JSON, and a trace of another write is refused."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tb_iotrace.store.filetable import FileTable
from tb_iotrace.store.runrecord import RecordError, read_record, stored_generation, table_path, write_record


def _trace(n: int) -> dict[str, np.ndarray]:
    i = np.arange(n, dtype=np.int64)
    return {"start_ns": i * 10, "end_ns": i * 10 + 5, "op_id": np.zeros(n, np.int32), "file_id": np.zeros(n, np.int32),
            "offset": i * 4096, "requested": np.full(n, 4096), "returned": np.full(n, 4096), "fd": np.full(n, 3),
            "errno": np.zeros(n, np.int64), "tid": np.full(n, 7), "op_names": np.array(["read"]),
            "paths": np.array(["/data/a.bin"])}


def _files() -> FileTable:
    return FileTable.from_dicts([{"path": "/data/a.bin", "module": "POSIX", "record_id": 1,
                                  "counters": {"POSIX_READS": 3, "POSIX_BYTES_READ": 12288}, "fcounters": {}}])


def test_trace_and_table_carry_the_generation_of_their_json(tmp_path) -> None:
    jpath = write_record(tmp_path, None, partial=True, exit={"how": "flush"}, files=_files(), trace=_trace(3))
    gen = json.loads(jpath.read_text())["generation"]
    for p in (jpath.with_suffix(".npz"), table_path(jpath)):
        with open(p, "rb") as fh:
            assert stored_generation(fh) == gen
    rec = read_record(jpath)
    t = rec.trace()
    assert t is not None and t["offset"].tolist() == [0, 4096, 8192] and t["paths"].tolist() == ["/data/a.bin"]
    assert rec.table().counts() == {"POSIX": 1}
    with np.load(jpath.with_suffix(".npz"), allow_pickle=False) as z:   # a plain .npz to numpy
        assert sorted(z.files) == sorted(_trace(1))


def test_a_trace_of_another_write_is_refused(tmp_path) -> None:
    jpath = write_record(tmp_path, None, partial=True, exit={"how": "flush"}, files=_files(), trace=_trace(2))
    old_trace = jpath.with_suffix(".npz").read_bytes()
    write_record(tmp_path, None, partial=False, exit={"how": "exit"}, files=_files(), trace=_trace(5))
    jpath.with_suffix(".npz").write_bytes(old_trace)
    with pytest.raises(RecordError, match="not from the same write"):
        read_record(jpath).trace()
