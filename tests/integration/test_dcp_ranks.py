"""torch.distributed.checkpoint save and async_save over two ranks (gloo, CPU, two processes)
under ``tb-iotrace run``, and save in each rank's PyTorch trace (tb_iotrace.torch.trace_handler,
the rank read from the trace): each rank's saves listed on its own host with its rank, bytes
equal to its files' sizes, one table per save with both ranks; and ``checkpoint-straggler``
naming the rank whose writes a cgroup block throttle slows (docs/checkpoints.md)."""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cgroups import own_cgroup, remove_group

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]
PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "dcp_ranks_job.py"
MiB = 1 << 20
THROTTLE_BPS = 16 * MiB          # rank 1's disk writes (8 MiB a save: about 0.5 s each)
_serial = itertools.count()


def _run(work: Path, mode: str, cgroup: str = "") -> tuple[dict, list[dict]]:
    cmd = [PY, str(JOB), str(work), mode]      # trace: the job writes its ranks' PyTorch traces to logs
    if mode != "trace":
        cmd = [PY, "-m", "tb_iotrace", "run", "--quiet", "--logdir", str(work / "logs"), "--", *cmd]
    r = subprocess.run(cmd + ([cgroup] if cgroup else []), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    jobs = [json.loads((work / f"result.{k}.json").read_text()) for k in range(2)]
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(work / "logs"), "--json"], capture_output=True,
                         text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    return run, jobs


def _rank_hosts(run: dict, jobs: list[dict]) -> list[dict]:
    by_pid = {h["process"]["pid"]: h for h in run["hosts"]}
    return [by_pid[j["pid"]] for j in jobs]


def _check_ranks(run: dict, jobs: list[dict], source_ok: set[str]) -> None:
    hosts = _rank_hosts(run, jobs)
    for k, (h, job) in enumerate(zip(hosts, jobs)):
        assert h["process"]["rank"] == k
        saves = [p for p in h["checkpoints"] if p["kind"] == "save"]
        assert len(saves) == len(job["sizes"]) == 2, h["checkpoints"]
        for p, (ckpt, files) in zip(saves, sorted(job["sizes"].items())):
            data = sum(v for f, v in files.items() if f.endswith(".distcp"))
            # rank 0's .metadata (7 KiB, written once both ranks reported) joins its save when it
            # follows the data closely
            assert p["bytes"] in (data, sum(files.values())), (p, files)
            assert (p["path"] == ckpt or p["path"].startswith(ckpt + "/")) and p["source"] in source_ok
            assert p["start_ns"] <= p["finish_ns"] <= p["end_ns"] and p["fs_type"]
    others = [h for h in run["hosts"] if h not in hosts]
    assert all(h["checkpoints"] == [] for h in others)        # the launcher and the resource tracker
    table = run["checkpoint_saves"]
    assert len(table) == 2 and all([r["rank"] for r in s["ranks"]] == [0, 1] for s in table), table


