"""Libraries loaded after enable() are patched, and loading behaves exactly
as it does without the shim (the dlopen wrapper must resolve a bare name
through the *caller's* RUNPATH/$ORIGIN, not its own)."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capture_util import FIXTURES, compile_so, load_libio, read_json, rec, run_script


def runpath_of(so: Path) -> str:
    out = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
    lines = [ln for ln in out.splitlines() if "(RUNPATH)" in ln or "(RPATH)" in ln]
    assert len(lines) == 1, out
    return lines[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    w = tmp_path_factory.mktemp("dl")
    for d in ("sub", "a2/sub2", "decoy", "ldp"):
        (w / d).mkdir(parents=True)
    rp = ["-Wl,--enable-new-dtags"]
    compile_so("libA.c", w / "libA.so", *rp, "-Wl,-rpath,$ORIGIN/sub")
    compile_so("libA.c", w / "a2" / "libA2.so", *rp, "-Wl,-rpath,$ORIGIN/sub2")
    compile_so("libB.c", w / "sub" / "libB.so", '-DWHO="sub"')
    compile_so("libB.c", w / "a2" / "sub2" / "libB.so", '-DWHO="sub2"')
    compile_so("libB.c", w / "decoy" / "libB.so", '-DWHO="decoy"')
    compile_so("libB.c", w / "ldp" / "libB.so", '-DWHO="ldp"')
    compile_so("libB.c", w / "ldp" / "libC.so", '-DWHO="ldpC"')
    (w / "data.bin").write_bytes(bytes(1000))
    # the layout is what the test means: RUNPATH (not RPATH), relative to $ORIGIN
    assert "(RUNPATH)" in runpath_of(w / "libA.so") and "[$ORIGIN/sub]" in runpath_of(w / "libA.so")
    return w


def scenario(work: Path, case: str, mode: str) -> dict:
    out = work / f"{case}-{mode}.json"
    env = {"LD_LIBRARY_PATH": str(work / "ldp")} if case == "ldpath" else {"LD_LIBRARY_PATH": ""}
    run_script("dlopen_scenario.py", str(work), case, mode, str(out), timeout=60, env=env)
    return read_json(out)


EXPECT = {
    # libA's RUNPATH $ORIGIN/sub finds the copy in sub/
    "runpath": [("A", "libB.so", "sub/libB.so")],
    # a same-named library loaded earlier by full path does not match a bare
    # name (it has no SONAME and was not loaded under that name)
    "decoy": [("load", "decoy/libB.so", "decoy/libB.so"), ("A", "libB.so", "sub/libB.so")],
    # once loaded under the bare name (through libA2's RUNPATH), that name
    # matches it from any caller
    "byname": [("A2", "libB.so", "a2/sub2/libB.so"), ("A", "libB.so", "a2/sub2/libB.so")],
    # LD_LIBRARY_PATH comes before the caller's RUNPATH
    "ldpath": [("ctypes", "libC.so", "ldp/libC.so"), ("A", "libC.so", "ldp/libC.so"),
               ("A", "libB.so", "ldp/libB.so")],
    # the same two, with the first load made before enable(): what glibc
    # learnt then (a bare name it knows / a full path that is not a name) holds
    "prename": [("A2", "libB.so", "a2/sub2/libB.so"), ("A", "libB.so", "a2/sub2/libB.so")],
    "predecoy": [("load", "decoy/libB.so", "decoy/libB.so"), ("A", "libB.so", "sub/libB.so")],
}
PRE = {"prename": 1, "predecoy": 1}   # steps made before enable() (outside the capture)


@pytest.mark.parametrize("case", sorted(EXPECT))
def test_bare_name_dlopen_finds_the_same_file(work, case):
    off = scenario(work, case, "off")
    on = scenario(work, case, "on")
    want = [(k, n, str(work / p)) for k, n, p in EXPECT[case]]
    assert [(k, n, p) for k, n, ret, p in off["steps"]] == want, "the fixture layout is not what glibc does"
    assert [(k, n, p) for k, n, ret, p in on["steps"]] == want
    # every a_run read data.bin through a libB/libC (loaded after enable(),
    # or before it and patched by it): the reads inside the capture are captured
    assert [ret for k, n, ret, p in on["steps"] if k in ("A", "A2")] == \
        [400] * sum(1 for k, n, ret, p in on["steps"] if k in ("A", "A2"))
    runs = sum(1 for k, n, ret, p in on["steps"][PRE.get(case, 0):] if k in ("A", "A2"))
    files = {f["module"]: f["counters"] for f in on["files"]}
    assert (files["POSIX"]["POSIX_READS"], files["POSIX"]["POSIX_BYTES_READ"]) == (3 * runs, 300 * runs)
    assert (files["STDIO"]["STDIO_READS"], files["STDIO"]["STDIO_BYTES_READ"]) == (2 * runs, 100 * runs)


def test_missing_library_fails_the_same_way(work):
    off, on = scenario(work, "missing", "off"), scenario(work, "missing", "on")
    assert on["steps"] == off["steps"]
    assert [ret for k, n, ret, p in on["steps"]] == [-1, -1]
    assert "libnope.so" in on["steps"][0][3]


def test_library_loaded_after_enable_is_captured(shim, tmp_path):
    so = compile_so("libio.c", tmp_path / "libio_late.so")
    data = tmp_path / "late.bin"
    data.write_bytes(b"L" * 4096)
    _, nlib = __import__("tb_iotrace.recording.ffi", fromlist=["native"]).native()
    shim.enable()
    before = nlib.tbio_patched_objects()
    lib = load_libio(so)                 # dlopen through _ctypes: the wrapper patches it
    assert nlib.tbio_patched_objects() == before + 1
    with shim.capture() as cap:
        fd = lib.c_open(str(data).encode(), os.O_RDONLY, 0)
        assert lib.c_pread(fd, 1000, 0) == 1000
        assert lib.c_pread(fd, 1000, 3000) == 1000
        assert lib.c_read(fd, 100) == 100
        assert lib.c_close(fd) == 0
        fp = lib.c_fopen(str(data).encode(), b"rb")
        assert lib.c_fread(fp, 1, 4000) == 4000
        assert lib.c_fclose(fp) == 0
    c = rec(cap, data).counters
    # the read after pread(1000 @ 3000) is at Darshan's tracked offset 4000
    assert (c["POSIX_OPENS"], c["POSIX_READS"], c["POSIX_BYTES_READ"], c["POSIX_MAX_BYTE_READ"]) == (1, 3, 2100, 4099)
    s = rec(cap, data, "STDIO").counters
    assert (s["STDIO_OPENS"], s["STDIO_READS"], s["STDIO_BYTES_READ"]) == (1, 1, 4000)


def test_bare_name_from_python_uses_ld_library_path(tmp_path):
    """A library found only through LD_LIBRARY_PATH (set before the process
    started, as the loader requires), dlopened by bare name by ctypes and by
    C code, after enable(): found, and its I/O captured."""
    ldp = tmp_path / "ldp"
    ldp.mkdir()
    compile_so("libB.c", ldp / "libLdOnly.so", '-DWHO="ld"')
    libio = compile_so("libio.c", tmp_path / "libio.so")
    data = tmp_path / "d.bin"
    data.write_bytes(bytes(500))
    out = tmp_path / "r.json"
    code = f"""
