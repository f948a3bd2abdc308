"""Misuse and odd inputs: all handled, none crash, numbers stay exact."""
from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
import uuid
from pathlib import Path

import pytest

from capture_util import events_for, load_libio, rec


def native():
    from tb_iotrace.recording.ffi import native as n

    return n()


def slot_table() -> list[tuple[int, int, int]]:
    ffi, lib = native()
    s, o, w = ffi.new("uintptr_t *"), ffi.new("uintptr_t *"), ffi.new("uintptr_t *")
    out = []
    for i in range(lib.tbio_patch_count()):
        lib.tbio_patch_get(i, s, o, w)
        out.append((int(s[0]), int(o[0]), int(w[0])))
    return out


def read_twice(p: Path) -> None:
    fd = os.open(p, os.O_RDONLY)
    os.pread(fd, 10, 0)
    os.pread(fd, 10, 10)
    os.close(fd)


def test_enable_twice_patches_once(shim, tmp_path):
    p = tmp_path / "twice.bin"
    p.write_bytes(b"t" * 100)
    shim.enable()
    first = slot_table()
    shim.enable()
    shim.enable()
    assert slot_table() == first
    assert all(o != w for s, o, w in first)          # never "wrapper of the wrapper"
    with shim.capture() as cap:
        read_twice(p)
    c = rec(cap, p).counters
    assert (c["POSIX_OPENS"], c["POSIX_READS"]) == (1, 2)   # not doubled


def test_disable_without_enable(shim, tmp_path):
    shim.disable()
    shim.disable()
    assert not shim.is_enabled()
    assert native()[1].tbio_patch_count() == 0
    p = tmp_path / "after.bin"
    p.write_bytes(b"a" * 100)
    with shim.capture() as cap:                       # still works afterwards
        read_twice(p)
    assert rec(cap, p).counters["POSIX_READS"] == 2


def test_nested_captures_each_exact_and_a_fifth_refused(shim, tmp_path):
    """Captures nest (a TensorFlow profile window is one too), each exact for
    its own window; the fifth at once is refused with a clear NativeError and
    leaves the others recording."""
    p = tmp_path / "nest.bin"
    p.write_bytes(b"n" * 100)
    with shim.capture() as c1:
        read_twice(p)
        with shim.capture() as c2:
            read_twice(p)
            with shim.capture() as c3, shim.capture() as c4:
                read_twice(p)
                with pytest.raises(shim.NativeError, match=r"cannot start a capture: 4 captures are already"):
                    with shim.capture():
                        pass
                read_twice(p)
        read_twice(p)
    reads = [rec(c, p).counters["POSIX_READS"] for c in (c1, c2, c3, c4)]
    assert reads == [10, 6, 4, 4]
    with shim.capture() as c5:                       # all slots free again
        read_twice(p)
    assert rec(c5, p).counters["POSIX_READS"] == 2


def test_trace_cap_must_be_non_negative(shim):
    with pytest.raises(ValueError):
        shim.set_trace_cap(-1)


@pytest.fixture()
def many_fds():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 1 << 21
    want = min(want, (1 << 20) + 64)                 # past the shim's 2^20-entry fd table if allowed
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    try:
        yield want
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_descriptors_above_1024(shim, tmp_path, many_fds):
    p = tmp_path / "high.bin"
    p.write_bytes(bytes(range(256)) * 16)
    high = [1500, 3000, many_fds - 1]
    with shim.capture() as cap:
        fd = os.open(p, os.O_RDONLY)
        for n in high:
            assert os.dup2(fd, n) == n
        for k, n in enumerate(high):
            assert os.pread(n, 16, 16 * k) == (bytes(range(256)) * 16)[16 * k:16 * k + 16]
        for n in high:
            os.close(n)
        os.close(fd)
    c = rec(cap, p).counters
    assert (c["POSIX_OPENS"], c["POSIX_DUPS"], c["POSIX_READS"], c["POSIX_BYTES_READ"]) == (4, 3, 3, 48)
    fds = sorted({fd for op, off, req, ret, err, fd in events_for(cap, p) if op == "pread64"})
    assert fds == sorted(high)


