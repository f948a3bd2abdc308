"""Exports of captures and whole-run records (used by ``tb-iotrace export``).

- :mod:`.chrome`: Chrome trace-event JSON (Perfetto UI, chrome://tracing): host threads,
  device lines and I/O on one clock; gzip when the output ends in ``.gz``.
- :mod:`.darshan`: ``darshan-parser``-style text, and :func:`.darshan.parse` to read it back.
- :mod:`.darshan_log`: binary Darshan logs (format 3.41) for PyDarshan, Drishti, DXT Explorer.
- :mod:`tb_iotrace.export.flat_tables`: the per-file counter table and the per-operation table as Parquet or CSV.

Every exporter takes :class:`tb_iotrace.model.sources.Source` objects (one per run/host) and
writes the trace in chunks (:data:`CHUNK` rows) with progress on a terminal (:mod:`tb_iotrace.base.progress`).
"""
from __future__ import annotations

from tb_iotrace.export._common import CHUNK, IO_COLUMNS, io_rows

__all__ = ["CHUNK", "IO_COLUMNS", "io_rows"]
