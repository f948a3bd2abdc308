"""The capture's basic promises: the trace's columns (times in the capture
window, CLOCK_REALTIME, thread ids), failed calls traced but not counted,
the fortified and STDIO entry points hooked, and the JSON form."""
from __future__ import annotations

import ctypes
import errno
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from capture_util import compile_so, events_for, load_libio, rec


def test_trace_times_ids_and_window(shim, tmp_path):
    p = tmp_path / "t.bin"
    before = time.time_ns()
    for _ in range(20):                # short captures: the window must hold every row
        with shim.capture() as cap:
            fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
            os.write(fd, b"x" * 10)
            os.pread(fd, 10, 0)
            os.close(fd)
        ev = cap.events
        rows = ev.path == str(p)
        assert int(rows.sum()) == 4
        assert (ev.start_ns <= ev.end_ns).all()
        assert (ev.start_ns >= cap.start_ns).all(), (int(ev.start_ns.min()), cap.start_ns)
        assert (ev.end_ns <= cap.end_ns).all(), (int(ev.end_ns.max()), cap.end_ns)
    after = time.time_ns()
    # CLOCK_REALTIME epoch nanoseconds
    assert before <= cap.start_ns <= cap.end_ns <= after
    # rows of this thread carry its OS tid and pthread_self (threading.get_ident on Linux)
    me = [t for t in cap.threads if t.tid == threading.get_native_id()]
    assert len(me) == 1
    assert me[0].pthread_self == threading.get_ident()
    assert set(ev.tid[rows]) == {threading.get_native_id()}
    comm = Path(f"/proc/self/task/{me[0].tid}/comm").read_text().strip()
    assert me[0].name == comm


def test_thread_names_and_rows_per_thread(shim, tmp_path):
    p = tmp_path / "named.bin"
    p.write_bytes(b"n" * 100)
    libc = ctypes.CDLL(None)
    tids = {}

    def body(name: str) -> None:
        libc.prctl(15, name.encode(), 0, 0, 0)   # PR_SET_NAME: the comm the trace reports
        tids[name] = threading.get_native_id()
        fd = os.open(p, os.O_RDONLY)
        os.pread(fd, 10, 0)
        os.close(fd)

    with shim.capture() as cap:
        for name in ("reader-a", "reader-b"):
            t = threading.Thread(target=body, args=(name,))
            t.start()
            t.join()
    by_tid = {t.tid: t for t in cap.threads}
    for name, tid in tids.items():
        assert by_tid[tid].name == name
        assert by_tid[tid].nevents == 3


def test_failed_calls_are_traced_not_counted(shim, tmp_path):
    missing = tmp_path / "missing.bin"
    p = tmp_path / "wo.bin"
    with shim.capture() as cap:
        with pytest.raises(FileNotFoundError):
            os.open(missing, os.O_RDONLY)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o600)
        with pytest.raises(OSError):
            os.read(fd, 10)                      # EBADF: write-only
        with pytest.raises(OSError):
            os.lseek(fd, -5, os.SEEK_SET)       # EINVAL
        os.close(fd)
    assert cap.file(missing) is None            # nothing counted...
    assert [(op, err) for op, off, req, ret, err, fd in events_for(cap, missing)] == [("open64", errno.ENOENT)]
    c = rec(cap, p).counters
    assert (c["POSIX_OPENS"], c["POSIX_READS"], c["POSIX_SEEKS"], c["POSIX_BYTES_READ"]) == (1, 0, 0, 0)
    rows = [(op, ret, err) for op, off, req, ret, err, fd in events_for(cap, p)]
    assert rows == [("open64", rows[0][1], 0), ("read", -1, errno.EBADF), ("lseek64", -1, errno.EINVAL),
                    ("close", 0, 0)]