def test_closing_descriptors_the_shim_never_saw(shim, tmp_path, libio_path):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    p = tmp_path / "unseen.bin"
    p.write_bytes(b"u" * 1000)
    before = os.open(p, os.O_RDONLY)                 # opened before enable(): never seen
    r, w = os.pipe()
    shim.enable()
    with shim.capture() as cap:
        os.close(before)                              # attributed to its path through /proc/self/fd
        with pytest.raises(OSError):
            os.close(987654)                          # never opened at all: EBADF, nothing recorded
        os.close(r)                                   # a pipe: not a file, nothing recorded
        os.close(w)
        # opened behind the shim's back (raw syscall): resolved lazily, then closed
        raw = libc.syscall(257, -100, str(p).encode(), os.O_RDONLY, 0)   # SYS_openat, AT_FDCWD
        assert raw >= 0
        assert len(os.read(raw, 100)) == 100
        os.close(raw)
    c = rec(cap, p).counters
    f = rec(cap, p).fcounters
    assert (c["POSIX_OPENS"], c["POSIX_READS"], c["POSIX_BYTES_READ"]) == (0, 1, 100)
    assert 0 < f["POSIX_F_CLOSE_START_TIMESTAMP"] <= f["POSIX_F_CLOSE_END_TIMESTAMP"]
    assert [op for op, *_ in events_for(cap, p)] == ["close", "read", "close"]
    assert not [x for x in cap.events.fd if x == 987654]


def test_reused_descriptor_numbers_are_not_misattributed(shim, tmp_path):
    """A descriptor number freed by closerange() (close_range) or replaced by
    dup2() of a pipe names the new object, not the file it named before."""
    p = tmp_path / "reuse.bin"
    with shim.capture() as cap:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"x" * 10)
        os.closerange(fd, fd + 1)
        r, w = os.pipe()                              # takes the freed number
        assert fd in (r, w)
        os.write(w, b"y" * 5)
        assert os.read(r, 5) == b"y" * 5
        fd2 = os.open(p, os.O_WRONLY)
        os.write(fd2, b"z" * 3)
        os.dup2(w, fd2)                               # fd2 is the pipe now
        os.write(fd2, b"p" * 7)
        assert os.read(r, 7) == b"p" * 7
        for x in (fd2, r, w):
            os.close(x)
    c = rec(cap, p).counters
    assert (c["POSIX_OPENS"], c["POSIX_WRITES"], c["POSIX_BYTES_WRITTEN"], c["POSIX_READS"]) == (2, 2, 13, 0)


def test_non_utf8_path(shim, tmp_path):
    bpath = os.fsencode(tmp_path) + b"/\xff\xfe.bin"
    with shim.capture() as cap:
        fd = os.open(bpath, os.O_RDWR | os.O_CREAT, 0o600)
        os.write(fd, b"x" * 10)
        os.close(fd)
        os.stat(bpath)
    recs = [f for f in cap.files if f.path_bytes == bpath]
    assert len(recs) == 1
    r = recs[0]
    assert r.path == os.fsdecode(bpath)
    assert cap.file(os.fsdecode(bpath)) is r
    assert (r.counters["POSIX_WRITES"], r.counters["POSIX_STATS"]) == (1, 1)
    d = json.loads(json.dumps(cap.to_dict()))      # surrogates survive as escapes
    assert os.fsdecode(bpath) in {f["path"] for f in d["files"]}


def test_hostile_file_name(shim, tmp_path):
    p = tmp_path / "<img src=x onerror=alert(1)>"
    with shim.capture() as cap:
        p.write_bytes(b"h" * 5)
        assert p.read_bytes() == b"h" * 5
    r = rec(cap, p)
    assert r.path == str(p) and r.path_bytes == os.fsencode(p)
    assert (r.counters["POSIX_BYTES_WRITTEN"], r.counters["POSIX_BYTES_READ"]) == (5, 5)
    d = json.loads(json.dumps(cap.to_dict()))
    assert [f["path"] for f in d["files"] if f["path"].endswith(">")] == [str(p)]


