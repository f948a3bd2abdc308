"""Logdirs and outputs on s3:// and gs:// (tb_iotrace.store.remote), against local servers started
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

pytestmark = pytest.mark.slow   # starts local S3 and GCS servers: ~40 s in all (./dev.sh quick leaves it out)

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
    _fresh_clients()
    fs = fsspec.filesystem(server.scheme, skip_instance_cache=True)
    bucket = f"b{os.urandom(4).hex()}"
    fs.mkdir(bucket)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return {"fs": fs, "bucket": bucket, "url": f"{server.scheme}://{bucket}", "cwd": cwd, "server": server,
            "env": {**os.environ, **server.env, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}}


def _fresh_clients() -> None:
    """fsspec keeps one client per class and arguments: drop those made for another server."""
    import fsspec

    for sch in ("s3", "gs"):
        fsspec.get_filesystem_class(sch).clear_instance_cache()


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
    """Objects under bucket/prefix, listed through the server by a fresh client. Objects only:
    s3fs's find, when its listing came back empty and the first object landed just after, gives
    the prefix itself as a directory (a stress run saw ``summaries`` listed so)."""
    import fsspec

    fs = fsspec.filesystem(store["server"].scheme, skip_instance_cache=True)
    root = f"{store['bucket']}/{prefix}".rstrip("/")
    return {k[len(store["bucket"]) + 1:]: int(v["size"]) for k, v in fs.find(root, detail=True).items()
            if v.get("type") != "directory" and k.rstrip("/") != root}


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
    from tb_iotrace.store import remote

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
    for args in (["report", "s3://bucket/logs"], ["run", "--logdir", "s3://bucket/logs", "--", "true"],
                 ["export", str(RUN_V1), "--format", "csv", "-o", "s3://bucket/out"]):
        p = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 1, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "s3fs, which is not installed: pip install tb_iotrace[cloud]" in lines[0], p.stderr
        _no_local_url_folder(cwd)


def test_report_fetches_each_object_once(store: dict[str, Any]) -> None:
    from tb_iotrace.store import remote

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
    assert sorted(h["source"] for r in got_doc["runs"] for h in r["hosts"]) == \
        [f"{url}/plugins/iotrace/vm.21889.json", f"{url}/plugins/profile/s1/vm.xplane.pb"]

    rc, out, err = _cli("report", url + "/plugins/iotrace", "--json", "--no-progress")   # a records folder
    assert rc == 0, err
    assert [h["host"] for r in json.loads(out)["runs"] for h in r["hosts"]] == ["vm.21889"]

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
    # the object tables are written too, empty but for their header when the run made no request
    assert set(got) == {"out/tables/files.csv", "out/tables/ops.csv", "out/tables/objects.csv",
                        "out/tables/requests.csv", "out/trace.json"}
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


JOB = ROOT / "tests" / "unit" / "fixtures" / "cloud_job.py"


def _start_run(store: dict[str, Any], url: str, how: str,
               env: dict[str, str] | None = None) -> tuple[Any, Path, Path]:
    data = store["cwd"].parent / "data.bin"
    data.write_bytes(os.urandom(65536))
    marker = store["cwd"].parent / "go"
    proc = subprocess.Popen([sys.executable, "-m", "tb_iotrace", "run", "--logdir", url, "--flush", "0.3", "--",
                             sys.executable, str(JOB), str(data), str(marker), how],
                            cwd=store["cwd"], env=env or store["env"], stderr=subprocess.PIPE, text=True)
    return proc, data, marker


def _wait_for(pred: Any, timeout: float = 30.0) -> Any:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = pred()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_run_uploads_each_flush_and_a_killed_job_leaves_its_last(store: dict[str, Any]) -> None:
    url = store["url"] + "/logs"
    proc, data, marker = _start_run(store, url, "kill")

    def bytes_read() -> int | None:
        """The job's bytes read from data.bin, as the report of the bucket's records says."""
        rc, out, _ = _cli("report", url, "--json", "--no-progress")
        if rc != 0:
            return None
        [host] = json.loads(out)["runs"][0]["hosts"]
        got = [f["counters"]["POSIX_BYTES_READ"] for f in host["files"] if f["path"] == str(data)]
        return got[0] if got and got[0] == data.stat().st_size else None

    # a periodic flush with the whole read reaches the bucket while the job still runs
    assert _wait_for(bytes_read) == data.stat().st_size
    assert proc.poll() is None
    keys = [k for k in _listed(store, "logs") if k.endswith(".json")]
    assert len(keys) == 1 and keys[0].startswith("logs/plugins/iotrace/")
    marker.write_text("")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + 9, err                  # the job's own exit (SIGKILL)
    assert "upload failed" not in err and "not uploaded" not in err, err
    rc, out, err = _cli("report", url, "--json", "--no-progress")
    assert rc == 0, err
    [host] = json.loads(out)["runs"][0]["hosts"]
    assert host["partial"] is True                            # its last periodic flush
    assert bytes_read() == data.stat().st_size
    _no_local_url_folder(store["cwd"])


def _storage_failed(proc: Any, url: str, first: str, cwd: Path, seen: str = "") -> None:
    """The job kept its exit code (3); stderr (``seen`` of it read already) said the first failure
    and the outcome, one line each; the records are in the folder named, not in the cwd."""
    _, err = proc.communicate(timeout=120)
    err = seen + err
    assert proc.returncode == 3, err
    lines = err.strip().splitlines()
    assert len(lines) == 2, err
    assert first in lines[0], err
    assert lines[1].startswith(f"tb-iotrace run: the records were not uploaded to {url}"), err
    kept = Path(lines[1].rsplit("kept in ", 1)[1])
    assert list(kept.glob("plugins/iotrace/*.json"))
    _no_local_url_folder(cwd)


def test_run_keeps_the_exit_code_when_the_bucket_is_missing(store: dict[str, Any]) -> None:
    url = store["url"] + "-missing/logs"
    proc, _, marker = _start_run(store, url, "3")
    marker.write_text("")
    _storage_failed(proc, url, "no such bucket", store["cwd"])


def test_run_keeps_the_exit_code_when_the_server_stops(tmp_path: Path) -> None:
    """The S3 server stopped mid-run (after a flush reached it). S3 only: gcsfs retries a dead
    server for about 30 s per call, which would make this test slow, not different."""
    import fsspec

    srv = start_s3()
    fs = fsspec.filesystem("s3", skip_instance_cache=True, endpoint_url=srv.endpoint,
                           key="testing", secret="testing")
    fs.mkdir("own")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {**os.environ, **srv.env, "TB_IOTRACE_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    url = "s3://own/logs"
    proc, _, marker = _start_run({"cwd": cwd}, url, "3", env)
    try:
        _wait_for(lambda: [k for k in fs.find("own/logs") if k.endswith(".json")])
    finally:
        srv.stop()
    # a periodic flush after the stop says it failed; then the job ends (its marker written at
    # once, a loaded machine ran no flush between the two: only the last upload's line came)
    seen = proc.stderr.readline()
    marker.write_text("")
    _storage_failed(proc, url, "upload failed, retrying at the next flush", cwd, seen)


def test_import_darshan_to_a_url(store: dict[str, Any], tmp_path: Path) -> None:
    import darshan

    log = Path(darshan.__file__).parent / "examples" / "example_logs" / "dxt.darshan"
    url = store["url"] + "/logs"
    rc, _, err_url = _cli("import-darshan", str(log), "--logdir", url)
    assert rc == 0, err_url
    rc, _, err = _cli("import-darshan", str(log), "--logdir", str(tmp_path / "local"))
    assert rc == 0, err
    [want] = (tmp_path / "local").rglob("*.xplane.pb")
    key = "logs/" + want.relative_to(tmp_path / "local").as_posix()
    assert _listed(store, "logs") == {key: want.stat().st_size}
    assert err_url.startswith(f"wrote {store['url']}/{key}: "), err_url
    _no_local_url_folder(store["cwd"])


def test_a_wrong_key_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto checking the keys (it accepts any by default): report, export and import-darshan
    say access denied in one line and write nothing."""
    import moto.settings

    srv = start_s3()
    try:
        for k, v in srv.env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
        _fresh_clients()
        for args in (["report", "s3://bucket/logs"],
                     ["export", str(RUN_V1), "--format", "csv", "-o", "s3://bucket/out"]):
            rc, out, err = _cli(*args, "--no-progress")
            assert rc == 1 and out == ""
            assert len(err.strip().splitlines()) == 1 and "access denied" in err, err
        assert sorted(p.name for p in tmp_path.iterdir()) == []
    finally:
        srv.stop()


