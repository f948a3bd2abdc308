"""Profile windows every N steps or seconds: ``tb_iotrace.keras.ProfileEvery`` in real
Keras jobs (TensorFlow backend here; JAX backend in the Python 3.12 venv, as test_jax_keras) and
``tb-iotrace run --profile-every`` on a TensorFlow and a JAX job, writing to moto's S3 server and
gcp-storage-emulator on 127.0.0.1 (test_cloud's fixtures) or to a folder. What is in a bucket is
listed through its server; the report of the bucket lists the job's windows in time order."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit"))
from test_cloud import _cli, _listed, server, store  # noqa: E402,F401  (the local servers' fixtures)

SCRIPTS = Path(__file__).parent / "scripts"
KERAS_JOB = SCRIPTS / "keras_profile_every.py"
RUN_JOB = SCRIPTS / "profile_every_job.py"
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}


def _report(logdir: str) -> dict[str, Any]:
    rc, out, err = _cli("report", logdir, "--json", "--no-progress")
    assert rc == 0, err
    return json.loads(out)


def _check_windows(doc: dict[str, Any], files: list[str], sizes: list[int], count: int,
                   steps: int | None, strict: bool = False) -> list[dict[str, Any]]:
    """The report's one job has ``count`` windows in time order; in each, every data file it
    read was read whole, once (bytes read = the file's size), and one with steps read at least
    one (a window taken while the framework starts up may have neither). Not ``strict``: a
    window's edge may fall between a file's read and its open or close (time windows, or a
    loader thread reading ahead), which puts the file in the window with 0 bytes read: such
    files are left out. ``strict``: every data file in the window was read whole in it."""
    [job] = doc["jobs"]
    ws = job["windows"]
    assert len(ws) == count, [w["run"] for w in ws]
    starts = [w["start_ns"] for w in ws]
    assert all(s is not None for s in starts) and starts == sorted(starts) and len(set(starts)) == count
    assert [w["n"] for w in ws] == list(range(1, count + 1))
    hosts = {r["run"]: r["hosts"] for r in doc["runs"]}
    for w in ws:
        [host] = hosts[w["run"]]
        got = {f["path"]: f["counters"]["POSIX_BYTES_READ"] for f in host["files"]
               if f["module"] == "POSIX" and f["path"] in files}
        if not strict:
            got = {p: b for p, b in got.items() if b}
        # (not strict, time windows: the last one may open at the job's last batch, read before
        # it opened, with no batch after it to read)
        last_alone = not strict and w is ws[-1] and w["steps"] == 1
        assert got or not w["steps"] or last_alone, f"window {w['run']} has steps and read no data file"
        assert got == {p: sizes[files.index(p)] for p in got}, got
        assert w["bytes_read"] >= sum(got.values())
        if steps is not None:
            assert w["steps"] == steps, w
        assert w["duration_ns"] > 0
        # a window taken while the framework starts up may hold no call at all (under load, its
        # half second can fall between two of the import's opens)
        assert w["io_calls"] > 0 or not (got or w["steps"]), w
    return ws


def _landed_bucket(store: dict[str, Any], prefix: str) -> dict[str, int]:
    """The profile files in the bucket under ``prefix`` once the job's summary children are done
    (they remove their local copies from staging: waited for, bounded); every other object
    there must be a capture's summary (kept beside it as it landed)."""
    staging = Path(os.environ["TB_IOTRACE_CACHE"]).parent / "staging"
    deadline = time.monotonic() + 180
    while staging.exists() and any(staging.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not staging.exists() or not any(staging.iterdir()), list(staging.rglob("*"))
    listed = _listed(store, prefix)
    profiles = {k: v for k, v in listed.items() if k.startswith(f"{prefix}/plugins/profile/")}
    others = sorted(set(listed) - set(profiles))
    assert all(k.startswith(f"{prefix}/plugins/iotrace/summaries/") for k in others), others
    return profiles


@pytest.mark.slow
@pytest.mark.tf
def test_keras_profile_every_steps_to_a_bucket(store: dict[str, Any], tmp_path: Path) -> None:
    """TensorFlow backend, every 4 steps, 2 steps a window, 14 batches: 3 windows, each uploaded
    whole to the bucket (nothing in the cwd, no staging left) and read back by the report.
    (Keras's TensorFlow data adapter reads a PyDataset's batches ahead, on its own thread; the
    job lets it read one batch ahead at most, so a window holds the reads of the batches fetched
    while it ran, at least one, each file read whole.)"""
    url = store["url"] + "/logs"
    env = {**store["env"], **QUIET, "KERAS_BACKEND": "tensorflow"}
    r = subprocess.run([sys.executable, str(KERAS_JOB), str(tmp_path / "work"), url, "every_steps", "4", "2", "14"],
                       cwd=store["cwd"], env=env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["backend"] == "tensorflow" and res["windows"] == 3
    assert all(p.startswith(url + "/plugins/profile/") and p.endswith(".xplane.pb") for p in res["published"])
    prefix = store["url"] + "/"
    profiles = _landed_bucket(store, "logs")
    assert sorted(profiles) == sorted(p[len(prefix):] for p in res["published"])
    assert all(size > 0 for size in profiles.values())
    assert os.listdir(store["cwd"]) == []
    # windows at batches 4-5, 8-9 and 12-13, each marked as Keras marks its profiled batches
    _check_windows(_report(url), res["files"], res["sizes"], 3, 2)


@pytest.mark.slow
@pytest.mark.tf
def test_keras_profile_every_secs_to_a_folder(tmp_path: Path) -> None:
    """every_secs on a folder: windows land as runs of the folder, published under their final
    names only (no hidden temporary left)."""
    logdir = tmp_path / "logs"
    env = {**os.environ, **QUIET, "KERAS_BACKEND": "tensorflow", "TB_IOTRACE_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run([sys.executable, str(KERAS_JOB), str(tmp_path / "work"), str(logdir), "every_secs", "0.5",
                        "2", "40"], env=env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["windows"] >= 2, res
    on_disk = sorted(str(p) for p in logdir.rglob("*") if p.is_file())
    assert on_disk == sorted(res["published"])
    assert not any(Path(p).name.startswith(".") for p in on_disk)
    _check_windows(_report(str(logdir)), res["files"], res["sizes"], res["windows"], None)


@pytest.mark.slow
@pytest.mark.tf
def test_profile_every_checks_its_arguments() -> None:
    from tb_iotrace.keras import ProfileEvery

    for kwargs, says in (({}, "exactly one"), ({"every_steps": 5, "every_secs": 2.0}, "exactly one"),
                         ({"every_steps": 0}, "every_steps"), ({"every_secs": -1.0}, "every_secs"),
                         ({"every_steps": 2, "steps": 3}, "must not exceed"), ({"every_steps": 2, "steps": 0}, "steps")):
        with pytest.raises(ValueError, match=says):
            ProfileEvery("logs", **kwargs)


def _run_job(store: dict[str, Any], prefix: str, framework: str, windows: int = 2,
             deadline_s: float = 300) -> subprocess.CompletedProcess:
    """`tb-iotrace run --profile-every 1.5 --profile-for 0.5` on the job, into bucket/prefix: the
    job's loop runs until ``windows`` windows are in the bucket (listed through the server,
    within ``deadline_s``), then is told to stop. Its run time is set by the windows taken, not
    by a guess of how long a loaded machine takes to start, stop and upload them."""
    cwd, tmp = store["cwd"], store["cwd"].parent
    stop = tmp / f"stop-{framework}"
    out, err = tmp / f"job-{framework}.out", tmp / f"job-{framework}.err"
    cmd = [sys.executable, "-m", "tb_iotrace", "run", "--logdir", f"{store['url']}/{prefix}", "--profile-every",
           "1.5", "--profile-for", "0.5", "--", sys.executable, str(RUN_JOB), framework, str(tmp / "data"),
           str(deadline_s), str(stop)]
    with open(out, "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen(cmd, cwd=cwd, env={**store["env"], **QUIET}, stdout=fo, stderr=fe, text=True)
    try:
        end = time.monotonic() + deadline_s
        while proc.poll() is None and time.monotonic() < end:
            if sum(k.endswith(".xplane.pb") for k in _listed(store, f"{prefix}/plugins/profile")) >= windows:
                break
            time.sleep(1.0)
        stop.touch()
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(cmd, rc, out.read_text(), err.read_text())


@pytest.mark.slow
@pytest.mark.tf
def test_run_profile_every_on_a_tensorflow_job(store: dict[str, Any]) -> None:
    """`tb-iotrace run --profile-every 1.5 --profile-for 0.5` on a TensorFlow loop that reads a
    file per step until two windows are in the bucket (then told to stop): the windows, beside the
    whole-run record, and the report lists them in time order."""
    url = store["url"] + "/logs"
    r = _run_job(store, "logs", "tensorflow")
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    listed = _listed(store, "logs")
    windows = sorted(k for k in listed if k.startswith("logs/plugins/profile/") and k.endswith(".xplane.pb"))
    assert len(windows) >= 2, sorted(listed)
    assert any(k.startswith("logs/plugins/iotrace/") and k.endswith(".json") for k in listed)
    assert os.listdir(store["cwd"]) == []
    doc = _report(url)
    ws = _check_windows(doc, res["files"], res["sizes"], len(windows), None)
    # --profile-for 0.5; the job's exit may cut its last window short
    assert all(0.4e9 <= w["duration_ns"] <= 3e9 for w in ws[:-1]), [w["duration_ns"] for w in ws]
    assert 0 < ws[-1]["duration_ns"] <= 3e9
    rc, text, err = _cli("report", url, "--no-progress")
    assert rc == 0 and f"Profile windows of . ({len(windows)}, in time order)" in text, err


@pytest.mark.slow
@pytest.mark.jax
def test_run_profile_every_on_a_jax_job(store: dict[str, Any]) -> None:
    """The same on a JAX loop (jax.profiler windows, StepTraceAnnotation steps) into the bucket."""
    url = store["url"] + "/jaxlogs"
    r = _run_job(store, "jaxlogs", "jax")
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    windows = [k for k in _listed(store, "jaxlogs") if k.startswith("jaxlogs/plugins/profile/")
               and k.endswith(".xplane.pb")]
    assert len(windows) >= 2, windows
    assert os.listdir(store["cwd"]) == []
    ws = _check_windows(_report(url), res["files"], res["sizes"], len(windows), None)
    assert sum(w["steps"] for w in ws) > 0


@pytest.mark.slow
@pytest.mark.jax
def test_keras_profile_every_on_jax(tmp_path: Path) -> None:
    """Keras on the JAX backend (Python 3.12 venv, as test_jax_keras), every 3 steps, 2 a window,
    10 batches, into a folder: 3 windows whose steps are Keras's "Profiled batch" markers, the
    batches' files read inside them, each whole (the JAX trainer reads a batch inside its step)."""
    from test_jax_keras import python312

    logdir = tmp_path / "logs"
    env = {**os.environ, **QUIET, "KERAS_BACKEND": "jax", "TB_IOTRACE_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT)}
    r = subprocess.run([python312(), str(KERAS_JOB), str(tmp_path / "work"), str(logdir), "every_steps", "3", "2",
                        "10"], env=env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["backend"] == "jax" and res["windows"] == 3, res
    doc = _report(str(logdir))
    ws = _check_windows(doc, res["files"], res["sizes"], 3, 2, strict=True)
    hosts = {run["run"]: run["hosts"][0] for run in doc["runs"]}
    for w, first in zip(ws, (3, 6, 9)):
        h = hosts[w["run"]]
        assert [s["name"] for s in h["steps"]] == [f"Profiled batch {first}", f"Profiled batch {first + 1}"]
        read = {f["path"] for f in h["files"] if f["module"] == "POSIX" and f["path"] in res["files"]}
        # batches first and first+1 of the fit are files first-1 and first
        assert read == {res["files"][first - 1], res["files"][first]}, read


@pytest.mark.slow
@pytest.mark.jax
def test_keras_profile_every_on_jax_to_a_bucket(store: dict[str, Any], tmp_path: Path) -> None:
    """Keras on the JAX backend (Python 3.12 venv, with the cloud clients of the [cloud] extra)
    writing its windows to the bucket: 3 windows uploaded whole (nothing in the cwd), each with
    the profiled batches' files read whole, listed by the report of the bucket."""
    from test_jax_keras import python312

    url = store["url"] + "/jaxlogs"
    env = {**store["env"], **QUIET, "KERAS_BACKEND": "jax"}
    r = subprocess.run([python312(), str(KERAS_JOB), str(tmp_path / "work"), url, "every_steps", "3", "2", "10"],
                       cwd=store["cwd"], env=env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["backend"] == "jax" and res["windows"] == 3, res
    # each window's files (JAX also writes a .trace.json.gz beside the .xplane.pb) under the URL
    assert all(p.startswith(url + "/plugins/profile/") for p in res["published"]), res["published"]
    assert sum(p.endswith(".xplane.pb") for p in res["published"]) == 3, res["published"]
    prefix = store["url"] + "/"
    listed = _landed_bucket(store, "jaxlogs")
    assert sorted(listed) == sorted(p[len(prefix):] for p in res["published"])
    # each window's capture got its summary and job facts beside it (the job's Python 3.12
    # venv lacked msgspec: its summary children failed and left their copies in staging)
    kept = [k for k in _listed(store, "jaxlogs") if k not in listed]
    assert sorted(k.rsplit(".", 2)[-2] for k in kept) == ["jobfacts"] * 3 + ["summary"] * 3, kept
    assert all(size > 0 for size in listed.values())
    assert os.listdir(store["cwd"]) == []
    _check_windows(_report(url), res["files"], res["sizes"], 3, 2, strict=True)


URL_JOB = SCRIPTS / "url_profile_job.py"


@pytest.mark.slow
@pytest.mark.parametrize("framework", [pytest.param("tensorflow", marks=pytest.mark.tf),
                                       pytest.param("jax", marks=pytest.mark.jax)])
def test_the_jobs_own_profile_to_a_url(store: dict[str, Any], tmp_path: Path, framework: str) -> None:
    """tf.profiler.experimental.start("s3://...") / jax.profiler.start_trace("gs://...") in the
    job itself: TensorFlow had no s3:// filesystem (the start failed) and neither framework can
    reach an emulator; now the window is profiled locally and uploaded whole, with the I/O of
    the file read inside it."""
    url = store["url"] + "/own"
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(123_457))
    r = subprocess.run([sys.executable, str(URL_JOB), framework, url, str(data)], cwd=store["cwd"],
                       env={**store["env"], **QUIET}, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0 and r.stdout.strip() == "done", r.stderr[-4000:]
    [key] = [k for k in _listed(store, "own") if k.endswith(".xplane.pb")]
    assert key.startswith("own/plugins/profile/")
    assert os.listdir(store["cwd"]) == []
    [job] = _report(url)["jobs"]
    [w] = job["windows"]
    [host] = [h for run in _report(url)["runs"] for h in run["hosts"]]
    got = [f["counters"]["POSIX_BYTES_READ"] for f in host["files"] if f["path"] == str(data)]
    assert got == [data.stat().st_size] and w["bytes_read"] >= data.stat().st_size
