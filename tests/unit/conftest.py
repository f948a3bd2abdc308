"""Fixtures of the capture tests: a compiled libio fixture library and a clean shim.

The helpers they use are in fixtures/capture_util.py (on sys.path through `pythonpath` in
pyproject.toml, so the workload scripts in fixtures/ can import them too)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from capture_util import DEFAULT_TRACE_CAP, compile_so


@pytest.fixture(scope="session")
def libio_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("libio")
    return compile_so("libio.c", d / "libio.so")


@pytest.fixture()
def shim() -> Iterator[Any]:
    """tb_iotrace with a clean slate, and everything process-global put back after."""
    import tb_iotrace
    from tb_iotrace.recording.ffi import native

    ffi, lib = native()
    excludes = ffi.string(lib.tbio_get_excludes())
    tb_iotrace.disable()
    try:
        yield tb_iotrace
    finally:
        tb_iotrace.disable()
        lib.tbio_set_filters(b"", excludes)
        lib.tbio_set_trace_cap(DEFAULT_TRACE_CAP)
