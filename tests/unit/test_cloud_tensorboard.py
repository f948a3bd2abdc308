"""TensorBoard's own command line on a logdir in a bucket (moto's S3, gcp-storage-emulator's
GCS, on 127.0.0.1), with TensorFlow installed: ``tb-iotrace tensorboard --logdir URL`` starts,
its I/O tab lists the bucket's runs and TensorBoard's scalars tab reads the bucket's event file;
plain ``tensorboard --logdir gs://...`` starts too (TensorFlow reads gs:// itself) and serves
the I/O tab (docs/cloud.md)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud_servers import Server, start_gcs, start_s3

pytestmark = pytest.mark.slow
pytest.importorskip("s3fs")
pytest.importorskip("gcsfs")
pytest.importorskip("tensorflow")        # the case: TensorBoard with TensorFlow installed

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "tests" / "data" / "jax_io.xplane.pb"
URL_LINE = re.compile(r"TensorBoard \S+ at (http://127\.0\.0\.1:\d+)/")


@pytest.fixture(scope="module", params=["s3", "gs"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    srv = start_s3() if request.param == "s3" else start_gcs()
    try:
        yield srv
    finally:
        srv.stop()


def _event_file(folder: Path) -> Path:
    """An event file with one scalar, ``loss`` = 0.5 at step 1, written by TensorBoard's own writer."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(folder))
    w.add_event(event_pb2.Event(wall_time=time.time(), step=1, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="loss", simple_value=0.5)])))
    w.close()
    (path,) = folder.glob("events.out.tfevents.*")
    return path


@pytest.fixture()
def bucket(server: Server, tmp_path: Path) -> dict[str, Any]:
    import fsspec

    env = {**os.environ, **server.env, "TB_IOTRACE_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    old = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)
    try:
        fsspec.get_filesystem_class(server.scheme).clear_instance_cache()
        fs = fsspec.filesystem(server.scheme, skip_instance_cache=True)
        name = f"b{os.urandom(4).hex()}"
        fs.mkdir(name)
        fs.put_file(str(CAPTURE), f"{name}/logs/plugins/profile/s1/vm.xplane.pb")
        ev = _event_file(tmp_path / "train")
        fs.put_file(str(ev), f"{name}/logs/train/{ev.name}")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"url": f"{server.scheme}://{name}/logs", "env": env, "cwd": tmp_path}


def _get(base: str, route: str) -> Any:
    with urllib.request.urlopen(base + route, timeout=60) as resp:
        return json.loads(resp.read())


def _serve(cmd: list[str], env: dict[str, str], cwd: Path, deadline_s: float = 240) -> tuple[subprocess.Popen, str]:
    """Start TensorBoard; its URL once it says it serves (fails with its output if it exits)."""
    log = cwd / f"tb-{os.urandom(3).hex()}.log"
    fh = open(log, "w")
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    fh.close()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        m = URL_LINE.search(log.read_text(errors="replace"))
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    proc.kill()
    proc.wait()
    pytest.fail(f"TensorBoard did not start (exit {proc.returncode}):\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _io_runs(base: str, deadline_s: float = 120) -> dict[str, list[str]]:
    """The tab's runs once the storage has answered. A storage slow to answer (the local
    server on a loaded machine) first gets the tab's answer from the mirror after 3 s, "still
    trying"; as a user reloads, asked again (within ``deadline_s``) until an answer has no
    message. Any other message fails at once."""
    end = time.monotonic() + deadline_s
    while True:
        body = _get(base, "/data/plugin/iotrace/runs")
        runs = {r["run"]: r["hosts"] for r in body["runs"]}
        if (body["message"] == "" and runs) or time.monotonic() > end:
            break
        # only the storage's slowness is waited out (or a scan, kept a few seconds, made before
        # the sync that then answered)
        assert "(still trying)" in body["message"] or body["message"].startswith("No profile found"), body
        time.sleep(0.5)
    assert body["message"] == "", body
    return runs


def test_tb_iotrace_tensorboard_serves_a_bucket(bucket: dict[str, Any]) -> None:
    cmd = [sys.executable, "-m", "tb_iotrace", "tensorboard", "--logdir", bucket["url"], "--host", "127.0.0.1",
           "--port", "0", "--reload_interval", "1"]
    proc, base = _serve(cmd, bucket["env"], bucket["cwd"])
    try:
        assert _io_runs(base) == {"s1": ["vm"]}
        assert _get(base, "/data/plugins_listing")["iotrace"]["enabled"] is True
        # TensorBoard itself reads the bucket: the event file's scalar (its first load may
        # take a reload)
        end = time.monotonic() + 120
        while time.monotonic() < end:
            tags = _get(base, "/data/plugin/scalars/tags")
            if tags.get("train"):
                break
            time.sleep(1)
        assert list(tags.get("train", {})) == ["loss"], tags
        pts = _get(base, "/data/plugin/scalars/scalars?run=train&tag=loss")
        assert [(p[1], p[2]) for p in pts] == [(1, 0.5)], pts
    finally:
        _stop(proc)
    assert not (bucket["cwd"] / f"{bucket['url'].split(':')[0]}:").exists()      # no local folder named for the URL


def test_plain_tensorboard_serves_gs_and_stops_on_s3(bucket: dict[str, Any]) -> None:
    """Plain ``tensorboard`` reads a logdir through TensorFlow: gs:// (TensorFlow's own GCS
    client for its loader; the I/O tab reads through fsspec) serves; s3:// stops at start-up
    with TensorFlow's missing scheme, what docs/cloud.md says (use ``tb-iotrace tensorboard``)."""
    tb = shutil.which("tensorboard", path=os.path.dirname(sys.executable)) or "tensorboard"
    cmd = [tb, "--logdir", bucket["url"], "--host", "127.0.0.1", "--port", "0"]
    if bucket["url"].startswith("s3://"):
        r = subprocess.run(cmd, env=bucket["env"], cwd=bucket["cwd"], capture_output=True, text=True, timeout=240)
        assert r.returncode != 0 and "Unsupported filename scheme 's3'" in r.stderr, r.stderr[-2000:]
        return
    proc, base = _serve(cmd, bucket["env"], bucket["cwd"])
    try:
        assert _io_runs(base) == {"s1": ["vm"]}
    finally:
        _stop(proc)
