"""tb_iotrace.store.trace_merge: several windows' stored traces as one, ids renumbered into one
table of operations and one of files."""
from __future__ import annotations

import numpy as np

from tb_iotrace.store.trace_merge import merge


def part(ops: list[str], paths: list[str], op_id: list[int], file_id: list[int], start: list[int]) -> dict:
    return {"op_names": np.array(ops), "paths": np.array(paths), "op_id": np.array(op_id, np.int32),
            "file_id": np.array(file_id, np.int32), "start_ns": np.array(start, np.int64)}


def names(tr: dict, ids: str, table: str) -> list[str | None]:
    return [None if i < 0 else str(tr[table][i]) for i in tr[ids].tolist()]


def test_ids_renumbered_into_one_table_rows_in_order() -> None:
    a = part(["read", "write"], ["/a", "/b"], [0, 1, 0], [1, -1, 0], [1, 2, 3])
    b = part(["write", "openat"], ["/c", "/a"], [1, 0], [1, 0], [4, 5])
    got = merge([a, None, b])
    assert got is not None
    assert names(got, "op_id", "op_names") == ["read", "write", "read", "openat", "write"]
    assert names(got, "file_id", "paths") == ["/b", None, "/a", "/a", "/c"]       # -1 stays "none"
    assert sorted(got["paths"].tolist()) == ["/a", "/b", "/c"]                    # each name once
    assert got["start_ns"].tolist() == [1, 2, 3, 4, 5]
    assert got["op_id"].dtype == np.int32 and got["file_id"].dtype == np.int32


def test_one_part_is_returned_as_it_is_and_none_is_none() -> None:
    a = part(["read"], ["/a"], [0], [0], [1])
    got = merge([a])
    assert got is not None and got is not a and got["paths"] is a["paths"]
    assert merge([]) is None and merge([None]) is None


def test_an_empty_window_adds_its_names_but_no_rows() -> None:
    a = part(["read"], ["/a"], [0], [0], [1])
    empty = part(["stat"], ["/e"], [], [], [])
    got = merge([empty, a])
    assert got is not None and len(got["start_ns"]) == 1
    assert names(got, "op_id", "op_names") == ["read"] and names(got, "file_id", "paths") == ["/a"]