class _Profiler:
    """What TraceHandler uses of torch.profiler.profile: PyTorch's own trace export."""

    def export_chrome_trace(self, path: str) -> None:
        shutil.copyfile(DATA / "kineto_gpu_synthetic.pt.trace.json", path)


def test_torch_trace_handler_uploads_the_trace(store: dict[str, Any]) -> None:
    from tb_iotrace.recording import landing
    from tb_iotrace.recording.pytorch import TraceHandler

    handler = TraceHandler(store["url"] + "/torch", worker_name="w0")
    handler(_Profiler())
    [written] = handler.written
    assert landing.wait_idle(600)            # its summary child, done: nothing else in the bucket
    got = _listed(store, "torch")
    summary = {k: v for k, v in got.items() if k.startswith("torch/plugins/iotrace/summaries/")}
    assert sorted(k.rsplit(".", 2)[-2] for k in summary) == ["jobfacts", "summary"], got
    [key] = sorted(set(got) - set(summary))
    assert written == f"{store['url']}/{key}" and key.startswith("torch/w0.") and key.endswith(".pt.trace.json")
    body = store["fs"].cat_file(f"{store['bucket']}/{key}")
    assert len(body) == got[key]
    doc = json.loads(body)                                    # PyTorch's trace with tb_iotrace's part
    assert doc["traceEvents"] and any("no I/O recorded" in n for n in doc["tb_iotrace"]["notes"])
    assert not os.listdir(handler.spool())                    # nothing left behind locally
    _no_local_url_folder(store["cwd"])