def test_two_rank_dcp_save_listed_per_rank(tmp_path: Path) -> None:
    run, jobs = _run(tmp_path, "save")
    _check_ranks(run, jobs, {"shape"})
    assert not [f for h in run["hosts"] for f in h["findings"] if f["id"] == "checkpoint-straggler"]
    # the Darshan log export still works on the run: each rank's checkpoint files, their bytes
    darshan = pytest.importorskip("darshan")
    out = tmp_path / "run.darshan"
    r = subprocess.run([PY, "-m", "tb_iotrace", "export", str(tmp_path / "logs"), "--format", "darshan-log", "-o",
                        str(out), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = darshan.DarshanReport(str(out), read_all=True)
    names = rep.name_records
    df = rep.records["POSIX"].to_df()["counters"]
    written = {names[int(i)]: int(b) for i, b in zip(df["id"], df["POSIX_BYTES_WRITTEN"]) if names[int(i)].endswith(".distcp")}
    assert written == {os.path.join(ck, f): v for job in jobs for ck, files in job["sizes"].items()
                       for f, v in files.items() if f.endswith(".distcp")}


def test_two_rank_dcp_saves_back_to_back_listed_apart(tmp_path: Path) -> None:
    """Two saves into two folders, one right after the other (no step between): two saves per
    rank, each with its own folder's bytes."""
    run, jobs = _run(tmp_path, "pair")
    _check_ranks(run, jobs, {"shape"})
    for h in _rank_hosts(run, jobs):
        a, b = [p for p in h["checkpoints"] if p["kind"] == "save"]
        assert a["end_ns"] <= b["start_ns"] and a["path"] != b["path"], (a, b)


def test_two_rank_dcp_async_save_listed_per_rank(tmp_path: Path) -> None:
    run, jobs = _run(tmp_path, "async")
    _check_ranks(run, jobs, {"shape"})
    for h in _rank_hosts(run, jobs):      # the writes ran on DCP's writer thread, not the loop's
        assert all(p["blocking_ns"] == 0 for p in h["checkpoints"])
    assert not [f for h in run["hosts"] for f in h["findings"] if f["id"].startswith("checkpoint-")]


DCP_SAVE = {"torch.distributed.checkpoint.save"}


def test_two_rank_dcp_save_in_pytorch_traces(tmp_path: Path) -> None:
    run, jobs = _run(tmp_path, "trace")
    _check_ranks(run, jobs, DCP_SAVE)
    assert not [f for h in run["hosts"] for f in h["findings"] if f["id"] == "checkpoint-straggler"]


def _block_device(path: Path) -> str | None:
    dev = os.stat(path).st_dev
    sysdir = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sysdir.exists():
        return None
    disk = sysdir.resolve().parent if (sysdir / "partition").exists() else sysdir
    return (disk / "dev").read_text().strip()


@contextlib.contextmanager
def write_throttle(disk: str, bps: int) -> Iterator[str]:
    """A fresh cgroup v1 blkio group capping writes to ``disk`` (MAJ:MIN) at ``bps``. In v1 the
    throttle acts on the I/O a process submits itself: its fsync (DCP syncs each file) writes
    the page cache out to the disk at the cap."""
    group = Path("/sys/fs/cgroup/blkio") / f"tbio_ckpt_{os.getpid()}_{next(_serial)}"
    try:
        group.mkdir()
        (group / "blkio.throttle.write_bps_device").write_text(f"{disk} {bps}")
    except OSError as exc:
        with contextlib.suppress(OSError):
            group.rmdir()
        pytest.fail(f"cannot cap a rank's disk writes with a cgroup ({exc}): the straggler test needs root and "
                    "the cgroup v1 blkio controller to make one rank's writes honestly slow")
    try:
        yield str(group)
    finally:
        remove_group(group, group.parent / own_cgroup("blkio").lstrip("/"))


def test_throttle_group_removed_with_a_process_left_in_it(tmp_path: Path) -> None:
    """A process the job left behind in the group (a detached child) does not fail the test's
    clean-up: it is moved out and the group removed (CI once saw EBUSY at the group's rmdir)."""
    disk = _block_device(tmp_path)
    if disk is None:
        pytest.fail(f"{tmp_path} is on no block device: no disk whose writes a cgroup can throttle")
    child = subprocess.Popen([PY, "-c", "import time; time.sleep(60)"])
    try:
        with write_throttle(disk, THROTTLE_BPS) as group:
            Path(group, "cgroup.procs").write_text(str(child.pid))
            assert Path(group, "cgroup.procs").read_text().split() == [str(child.pid)]
        assert not Path(group).exists() and child.poll() is None
    finally:
        child.kill()
        child.wait()


def _throttled(tmp_path: Path, mode: str) -> tuple[dict, list[dict]]:
    disk = _block_device(tmp_path)
    if disk is None:
        pytest.fail(f"{tmp_path} is on no block device: no disk whose writes a cgroup can throttle")
    with write_throttle(disk, THROTTLE_BPS) as group:
        return _run(tmp_path, mode, group)


def test_throttled_rank_is_named_straggler_in_pytorch_traces(tmp_path: Path) -> None:
    run, jobs = _throttled(tmp_path, "trace")
    _check_ranks(run, jobs, DCP_SAVE)
    fast, slow = _rank_hosts(run, jobs)
    table = (slow["host"], [(s["straggler"], s["lag_ns"], [(r["host"], r["start_ns"] - s["start_ns"], r["finish_ns"] - s["start_ns"],
                                                         r["end_ns"] - s["start_ns"], r["blocking_ns"], r["bytes"])
                                                        for r in s["ranks"]])
                        for s in run["checkpoint_saves"]])
    print("saves", table)
    assert all(s["straggler"] == slow["host"] and s["lag_ns"] > 0.2e9 for s in run["checkpoint_saves"]), table
    assert not [f for f in fast["findings"] if f["id"] == "checkpoint-straggler"]
    (f,) = [f for f in slow["findings"] if f["id"] == "checkpoint-straggler"]
    assert f["evidence"]["rank"] == 1 and f["evidence"]["saves"] == 2 and "rank 1" in f["statement"]
    assert f["evidence"]["bandwidth_mib_s"] < 2 * THROTTLE_BPS / MiB
    print("straggler (traces)", f["statement"], f["impact"], [s["lag_ns"] / 1e9 for s in run["checkpoint_saves"]])


def test_throttled_rank_is_named_straggler(tmp_path: Path) -> None:
    run, jobs = _throttled(tmp_path, "save")
    _check_ranks(run, jobs, {"shape"})
    fast, slow = _rank_hosts(run, jobs)
    assert all(s["straggler"] == slow["host"] and s["lag_ns"] > 0.2e9 for s in run["checkpoint_saves"]), \
        run["checkpoint_saves"]
    assert not [f for f in fast["findings"] if f["id"] == "checkpoint-straggler"]
    (f,) = [f for f in slow["findings"] if f["id"] == "checkpoint-straggler"]
    ev = f["evidence"]
    assert ev["rank"] == 1 and ev["saves"] == 2
    # why: its bandwidth (the cap: 16 MiB/s against the page cache's hundreds), not its bytes
    assert ev["bandwidth_mib_s"] < 2 * THROTTLE_BPS / MiB < ev["others_bandwidth_mib_s"] / 2, ev
    assert ev["bytes"] == ev["others_bytes"] and "MiB/s" in f["statement"] and "rank 1" in f["statement"]
    # what it cost: the lag, all of it spent in rank 1's own blocking save (a sync save)
    assert ev["cost_s"] == pytest.approx(ev["lag_s"], rel=0.02)
    tr = slow["training"]
    assert f["impact"]["step_share"] == pytest.approx(ev["cost_s"] * 1e9 / tr["time_ns"], rel=1e-6)
    assert f["impact"]["basis"] == tr["basis"] and f["impact"]["step_share"] > 0.05
    # the rank's own timing of its saves covers its lag
    assert sum(jobs[1]["saves_s"]) >= ev["lag_s"]
    txt = subprocess.run([PY, "-m", "tb_iotrace", "report", str(tmp_path / "logs")], capture_output=True, text=True,
                         timeout=300).stdout
    assert "Checkpoint saves per rank" in txt and f"straggler: {slow['host']}" in txt
    print("straggler", f["statement"], f["impact"], [s["lag_ns"] / 1e9 for s in run["checkpoint_saves"]])
    _check_tab(tmp_path / "logs", fast, slow)


def _check_tab(logdir: Path, fast: dict, slow: dict) -> None:
    """The tab's /checkpoints over all hosts: both ranks' saves on one clock (the lane), a
    table per save with the straggler marked; /findings names it too."""
    import time

    from plugin_client import make_client

    _, get = make_client(logdir)
    deadline = time.monotonic() + 300
    while True:
        code, body = get("/checkpoints", run="iotrace", host="__all__")
        assert code == 200, body
        if not body["pending"] or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert body["pending"] == 0
    assert sorted({(p["host"], p["rank"]) for p in body["phases"]}) == [(fast["host"], 0), (slow["host"], 1)]
    assert len(body["saves"]) == 2 and all(s["straggler"] == slow["host"] for s in body["saves"])
    for s in body["saves"]:
        r0, r1 = s["ranks"]
        assert (r0["rank"], r1["rank"]) == (0, 1) and r1["finish"] - r0["finish"] > 0.2e9
        assert r1["bandwidth_mib_s"] < r0["bandwidth_mib_s"] / 2
    assert body["straggler"]["id"] == "checkpoint-straggler" and body["straggler"]["host"] == slow["host"]
    code, found = get("/findings", run="iotrace", host="__all__")
    assert code == 200 and any(f["id"] == "checkpoint-straggler" and f["host"] == slow["host"]
                               for f in found["findings"]), found
