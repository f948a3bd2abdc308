"""Chunked access to the I/O calls of a source (:meth:`tb_iotrace.model.sources.Source.io_columns`),
and text as the Parquet tables hold it."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tb_iotrace.model.sources import IO_COLUMNS

CHUNK = 100_000


def io_rows(cols: dict[str, np.ndarray], chunk: int = CHUNK) -> Iterator[dict[str, np.ndarray]]:
    n = len(cols["start_ns"])
    for lo in range(0, n, chunk):
        yield {k: v[lo:lo + chunk] for k, v in cols.items()}


def parquet_text(value: Any) -> Any:
    """A text value as Parquet can hold it (UTF-8 only): a name's bytes that are not UTF-8 (kept
    as surrogates, as the capture read them) written as ``\\xNN`` escapes; CSV and the Darshan
    text keep the bytes themselves. Every Parquet table escapes the same way, so a path joins
    across them. Anything else is returned as it is."""
    if not isinstance(value, str):
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