def test_streams_and_descriptors_opened_before_enable(shim, tmp_path, libio_path):
    lib = load_libio(libio_path)
    p = tmp_path / "early.bin"
    p.write_bytes(bytes(1000))
    fd = os.open(p, os.O_RDONLY)
    os.read(fd, 100)                                  # before enable(): offset 100
    fp = lib.c_fopen(str(p).encode(), b"rb")
    assert lib.c_fread(fp, 1, 300) == 300             # stream position 300
    shim.enable()
    with shim.capture() as cap:
        assert len(os.read(fd, 100)) == 100           # bytes 100..199
        assert lib.c_fread(fp, 1, 50) == 50           # bytes 300..349
    os.close(fd)
    lib.c_fclose(fp)
    c = rec(cap, p).counters
    assert (c["POSIX_OPENS"], c["POSIX_READS"], c["POSIX_BYTES_READ"], c["POSIX_MAX_BYTE_READ"]) == (0, 1, 100, 199)
    assert [(op, off) for op, off, *_ in events_for(cap, p)] == [("read", 100)]
    s = rec(cap, p, "STDIO").counters
    assert (s["STDIO_OPENS"], s["STDIO_READS"], s["STDIO_BYTES_READ"], s["STDIO_MAX_BYTE_READ"]) == (0, 1, 50, 349)


def test_default_exclusions(shim, tmp_path):
    with shim.capture() as cap:
        with open("/dev/null", "rb") as f:
            f.read(10)
        with open("/dev/null", "wb") as f:
            f.write(b"z" * 10)
        with open("/proc/self/status", "rb") as f:
            f.read()
        os.stat("/etc/passwd")
        (tmp_path / "kept.bin").write_bytes(b"k")
    paths = {f.path for f in cap.files} | set(cap.events.path)
    for excluded in ("/dev/null", "/proc/self/status", "/etc/passwd"):
        assert excluded not in paths
    assert not [q for q in paths if q.startswith(("/dev/", "/proc/", "/etc/"))]
    assert rec(cap, tmp_path / "kept.bin").counters["POSIX_BYTES_WRITTEN"] == 1


def test_filters_include_dev_shm_and_exclude_prefixes(shim, tmp_path):
    shm = Path("/dev/shm") / f"tbio-test-{uuid.uuid4().hex}.bin"
    keep = tmp_path / "keep"
    keep.mkdir()
    try:
        with shim.capture() as cap:
            shm.write_bytes(b"s" * 7)
        assert cap.file(shm) is None                  # /dev/ is excluded by default
        shim.set_filters(include=["/dev/shm/"])
        with shim.capture() as cap:
            shm.write_bytes(b"s" * 7)
            Path("/dev/null").write_bytes(b"n")       # the rest of /dev stays excluded
        assert rec(cap, shm).counters["POSIX_BYTES_WRITTEN"] == 7
        assert cap.file("/dev/null") is None
        # a longer include wins over a shorter exclude
        shim.set_filters(include=[str(keep) + "/"], exclude=[str(tmp_path) + "/"])
        with shim.capture() as cap:
            (tmp_path / "hidden.bin").write_bytes(b"h")
            (keep / "shown.bin").write_bytes(b"s")
        assert cap.file(tmp_path / "hidden.bin") is None
        assert rec(cap, keep / "shown.bin").counters["POSIX_BYTES_WRITTEN"] == 1
    finally:
        shm.unlink(missing_ok=True)


