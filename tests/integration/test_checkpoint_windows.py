"""safetensors, tf.train.Checkpoint and orbax checkpoints in profile windows, recognised by the
calls the job makes (docs/checkpoints.md): a PyTorch trace of tb_iotrace.torch.trace_handler
(the library hooks' tb_iotrace::checkpoint spans), a tf.profiler capture and a jax.profiler
capture (the window's noted calls in the capture's I/O record). Each save a phase named by the
call and the path the job gave, its bytes the files' sizes, its blocking the call the job timed;
the restore at the window's start a load. And orbax's wait_until_finished: a job that waits
after each save is blocked for the save and the wait while its loop goes on (under
``tb-iotrace run``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "library_checkpoint_job.py"


def _report(work: Path, logs: Path) -> tuple[dict, dict]:
    job = json.loads((work / "result.json").read_text())
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logs), "--json"], capture_output=True,
                         text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    hosts = [h for r in json.loads(rep.stdout)["runs"] for h in r["hosts"] if h["checkpoints"]]
    assert len(hosts) == 1, hosts
    return job, hosts[0]


def _window(work: Path, lib: str) -> tuple[dict, dict]:
    r = subprocess.run([PY, str(JOB), str(work), lib, "window"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    return _report(work, work / "logs")


def _check(job: dict, host: dict, save_call: str, load_call: str, with_bytes: int) -> list[dict]:
    """The window's restore and 3 saves, by their calls; the first ``with_bytes`` saves' bytes
    the files' sizes (a rewritten metadata file counted each time: within 0.1%)."""
    ck = host["checkpoints"]
    saves = [p for p in ck if p["kind"] == "save"]
    loads = [p for p in ck if p["kind"] == "load"]
    assert [p["source"] for p in saves] == [save_call] * 3 and [p["source"] for p in loads] == [load_call], ck
    assert loads[0]["path"].startswith(job["init"]) and loads[0]["start_ns"] < saves[0]["start_ns"]
    assert [p["path"] for p in saves] == list(job["sizes"])
    for p in saves[:with_bytes]:
        size = job["sizes"][p["path"]]
        assert size <= p["bytes"] <= size * 1.001, (p["path"], p["bytes"], size)
    blocked = sum(p["blocking_ns"] for p in saves) / 1e9
    assert blocked == pytest.approx(sum(job["saves_s"]), rel=0.10, abs=0.003), (blocked, job["saves_s"])
    print(save_call, "blocked", blocked, "job", sum(job["saves_s"]), "bytes", [p["bytes"] for p in saves],
          "sizes", job["sizes"])
    return saves


@pytest.mark.slow
@pytest.mark.torch
def test_safetensors_in_a_trace_handler_window(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    job, host = _window(tmp_path, "safetensors")
    _check(job, host, "safetensors.torch.save_file", "safetensors.torch.load_file", with_bytes=3)
    (load,) = [p for p in host["checkpoints"] if p["kind"] == "load"]
    assert load["path"] == job["init"] and load["bytes"] == 0       # load_file maps the file: no read calls


@pytest.mark.slow
@pytest.mark.tf
def test_tf_train_checkpoint_in_a_tf_profiler_window(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    job, host = _window(tmp_path, "tf")
    _check(job, host, "tf.train.Checkpoint.save", "tf.train.Checkpoint.restore", with_bytes=3)
    assert host["training"]["basis"] == "steps"      # the saves blocked the thread that runs the steps


@pytest.mark.slow
@pytest.mark.jax
def test_orbax_in_a_jax_profiler_window(tmp_path: Path) -> None:
    pytest.importorskip("orbax.checkpoint")
    job, host = _window(tmp_path, "orbax")
    # the last save's background writes end after the window: its call is in it, its bytes not
    saves = _check(job, host, "orbax.checkpoint.StandardCheckpointer.save",
                   "orbax.checkpoint.StandardCheckpointer.restore", with_bytes=2)
    assert all(p["background_ns"] > 0 for p in saves[:2])


@pytest.mark.slow
@pytest.mark.jax
def test_orbax_wait_until_finished_blocks(tmp_path: Path) -> None:
    pytest.importorskip("orbax.checkpoint")
    cmd = [PY, "-m", "tb_iotrace", "run", "--quiet", "--logdir", str(tmp_path / "logs"), "--",
           PY, str(JOB), str(tmp_path), "orbax", "wait"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    job, host = _report(tmp_path, tmp_path / "logs")
    saves = [p for p in host["checkpoints"] if p["kind"] == "save"][1:]      # the loop's (not init's)
    assert [p["path"] for p in saves] == list(job["sizes"])
    # each save call and the wait after it, but the last one's: the loop is over (no save follows)
    timed = sum(job["saves_s"]) + sum(job["waits_s"][:-1])
    blocked = sum(p["blocking_ns"] for p in saves) / 1e9
    assert blocked == pytest.approx(timed, rel=0.10, abs=0.003), (blocked, job["saves_s"], job["waits_s"])
    assert sum(job["waits_s"][:-1]) > 0.1 * timed        # the waits are a real part of it
    print("orbax save + wait_until_finished blocked", blocked, "job", timed)
