"""Findings on real TensorFlow captures: for every finding a pipeline that triggers it
and a clean twin that does not, each run in its own tf.profiler window.

Two subprocesses (one TF start-up each, run in parallel under -n 2) run several pipelines each;
each test checks every pipeline of its group and reports all mismatches at once. The ``serial``
pipeline reads cold shards from a disk whose reads a cgroup block throttle caps while it runs.
slow-filesystem has its own test and subprocess: one capture reads shards from a disk directory
whose reads a cgroup block throttle caps (and evicted from the page cache) and from tmpfs
(/dev/shm). Both need root and the cgroup blkio (v1) or io (v2) controller, and fail, saying
so, where they cannot make the disk slow.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from cgroups import own_cgroup, remove_group

from tb_iotrace.analysis import Analysis, MountTable, analyze, read_mountinfo
from tb_iotrace.analysis.attribution import op_kind
from tb_iotrace.store.xplane import load_xspace, read_io_data

pytestmark = pytest.mark.tf
SCRIPTS = Path(__file__).parent / "scripts"
MiB = 1 << 20


def run_pipelines(work: Path, names: list[str], **env_more: str) -> dict[str, Any]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", **env_more)
    proc = subprocess.run([sys.executable, str(SCRIPTS / "findings_pipelines.py"), str(work), *names],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((work / "result.json").read_text())


def ev(a: Analysis, fid: str) -> dict[str, Any]:
    f = a.finding(fid)
    assert f is not None, f"{fid} missing: {a.ids}"
    assert f["statement"] and f["suggestion"] and f["severity"] in ("info", "warning", "critical")
    return f["evidence"]


# ----------------------------------------------------------------------------- expectations
# name -> (ids that must be present, ids that must be absent (None: every id), check(analysis, data))


def _clean(a, d):
    assert a.summary["bytes_read"] == 3 * d["big_size"]
    stages = {s["stage"]: s for s in a.stages}
    tfr = [s for s in stages.values() if s["stage"].endswith("TFRecord")]
    assert len(tfr) == 1 and tfr[0]["bytes_read"] == 3 * d["big_size"] and tfr[0]["num_files"] == 3, stages
    assert "ParallelInterleave" in tfr[0]["stage"]
    assert len(a.steps) >= 20 and a.summary["input_wait_ps"] < 0.3 * a.summary["step_time_ps"]
    assert a.verdict["bound"] in ("not input", "partly input"), a.verdict


def _input_bound(a, d):
    e = ev(a, "input-bound")
    assert e["input_wait_share"] >= 0.6 and e["steps"] == 12
    # the wait is the Python decode, not the file: almost none of it is covered by reads
    assert e["io_share_of_wait"] < 0.2
    assert e["other_wait_s"] > 0.8 * e["input_wait_s"]
    assert "mostly decode" in a.finding("input-bound")["statement"]
    # the verdict: the wait is tf.data decoding (its threads run the py_function)
    v = a.verdict
    assert v["bound"] == "input" and v["unmeasured"] == [] and v["cause"] == "decode", v
    # the decode is a py_function: a parallel map would run it one call at a time (the GIL).
    # The wait is the pipeline's CPU: its decode (>= 80% idle), and under load also gaps between
    # its events while its thread waited for a core (starved; decode 59% of the wait in a run of
    # the suite beside stress --cpu 2, file I/O 0%: still the largest part, so the cause)
    b = v["wait_breakdown"]
    assert b["decode"] + b["starved"] >= 0.8 and b["decode"] == max(b.values()), v
    assert v["change"].startswith("the map's function is a tf.py_function"), v


def _input_bound_no_steps(a, d):
    e = ev(a, "input-bound")
    assert a.steps == [] and e["steps"] == 0 and e["basis"].startswith("input waits")
    assert e["waits_counted"] >= 12 and e["input_wait_share"] >= 0.6 and e["io_share_of_wait"] < 0.2
    assert any("no step markers" in n for n in a.notes)


def _serial(a, d):
    e = ev(a, "serial-reads")
    assert e["reading_threads"] == 1 and e["reads"] == 4 * 2 * MiB // (64 << 10) and e["files"] == 4
    assert e["max_reads_in_flight"] == 1 and e["overlapped_share"] == 0.0
    # cold reads (evicted from the page cache) from a disk capped at THROTTLE_BPS, on the step's
    # critical path: most of the wait by construction. Uncapped, this VM's host-cached disk made
    # them 60% of it idle and 19% in a suite run beside stress --cpu 2 (under the rule's 20%)
    assert e["input_wait_share"] >= 0.5 and e["io_share_of_wait"] >= 0.5
    ib = ev(a, "input-bound")
    assert ib["io_share_of_wait"] == e["io_share_of_wait"]
    assert "file I/O," in a.finding("input-bound")["statement"] or "mostly file I/O" in a.finding("input-bound")["statement"]
    # the verdict: input-bound, its file_io share the finding's. Which part of the wait
    # is largest is not asserted here: the host caches this VM's disk, so "cold" reads are not
    # slow by construction (file_io 60% of the wait on an idle machine, 37% under a loaded CI run,
    # where the descheduled pipeline shows as starved); serial_fifo's pipe is, and asserts it
    v = a.verdict
    assert v["bound"] == "input", v
    assert v["wait_breakdown"]["file_io"] == pytest.approx(e["io_share_of_wait"], abs=1e-9)


def _serial_fifo(a, d, hop=False):
    """The issue's case: a from_generator pipeline reading a slow named pipe, no prefetch. The
    reads never overlap; on one thread or several (tf.data's pool picks; with hop, two in turn)."""
    e = ev(a, "serial-reads")
    assert e["files"] == 1 and e["max_reads_in_flight"] == 1 and e["overlapped_share"] == 0.0
    assert e["input_wait_share"] >= 0.3 and e["io_share_of_wait"] >= 0.3
    fifo = [f for f in a.files if f["path"] == d["fifo"]]
    assert len(fifo) == 1 and fifo[0]["bytes_read"] == d["fifo_bytes"], fifo
    assert e["reads"] >= d["fifo_bytes"] // (64 << 10) + 1          # + the EOF read
    if hop:
        assert e["reading_threads"] == 2 and e["top_thread_read_share"] <= 0.6, e
    assert "one at a time" in a.finding("serial-reads")["statement"]
    # the verdict: read-bound (the writer feeds a chunk per 60 ms: reads block on it for most
    # of each wait), its file_io share the finding's, the advice reads in parallel
    v = a.verdict
    assert v["bound"] == "input" and v["cause"] == "file_io", v
    assert v["wait_breakdown"]["file_io"] == pytest.approx(e["io_share_of_wait"], abs=1e-9)
    assert v["change"].startswith("read in parallel: interleave"), v


def _parallel(a, d):
    assert a.summary["bytes_read"] == 4 * 2 * MiB
    tf_stage = [s for s in a.stages if s["kind"] == "tf.data"]
    assert len(tf_stage) == 1 and "ParallelInterleave" in tf_stage[0]["stage"] and tf_stage[0]["num_files"] == 4
    assert a.summary["input_wait_ps"] < 0.1 * a.summary["step_time_ps"]


def _small_reads(a, d):
    e = ev(a, "small-reads")
    n = -(-d["big_size"] // 4096)           # the file in 4 KiB reads
    assert e["small_reads"] == n and e["reads"] == n and e["median_small_read_bytes"] == 4096
    assert e["small_read_share"] == 1.0 and e["small_read_time_share"] == 1.0


def _small_files(a, d):
    e = ev(a, "many-small-files")
    assert e["files"] == 120 and e["opens"] == 120 and e["median_bytes_per_file"] == d["small_size"]
    assert e["meta_time_share"] >= 0.3
    z = ev(a, "eof-zero-reads")
    assert z["zero_length_reads"] == 120 and z["files_read"] == 120 and z["read_calls"] == 240
    assert z["zero_reads_per_file"] == 1.0 and z["zero_read_share"] == 0.5
    s = ev(a, "small-reads")
    assert s["small_reads"] == 120 and s["median_small_read_bytes"] == d["small_size"]


def _metadata(a, d):
    e = ev(a, "metadata-heavy")
    stats = sum(v for k, v in e["by_call"].items() if "stat" in k)
    assert stats == 60 * 8 * 2, e["by_call"]       # os.stat + os.path.exists, 8 times per sample
    assert e["meta_time_share"] >= 0.9
    f = a.finding("metadata-heavy")
    assert any("EagerPyFunc" in o for o in f["ops"]), f["ops"]


def _darshan_random(offsets: list[int], n: int) -> int:
    last, seq = 0, 0
    for o in offsets:
        seq += o > last
        last = o + n - 1
    return len(offsets) - seq - 1              # minus the read after the one open


def _random(a, d):
    e = ev(a, "random-access")
    want = _darshan_random(d["random_offsets"], d["chunk"])
    assert e["reads"] == 64 and e["random_reads"] == want and e["random_share"] == want / 64
    assert a.finding("random-access")["files"] == [d["blob"]]


def _redundant(a, d):
    e = ev(a, "redundant-reads")
    size = d["big_size"]
    assert e["files"] == 1 and e["bytes_read"] == 3 * size and e["bytes_touched"] == size
    assert e["ratio"] == 3.0 and e["redundant_bytes"] == 2 * size
    assert a.finding("redundant-reads")["files"] == [d["big"][0]]


def _cached(a, d):
    assert a.summary["bytes_read"] == d["big_size"]      # read once, then served by cache()


def _staging(a, d):
    e = ev(a, "staging-candidates")
    assert e["small_files"] == 60 and e["large_files"] == 2 and e["small_opens"] == 60 and e["opens"] == 62
    assert e["small_bytes"] == 60 * d["small_size"] and e["bytes_read"] == 2 * d["big_size"] + 60 * d["small_size"]
    assert e["byte_share"] < 0.1 and e["open_share"] > 0.9


def _blocking(a, d):
    e = ev(a, "blocking-writes")
    n = e["steps"]
    assert e["writes"] == e["syncs"] == e["steps_with_writes"] and e["writes"] >= n - 1
    assert e["bytes_written"] == e["writes"] * 2 * MiB
    assert e["step_time_share"] >= 0.05
    assert a.finding("blocking-writes")["ops"] == ["train"]
    # the same writes seen as checkpoints: ckpt.bin rewritten from offset 0 and synced each step is
    # a save each time (docs/checkpoints.md), on the training thread, so checkpoint-blocking is
    # right too; its blocked time holds the writes and syncs and the open (truncating the file)
    # and close around them, within the steps (17% and 25% of the step time in one run)
    c = ev(a, "checkpoint-blocking")
    saves = [p for p in a.checkpoints if p["kind"] == "save"]
    assert c["saves"] == len(saves) == e["writes"] and c["bytes"] == e["bytes_written"], saves
    assert all(p["bytes"] == 2 * MiB and p["calls"] == 1 and p["path"].endswith("ckpt.bin") for p in saves)
    assert e["write_time_s"] <= c["blocking_s"] <= c["training_time_s"], (e, c)


def _async(a, d):
    writes = [f for f in a.files if f["path"].endswith("ckpt_async.bin")]
    assert writes and writes[0]["bytes_written"] >= 2 * MiB       # the writes happened, off the step
    # a save per rewrite (every ~50 ms) on the saver thread: the loop is not blocked, a save counts
    # only the gaps between steps it overlaps (tens of us in one run), so no finding at all
    saves = [p for p in a.checkpoints if p["kind"] == "save"]
    assert len(saves) >= 2 and all(p["bytes"] == 2 * MiB and p["calls"] == 1 for p in saves), saves
    span_ns = (a.steps[-1]["end_ps"] - a.steps[0]["start_ps"]) / 1000
    assert sum(p["blocking_ns"] for p in saves) < 0.01 * span_ns, saves
    # under load the clean pipeline may make the step wait (29% in a stress run): its own decode,
    # never the saver's writes
    if a.finding("input-bound") is not None:
        assert ev(a, "input-bound")["io_share_of_wait"] < 0.2 and a.verdict["cause"] != "file_io", a.verdict


def _small_writes(a, d):
    e = ev(a, "small-writes")
    assert e["small_writes"] == 400 and e["writes"] == 400 and e["small_write_share"] == 1.0
    assert e["median_bytes"] < 40


def _big_writes(a, d):
    (log,) = [f for f in a.files if f["path"].endswith("metrics_big.log")]
    assert log["writes"] < 100 and log["bytes_written"] > 400_000


def _keras_input_bound(a, d):
    e = ev(a, "input-bound")
    assert [s["name"] for s in a.steps] == ["Profiled batch"] * 6 and e["steps"] == 6
    assert e["input_wait_share"] >= 0.4 and e["io_share_of_wait"] < 0.2


def _keras_clean(a, d):
    assert [s["name"] for s in a.steps] == ["Profiled batch"] * 6
    assert any(s["kind"] == "tf.data" and "ParallelInterleave" in s["stage"] for s in a.stages)


ALL = None
# every id but input-bound: a case about something else whose pipeline, starved of CPU under load,
# may make the step wait (true, and said as decode, not file I/O: the check asserts that)
ALL_BUT_INPUT = "all but input-bound"
CASES: dict[str, tuple[set[str], set[str] | str | None, Callable[[Analysis, dict], None]]] = {
    "clean": (set(), ALL, _clean),
    "input_bound": ({"input-bound"}, {"serial-reads", "small-reads", "redundant-reads"}, _input_bound),
    "input_bound_no_steps": ({"input-bound"}, {"serial-reads"}, _input_bound_no_steps),
    "serial": ({"serial-reads", "input-bound"}, {"small-reads", "eof-zero-reads", "many-small-files"}, _serial),
    "parallel": (set(), ALL, _parallel),
    "serial_fifo": ({"serial-reads", "input-bound"}, {"many-small-files", "random-access", "redundant-reads"},
                    _serial_fifo),
    "serial_fifo_hop": ({"serial-reads", "input-bound"}, {"many-small-files", "random-access", "redundant-reads"},
                        lambda a, d: _serial_fifo(a, d, hop=True)),
    "small_reads": ({"small-reads"}, {"input-bound", "many-small-files", "eof-zero-reads"}, _small_reads),
    "small_files": ({"many-small-files", "eof-zero-reads", "small-reads"}, {"staging-candidates"}, _small_files),
    "metadata": ({"metadata-heavy"}, {"many-small-files", "small-reads"}, _metadata),
    "random": ({"random-access"}, {"redundant-reads", "small-reads"}, _random),
    "sequential": (set(), ALL, lambda a, d: None),
    "redundant": ({"redundant-reads"}, {"random-access"}, _redundant),
    # cache(): the file read once, nothing read again; under load its map still makes the step
    # wait (input-bound with no file I/O in the wait: a stress run of 8f94258), which is true
    "cached": (set(), {"redundant-reads", "random-access", "small-reads", "serial-reads"}, _cached),
    "staging": ({"staging-candidates"}, {"redundant-reads"}, _staging),
    "blocking_writes": ({"blocking-writes", "checkpoint-blocking"}, {"small-writes", "checkpoint-small-writes"},
                        _blocking),
    "async_writes": (set(), ALL_BUT_INPUT, _async),
    "small_writes": ({"small-writes"}, {"blocking-writes"}, _small_writes),
    "big_writes": (set(), ALL, _big_writes),
    # Keras fit with profile_batch=(5, 10): Keras's own profile window and step markers
    "keras_input_bound": ({"input-bound"}, {"serial-reads", "small-reads"}, _keras_input_bound),
    "keras_clean": (set(), ALL, _keras_clean),
}
GROUPS = {
    "reads": ["clean", "input_bound", "serial", "parallel", "small_reads", "small_files", "metadata",
              "keras_input_bound", "keras_clean"],
    "files_writes": ["input_bound_no_steps", "random", "sequential", "redundant", "cached", "staging", "blocking_writes",
                     "async_writes", "small_writes", "big_writes", "serial_fifo", "serial_fifo_hop"],
}


@pytest.mark.parametrize("group", list(GROUPS))
def test_findings_on_real_pipelines(tmp_path: Path, group: str) -> None:
    with contextlib.ExitStack() as stack:
        more: dict[str, str] = {}
        if "serial" in GROUPS[group]:       # its shards on a disk whose reads a cgroup caps
            cold, disk = stack.enter_context(disk_directory(tmp_path))
            throttle, home = stack.enter_context(read_throttle(disk, THROTTLE_BPS))
            more = {"TBIO_TEST_COLD_DIR": str(cold), "TBIO_TEST_CGROUP": throttle, "TBIO_TEST_CGROUP_HOME": home}
        res = run_pipelines(tmp_path, GROUPS[group], **more)
    data = res["data"]
    errors: list[str] = []
    for name in GROUPS[group]:
        must, absent, check = CASES[name]
        a = analyze(res["runs"][name]["xplane"])
        try:
            assert a is not None
            json.dumps(a.to_dict())                      # JSON-ready
            # the file read column-wise gives what the parsed protobuf space gives
            assert a.to_dict() == analyze(load_xspace(res["runs"][name]["xplane"])).to_dict()
            ids = set(a.ids)
            assert must <= ids, f"missing {must - ids}"
            banned = (ids - must) if absent is None else (ids - must - {"input-bound"}) if absent == ALL_BUT_INPUT \
                else (ids & absent)
            assert not banned, f"unexpected {banned}"
            check(a, data)
        except AssertionError as exc:
            stmts = "\n    ".join(f"{f['id']}: {f['statement']}" for f in a.findings) if a else ""
            errors.append(f"{name}: {exc}\n    {stmts}")
    assert not errors, "\n".join(errors)


# ----------------------------------------------------------------------------- slow-filesystem
# A cold disk is not slow on this VM: the host caches the virtual disk, so reads that miss the
# guest's page cache still run at 0.3-1.4 GiB/s, above the rule's 500 MiB/s floor. A real slow
# disk is a bandwidth-capped one (a cloud persistent disk at 100-250 MiB/s): the kernel's own
# block throttle (cgroup v1 blkio.throttle.read_bps_device, v2 io.max rbps) caps the disk's reads
# for the pipeline process, and posix_fadvise(DONTNEED) makes its reads go to the disk. tmpfs
# (/dev/shm) is untouched by it: page-cache reads never reach a block device.
THROTTLE_BPS = 16 * MiB
_cgroup_serial = itertools.count()


def _block_device(path: Path) -> Path | None:
    """/sys/dev/block entry of the disk holding ``path`` (a partition's parent disk: throttles
    are per disk), or None on tmpfs, overlayfs, btrfs subvolumes... (no block device of their own)."""
    dev = os.stat(path).st_dev
    sysdir = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sysdir.exists():
        return None
    return sysdir.resolve().parent if (sysdir / "partition").exists() else sysdir


@contextlib.contextmanager
def disk_directory(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A fresh directory on a block device (pytest's tmp, else the checkout, home, /var/tmp: CI
    machines often have /tmp on tmpfs) and that disk's MAJ:MIN."""
    for base in (tmp_path, Path(__file__).resolve().parent, Path.home(), Path("/var/tmp")):
        dev = _block_device(base) if base.is_dir() else None
        if dev is not None:
            break
    else:
        pytest.fail("no directory on a block device (pytest's tmp, the checkout, home and /var/tmp are "
                    "tmpfs/overlay): slow-filesystem needs a disk whose reads a block throttle can cap")
    path = Path(tempfile.mkdtemp(prefix="tbio_slowfs_", dir=base))
    try:
        yield path, (dev / "dev").read_text().strip()
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def read_throttle(disk: str, bps: int) -> Iterator[tuple[str, str]]:
    """A fresh cgroup capping reads from the disk ``disk`` (MAJ:MIN) at ``bps``: (its dir, our own cgroup dir)."""
    name = f"tbio_slowfs_{os.getpid()}_{next(_cgroup_serial)}"
    v1 = Path("/sys/fs/cgroup/blkio")
    v2 = Path("/sys/fs/cgroup")
    try:
        if (v1 / "blkio.throttle.read_bps_device").exists():
            group, home = v1 / name, v1 / own_cgroup("blkio").lstrip("/")
            group.mkdir()
            (group / "blkio.throttle.read_bps_device").write_text(f"{disk} {bps}")
        elif "io" in (v2 / "cgroup.controllers").read_text().split():
            group, home = v2 / name, v2 / own_cgroup(None).lstrip("/")
            (v2 / "cgroup.subtree_control").write_text("+io")
            group.mkdir()
            (group / "io.max").write_text(f"{disk} rbps={bps}")
        else:
            raise OSError("no blkio (v1) or io (v2) cgroup controller")
    except OSError as exc:
        with contextlib.suppress(OSError, UnboundLocalError):
            group.rmdir()          # created before the write that failed
        pytest.fail(f"cannot cap the disk's read bandwidth with a cgroup ({exc}): slow-filesystem needs "
                    "root and the cgroup blkio/io controller to make a disk honestly slow (see docs/findings.md)")
    try:
        yield str(group), str(home)
    finally:
        remove_group(group, home)


def _trace_bandwidth(xplane: str, paths: set[str], min_bytes: int) -> tuple[int, int, float]:
    """(reads, bytes, bytes per second inside the calls) of reads >= min_bytes of ``paths``, from the raw trace."""
    tr = read_io_data(load_xspace(xplane))
    rows = [i for i in range(len(tr)) if str(tr.path[i]) in paths and op_kind(str(tr.op[i])) == "read"
            and tr.errno[i] == 0 and tr.returned[i] >= min_bytes]
    moved = int(tr.returned[rows].sum())
    spent = float((tr.end_ns[rows] - tr.start_ns[rows]).sum()) / 1e9
    return len(rows), moved, moved / spent


def test_throttle_group_removed_with_a_process_left_in_it(tmp_path: Path) -> None:
    """A process the job left in the throttled group (the detached child that keeps a capture's
    summary) is moved back to the test's own group and the group removed (a stress run saw EBUSY
    at the group's removal)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with disk_directory(tmp_path) as (_, disk), read_throttle(disk, THROTTLE_BPS) as (group, home):
            Path(group, "cgroup.procs").write_text(str(child.pid))
            assert Path(group, "cgroup.procs").read_text().split() == [str(child.pid)]
        assert not Path(group).exists() and child.poll() is None
        assert str(child.pid) in Path(home, "cgroup.procs").read_text().split()
    finally:
        child.kill()
        child.wait()


def test_slow_filesystem_on_real_pipeline(tmp_path: Path) -> None:
    """One capture reading TFRecord shards from a throttled, cold disk and from tmpfs: the disk's
    mount is named slow, with bandwidths that match the trace; the warm twin (same files, same
    mounts, disk shards in the page cache) has no slow-filesystem."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    with disk_directory(tmp_path) as (disk_dir, disk), \
            tempfile.TemporaryDirectory(prefix="tbio_slowfs_", dir="/dev/shm") as shm:
        shm_dir = Path(shm)
        with read_throttle(disk, THROTTLE_BPS) as (group, home):
            env.update(TBIO_TEST_CGROUP=group, TBIO_TEST_CGROUP_HOME=home)
            proc = subprocess.run([sys.executable, str(SCRIPTS / "slowfs_pipelines.py"), str(disk_dir), str(shm_dir),
                                   str(tmp_path), "cold", "warm"], capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr[-4000:]
        res = json.loads((tmp_path / "result.json").read_text())
        mounts = MountTable(read_mountinfo())
        disk_fs, shm_fs = mounts.lookup(str(disk_dir)), mounts.lookup(str(shm_dir))
    probe, data = res["probe"], res["data"]
    mib = {k: round(v / MiB) for k, v in probe.items()}
    # first: is the disk, cold and capped, really much slower than tmpfs here? (no vacuous pass)
    assert probe["disk_cold"] < 4 * THROTTLE_BPS and probe["shm"] > 8 * probe["disk_cold"], \
        f"the capped cold disk is not slower than tmpfs on this machine (MiB/s: {mib}): the throttle did not act"
    assert probe["disk_warm"] > 4 * probe["disk_cold"], f"page-cache eviction had no effect (MiB/s: {mib})"

    assert disk_fs.mount_point != shm_fs.mount_point and shm_fs.fs_type == "tmpfs", (disk_fs, shm_fs)
    full = data["size"] // data["buffer"]            # full 256 KiB reads per shard
    large = 4 * full

    a = analyze(res["runs"]["cold"]["xplane"])
    assert a is not None and "slow-filesystem" in a.ids, f"slow-filesystem missing: {a and a.ids} (MiB/s: {mib})"
    assert not set(a.ids) & {"small-reads", "random-access", "redundant-reads", "many-small-files"}, a.ids
    f = a.finding("slow-filesystem")
    e = f["evidence"]
    assert (e["mount_point"], e["fs_type"], e["source"]) == (disk_fs.mount_point, disk_fs.fs_type, disk_fs.source)
    assert (e["fast_mount_point"], e["fast_fs_type"]) == (shm_fs.mount_point, "tmpfs")
    assert sorted(f["files"]) == sorted(data["disk"])
    assert f["statement"].startswith(f"{disk_fs.mount_point} ({disk_fs.fs_type}): reads ")
    fs = {g["mount_point"]: g for g in a.filesystems}
    for mp, paths in ((disk_fs.mount_point, data["disk"]), (shm_fs.mount_point, data["shm"])):
        g = fs[mp]
        assert g["bytes_read"] == 4 * data["size"] and g["num_files"] == 4, g
        assert g["large_reads"] == large and g["large_bytes"] == large * data["buffer"], g
        # the evidence's bandwidths are the trace's: bytes of reads >= 64 KiB / time inside those calls
        n, moved, bw = _trace_bandwidth(res["runs"]["cold"]["xplane"], set(paths), a.thresholds["small_read_bytes"])
        assert (n, moved) == (g["large_reads"], g["large_bytes"])
        assert g["large_read_bandwidth"] == pytest.approx(bw, rel=1e-6)
    slow, fast = fs[disk_fs.mount_point]["large_read_bandwidth"], fs[shm_fs.mount_point]["large_read_bandwidth"]
    assert e["slow_read_bandwidth"] == slow and e["fast_read_bandwidth"] == fast
    assert e["bandwidth_ratio"] == pytest.approx(fast / slow) and e["bandwidth_ratio"] >= 4
    # the disk's reads ran near the cap (the throttle lets its first 0.1 s of bandwidth through at
    # once, and readahead overlaps some reads with the compute)
    assert slow < 8 * THROTTLE_BPS, (slow / MiB, mib)
    assert e["filesystems"] == 2

    w = analyze(res["runs"]["warm"]["xplane"])
    assert w is not None and "slow-filesystem" not in w.ids, w.finding("slow-filesystem")
    wfs = {g["mount_point"]: g for g in w.filesystems}
    assert set(wfs) == {disk_fs.mount_point, shm_fs.mount_point}
    for g in wfs.values():        # the same reads, both from memory
        assert g["bytes_read"] == 4 * data["size"] and g["large_reads"] == large, g
    assert min(g["large_read_bandwidth"] for g in wfs.values()) > 500 * MiB, wfs