import ctypes, json, os, sys
import tb_iotrace
from capture_util import load_libio
tb_iotrace.enable()
with tb_iotrace.capture() as cap:
    l = ctypes.CDLL("libLdOnly.so")
    l.b_read.restype = ctypes.c_long
    n1 = l.b_read({str(data)!r}.encode())
    io = load_libio(__import__('pathlib').Path({str(libio)!r}))
    h = io.c_dlopen(b"libLdOnly.so", 2)
json.dump({{"n1": n1, "h": bool(h), "files": [f.to_dict() for f in cap.files if f.path == {str(data)!r}]}},
          open({str(out)!r}, "w"))
"""
    env = dict(os.environ, LD_LIBRARY_PATH=str(ldp),
               PYTHONPATH=os.pathsep.join(filter(None, [str(FIXTURES), os.environ.get("PYTHONPATH")])))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    r = read_json(out)
    assert r["n1"] == 400 and r["h"]
    files = {f["module"]: f["counters"] for f in r["files"]}
    assert (files["POSIX"]["POSIX_READS"], files["STDIO"]["STDIO_READS"]) == (3, 2)


def test_a_walk_that_writes_no_slot_reads_no_maps(shim, tmp_path):
    """/proc/self/maps is read only when a slot is to be written: in a torch process (thousands
    of mappings) each read cost ~1 ms, and every dlopen of a DataLoader worker's lazy imports
    read it though they had nothing to patch (bench/run_overhead.py's restarted workers)."""
    src = tmp_path / "pure.c"
    src.write_text("int pure_add(int a, int b) { return a + b; }\n")
    pure = compile_so(src, tmp_path / "libpure.so")
    io_so = compile_so("libio.c", tmp_path / "libio_maps.so")
    _, nlib = __import__("tb_iotrace.recording.ffi", fromlist=["native"]).native()
    shim.enable()
    objects, reads = nlib.tbio_patched_objects(), nlib.tbio_maps_reads()
    assert ctypes.CDLL(str(pure)).pure_add(2, 3) == 5       # a walk: met, nothing to write
    assert nlib.tbio_patched_objects() == objects + 1
    assert nlib.tbio_maps_reads() == reads
    load_libio(io_so)                                        # its open/read/... slots: written
    assert nlib.tbio_patched_objects() == objects + 2
    assert nlib.tbio_maps_reads() == reads + 1
