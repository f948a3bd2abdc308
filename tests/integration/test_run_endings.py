"""``tb-iotrace run`` keeps every DataLoader worker's reads, however the workers end: persistent
workers terminated by their parent at exit, workers the job terminates itself, a job that ends
with ``os._exit`` (its workers outlive it), and a job killed with SIGTERM or SIGINT (the whole
process group, as a scheduler or Ctrl-C does). Ground truth: the job's own account of which
file each worker read, and the files' exact sizes (each file is read whole, in one call)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]
PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "torch_end_job.py"


def _run_job(how: str, tmp_path: Path, method: str = "fork") -> tuple[Path, dict, int]:
    data, logdir, out = tmp_path / "data", tmp_path / "logs", tmp_path / "job.json"
    data.mkdir()
    cmd = [PY, "-m", "tb_iotrace", "run", "--quiet", "--logdir", str(logdir), "--", PY, str(JOB), str(data), how,
           str(out), method]
    # SIGINT as a foreground job has it: a suite started in the background by a shell (`cmd &`)
    # ignores SIGINT, which every process it starts would inherit, and the job would sleep on
    proc = subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if how in ("sigterm", "sigint"):
        deadline = time.monotonic() + 240
        while not out.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert out.exists(), "the job never finished its epoch"
        time.sleep(0.5)   # the job is in its sleep, the workers idle on their queues
        os.killpg(proc.pid, signal.SIGTERM if how == "sigterm" else signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return logdir, json.loads(out.read_text()), proc.returncode if err is not None else -1


@pytest.mark.parametrize("how", ["persistent", "persistent-spawn", "terminated", "os_exit", "sigterm", "sigint"])
def test_every_worker_read_is_in_the_records(how: str, tmp_path: Path) -> None:
    how, _, method = how.partition("-")
    logdir, job, rc = _run_job(how, tmp_path, method or "fork")
    assert rc == {"sigterm": 128 + signal.SIGTERM, "sigint": 128 + signal.SIGINT}.get(how, 0)
    sizes, read_by, main = job["sizes"], job["read_by"], job["main_pid"]
    workers = {pid for pids in read_by.values() for pid in pids}
    assert len(workers) == 2 and main not in workers

    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    hosts = {h["process"]["pid"]: h for h in run["hosts"]}
    assert {main} | workers <= set(hosts)
    assert not [pid for pid, h in hosts.items() if h["partial"]], "a process left no final record"
    got: dict[str, dict[int, int]] = {}
    for pid, h in hosts.items():
        for f in h["files"]:
            if f["module"] == "POSIX" and f["path"] in sizes and f["counters"]["POSIX_BYTES_READ"]:
                got.setdefault(f["path"], {})[pid] = f["counters"]["POSIX_BYTES_READ"]
    want: dict[str, dict[int, int]] = {}
    for path, pids in read_by.items():
        for pid in pids:
            want.setdefault(path, {}).setdefault(pid, 0)
            want[path][pid] += sizes[path]
    assert got == want
    # the final records replaced the periodic flushes' trace parts
    assert not list((logdir / "plugins" / "iotrace").glob("*.part*.npz"))
    # the run's totals: every process whole, the workers' bytes in them
    totals = run["totals"]
    assert totals["partial"]["processes"] == 0 and totals["whole"]["processes"] == len(hosts)
    assert totals["whole"]["modules"]["POSIX"]["bytes_read"] >= sum(sum(w.values()) for w in want.values())