def test_the_mirror_is_updated_in_place(store: dict[str, Any]) -> None:
    """A second fetch keeps the mirror's path and unchanged files (same inode: a reader's open
    map stays valid), and drops what left the bucket."""
    from tb_iotrace.store import remote
    from tb_iotrace.store.logdir import is_read_name

    _put_logdir(store["fs"], store["bucket"])
    url = store["url"] + "/logs"
    first = remote.fetch(url, is_read_name)
    pb = first / "plugins" / "profile" / "s1" / "vm.xplane.pb"
    inode, mtime = pb.stat().st_ino, pb.stat().st_mtime_ns
    assert not (first / "events.out.tfevents.1").exists()
    store["fs"].rm(f"{store['bucket']}/logs/plugins/iotrace", recursive=True)
    store["fs"].invalidate_cache()
    second = remote.fetch(url, is_read_name)
    assert second == first and pb.stat().st_ino == inode
    assert pb.stat().st_mtime_ns == mtime          # the tab keys its loaded captures on it
    assert sorted(p.relative_to(first).as_posix() for p in first.rglob("*") if p.is_file()) == \
        ["plugins/profile/s1/vm.xplane.pb"]


def test_tensorboard_tab_on_a_url_logdir(store: dict[str, Any]) -> None:
    """The I/O tab under `tensorboard --logdir URL`: the runs listed, a capture drawn as from
    the same files on disk; a missing bucket is said in the tab."""
    from plugin_client import make_client

    sizes = _put_logdir(store["fs"], store["bucket"])

    def cached() -> int:
        return sum(f.stat().st_size for f in (store["cwd"].parent / "cache" / "objects").rglob("*") if f.is_file())

    _, get = make_client(store["url"] + "/logs")
    code, body = get("/runs")
    assert code == 200 and body["message"] == ""
    assert {r["run"]: r["hosts"] for r in body["runs"]} == {"iotrace": ["vm.21889"], "s1": ["vm"]}
    # listing the runs fetched the records' JSON only; a capture is fetched when opened
    assert cached() == sizes["logs/plugins/iotrace/vm.21889.json"]
    local = store["cwd"].parent / "local" / "plugins" / "profile" / "s1"
    local.mkdir(parents=True)
    shutil.copyfile(CAPTURE, local / "vm.xplane.pb")
    _, get_local = make_client(local.parents[2])
    code, cap = get("/capture", run="s1", host="vm")
    assert code == 200, cap
    assert cap == get_local("/capture", run="s1", host="vm")[1]
    assert get("/capture", run="iotrace", host="vm.21889")[0] == 200
    assert cached() == sum(sizes.values())
    assert get("/runs", refresh="1")[0] == 200 and cached() == sum(sizes.values())   # nothing fetched twice
    _, get_missing = make_client(store["url"] + "-missing/logs")
    code, body = get_missing("/runs")
    assert code == 200 and body["runs"] == [] and "no such bucket" in body["message"]
    _no_local_url_folder(store["cwd"])


