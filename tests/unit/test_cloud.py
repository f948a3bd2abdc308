"""Logdirs and outputs on s3:// and gs:// (tb_iotrace.remote), against local servers started
here on 127.0.0.1: moto's S3 server and gcp-storage-emulator. What is in a bucket is always
listed through its server (a fresh client), never read from a local folder."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud_servers import Server, start_gcs, start_s3

pytest.importorskip("s3fs")
pytest.importorskip("gcsfs")

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
RUN_V1 = DATA / "run_v1"
CAPTURE = DATA / "jax_io.xplane.pb"


@pytest.fixture(scope="module", params=["s3", "gs"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    srv = start_s3() if request.param == "s3" else start_gcs()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture()
def store(server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """The server's variables in this process (and its children), a fresh bucket, a fresh cache
    and a scratch cwd; returns what the test needs."""
    import fsspec

    for k, v in server.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    fsspec.config.conf.clear()
    from fsspec.spec import AbstractFileSystem
    AbstractFileSystem.clear_instance_cache()
    fs = fsspec.filesystem(server.scheme, skip_instance_cache=True)
    bucket = f"b{os.urandom(4).hex()}"
    fs.mkdir(bucket)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return {"fs": fs, "bucket": bucket, "url": f"{server.scheme}://{bucket}", "cwd": cwd, "server": server,
            "env": {**os.environ, **server.env, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}}


def _put_logdir(fs: Any, bucket: str) -> dict[str, int]:
    """tests/data's run record and a JAX capture as a logdir in the bucket; their sizes by key."""
    files = {f"logs/plugins/profile/s1/vm.xplane.pb": CAPTURE}
    for p in (RUN_V1 / "plugins" / "iotrace").iterdir():
        files[f"logs/plugins/iotrace/{p.name}"] = p
    files["logs/events.out.tfevents.1"] = DATA / "README.md"        # not read: stays remote
    for key, p in files.items():
        fs.put_file(str(p), f"{bucket}/{key}")
    return {k: p.stat().st_size for k, p in files.items() if "tfevents" not in k}


def _listed(store: dict[str, Any], prefix: str) -> dict[str, int]:
    """Objects under bucket/prefix, listed through the server by a fresh client."""
    import fsspec

    fs = fsspec.filesystem(store["server"].scheme, skip_instance_cache=True)
    root = f"{store['bucket']}/{prefix}".rstrip("/")
    return {k[len(store["bucket"]) + 1:]: int(v["size"]) for k, v in fs.find(root, detail=True).items()}


