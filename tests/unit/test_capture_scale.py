"""The capture core at scale: nothing is looked up while idle (the system calls
of an idle open are the plain call's), a capture names only what its window
touched, and a file the bounded file table cannot take is counted, never
dropped silently (shown in the Recording, the xplane record, the report)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tb_iotrace.store import xplane as X
from tb_iotrace.cli.report_text.file_tables import render_files

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DEFAULT_MAX_FILES = 4_194_304


@pytest.fixture()
def only(shim, tmp_path):
    """The shim tracing tmp_path only (nothing else this process touches takes a slot)."""
    shim.set_filters(include=[str(tmp_path) + "/"], exclude=["/"])
    try:
        yield shim
    finally:
        shim.set_max_files(DEFAULT_MAX_FILES)


def _write_then_read(paths: list[Path]) -> None:
    for i, p in enumerate(paths):
        fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        os.write(fd, b"x" * (i + 1))
        os.close(fd)
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.read(fd, 100)
        os.close(fd)


def test_files_past_the_bound_are_counted_never_silent(only, tmp_path):
    only.set_max_files(8)
    paths = [tmp_path / f"f{i:02d}" for i in range(20)]
    with only.capture() as cap:
        _write_then_read(paths)
    # the first 8 files fit, exactly counted
    tracked = {f.path: f for f in cap.files if f.module == "POSIX"}
    assert sorted(tracked) == [str(p) for p in paths[:8]]
    for i, p in enumerate(paths[:8]):
        c = tracked[str(p)].counters
        assert (c["POSIX_OPENS"], c["POSIX_BYTES_WRITTEN"], c["POSIX_BYTES_READ"]) == (2, i + 1, i + 1)
    # the other 12: each open (2 per file), every call (open, write/read, close) and byte counted
    u = cap.untracked
    assert u.files == 24
    assert u.calls == 12 * 6
    assert u.bytes_written == sum(range(9, 21)) == u.bytes_read
    assert u.reentrant_calls == 0
    assert list(u.examples) == [str(p) for p in paths[8:16]]
    # tracked + untracked bytes = every byte the window moved
    assert sum(f.counters["POSIX_BYTES_WRITTEN"] for f in tracked.values()) + u.bytes_written == sum(range(1, 21))
    # the trace holds the tracked files' calls only
    assert set(cap.events.path[cap.events.path != ""]) == {str(p) for p in paths[:8]}
    assert cap.to_dict()["untracked"]["files"] == 24

    # carried in the xplane record and shown by the report
    space = X.XSpace()
    X.add_io_to_space(space, cap.to_iotrace(), start_ns=cap.start_ns)
    back = X.read_io_data(space)
    assert back.untracked == u.to_dict()
    text = render_files([f.to_dict() for f in cap.files], untracked=back.untracked)
    assert re.search(r"files not tracked .*24 opens, 72 calls", text), text
    assert str(paths[8]) in text


def test_bound_applies_per_recording_period(only, tmp_path):
    """The table is dropped when nothing records: the next capture starts empty."""
    only.set_max_files(4)
    first = [tmp_path / f"a{i}" for i in range(6)]
    with only.capture() as cap1:
        _write_then_read(first)
    assert len(cap1.files) == 4 and cap1.untracked.files == 4
    second = [tmp_path / f"b{i}" for i in range(3)]
    with only.capture() as cap2:
        _write_then_read(second)
    assert sorted(f.path for f in cap2.files) == [str(p) for p in second]
    assert not cap2.untracked


def test_capture_names_only_what_its_window_touched(only, tmp_path):
    many = [tmp_path / f"idle{i}" for i in range(3000)]
    for p in many:                      # idle: enabled, nothing recording
        fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o600)
        os.write(fd, b"i")
        os.close(fd)
    with only.capture() as empty:
        pass
    assert empty.files == [] and len(empty.events) == 0 and not empty.untracked
    new = [tmp_path / f"new{i}" for i in range(50)]
    with only.capture() as cap:
        _write_then_read(new)
    assert sorted(f.path for f in cap.files) == sorted(str(p) for p in new)
    assert set(cap.events.paths.values()) == {str(p) for p in new}


def test_fd_opened_idle_is_named_when_a_capture_first_touches_it(only, tmp_path):
    real = tmp_path / "real.bin"
    real.write_bytes(b"r" * 1000)
    link = tmp_path / "link.bin"
    link.symlink_to(real)
    fd_idle = os.open(link, os.O_RDONLY)     # opened while idle, through a symlink
    with only.capture() as cap:
        os.pread(fd_idle, 100, 0)
        fd_rec = os.open(link, os.O_RDONLY)  # opened while recording: the path it was opened with
        os.pread(fd_rec, 10, 0)
        os.close(fd_rec)
    os.close(fd_idle)
    by = {f.path: f.counters for f in cap.files if f.module == "POSIX"}
    # Darshan: a recorded open names the path as given; an fd the capture never saw
    # opened is named through /proc/self/fd (the resolved path)
    assert by[str(link)]["POSIX_OPENS"] == 1 and by[str(link)]["POSIX_BYTES_READ"] == 10
    assert by[str(real)]["POSIX_OPENS"] == 0 and by[str(real)]["POSIX_BYTES_READ"] == 100


def _syscalls(log: str, begin: str, end: str) -> list[str]:
    """The calls the thread that wrote the begin mark made up to the end mark; other
    threads (numpy's OpenBLAS pool wakes now and then) are not the calls compared."""
    out, tid = [], None
    for line in log.splitlines():
        m = re.match(r"^(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?(\w+)\(", line)
        if not m:
            continue
        who = m.group(1) or m.group(2)
        if f"tbio-mark/{begin}" in line:
            tid = who
            continue
        if tid is None or who != tid:
            continue
        if f"tbio-mark/{end}" in line:
            break
        # the call and its path argument, if any
        path = re.search(r'"([^"]*)"', line)
        out.append(m.group(3) + (f" {path.group(1)}" if path else ""))
    return out


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_idle_calls_make_exactly_the_plain_calls_syscalls(tmp_path):
    """strace -f: an idle open/dup/fstat/stat/close of traced paths (absolute and
    relative) makes the same system calls as with the shim disabled: no getcwd,
    no readlink, no extra fstat, no memory allocation."""
    n = 40
    for i in range(n):
        (tmp_path / f"a{i}").write_bytes(b"a")
    log = tmp_path / "strace.log"
    env = dict(os.environ, TBIO_TENSORFLOW="0")
    r = subprocess.run(["strace", "-f", "-qq", "-o", str(log), sys.executable, str(FIXTURES / "idle_syscalls.py"),
                        str(tmp_path), str(n)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    text = log.read_text(errors="replace")
    idle = _syscalls(text, "idle-begin", "idle-end")
    plain = _syscalls(text, "plain-begin", "plain-end")
    assert len(plain) >= n * 8, plain[:20]
    assert idle == plain, [x for x in idle if x not in plain][:10]


def test_signal_handler_io_never_deadlocks_the_shim(tmp_path):
    """A C SIGALRM handler doing open/write/close while Python's own opens, dups, stats
    and closes run through the shim, idle and in a capture: the old shim hung on its
    registry lock (4 of 4 runs); now it finishes, and the handler's writes are counted
    (those that interrupt the shim's own work pass through, counted as re-entrant)."""
    from capture_util import compile_so

    so = compile_so("sigalrm_io.c", tmp_path / "libsigalrm.so")
    work = tmp_path / "w"
    work.mkdir()
    try:
        r = subprocess.run([sys.executable, str(FIXTURES / "sigalrm_workload.py"), str(so), str(work)],
                           capture_output=True, text=True, timeout=60, env=dict(os.environ, TBIO_TENSORFLOW="0"))
    except subprocess.TimeoutExpired:
        pytest.fail("the process hung with a signal handler doing I/O")
    assert r.returncode == 0, r.stderr[-2000:]
    out = __import__("json").loads(r.stdout)
    assert out["fired"] > 100
    assert out["handler_writes_counted"] > 0   # the handler's I/O inside the capture is seen


def test_untracked_files_are_opens_and_a_stat_is_a_call(only, tmp_path):
    """Recording.untracked.files counts opens of files past the bound (each open,
    not each distinct file); a stat or a failed open of such a path is not one."""
    only.set_max_files(1)
    a, b = tmp_path / "a", tmp_path / "b"
    with only.capture() as cap:
        _write_then_read([a, b])        # a fits; b: 2 opens, 2 closes, a write and a read
        for _ in range(3):
            os.stat(b)
        with pytest.raises(FileNotFoundError):
            os.open(tmp_path / "missing", os.O_RDONLY)
    u = cap.untracked
    assert u.files == 2
    assert u.calls == 6 + 3 + 1
    assert list(u.examples) == [str(b), str(b)]