def test_the_cache_is_bounded(store: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Over TB_IOTRACE_CACHE_BYTES, the least recently used objects go; those the current
    fetch uses stay (its mirror must be readable), and a later fetch brings them back."""
    from tb_iotrace.store import remote
    from tb_iotrace.store.logdir import is_read_name

    sizes = _put_logdir(store["fs"], store["bucket"])
    store["fs"].put_file(str(CAPTURE), f"{store['bucket']}/other/plugins/profile/s2/vm.xplane.pb")
    monkeypatch.setenv("TB_IOTRACE_CACHE_BYTES", str(CAPTURE.stat().st_size))
    objects = store["cwd"].parent / "cache" / "objects"

    def cached() -> int:
        return sum(f.stat().st_size for f in objects.rglob("*") if f.is_file())

    remote.fetch(store["url"] + "/logs", is_read_name)
    assert cached() == sum(sizes.values())                  # over the bound, but all in use
    remote.fetch(store["url"] + "/other", is_read_name)
    assert cached() == CAPTURE.stat().st_size               # the first logdir's objects went
    before = remote.STATS.bytes
    remote.fetch(store["url"] + "/logs", is_read_name)
    assert remote.STATS.bytes - before == sum(sizes.values())


def _tab_hosts(logdir: str, run: str) -> tuple[dict, list[str]]:
    """A new TensorBoard's "All hosts" of the URL logdir's one run ``run``, and the file names of
    the captures it decoded to answer."""
    from plugin_client import counting_client

    _, get, decoded = counting_client(logdir)
    code, runs = get("/runs")
    assert code == 200 and [r["run"] for r in runs["runs"]] == [run], runs
    code, got = get("/hosts", run=run, host="__all__")
    assert code == 200, got
    return got, decoded


def test_a_window_published_to_a_url_lands_with_its_summary_in_the_bucket(store: dict[str, Any],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile window tb_iotrace publishes to a URL logdir: the summary child keeps its
    summary and job facts in the bucket beside it, of the object's version; a TensorBoard on
    the URL answers "All hosts" from them, without fetching or decoding the capture, and the
    row is the capture's (failed first: no summary in the bucket, the capture fetched and
    decoded); once the tab has fetched the capture, still (failed first: the fetched copy was
    identified by its local stat, which the bucket's summary is not of). A summary of another
    version of the object is not trusted."""
    from plugin_client import make_client

    from tb_iotrace.analysis.capture_row import capture_row
    from tb_iotrace.model.tab.load import load_any
    from tb_iotrace.recording import landing
    from tb_iotrace.recording.window_writer import WindowWriter
    from tb_iotrace.store import jobfacts, remote, summaries
    from tb_iotrace.store.mirror_versions import lazy_entry

    monkeypatch.delenv(landing.ENV, raising=False)
    monkeypatch.setenv(summaries.ENV, "1")
    logdir = store["url"] + "/logs"
    writer = WindowWriter(logdir, "tensorflow")
    staged = writer.open_staging() / "plugins" / "profile" / "2026_01_01_00_00_00" / "w0.xplane.pb"
    staged.parent.mkdir(parents=True)
    shutil.copyfile(CAPTURE, staged)
    [url] = writer.close_staging(publish=True)
    assert landing.wait_idle(600)
    kept = sorted(k.rsplit(".", 2)[-2] for k in _listed(store, "logs/plugins/iotrace/summaries"))
    assert kept == ["jobfacts", "summary"], kept
    fresh = capture_row("w0", load_any(str(CAPTURE), "w0"))

    def hosts() -> tuple[dict, list[str]]:
        return _tab_hosts(logdir, "2026_01_01_00_00_00")

    got, decoded = hosts()
    assert decoded == [] and got["hosts"] == [fresh]
    mirrored = remote.mirror_path(logdir) / "plugins" / "profile" / "2026_01_01_00_00_00" / "w0.xplane.pb"
    assert lazy_entry(mirrored) is not None                         # listed, not fetched
    assert jobfacts.load(str(mirrored)).state == "ok"              # the job verdict's facts too
    cached = store["cwd"].parent / "cache" / "objects"
    assert not any(f.stat().st_size == CAPTURE.stat().st_size for f in cached.rglob("*") if f.is_file())   # not fetched
    _, get = make_client(logdir)                                   # the capture opened: fetched now
    assert get("/capture", run="2026_01_01_00_00_00", host="w0")[0] == 200
    assert lazy_entry(mirrored) is None and mirrored.stat().st_size == CAPTURE.stat().st_size
    got, decoded = hosts()                                         # still that version: its summary holds
    assert decoded == [] and got["hosts"] == [fresh]
    remote.evict(limit=0)                                          # its cached copy evicted: the mirror's
    fetched = remote.STATS.objects                                 # link holds it, not fetched again
    assert remote.materialize(mirrored) and remote.STATS.objects == fetched
    assert mirrored.read_bytes() == CAPTURE.read_bytes()
    store["fs"].put_file(str(DATA / "gpu_multi_worker.xplane.pb"), url.split("://", 1)[1])   # another version
    got, decoded = hosts()
    assert decoded == ["w0.xplane.pb"] and got["hosts"] == [capture_row("w0", load_any(str(DATA / "gpu_multi_worker.xplane.pb"), "w0"))]
    _no_local_url_folder(store["cwd"])


def test_a_trace_handler_trace_uploaded_to_a_url_lands_with_its_summary_in_the_bucket(
        store: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PyTorch trace tb_iotrace's trace_handler uploads to a URL logdir: the summary child keeps
    its summary and job facts in the bucket, in the trace's folder's plugins/iotrace/summaries/,
    of the object's version; a TensorBoard on the URL answers "All hosts" from them without
    fetching or decoding the trace (failed first: the trace fetched and decoded), the row the
    trace's; no local copy is left; a summary of another version of the object is not trusted."""
    from tb_iotrace.analysis.capture_row import capture_row
    from tb_iotrace.model.tab.load import load_any
    from tb_iotrace.recording import landing
    from tb_iotrace.recording.pytorch import TraceHandler
    from tb_iotrace.store import jobfacts, remote, staging, summaries
    from tb_iotrace.store.mirror_versions import lazy_entry

    monkeypatch.delenv(landing.ENV, raising=False)
    monkeypatch.setenv(summaries.ENV, "1")
    logdir = store["url"] + "/logs"
    handler = TraceHandler(logdir + "/torch", worker_name="w0")
    handler(_Profiler())
    [url] = handler.written
    assert landing.wait_idle(600)
    kept = sorted(k.rsplit(".", 2)[-2] for k in _listed(store, "logs/torch/plugins/iotrace/summaries"))
    assert kept == ["jobfacts", "summary"], kept
    assert not os.listdir(handler.spool())
    assert not staging.root().exists() or not any(staging.root().rglob("*.pt.trace.json")), list(staging.root().rglob("*"))
    name = url.rsplit("/", 1)[1]
    local = tmp_path / name
    local.write_bytes(store["fs"].cat_file(url.split("://", 1)[1]))

    def hosts() -> tuple[dict, list[str]]:
        return _tab_hosts(logdir, "torch")

    got, decoded = hosts()
    [row] = got["hosts"]
    assert decoded == [] and row == capture_row(row["host"], load_any(str(local), row["host"]))
    mirrored = remote.mirror_path(logdir) / "torch" / name
    assert lazy_entry(mirrored) is not None                         # listed, not fetched
    assert jobfacts.load(str(mirrored)).state == "ok"              # the job verdict's facts too
    other = tmp_path / "other.pt.trace.json"                        # another version of the object
    other.write_bytes(local.read_bytes().replace(b'"traceEvents"', b'"traceEvents" ', 1))
    store["fs"].put_file(str(other), url.split("://", 1)[1])
    got, decoded = hosts()
    assert decoded == [name] and got["hosts"] == [capture_row(row["host"], load_any(str(other), row["host"]))]
    _no_local_url_folder(store["cwd"])


def test_a_run_record_uploaded_to_a_url_lands_with_its_summary_in_the_bucket(
        store: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tb-iotrace run --logdir URL``: once its records are uploaded whole, a summary child
    keeps each one's summary and job facts in the bucket beside it (plugins/iotrace/summaries/),
    of the versions of its JSON and tables; a TensorBoard on the URL answers "All hosts" from
    them without decoding the record (failed first: no summary in the bucket, the record decoded),
    the row the record's; no local copy is left; a record replaced in the bucket is decoded again."""
    from tb_iotrace.analysis.capture_row import capture_row
    from tb_iotrace.model.tab.load import load_any
    from tb_iotrace.recording import landing
    from tb_iotrace.store import jobfacts, remote, staging, summaries

    monkeypatch.setenv(summaries.ENV, "1")              # the tab reads summaries beside captures
    url = store["url"] + "/logs"
    env = {k: v for k, v in store["env"].items() if k != landing.ENV}
    env[summaries.ENV] = "1"
    proc, _, marker = _start_run(store, url, "0", env=env)
    marker.write_text("")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err

    def kept() -> list[str]:
        return sorted(k.rsplit(".", 2)[-2] for k in _listed(store, "logs/plugins/iotrace/summaries"))

    assert _wait_for(lambda: kept() == ["jobfacts", "summary"], timeout=180), kept()
    [key] = [k for k in _listed(store, "logs/plugins/iotrace") if k.endswith(".json") and "/summaries/" not in k]
    local = tmp_path / "got" / key.rsplit("/", 1)[1]
    local.parent.mkdir()
    for k in _listed(store, "logs/plugins/iotrace"):
        if "/summaries/" not in k:
            local.with_name(k.rsplit("/", 1)[1]).write_bytes(store["fs"].cat_file(f"{store['bucket']}/{k}"))
    assert len(list(local.parent.iterdir())) >= 2            # the JSON and its tables
    host = local.name[: -len(".json")]
    fresh = capture_row(host, load_any(str(local), host))
    assert fresh["bytes_read"] > 0

    def hosts() -> tuple[dict, list[str]]:
        return _tab_hosts(url, "iotrace")

    got, decoded = hosts()
    assert decoded == [] and got["hosts"] == [fresh], (decoded, got)
    mirrored = remote.mirror_path(url) / "plugins" / "iotrace" / local.name
    assert jobfacts.load(str(mirrored)).state == "ok"              # the job verdict's facts too
    assert not staging.root().exists() or not any(staging.root().rglob("*.json")), list(staging.root().rglob("*"))
    other = tmp_path / local.name                                  # another version of the record
    other.write_bytes(local.read_bytes() + b"\n")
    store["fs"].put_file(str(other), f"{store['bucket']}/{key}")
    got, decoded = hosts()
    assert decoded == [local.name] and got["hosts"] == [fresh]
    _no_local_url_folder(store["cwd"])
