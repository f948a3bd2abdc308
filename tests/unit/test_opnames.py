"""tb_iotrace.recording.opnames: the op and counter names are read from the shim's tables,
match Darshan's counts and order per module, are cached, and an unknown module is refused."""
from __future__ import annotations

import pytest

from tb_iotrace.recording import opnames
from tb_iotrace.recording.ffi import native


def test_op_names_are_the_shims_table_in_its_order_and_cached() -> None:
    ffi, lib = native()
    got = opnames.op_names()
    assert len(got) == lib.tbio_op_count() and len(set(got)) == len(got)
    assert got.index("open") < got.index("read") < got.index("pread64")
    assert all(got[i] == ffi.string(lib.tbio_op_name(i)).decode() for i in range(len(got)))
    assert opnames.op_names() is got


@pytest.mark.parametrize(("module", "is_float", "count", "first"), [
    ("POSIX", False, 69, "POSIX_OPENS"), ("POSIX", True, 17, "POSIX_F_OPEN_START_TIMESTAMP"),
    ("STDIO", False, 14, "STDIO_OPENS"), ("STDIO", True, 15, "STDIO_F_META_TIME")])
def test_counter_names_follow_darshan_per_module(module: str, is_float: bool, count: int, first: str) -> None:
    got = opnames.counter_names(module, is_float)
    assert len(got) == count and got[0] == first and len(set(got)) == count
    prefix = f"{module}_F_" if is_float else f"{module}_"
    assert all(n.startswith(prefix) for n in got)
    if not is_float:
        assert not any(n.startswith(f"{module}_F_") for n in got)
    assert opnames.counter_names(module, is_float) is got


def test_an_unknown_module_is_refused() -> None:
    assert opnames.MODULES == ("POSIX", "STDIO")
    with pytest.raises(ValueError):
        opnames.counter_names("MPIIO", False)
