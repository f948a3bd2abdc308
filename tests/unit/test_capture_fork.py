"""fork() inside an active capture: no deadlock, the parent's counters do
not include the child's I/O, the child records nothing until it starts its
own capture (which is exact), multiprocessing workers (fork and spawn) do
not hang.  Each scenario runs in its own process (fixtures/*.py) under a
timeout, so a hang fails the test instead of stalling the run."""
from __future__ import annotations

from pathlib import Path

import pytest

from capture_util import compile_so, read_json, run_script


def by_path(capdict: dict, out: Path) -> dict[tuple[str, str], dict[str, int]]:
    return {(Path(f["path"]).name, f["module"]): f["counters"] for f in capdict["files"]
            if Path(f["path"]).parent == out}


def pick(c: dict[str, int], *keys: str) -> tuple[int, ...]:
    return tuple(c[k] for k in keys)


def test_fork_child_is_separate(tmp_path):
    run_script("fork_child.py", str(tmp_path), timeout=60)
    parent, child = read_json(tmp_path / "parent.json"), read_json(tmp_path / "child.json")
    assert parent["child_status"] == 0
    p = by_path(parent["capture"], tmp_path)
    # the parent: its own two preads of parent.bin, nothing the child did
    assert set(p) == {("parent.bin", "POSIX")}
    assert pick(p[("parent.bin", "POSIX")], "POSIX_OPENS", "POSIX_READS", "POSIX_BYTES_READ") == (1, 2, 200)
    c = by_path(child["capture"], tmp_path)
    # the child: only what it did inside its own capture; the read through the
    # inherited descriptor is attributed to parent.bin; nothing before the capture
    assert set(c) == {("parent.bin", "POSIX"), ("child_own.bin", "POSIX")}
    assert pick(c[("child_own.bin", "POSIX")], "POSIX_OPENS", "POSIX_WRITES", "POSIX_BYTES_WRITTEN") == (1, 1, 77)
    assert pick(c[("parent.bin", "POSIX")], "POSIX_OPENS", "POSIX_READS", "POSIX_BYTES_READ") == (0, 1, 10)
    assert child["capture"]["start_ns"] > child["fork_ns"]


@pytest.fixture(scope="module")
def libio_mt(tmp_path_factory) -> Path:
    return compile_so("libio.c", tmp_path_factory.mktemp("libio_mt") / "libio.so")


@pytest.mark.slow
def test_fork_while_threads_are_inside_the_shim(tmp_path, libio_mt):
    """25 forks while threads pread (native and Python), hold the Python
    lock (enable()) and the shim's own locks (native disable/enable
    re-patching everything).  Every child captures exactly, dlopens,
    disables and re-enables, and exits; none hangs."""
    run_script("fork_stress.py", str(tmp_path), str(libio_mt), "25", timeout=200)
    r = read_json(tmp_path / "stress.json")
    assert r["statuses"] == [0] * 25, "\n".join(r["hangs"])
    # the other threads really were busy while the forks happened
    assert min(r["busy"].values()) > 0


def test_multiprocessing_fork_and_spawn(tmp_path):
    run_script("mp_workload.py", str(tmp_path), timeout=180)
    r = read_json(tmp_path / "mp.json")
    sizes = [1000 * (i + 1) for i in range(6)]
    own = {"POSIX_OPENS": 1, "POSIX_WRITES": 3, "POSIX_READS": 1, "POSIX_BYTES_WRITTEN": 300, "POSIX_BYTES_READ": 50}
    for method in ("fork", "spawn"):
        assert r["results"][method] == sizes
        assert r["results"][method + "_own"] == own      # a worker's own capture is exact
    # the parent's capture holds its own file only: no worker I/O leaked into it
    p = by_path(r["capture"], tmp_path)
    assert set(p) == {("parent.bin", "POSIX")}
    assert pick(p[("parent.bin", "POSIX")], "POSIX_OPENS", "POSIX_WRITES", "POSIX_BYTES_WRITTEN") == (1, 3, 30)


def test_fork_while_another_thread_holds_a_python_lock(tmp_path):
    """A fork while another thread is inside TensorFlow's or JAX's attach()
    or a profiler window's start/stop: the child's enable(), profile windows
    and captures must not wait for a lock whose owner does not exist there."""
    run_script("fork_locks.py", str(tmp_path), timeout=120)
    r = read_json(tmp_path / "locks.json")
    assert r == {name: 0 for name in r} and len(r) == 4, r


SESSION_MEMORY = r'''
import json, os, sys
import tb_iotrace
from tb_iotrace.recording.ffi import native

def ranges(smaps: bool) -> list:
    out, cur = [], None
    with open("/proc/self/smaps" if smaps else "/proc/self/maps") as fh:
        for line in fh:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                a, b = (int(x, 16) for x in head.split("-"))
                cur = [a, b, False]
                out.append(cur)
            elif line.startswith("Rss:"):
                cur.append(int(line.split()[1]))
            elif line.startswith("VmFlags:") and " wf" in line:
                cur[2] = True
    return out

data = sys.argv[1]
with open(data, "wb") as fh:
    fh.write(b"x" * 4096)
tb_iotrace.enable()
with tb_iotrace.capture():
    fd = os.open(data, os.O_RDONLY)
    for i in range(30000):
        os.pread(fd, 16, i % 4000)
    os.close(fd)
    trace = int(native()[1].tbio_trace_bytes())
    unshared = [(a, b) for a, b, wf, *_ in ranges(True) if wf]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, json.dumps([[a, b, wf, rss] for a, b, wf, rss in ranges(True)]).encode())
        os._exit(0)
    os.close(w)
    buf = b""
    while chunk := os.read(r, 1 << 16):
        buf += chunk
    os.waitpid(pid, 0)
child = json.loads(buf)
print(json.dumps({"trace": trace, "unshared": unshared, "child": child}))
'''


def test_a_forked_child_gets_none_of_the_sessions_memory(tmp_path):
    """A session's records, trace chunks and thread structs come to a forked child zero-filled
    (MADV_WIPEONFORK): the child drops the parent's sessions at fork, and copying their page
    tables made every fork of a traced DataLoader parent slower (+1.4 ms of its CPU per fork)
    and its next writes to them copy-on-write faults."""
    import json
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", SESSION_MEMORY, str(tmp_path / "d.bin")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["trace"] > 1_000_000                       # 30,000 calls traced
    assert sum(b - a for a, b in got["unshared"]) >= got["trace"]
    # in the child: the same ranges, zero-filled there, nothing of the parent's resident
    child = {(a, b): (wf, rss) for a, b, wf, rss in got["child"]}
    assert all(child.get((a, b)) == (True, 0) for a, b in got["unshared"])