BAD_POINTERS = r"""
import ctypes, json, os, sys
from pathlib import Path
import tb_iotrace

libio, work, out = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
L, I, P = ctypes.c_long, ctypes.c_int, ctypes.c_void_p
lib = ctypes.CDLL(libio, use_errno=True)
for name, res, args in (("c_readv", L, [I, P, I]), ("c_writev", L, [I, P, I]), ("c_open_ptr", I, [P, I]),
                        ("c_stat_ptr", I, [P]), ("c_sendfile", L, [I, I, P, L]),
                        ("c_copy_file_range", L, [I, P, I, P, L])):
    f = getattr(lib, name)
    f.restype, f.argtypes = res, args
buf = (ctypes.c_char * 64)()
good = (ctypes.c_size_t * 4)(ctypes.addressof(buf), 32, ctypes.addressof(buf) + 32, 32)
BAD = 0x10                      # never mapped
src, dst = work / "src.bin", work / "dst.bin"


def calls():
    a = os.open(src, os.O_RDWR)
    b = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    off = ctypes.c_long(8)
    plan = [("readv", lambda: lib.c_readv(a, BAD, 3)), ("readv", lambda: lib.c_readv(a, ctypes.addressof(good), 1 << 30)),
            ("readv", lambda: lib.c_readv(a, ctypes.addressof(good), 2)),
            ("writev", lambda: lib.c_writev(b, BAD, 3)), ("writev", lambda: lib.c_writev(b, ctypes.addressof(good), 2)),
            ("open", lambda: lib.c_open_ptr(BAD, 0)), ("stat", lambda: lib.c_stat_ptr(BAD)),
            ("sendfile", lambda: lib.c_sendfile(b, a, BAD, 10)),
            ("sendfile", lambda: lib.c_sendfile(b, a, ctypes.addressof(off), 10)),
            ("copy_file_range", lambda: lib.c_copy_file_range(a, BAD, b, None, 10)),
            ("copy_file_range", lambda: lib.c_copy_file_range(a, ctypes.addressof(off), b, None, 10))]
    res = []
    for name, f in plan:
        ctypes.set_errno(0)
        r = f()
        res.append([name, r, ctypes.get_errno() if r < 0 else 0])
    res.append(["offset after", off.value, 0])
    os.close(a)
    os.close(b)
    return res


src.write_bytes(b"v" * 64)
plain = calls()
tb_iotrace.enable()
with tb_iotrace.capture() as cap:
    hooked = calls()
ev = cap.events
rows = [[ev.op[i], os.path.basename(ev.path[i]), int(ev.offset[i]), int(ev.requested[i]), int(ev.returned[i]),
         int(ev.errno[i])] for i in range(len(ev)) if ev.path[i] in (str(src), str(dst)) and ev.op[i] not in ("close", "open64")]
json.dump({"plain": plain, "hooked": hooked, "rows": rows}, open(out, "w"))
"""


def test_bad_pointers_fail_like_libc(tmp_path, libio_path):
    """Calls handed pointers the kernel cannot read (an iovec array, a path,
    a sendfile/copy_file_range offset) or an absurd iovec count return
    EFAULT/EINVAL exactly as without the shim.  The shim used to read them
    itself (before or after the call) and crash the process."""
    import errno as E
    import subprocess

    script, out = tmp_path / "bad.py", tmp_path / "bad.json"
    script.write_text(BAD_POINTERS)
    r = subprocess.run([sys.executable, str(script), str(libio_path), str(tmp_path), str(out)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    d = json.loads(out.read_text())
    assert d["hooked"] == d["plain"]
    assert [x[2] for x in d["plain"]] == [E.EFAULT, E.EINVAL, 0, E.EFAULT, 0, E.EFAULT, E.EFAULT, E.EFAULT, 0,
                                          E.EFAULT, 0, 0]
    assert d["plain"][-1] == ["offset after", 28, 0]        # 8 + 10 (sendfile) + 10 (copy_file_range)
    # traced: failed vector calls without a size, and the copies at the offsets the caller gave
    assert d["rows"] == [
        ["readv", "src.bin", -1, -1, -1, E.EFAULT], ["readv", "src.bin", -1, -1, -1, E.EINVAL],
        ["readv", "src.bin", 0, 64, 64, 0],
        ["writev", "dst.bin", -1, -1, -1, E.EFAULT], ["writev", "dst.bin", 0, 64, 64, 0],
        ["sendfile", "src.bin", -1, 10, -1, E.EFAULT], ["sendfile", "dst.bin", -1, 10, -1, E.EFAULT],
        ["sendfile", "src.bin", 8, 10, 10, 0], ["sendfile", "dst.bin", 64, 10, 10, 0],
        ["copy_file_range", "src.bin", -1, 10, -1, E.EFAULT], ["copy_file_range", "dst.bin", -1, 10, -1, E.EFAULT],
        ["copy_file_range", "src.bin", 18, 10, 10, 0], ["copy_file_range", "dst.bin", 74, 10, 10, 0],
    ]
