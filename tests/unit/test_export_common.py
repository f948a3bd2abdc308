"""tb_iotrace.export._common: a source's I/O columns in chunks of rows (every column cut alike)."""
from __future__ import annotations

import numpy as np

from tb_iotrace.export._common import io_rows


def test_chunks_cover_every_row_once_in_order() -> None:
    cols = {"start_ns": np.arange(10), "op": np.array([f"op{i}" for i in range(10)], dtype=object)}
    chunks = list(io_rows(cols, chunk=4))
    assert [len(c["start_ns"]) for c in chunks] == [4, 4, 2]
    assert np.concatenate([c["start_ns"] for c in chunks]).tolist() == list(range(10))
    assert [c["op"][0] for c in chunks] == ["op0", "op4", "op8"]
    assert list(io_rows({"start_ns": np.zeros(0)}, chunk=4)) == []
