"""``tb-iotrace attach PID`` on jobs started plainly (no tb_iotrace in their code or environment
beyond the package being importable): a PyTorch job with two DataLoader workers reading files
(attached twice in a row, the window with its steps, waits and the workers' reads, its verdict,
the job's result unchanged and nothing of ours left in it), the same job while its workers restart
every few steps, a plain Python job holding 10,000 open files, and every refusal as one line."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tb_iotrace.store.kineto import CATEGORY, io_record, read_trace

SCRIPTS = Path(__file__).parent / "scripts"
pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/gdb") and sys.version_info < (3, 14),
                                reason="attach needs gdb before Python 3.14")


def env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(SCRIPTS), os.environ.get("PYTHONPATH", "")]))


def start(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(SCRIPTS / script), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env())


def attach(pid: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tb_iotrace", "attach", str(pid), *args], capture_output=True,
                          text=True, timeout=240, env=env())


def kids(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
        except (OSError, IndexError, ValueError):
            pass
    return out


def wait_for(cond, timeout: float = 120.0) -> None:
    until = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < until, "timed out"
        time.sleep(0.1)


def ours_left(pid: int) -> list[str]:
    """Threads and open files of ours in ``pid``."""
    left = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            name = Path(f"/proc/{pid}/task/{t}/comm").read_text().strip()
        except OSError:
            continue
        if "tb_iotrace" in name:
            left.append(f"thread {name}")
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if "tb_iotrace" in target or "/log/" in target:
            left.append(f"fd {fd} -> {target}")
    return left


@pytest.mark.torch
def test_attach_torch_job_twice(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "plain").mkdir()
    (tmp_path / "att").mkdir()
    # epochs until told (a fixed count could end before the second attach on an idle machine);
    # the run nobody attached to is then given the same count
    job = start("torch_zero_touch.py", str(tmp_path / "att"), "files", "0")
    wait_for(lambda: len(kids(job.pid)) >= 2)         # training: its two workers run
    log = tmp_path / "log"
    first = attach(job.pid, "--for", "3", "--logdir", str(log))
    assert first.returncode == 0, first.stderr
    assert "Verdict: " in first.stdout and "window taken by tb-iotrace attach" in first.stdout, first.stdout
    assert "attached to" in first.stderr and "detached from" in first.stderr
    second = attach(job.pid, "--for", "2", "--logdir", str(log))
    assert second.returncode == 0, second.stderr
    assert job.poll() is None, "the job ended before the checks after detaching"
    assert ours_left(job.pid) == []
    (tmp_path / "att" / "stop").write_text("")
    out, err = job.communicate(timeout=600)
    assert job.returncode == 0, err[-3000:]
    result = json.loads((tmp_path / "att" / "result.json").read_text())
    epochs, rest = divmod(result["steps"], 256 // 8)
    assert epochs >= 1 and rest == 0, result["steps"]
    plain = start("torch_zero_touch.py", str(tmp_path / "plain"), "files", str(epochs))
    pout, perr = plain.communicate(timeout=600)
    assert plain.returncode == 0, perr[-3000:]
    # the same result as the run nobody attached to
    assert re.search(r"checksum \S+", out).group(0) == re.search(r"checksum \S+", pout).group(0)
    # nothing of ours left running or wrapped in the job
    assert result["leftovers"] == {"threads": [], "wrapped": [], "optimizer_hooks": 0, "shim_enabled": False}
    data = set(result["files"])
    traces = sorted(log.glob("pytorch/attach_*/*.pt.trace.json"))
    assert len(traces) == 2, traces
    for path in traces:
        trace = read_trace(str(path))
        rec = io_record(trace)
        assert rec["window_origin"]["by"] == "tb-iotrace attach" and rec["steps_from"] == "dataloader"
        roles = {p["pid"]: p["role"] for p in rec["processes"]}
        assert roles[job.pid] == "main" and "worker" in roles.values(), roles
        steps = [e for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
        waits = [e for e in trace["traceEvents"] if "DataLoader" in str(e.get("name", "")) and "__next__" in str(e.get("name"))]
        assert len(steps) >= 3 and waits
        reads = [e for e in trace["traceEvents"] if e.get("cat") == CATEGORY and e["name"] in ("read", "pread64")
                 and e["args"].get("path") in data]
        assert reads and {e["pid"] for e in reads} <= {p for p, r in roles.items() if r == "worker"}
        assert any(p.get("num_fetches", 0) > 0 for p in rec["processes"] if p["role"] == "worker")
    from test_torch_zero_touch import report

    doc = report(log)
    verdicts = [h["verdict"] for r in doc["runs"] for h in r["hosts"] if h.get("verdict")]
    assert len(verdicts) == 2 and all(v["bound"] != "unknown" and v["basis"] == "steps" for v in verdicts), verdicts


@pytest.mark.torch
def test_attach_while_workers_restart(tmp_path: Path) -> None:
    """Epochs of 4 steps: the workers end and new ones start every fraction of a second, so the
    attach meets workers exiting (and being injected as they go) and workers forked inside the
    window; the job still ends as it would have."""
    pytest.importorskip("torch")
    (tmp_path / "plain").mkdir()
    (tmp_path / "att").mkdir()
    # 120 epochs, some 18 s idle: 40 (6 s) ended inside the window in CI, the attach's own start
    # slowed by the load (test_attach_job_that_ends_while_attached is that case)
    plain = start("torch_zero_touch.py", str(tmp_path / "plain"), "files", "120", "32")
    job = start("torch_zero_touch.py", str(tmp_path / "att"), "files", "120", "32")
    wait_for(lambda: len(kids(job.pid)) >= 2)
    r = attach(job.pid, "--for", "3", "--logdir", str(tmp_path / "log"))
    assert r.returncode == 0, r.stderr
    assert "before the window's end" not in r.stderr, r.stderr
    out, err = job.communicate(timeout=600)
    pout, _ = plain.communicate(timeout=600)
    assert job.returncode == 0, err[-3000:]
    assert re.search(r"checksum \S+", out).group(0) == re.search(r"checksum \S+", pout).group(0)
    (path,) = (tmp_path / "log").glob("pytorch/attach_*/*.pt.trace.json")
    rec = io_record(read_trace(str(path)))
    workers = [p for p in rec["processes"] if p["role"] == "worker"]
    assert len(workers) > 2, [p["pid"] for p in workers]     # more than one epoch's workers recorded


def attach_then_stop(job: subprocess.Popen, work: Path, inside_s: float) -> tuple[str, str, float]:
    """Attach to ``job`` for 600 s; ``inside_s`` after the window began (the CLI's ``go``, once
    every process answered), tell the job to end (WORK/stop); the attach's stdout, stderr and
    seconds from the stop to its end."""
    from tb_iotrace.cli.attach import control_dir

    go = Path(control_dir(job.pid), "go")
    err_path = work / "attach.err"
    with open(err_path, "w") as err_fh:
        cli = subprocess.Popen([sys.executable, "-m", "tb_iotrace", "attach", str(job.pid), "--for", "600",
                                "--logdir", str(work / "log")], stdout=subprocess.PIPE, stderr=err_fh,
                               text=True, env=env())
    try:
        wait_for(lambda: go.exists() or cli.poll() is not None, timeout=180)
        time.sleep(inside_s)
        (work / "stop").write_text("")
        t0 = time.monotonic()
        out, _ = cli.communicate(timeout=240)
        took = time.monotonic() - t0
    finally:
        cli.kill()
    stderr = err_path.read_text()
    jout, jerr = job.communicate(timeout=60)
    assert job.returncode == 0 and "checksum" in jout, jerr[-3000:]
    assert cli.returncode == 0, stderr
    return out, stderr, took


@pytest.mark.torch
def test_attach_job_that_ends_while_attached(tmp_path: Path) -> None:
    """The job ends while attached for 600 s (its epochs end once told, after the attach began):
    its exit ends the attach: the window written with what it did until then, a note says so, the
    job's result unchanged, and the attach back as soon as the job is gone."""
    pytest.importorskip("torch")
    job = start("torch_zero_touch.py", str(tmp_path), "files", "0", "32")
    wait_for(lambda: len(kids(job.pid)) >= 2)
    out, stderr, took = attach_then_stop(job, tmp_path, 1.0)     # a few epochs inside
    assert took < 120, (took, stderr)             # not the window's 600 s
    assert re.search(r"note: the process exited [0-9.]+ s before the window's end", stderr), stderr
    assert "Verdict: " in out, out
    (path,) = (tmp_path / "log").glob("pytorch/attach_*/*.pt.trace.json")
    trace = read_trace(str(path))
    rec = io_record(trace)
    roles = {p["pid"]: p["role"] for p in rec["processes"]}
    assert roles[job.pid] == "main" and "worker" in roles.values(), roles
    steps = [e for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(steps) >= 3
    data = set(json.loads((tmp_path / "result.json").read_text())["files"])
    assert any(e.get("cat") == CATEGORY and e["args"].get("path") in data for e in trace["traceEvents"])


@pytest.mark.torch
def test_attach_job_that_ends_while_its_persistent_worker_records(tmp_path: Path) -> None:
    """A persistent DataLoader worker, injected and recording, outlives the main process's exit
    handlers (multiprocessing ends it after them): the main process's early end tells it to hand
    over its record now, so the window holds the worker's I/O, not a note that it came too late."""
    pytest.importorskip("torch")
    job = start("torch_zero_touch.py", str(tmp_path), "decode", "0")
    wait_for(lambda: len(kids(job.pid)) >= 1)
    _, stderr, _ = attach_then_stop(job, tmp_path, 1.5)   # an epoch or two inside
    (worker,) = map(int, re.search(r"1 of 1 Python child process\(es\) recording: (\d+)", stderr).groups())
    (path,) = (tmp_path / "log").glob("pytorch/attach_*/*.pt.trace.json")
    rec = io_record(read_trace(str(path)))
    assert not [n for n in rec["notes"] if "did not hand over" in n], rec["notes"]
    (w,) = [p for p in rec["processes"] if p["pid"] == worker]
    assert w["role"] == "worker" and w.get("num_fetches", 0) > 0, w


def test_attach_job_holding_10000_files(tmp_path: Path) -> None:
    job = start("hold_files.py", str(tmp_path), "25")
    assert job.stdout.readline().strip() == "holding 10000"
    log = tmp_path / "log"
    r = attach(job.pid, "--for", "2", "--logdir", str(log))
    assert r.returncode == 0, r.stderr
    assert "record" in r.stderr and "detached from" in r.stderr
    assert ours_left(job.pid) == []
    out, err = job.communicate(timeout=120)
    assert job.returncode == 0 and out.strip() == "ok", err
    (rec,) = (log / "plugins" / "iotrace").glob(f"*.{job.pid}.json")
    doc = json.loads(rec.read_text())
    assert doc["exit"]["how"] == "attach"


def test_refusals_are_one_line(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        r = attach(sleeper.pid, "--for", "1", "--logdir", str(tmp_path))
        assert r.returncode == 1 and "is not a Python process" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    finally:
        sleeper.kill()
        sleeper.wait()
    r = attach(4_000_000, "--for", "1", "--logdir", str(tmp_path))
    assert r.returncode == 1 and "no process 4000000" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    job = start("hold_files.py", str(tmp_path), "20", "10")
    try:
        assert job.stdout.readline().strip() == "holding 10"
        from tb_iotrace.cli.attach import claim, control_dir

        ctrl = claim(job.pid)        # this test holds it, as a running attach would
        try:
            r = attach(job.pid, "--for", "1", "--logdir", str(tmp_path))
            assert r.returncode == 1 and "already attached" in r.stderr, r.stderr
            assert len(r.stderr.strip().splitlines()) == 1
        finally:
            import shutil

            shutil.rmtree(control_dir(job.pid), ignore_errors=True)
        assert not os.path.exists(ctrl)
    finally:
        job.kill()
        job.wait()


@pytest.mark.parametrize("framework", [pytest.param("jax", marks=pytest.mark.jax),
                                       pytest.param("tf", marks=pytest.mark.tf)])
def test_attach_tf_or_jax_job_window_carries_io(framework: str, tmp_path: Path) -> None:
    """A JAX or TensorFlow job attached: its profiler takes the window (under plugins/profile),
    the I/O plane holds the job's reads, the window says it was taken by attach, and the job ends
    as usual."""
    pytest.importorskip("jax" if framework == "jax" else "tensorflow")
    from tb_iotrace.store.xplane import load_xspace, read_io_data

    job = start(f"{framework}_plain_job.py", str(tmp_path), "60")
    assert job.stdout.readline().strip() == "running"
    log = tmp_path / "log"
    r = attach(job.pid, "--for", "3", "--logdir", str(log))
    assert r.returncode == 0, r.stderr
    assert f"(xplane, {'jax' if framework == 'jax' else 'tensorflow'}," in r.stderr
    out, err = job.communicate(timeout=120)
    assert job.returncode == 0 and out.strip() == "ok", err[-3000:]
    (cap,) = log.glob("plugins/profile/*/*.xplane.pb")
    io = read_io_data(load_xspace(str(cap)))
    assert io is not None and (io.path == str(tmp_path / "data.bin")).sum() >= 10
    assert json.loads((cap.parent / "tb_iotrace.origin.json").read_text())["by"] == "tb-iotrace attach"


@pytest.mark.torch
def test_attach_through_the_channel_of_run_needs_no_ptrace(tmp_path: Path) -> None:
    """A job started by ``tb-iotrace run`` is attached through the control channel run left in
    each of its processes: no gdb on the PATH, the main process and its workers recorded."""
    pytest.importorskip("torch")
    run = subprocess.Popen([sys.executable, "-m", "tb_iotrace", "run", "--logdir", str(tmp_path / "runlog"), "--quiet",
                            "--", sys.executable, str(SCRIPTS / "torch_zero_touch.py"), str(tmp_path), "files", "10"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    wait_for(lambda: kids(run.pid) and len(kids(kids(run.pid)[0])) >= 2)
    job = kids(run.pid)[0]
    no_gdb = dict(env(), PATH=os.path.dirname(sys.executable))
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "attach", str(job), "--for", "3", "--logdir",
                        str(tmp_path / "log")], capture_output=True, text=True, timeout=240, env=no_gdb)
    assert r.returncode == 0, r.stderr
    assert "via channel" in r.stderr and "Verdict: " in r.stdout
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, err[-3000:]
    (path,) = (tmp_path / "log").glob("pytorch/attach_*/*.pt.trace.json")
    roles = {p["pid"]: p["role"] for p in io_record(read_trace(str(path)))["processes"]}
    assert roles[job] == "main" and "worker" in roles.values()
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob(f"tb_iotrace-attach-{job}"))