@pytest.fixture(scope="module")
def fortified(tmp_path_factory):
    d = tmp_path_factory.mktemp("fort")
    so = compile_so("fortified.c", d / "libfortified.so", "-D_FORTIFY_SOURCE=2", opt="-O2")
    imports = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True,
                             check=True).stdout
    for sym in ("__open_2", "__read_chk", "__pread_chk", "__fread_chk", "__fgets_chk", "__fprintf_chk"):
        assert sym in imports, f"the fixture does not import {sym}: {imports}"
    lib = ctypes.CDLL(str(so))
    L, I, P, S = ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p
    for name, res, args in [("f_open", I, [S, I]), ("f_read", L, [I, L]), ("f_pread", L, [I, L, L]),
                            ("f_fopen", P, [S, S]), ("f_fread", L, [P, L]), ("f_fgets", I, [P, I]),
                            ("f_fprintf", I, [P, I]), ("f_fclose", I, [P])]:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def test_fortified_entry_points(shim, tmp_path, fortified):
    f = fortified
    p = tmp_path / "fort.txt"
    p.write_bytes(b"line one\nline two\n" + b"z" * 1000)
    out = tmp_path / "fort.out"
    with shim.capture() as cap:
        fd = f.f_open(str(p).encode(), os.O_RDONLY)
        assert f.f_read(fd, 100) == 100
        assert f.f_pread(fd, 50, 500) == 50
        os.close(fd)
        fp = f.f_fopen(str(p).encode(), b"r")
        assert f.f_fgets(fp, 100) == 1           # "line one\n"
        assert f.f_fread(fp, 9) == 9             # "line two\n"
        assert f.f_fclose(fp) == 0
        fp = f.f_fopen(str(out).encode(), b"w")
        assert f.f_fprintf(fp, 42) == 9          # "value=42\n"
        assert f.f_fclose(fp) == 0
    ops = [op for op, *_ in events_for(cap, p)]
    assert ops[:4] == ["__open_2", "__read_chk", "__pread_chk", "close"]
    c = rec(cap, p).counters
    assert (c["POSIX_OPENS"], c["POSIX_READS"], c["POSIX_BYTES_READ"]) == (1, 2, 150)
    s = rec(cap, p, "STDIO").counters
    assert [op for op, *_ in events_for(cap, p, "STDIO")] == ["fopen", "__fgets_chk", "__fread_chk", "fclose"]
    assert (s["STDIO_OPENS"], s["STDIO_READS"], s["STDIO_BYTES_READ"]) == (1, 2, 18)
    w = rec(cap, out, "STDIO").counters
    assert (w["STDIO_WRITES"], w["STDIO_BYTES_WRITTEN"]) == (1, 9)
    assert [op for op, *_ in events_for(cap, out, "STDIO")] == ["fopen", "__fprintf_chk", "fclose"]


def test_fread_at_eof_is_traced_as_zero_bytes(shim, tmp_path, libio_path):
    """fread() returning 0 at end of file did not fail: its trace row says 0
    bytes and no errno (even with a stale errno left by an earlier call).
    Darshan does not count it as a read, and neither do the counters.  A
    write to a read-only stream did fail: -1 and EBADF."""
    lib = load_libio(libio_path)
    fread_errno = ctypes.CDLL(str(libio_path), use_errno=True).c_fread
    fread_errno.restype, fread_errno.argtypes = ctypes.c_long, [ctypes.c_void_p, ctypes.c_long, ctypes.c_long]
    p = tmp_path / "eof.txt"
    p.write_bytes(b"e" * 30)
    with shim.capture() as cap:
        fp = lib.c_fopen(str(p).encode(), b"rb")
        assert lib.c_fread(fp, 1, 100) == 30
        ctypes.set_errno(errno.ENOENT)          # a stale errno from some earlier call
        assert fread_errno(fp, 1, 100) == 0
        assert lib.c_fclose(fp) == 0
        fp = lib.c_fopen(str(p).encode(), b"rb")
        assert lib.c_fwrite(fp, 1, 10) == 0     # a real failure: read-only stream
        assert lib.c_fclose(fp) == 0
    rows = [(op, off, req, ret, err) for op, off, req, ret, err, fd in events_for(cap, p, "STDIO")]
    assert rows[1:3] == [("fread", 0, 100, 30, 0), ("fread", 30, 100, 0, 0)]
    assert rows[5] == ("fwrite", -1, 10, -1, errno.EBADF)
    s = rec(cap, p, "STDIO").counters
    assert (s["STDIO_READS"], s["STDIO_BYTES_READ"], s["STDIO_WRITES"], s["STDIO_OPENS"]) == (1, 30, 0, 2)


def test_to_dict_is_json_and_complete(shim, tmp_path):
    p = tmp_path / "j.bin"
    with shim.capture() as cap:
        p.write_bytes(b"j" * 123)
    d = json.loads(json.dumps(cap.to_dict()))
    recs = [f for f in d["files"] if f["path"] == str(p)]
    assert len(recs) == 1 and recs[0]["module"] == "POSIX"
    from tb_iotrace.recording.opnames import counter_names

    assert list(recs[0]["counters"]) == list(counter_names("POSIX", False))
    assert list(recs[0]["fcounters"]) == list(counter_names("POSIX", True))
    assert recs[0]["counters"]["POSIX_BYTES_WRITTEN"] == 123
    assert d["nevents"] == len(cap.events) and d["dropped"] == 0
    assert d["start_ns"] == cap.start_ns and d["end_ns"] == cap.end_ns


def test_capture_yields_a_recording_and_the_old_name_still_imports(shim, tmp_path):
    """``capture()`` yields a ``tb_iotrace.Recording``; ``tb_iotrace.Capture``, its name in earlier
    releases, is the same class (code that named it keeps working), but no longer in ``__all__``."""
    with shim.capture() as rec_:
        (tmp_path / "r.bin").write_bytes(b"x")
    assert type(rec_) is shim.Recording
    from tb_iotrace import Capture

    assert Capture is shim.Recording
    assert "Recording" in shim.__all__ and "Capture" not in shim.__all__
    with pytest.raises(AttributeError):
        shim.Caputre  # noqa: B018 - a misspelt name still fails