def _cli(*args: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from tb_iotrace.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


def _no_local_url_folder(cwd: Path) -> None:
    assert sorted(p.name for p in cwd.iterdir()) == [], "a URL was written as a local path"


def test_urls_and_paths() -> None:
    from tb_iotrace import remote

    assert remote.is_url("s3://b/logs") and remote.is_url("gs://b") and remote.is_url("memory://x")
    assert not remote.is_url("file:///tmp/logs") and not remote.is_url("/tmp/s3:/x")
    assert not remote.is_url("logs") and not remote.is_url("s3:logs")
    assert remote.local_path("file:///tmp/logs") == "/tmp/logs" and remote.local_path("s3:x") == "s3:x"
    assert remote.join("s3://b/logs/", "plugins", "iotrace") == "s3://b/logs/plugins/iotrace"
    with pytest.raises(remote.RemoteError, match="unknown URL scheme nosuch://"):
        remote.filesystem("nosuch://b/x")


def test_a_missing_client_names_the_extra(tmp_path: Path) -> None:
    """Without s3fs: one line naming the extra, exit 1, no `s3:` folder, for report and run."""
    code = ("import sys; sys.modules['s3fs'] = None\n"
            "from tb_iotrace.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TB_IOTRACE_CACHE": str(tmp_path / "cache")}
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for args in (["report", "s3://bucket/logs"],
                 ["export", str(RUN_V1), "--format", "csv", "-o", "s3://bucket/out"]):
        p = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 1, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "s3fs, which is not installed: pip install tb_iotrace[cloud]" in lines[0], p.stderr
        _no_local_url_folder(cwd)


def test_report_fetches_each_object_once(store: dict[str, Any]) -> None:
    from tb_iotrace import remote

    sizes = _put_logdir(store["fs"], store["bucket"])
    url = store["url"] + "/logs"
    local = store["cwd"].parent / "logs"
    for key in sizes:
        (local / key[len("logs/"):]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / "jax_io.xplane.pb" if key.endswith(".pb") else RUN_V1 / "plugins" / "iotrace" /
                        Path(key).name, local / key[len("logs/"):])
    before = remote.STATS.bytes, remote.STATS.objects
    rc, out, err = _cli("report", url, "--json", "--no-progress")
    assert rc == 0, err
    assert remote.STATS.bytes - before[0] == sum(sizes.values())     # every capture and record, once
    assert remote.STATS.objects - before[1] == len(sizes)             # and nothing else (the event file)
    rc, want, _ = _cli("report", str(local), "--json", "--no-progress")
    assert rc == 0
    got_doc, want_doc = json.loads(out), json.loads(want)
    assert [r["run"] for r in got_doc["runs"]] == [r["run"] for r in want_doc["runs"]] == ["iotrace", "s1"]
    assert json.dumps(got_doc["runs"], sort_keys=True).count('"files"') > 0
    assert _strip_paths(got_doc) == _strip_paths(want_doc)

    again = remote.STATS.bytes
    assert _cli("report", url, "--no-progress")[0] == 0
    assert remote.STATS.bytes == again                               # cached: nothing fetched
    store["fs"].put_file(str(CAPTURE), f"{store['bucket']}/logs/plugins/iotrace/vm.21889.npz")   # changed
    store["fs"].invalidate_cache()
    rc, _, err = _cli("report", url, "--no-progress")
    assert remote.STATS.bytes - again == CAPTURE.stat().st_size       # only the changed object again
    _no_local_url_folder(store["cwd"])


def _strip_paths(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _strip_paths(v) for k, v in doc.items() if k not in ("path", "source")}
    if isinstance(doc, list):
        return [_strip_paths(v) for v in doc]
    return doc


def test_export_writes_objects(store: dict[str, Any]) -> None:
    _put_logdir(store["fs"], store["bucket"])
    url = store["url"]
    rc, _, err = _cli("export", f"{url}/logs", "--run", "iotrace", "--format", "csv", "-o", f"{url}/out/tables",
                      "--no-progress")
    assert rc == 0, err
    rc, _, err = _cli("export", f"{url}/logs/plugins/iotrace/vm.21889.json", "--format", "chrome",
                      "-o", f"{url}/out/trace.json", "--no-progress")
    assert rc == 0, err
    got = _listed(store, "out")
    assert set(got) == {"out/tables/files.csv", "out/tables/ops.csv", "out/trace.json"}
    assert all(size > 0 for size in got.values())
    assert json.loads(store["fs"].cat_file(f"{store['bucket']}/out/trace.json"))["traceEvents"]
    _no_local_url_folder(store["cwd"])


def test_errors_are_one_line(store: dict[str, Any]) -> None:
    """A missing bucket, a missing key: one line, exit 1, nothing written locally."""
    for args, says in ((["report", f"{store['url']}x/logs"], "no such bucket or object"),
                       (["report", f"{store['url']}/nothing/here"], "no such bucket or object"),
                       (["export", f"{store['url']}x/logs", "--format", "csv", "-o", f"{store['url']}/o"],
                        "no such bucket or object")):
        rc, out, err = _cli(*args, "--no-progress")
        assert rc == 1 and out == ""
        assert len(err.strip().splitlines()) == 1 and says in err, err
    assert _listed(store, "") == {}
    _no_local_url_folder(store["cwd"])
