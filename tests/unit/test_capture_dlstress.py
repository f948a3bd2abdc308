"""Libraries dlopened on several threads while other threads walk the loaded
objects (and turn the shim off and on) all end up patched: a walk that meets
an object mapped but not yet relocated must not mark it done for good."""
from __future__ import annotations

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from capture_util import compile_so

NLIBS = 32


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> tuple[Path, list[Path]]:
    d = tmp_path_factory.mktemp("dlstress")
    driver = compile_so("dlstress.c", d / "libdlstress.so")
    # half bind lazily (PLT stubs until the first call), half at load time (RELRO)
    jobs = [(d / f"libstress{i}.so", () if i % 2 else ("-Wl,-z,now",)) for i in range(NLIBS)]
    with ThreadPoolExecutor(2) as ex:
        paths = list(ex.map(lambda j: compile_so("dlstress_lib.c", j[0], *j[1]), jobs))
    return driver, paths


@pytest.mark.parametrize("round_", range(3))
@pytest.mark.slow
def test_libraries_loaded_during_walks_are_all_patched(shim, libs, tmp_path, round_):
    from tb_iotrace.recording.ffi import native

    ffi, lib = native()
    driver_path, paths = libs
    # fresh copies each round: a library already loaded would not be loaded again
    fresh = []
    for i, p in enumerate(paths):
        q = tmp_path / f"r{round_}_{i}_{p.name}"
        q.write_bytes(p.read_bytes())
        fresh.append(q)
    driver = ctypes.CDLL(str(driver_path))
    driver.stress_load.restype = ctypes.c_int
    driver.stress_load.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                   ctypes.c_void_p, ctypes.c_int]
    enable = int(ffi.cast("uintptr_t", ffi.addressof(lib, "tbio_enable")))
    disable = int(ffi.cast("uintptr_t", ffi.addressof(lib, "tbio_disable")))
    c_paths = (ctypes.c_char_p * NLIBS)(*[os.fsencode(p) for p in fresh])
    handles = (ctypes.c_void_p * NLIBS)()
    shim.enable()
    half = NLIBS // 2
    # phase 1: loads while the shim is turned off and on; it ends on
    assert driver.stress_load(c_paths, handles, 0, half, 3, enable, disable, 40) == 0
    assert shim.is_enabled()
    # phase 2: loads while another thread's dlopen walks over and over
    assert driver.stress_load(c_paths, handles, half, NLIBS, 3, enable, disable, 0) == 0
    assert all(handles), "a library failed to load"

    data = tmp_path / "data.bin"
    data.write_bytes(bytes(range(256)) * 4)
    fd = os.open(data, os.O_RDONLY)
    try:
        buf = ctypes.create_string_buffer(NLIBS + 1)
        with shim.capture() as cap:
            for i in range(NLIBS):
                f = ctypes.CDLL(str(fresh[i])).stress_read   # the handle dlopen gave (refcounted)
                f.restype, f.argtypes = ctypes.c_long, [ctypes.c_int, ctypes.c_void_p, ctypes.c_long]
                os.lseek(fd, 0, os.SEEK_SET)
                assert f(fd, buf, i + 1) == i + 1
    finally:
        os.close(fd)
    ev = cap.events
    rows = (ev.path == str(data)) & (ev.op == "read")
    seen = sorted(int(n) for n in ev.requested[rows])
    missing = sorted(set(range(1, NLIBS + 1)) - set(seen))
    assert missing == [], f"reads of these libraries (by size) were not traced: {missing}"


def _mapping_of(path: Path) -> list[tuple[int, int, str]]:
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].strip() == str(path):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi, parts[1]))
    return out


def test_slot_overwritten_after_patching_is_patched_again(shim, libs, tmp_path):
    """A lazy-binding fixup on another thread can write the real function over
    the wrapper just written into a PLT slot; the next walk must put it back."""
    from tb_iotrace.recording.ffi import native

    ffi, lib = native()
    _, paths = libs
    lazy = tmp_path / "liblazy.so"
    lazy.write_bytes(paths[1].read_bytes())     # odd ones bind lazily: their .got.plt stays writable
    shim.enable()
    so = ctypes.CDLL(str(lazy))
    wrapper = int(lib.tbio_wrapper_address(b"read"))
    real = int(lib.tbio_real_address(b"read"))
    maps = _mapping_of(lazy)
    slots = []
    for i in range(lib.tbio_patch_count()):
        s, o, w = ffi.new("uintptr_t *"), ffi.new("uintptr_t *"), ffi.new("uintptr_t *")
        assert lib.tbio_patch_get(i, s, o, w) == 0
        if w[0] == wrapper and any(lo <= s[0] < hi for lo, hi, _ in maps):
            slots.append(s[0])
    assert len(slots) == 1, slots
    (addr,) = slots
    assert any(lo <= addr < hi and "w" in perm for lo, hi, perm in maps), "the slot's page is not writable"
    cell = ctypes.c_uint64.from_address(addr)
    assert cell.value == wrapper
    cell.value = real                           # what the late fixup writes
    ctypes.CDLL(None)                           # any dlopen through the shim walks again
    assert cell.value == wrapper
    data = tmp_path / "d.bin"
    data.write_bytes(b"z" * 100)
    fd = os.open(data, os.O_RDONLY)
    f = so.stress_read
    f.restype, f.argtypes = ctypes.c_long, [ctypes.c_int, ctypes.c_void_p, ctypes.c_long]
    buf = ctypes.create_string_buffer(64)
    with shim.capture() as cap:
        assert f(fd, buf, 37) == 37
    os.close(fd)
    ev = cap.events
    assert list(ev.requested[(ev.path == str(data)) & (ev.op == "read")]) == [37]
