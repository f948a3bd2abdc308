"""Functions fetched by name with dlsym/dlvsym (ctypes' CDLL(None).read, a
library's dlsym(RTLD_DEFAULT, "pread")) bypass the GOT: the shim hands out its
wrapper for them, while every lookup still answers what glibc answers for the
real caller (RTLD_NEXT and RTLD_DEFAULT depend on the calling object)."""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from capture_util import compile_so

SSIZE = ctypes.c_ssize_t


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("dlsym")
    dep = compile_so("dlsym_dep.c", d / "libdlsym_dep.so")
    interp = compile_so("dlsym_interp.c", d / "libdlsym_interp.so", f"-L{d}", "-ldlsym_dep",
                        "-Wl,-rpath,$ORIGIN")
    user = compile_so("dlsym_user.c", d / "libdlsym_user.so")
    return {"dep": dep, "interp": interp, "user": user}


@pytest.fixture()
def data(tmp_path) -> tuple[Path, int]:
    p = tmp_path / "data.bin"
    p.write_bytes(bytes(range(256)) * 4)
    fd = os.open(p, os.O_RDONLY)
    yield p, fd
    os.close(fd)


def _reads(cap, path: Path, op: str) -> list[int]:
    ev = cap.events
    return sorted(int(n) for n in ev.requested[(ev.path == str(path)) & (ev.op == op)])


def _addr(fn) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


def test_ctypes_cdll_none_read_is_traced(shim, data):
    from tb_iotrace.recording.ffi import native

    _, lib = native()
    path, fd = data
    shim.enable()
    read = ctypes.CDLL(None).read          # a fresh CDLL: ctypes caches what it fetched
    read.restype, read.argtypes = SSIZE, [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    assert _addr(read) == int(lib.tbio_wrapper_address(b"read"))
    buf = ctypes.create_string_buffer(64)
    with shim.capture() as cap:
        os.lseek(fd, 0, os.SEEK_SET)
        assert read(fd, buf, 33) == 33
    assert _reads(cap, path, "read") == [33]
    # the pointer stays in the caller's hands: after disable() it still reads
    shim.disable()
    os.lseek(fd, 0, os.SEEK_SET)
    assert read(fd, buf, 10) == 10 and buf.raw[:10] == bytes(range(10))
    # and with the shim off, the lookup is libc's own again
    plain = ctypes.CDLL(None).read
    assert _addr(plain) == int(lib.tbio_real_address(b"read"))


def test_library_fetching_pread_by_name_is_traced(shim, libs, data):
    path, fd = data
    shim.enable()
    user = ctypes.CDLL(str(libs["user"]))
    buf = ctypes.create_string_buffer(64)
    calls = {"via_default": 11, "via_handle": 12, "via_dlvsym": 13}
    with shim.capture() as cap:
        for name, n in calls.items():
            f = getattr(user, name)
            f.restype, f.argtypes = ctypes.c_long, [ctypes.c_int, ctypes.c_void_p, ctypes.c_long, ctypes.c_long]
            assert f(fd, buf, n, 5) == n, name
    assert _reads(cap, path, "pread") + _reads(cap, path, "pread64") == sorted(calls.values())


def test_caller_relative_lookups_answer_as_without_the_shim(shim, libs):
    """RTLD_NEXT and RTLD_DEFAULT from a library loaded RTLD_LOCAL with a
    dependency: a dlsym wrapper that made the shim the caller would find
    nothing in the library's local scope and the wrong 'next' object."""
    from tb_iotrace.recording.ffi import native

    _, lib = native()
    interp = ctypes.CDLL(str(libs["interp"]))   # RTLD_LOCAL: dep_only_here is in its local scope only
    for f in (interp.next_of, interp.default_of):
        f.restype, f.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    interp.vnext_of.restype, interp.vnext_of.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
    version = b"GLIBC_2.2.5" if ctypes.sizeof(ctypes.c_void_p) == 8 and os.uname().machine == "x86_64" \
        else b"GLIBC_2.17"

    def answers() -> dict[str, int | None]:
        return {"next pread": interp.next_of(b"pread"), "next dep": interp.next_of(b"dep_only_here"),
                "default dep": interp.default_of(b"dep_only_here"),
                "vnext pread": interp.vnext_of(b"pread", version),
                "next missing": interp.next_of(b"no_such_symbol_tbio")}

    off = answers()
    assert off["default dep"] and off["next dep"] and off["next pread"], off   # the layout means what it says
    assert off["next pread"] == int(lib.tbio_real_address(b"pread"))
    default_off = interp.default_of(b"pread")
    shim.enable()
    on = answers()
    assert on == off
    # RTLD_DEFAULT's answer for a hooked name is libc's function: the wrapper of it stands in
    assert default_off == int(lib.tbio_real_address(b"pread"))
    assert interp.default_of(b"pread") == int(lib.tbio_wrapper_address(b"pread"))
