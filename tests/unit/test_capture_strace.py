"""Ground truth from strace: the capture's POSIX counters and trace equal what
the kernel saw.

fixtures/workload_strace.py does POSIX I/O from Python and from C (through a
library loaded with ctypes) inside one capture while `strace -f -y` records
every file/descriptor syscall.  For each test file we rebuild from the strace
log the exact sequence of calls (kind, kernel file offset, bytes) and compare
it with the capture's trace, then derive Darshan's counters from the log and
compare them with the capture's.  STDIO calls are buffered by libc (one
read/write syscall per 4 KiB, not per fread/fwrite), so STDIO byte totals are
compared with the file sizes and the syscall totals instead.
"""
from __future__ import annotations

import errno
import os
import shutil
import sys
from pathlib import Path

import pytest

from capture_util import glibc_version, read_json, run_script
import strace_log

STRACE = shutil.which("strace") or "/usr/bin/strace"

# capture op name -> the strace kind it must appear as
OP_KIND = {
    **dict.fromkeys(["open", "open64", "openat", "openat64", "creat", "creat64", "__open_2", "__open64_2",
                     "__openat_2", "__openat64_2"], "open"),
    **dict.fromkeys(["dup", "dup2", "dup3", "fcntl", "fcntl64"], "dup"),
    **dict.fromkeys(["read", "__read_chk", "readv"], "read"),
    **dict.fromkeys(["pread", "pread64", "__pread_chk", "__pread64_chk", "preadv", "preadv64", "preadv2",
                     "preadv64v2"], "pread"),
    **dict.fromkeys(["write", "writev"], "write"),
    **dict.fromkeys(["pwrite", "pwrite64", "pwritev", "pwritev64", "pwritev2", "pwritev64v2"], "pwrite"),
    **dict.fromkeys(["lseek", "lseek64"], "seek"),
    **dict.fromkeys(["stat", "stat64", "lstat", "lstat64", "fstat", "fstat64", "fstatat", "fstatat64",
                     "__xstat", "__xstat64", "__lxstat", "__lxstat64", "__fxstat", "__fxstat64", "__fxstatat",
                     "__fxstatat64", "statx"], "stat"),
    "close": "close",
}
DATA = {"read", "pread", "write", "pwrite"}
POSIX_FILES = ("os.bin", "builtin.bin", "c_posix.bin", "dup.bin")


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory, libio_path: Path):
    if not os.access(STRACE, os.X_OK):
        pytest.fail(f"strace not found at {STRACE}")
    assert glibc_version() >= (2, 33), "the strace mapping assumes fstat() is newfstatat (glibc >= 2.33)"
    out = tmp_path_factory.mktemp("strace")
    log, result = out / "strace.log", out / "result.json"
    run_script("workload_strace.py", str(out), str(libio_path), str(result), timeout=120,
               prefix=[STRACE, "-f", "-y", "-s", "0", "-e", "trace=%file,%desc", "-o", str(log)])
    data = read_json(result)
    return out, strace_log.parse(log.read_text(errors="surrogateescape")), data


def cap_calls(data, path: str):
    ok, failed = [], []
    for op, p, module, off, req, ret, err, fd, tid in data["events"]:
        if p != path or module != "POSIX":
            continue
        kind = OP_KIND.get(op)
        assert kind is not None, f"unexpected op {op} on {path}"
        if err:
            failed.append((kind, errno.errorcode[err]))
        else:
            ok.append((kind, off if kind in DATA else None, ret))
    return ok, failed


def strace_calls(log, path: str):
    """The calls strace saw on ``path``: successful ones as (kind, kernel offset, bytes)."""
    ok, failed = [], []
    for c in log.for_path(path):
        if c.kind == "shim-fstat":
            continue
        if c.err:
            failed.append((c.kind, c.err))
        else:
            ok.append((c.kind, c.offset if c.kind in DATA else None, c.ret))
    return ok, failed


# Where Darshan's offset differs from the kernel's, worked out by hand from the workload
# (workload_strace.py; c_posix_workload in libio.c). Darshan keeps one offset per file
# record that every read/write moves to `off + n`, pread/pwrite included, so a plain read
# after a pread is attributed to the pread's end. Keyed by the kernel's (kind, offset, bytes).
DARSHAN_OFFSET = {
    "os.bin": {
        ("read", 1000, 4123): 4300,   # read(1000) @ 0, pread(300 @ 4000) ends at 4300
        ("read", 5123, 0): 8423,      # the EOF read after it: 4300 + 4123
    },
    "c_posix.bin": {
        ("read", 500, 3596): 1700,    # read(500) @ 0, pread(700 @ 1000) ends at 1700
        ("read", 4096, 0): 5296,      # the EOF read after it: 1700 + 3596
    },
}


def darshan_calls(log, out: Path, name: str):
    """strace's calls with the offsets Darshan's rule gives them: the kernel's, except the
    hand-derived DARSHAN_OFFSET entries, each of which must match exactly one call."""
    ok, failed = strace_calls(log, str(out / name))
    table = DARSHAN_OFFSET.get(name, {})
    used = [k for k in ok if k in table]
    assert sorted(used) == sorted(table), f"{name}: the hand-derived offsets no longer match the workload"
    return [(k, table[(k, o, n)], n) if (k, o, n) in table else (k, o, n) for k, o, n in ok], failed


