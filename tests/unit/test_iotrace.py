"""tb_iotrace.store.xplane.iotrace: the I/O trace every reader and writer exchanges (its columns'
checks, text columns lossless, op and path given as codes and built only when read)."""
from __future__ import annotations

import numpy as np
import pytest

from tb_iotrace.store.xplane.iotrace import COLUMNS, IoTrace, Labels, ThreadInfo


def cols(n: int, **given: object) -> dict[str, object]:
    base: dict[str, object] = {name: np.zeros(n, dtype=dtype) if dtype is not object else [""] * n
                               for name, dtype in COLUMNS.items()}
    base.update(given)
    return base


def test_text_columns_from_str_bytes_and_none() -> None:
    tr = IoTrace(**cols(3, path=["/a", b"/d/\xff.bin", None], op=np.array(["read", "write", "open"])))
    assert tr.path.dtype == object and tr.path.tolist() == ["/a", "/d/\udcff.bin", ""]
    assert tr.path[1].encode("utf-8", "surrogateescape") == b"/d/\xff.bin"          # lossless
    assert tr.op.tolist() == ["read", "write", "open"] and len(tr) == 3


def test_columns_of_different_lengths_or_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="IoTrace.end_ns has 2 rows, expected 3"):
        IoTrace(**cols(3, end_ns=[1, 2]))
    with pytest.raises(ValueError, match="one-dimensional"):
        IoTrace(**cols(2, fd=np.zeros((2, 1))))
    with pytest.raises(ValueError, match="IoTrace.path has 1 rows, expected 2"):
        IoTrace(**cols(2, path=Labels(np.array([0]), ("x",))))


def test_labels_stay_codes_until_read_and_take_keeps_them() -> None:
    op = Labels(np.array([1, 0, 1]), ("read", "write"))
    tr = IoTrace(**cols(3, op=op, start_ns=[5, 6, 7]), threads={7: (123, "loader")}, dropped="2")
    assert tr.labels("op") is op and "op" not in tr.__dict__
    assert tr.op.tolist() == ["write", "read", "write"] and "op" in tr.__dict__
    sub = tr.take(np.array([False, True, True]))
    assert sub.labels("op") is not None and sub.op.tolist() == ["read", "write"] and sub.start_ns.tolist() == [6, 7]
    assert sub.threads == {7: ThreadInfo(123, "loader")} and sub.dropped == 2
    assert tr.labels("path") is None


def test_labels_are_checked() -> None:
    with pytest.raises(ValueError, match="out of range"):
        Labels(np.array([0, 2]), ("a", "b"))
    with pytest.raises(ValueError, match="one-dimensional integer"):
        Labels(np.array([0.5]), ("a",))
    assert Labels(np.array([0, 0]), (b"\xff",)).values().tolist() == ["\udcff", "\udcff"]
    assert Labels(np.zeros(0, np.int64), ()).values().tolist() == []


def test_empty_keeps_what_it_is_given() -> None:
    tr = IoTrace.empty(dropped=3, counters=[{"path": "/a"}])
    assert len(tr) == 0 and tr.dropped == 3 and tr.counters == [{"path": "/a"}]
    assert set(tr.columns()) == set(COLUMNS) and tr.columns()["offset"].dtype == COLUMNS["offset"]
