"""Chunked access to the I/O calls of a source (:meth:`tb_iotrace.model.sources.Source.io_columns`)."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tb_iotrace.model.sources import IO_COLUMNS

CHUNK = 100_000


def io_rows(cols: dict[str, np.ndarray], chunk: int = CHUNK) -> Iterator[dict[str, np.ndarray]]:
    n = len(cols["start_ns"])
    for lo in range(0, n, chunk):
        yield {k: v[lo:lo + chunk] for k, v in cols.items()}
