"""Checkpoint saves and loads of safetensors, orbax (with JAX) and tf.train.Checkpoint under
``tb-iotrace run``, recognised by the calls the job makes (tb_iotrace.recording.
library_checkpoints -> the record's checkpoint_calls): each save a phase named by the path the
job gave, its bytes the files' sizes, its blocking the call the job timed; the restore at start
a load (docs/checkpoints.md)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "library_checkpoint_job.py"


def _run(work: Path, lib: str) -> tuple[dict, dict]:
    cmd = [PY, "-m", "tb_iotrace", "run", "--quiet", "--logdir", str(work / "logs"), "--", PY, str(JOB), str(work), lib]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    job = json.loads((work / "result.json").read_text())
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(work / "logs"), "--json"], capture_output=True,
                         text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    (host,) = [h for h in run["hosts"] if h["process"]["pid"] == job["pid"]]
    return job, host


def _check(job: dict, host: dict, save_call: str, load_call: str, exact: bool) -> list[dict]:
    ck = host["checkpoints"]
    saves = [p for p in ck if p["kind"] == "save"]
    loads = [p for p in ck if p["kind"] == "load"]
    assert [p["source"] for p in saves] == [save_call] * 4 and [p["source"] for p in loads] == [load_call], ck
    assert loads[0]["path"].startswith(job["init"]) and saves[0]["path"] == job["init"]
    assert saves[0]["start_ns"] < loads[0]["start_ns"] < saves[1]["start_ns"]      # the restore at the start
    got = {p["path"]: p["bytes"] for p in saves[1:]}
    assert list(got) == list(job["sizes"]), (got, job["sizes"])
    for path, size in job["sizes"].items():
        if exact:
            assert got[path] == size, (path, got[path], size)
        else:       # a small metadata file written, then written again (renamed over): counted each time
            assert size <= got[path] <= size * 1.001, (path, got[path], size)
    blocked = sum(p["blocking_ns"] for p in saves[1:]) / 1e9
    assert blocked == pytest.approx(sum(job["saves_s"]), rel=0.10, abs=0.003), (blocked, job["saves_s"])
    print(save_call, "blocked", blocked, "job", sum(job["saves_s"]), "bytes", got, "sizes", job["sizes"])
    return saves


@pytest.mark.slow
@pytest.mark.torch
def test_safetensors_save_file_and_load_file(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    job, host = _run(tmp_path, "safetensors")
    _check(job, host, "safetensors.torch.save_file", "safetensors.torch.load_file", exact=True)
    (load,) = [p for p in host["checkpoints"] if p["kind"] == "load"]
    assert load["path"] == job["init"] and load["bytes"] == 0       # load_file maps the file: no read calls


@pytest.mark.slow
@pytest.mark.jax
def test_orbax_async_save_and_restore(tmp_path: Path) -> None:
    pytest.importorskip("orbax.checkpoint")
    job, host = _run(tmp_path, "orbax")
    saves = _check(job, host, "orbax.checkpoint.StandardCheckpointer.save",
                   "orbax.checkpoint.StandardCheckpointer.restore", exact=False)
    assert all(p["background_ns"] > 0 for p in saves)       # the writes after the call returned
    (load,) = [p for p in host["checkpoints"] if p["kind"] == "load"]
    assert 0.99 * job["init_size"] <= load["bytes"] <= job["init_size"]


@pytest.mark.slow
@pytest.mark.tf
def test_tf_train_checkpoint_save_and_restore(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    job, host = _run(tmp_path, "tf")
    _check(job, host, "tf.train.Checkpoint.save", "tf.train.Checkpoint.restore", exact=False)
    (load,) = [p for p in host["checkpoints"] if p["kind"] == "load"]
    assert load["bytes"] >= job["init_size"] - 1024        # the .data file and the .index (not the state file)