@pytest.mark.parametrize("name", POSIX_FILES)
def test_trace_equals_syscalls(traced, name):
    """Every call on the file, in order, with its byte count and offset; failed ones with their errno."""
    out, log, data = traced
    s_ok, s_failed = darshan_calls(log, out, name)
    c_ok, c_failed = cap_calls(data, str(out / name))
    assert s_ok, f"strace saw nothing on {name}"
    assert c_ok == s_ok
    assert c_failed == s_failed


def test_offsets_are_the_kernels_except_after_pread(traced):
    """The capture's offsets equal the kernel's everywhere except at the reads after a pread
    that Darshan's rule attributes elsewhere (DARSHAN_OFFSET, derived by hand)."""
    out, log, data = traced
    differ = {}
    for name in POSIX_FILES:
        kernel = strace_calls(log, str(out / name))[0]
        captured = cap_calls(data, str(out / name))[0]
        assert len(captured) == len(kernel)
        differ[name] = {k: c[1] for k, c in zip(kernel, captured) if k != c}
    assert differ == {name: DARSHAN_OFFSET.get(name, {}) for name in POSIX_FILES}


@pytest.mark.parametrize("name", POSIX_FILES)
def test_counters_equal_syscall_totals(traced, name):
    out, log, data = traced
    path = str(out / name)
    calls = [c for c in log.for_path(path) if not c.err]
    kinds = [c.kind for c in calls]
    reads = [c for c in calls if c.kind in ("read", "pread")]
    writes = [c for c in calls if c.kind in ("write", "pwrite")]
    at = darshan_calls(log, out, name)[0]   # (kind, Darshan's offset, bytes)
    expect = {
        "POSIX_OPENS": kinds.count("open") + kinds.count("dup"),
        "POSIX_DUPS": kinds.count("dup"),
        "POSIX_READS": len(reads),
        "POSIX_WRITES": len(writes),
        "POSIX_BYTES_READ": sum(c.ret for c in reads),
        "POSIX_BYTES_WRITTEN": sum(c.ret for c in writes),
        "POSIX_SEEKS": kinds.count("seek"),
        "POSIX_STATS": kinds.count("stat"),
        "POSIX_MAX_BYTE_READ": max([o + n - 1 for k, o, n in at if k in ("read", "pread")], default=0),
        "POSIX_MAX_BYTE_WRITTEN": max([o + n - 1 for k, o, n in at if k in ("write", "pwrite")], default=0),
    }
    recs = [f for f in data["capture"]["files"] if f["path"] == path and f["module"] == "POSIX"]
    assert len(recs) == 1
    got = {k: recs[0]["counters"][k] for k in expect}
    assert got == expect
    # the shim's own probes never exceed one per open it saw
    assert sum(c.kind == "shim-fstat" for c in calls) <= kinds.count("open")


def test_workload_is_what_we_think(traced):
    """Pin the ground truth itself, so a change in Python or libc that empties it is noticed."""
    out, log, data = traced
    c = {k: len([x for x in log.for_path(str(out / "os.bin")) if x.kind == k and not x.err])
         for k in ("open", "read", "pread", "write", "pwrite", "seek", "stat", "close")}
    assert c == {"open": 2, "read": 3, "pread": 1, "write": 2, "pwrite": 1, "seek": 1, "stat": 2, "close": 2}
    r = [x for x in data["capture"]["files"] if x["path"] == str(out / "c_posix.bin")][0]["counters"]
    # c_posix_workload: 500 + 700 + 3596 + 0 + 90 read, 1000 + 3000 + 96 written
    assert (r["POSIX_BYTES_READ"], r["POSIX_BYTES_WRITTEN"]) == (4886, 4096)


def test_stdio_totals_equal_file_size(traced):
    out, log, data = traced
    path = str(out / "stdio.bin")
    size = os.path.getsize(path)
    assert size == 100000
    calls = [c for c in log.for_path(path) if not c.err]
    recs = {f["module"]: f["counters"] for f in data["capture"]["files"] if f["path"] == path}
    s = recs["STDIO"]
    # the kernel moved exactly the file's bytes each way...
    assert sum(c.ret for c in calls if c.kind == "write") == size
    assert sum(c.ret for c in calls if c.kind == "read") == size
    # ...and so did the fwrite/fread calls the capture counted
    assert s["STDIO_BYTES_WRITTEN"] == size
    assert s["STDIO_BYTES_READ"] == size
    assert s["STDIO_MAX_BYTE_WRITTEN"] == size - 1
    assert s["STDIO_MAX_BYTE_READ"] == size - 1
    assert s["STDIO_OPENS"] == sum(c.kind == "open" for c in calls) == 2
    assert s["STDIO_WRITES"] == data["stdio_writes"] == -(-100000 // 777)
    # Darshan counts an fread only when it returned items: the EOF call is not a read
    assert s["STDIO_READS"] == data["stdio_reads"] - 1 == 100
    # libc's own read/write syscalls behind fread/fwrite are invisible to a
    # PLT/GOT shim (and to Darshan): no POSIX record, so nothing is counted twice
    assert "POSIX" not in recs
    rows = [e for e in data["events"] if e[1] == path]
    assert [e[0] for e in rows].count("fwrite") == data["stdio_writes"]
    assert [e[0] for e in rows].count("fread") == data["stdio_reads"]
    assert sum(e[5] for e in rows if e[0] == "fwrite") == size
    assert sum(e[5] for e in rows if e[0] == "fread" and e[5] > 0) == size
