"""Hostile and broken logdir URLs: credentials never printed or stored, a URL without a bucket
never taken for a local folder, run arguments that are not finite seconds refused up front."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud_servers import Server, start_s3

ROOT = Path(__file__).resolve().parents[2]

# every place a URL can carry a secret; SECRETS are what must never come out
URLS = ["s3://AKIDKEYONE:s3cr3tWORD@{bucket}/logs",
        "s3://{bucket}/logs?access_key=AKIDKEYTWO&secret_key=s3cr3tQUERY",
        "s3://{bucket}/logs?X-Amz-Credential=AKIDKEY3%2F2026&X-Amz-Signature=deadbeefsig0123",
        "http://someuser:s3cr3tHTTP@127.0.0.1:{port}/logs",
        "https://127.0.0.1:{port}/logs?token=s3cr3tTOKEN#s3cr3tFRAG"]
SECRETS = ["s3cr3t", "AKIDKEY", "deadbeefsig", "someuser"]


def _cli(*args: str) -> tuple[int, str, str]:
    from tb_iotrace.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def s3() -> Iterator[Server]:
    pytest.importorskip("s3fs")
    srv = start_s3()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture()
def env(s3: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    import fsspec

    for k, v in s3.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    fsspec.get_filesystem_class("s3").clear_instance_cache()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return {"cwd": cwd, "cache": tmp_path / "cache", "port": s3.endpoint.rsplit(":", 1)[1]}


def _no_secret(text: str) -> None:
    for s in SECRETS:
        assert s not in text, text


def test_redact_url_as_a_class() -> None:
    from tb_iotrace.base.redact import redact_url, scrub, where
    from tb_iotrace.store import remote

    for form in URLS:
        url = form.format(bucket="bkt", port=9)
        _no_secret(redact_url(url))
        _no_secret(scrub(f"{url} failed: {url.split('://', 1)[1]} ({urllib.parse.unquote(url)})", url))
        _no_secret(where(url))
        # the local mirror's folder names (they stay on disk)
        _no_secret(str(remote.mirror_path(url, Path("/tmp/hostile-x/cache"))))


@pytest.mark.parametrize("form", URLS)
def test_no_secret_in_report_errors_or_cache_names(env: dict[str, Any], form: str) -> None:
    url = form.format(bucket="nosuchbucket", port=env["port"])
    rc, out, err = _cli("report", url, "--no-progress")
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    _no_secret(out + err)
    assert "***" in err or "nosuchbucket" in err or "127.0.0.1" in err
    if env["cache"].exists():
        for p in env["cache"].rglob("*"):
            _no_secret(str(p))


@pytest.mark.parametrize("form", URLS[:3])
def test_the_tabs_runs_message_has_no_secret(env: dict[str, Any], form: str) -> None:
    from tb_iotrace.plugin.cache import LogdirIndex

    idx = LogdirIndex(form.format(bucket="nosuchbucket", port=env["port"]))
    idx.sync()
    assert idx.remote_error
    _no_secret(idx.remote_error)


def test_an_s3_url_without_a_bucket_is_an_error_never_a_local_folder(env: dict[str, Any]) -> None:
    """``run --logdir s3://`` (no bucket) once wrote into ./s3:/ when that folder existed."""
    local = env["cwd"] / "s3:"
    local.mkdir()
    for logdir in ("s3://", "s3:///", "gs://"):
        r = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--logdir", logdir, "--flush", "0",
                            "--", sys.executable, "-c", "open('/dev/null').read()"],
                           cwd=env["cwd"], capture_output=True, text=True, timeout=120)
        assert r.returncode != 0, r.stderr
        assert "no bucket" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert list(local.rglob("*")) == [], "s3:// was written as a local folder"
        rc, out, err = _cli("report", logdir, "--no-progress")
        assert rc == 1 and "no bucket" in err, err


@pytest.mark.parametrize("args", [["--profile-every", "inf"], ["--profile-every", "nan"],
                                  ["--profile-every", "1e308"], ["--profile-every", "-3"],
                                  ["--flush", "1e308"], ["--flush", "nan"], ["--flush", "inf"],
                                  ["--flush", "-1"], ["--profile-every", "10", "--profile-for", "inf"],
                                  ["--profile-every", "10", "--profile-for", "0"]])
def test_run_arguments_that_are_not_seconds_are_one_usage_error(tmp_path: Path, args: list[str]) -> None:
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--logdir", str(tmp_path / "logs"), *args,
                        "--", sys.executable, "-c", "print('child ran')"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "child ran" not in r.stdout, r.stderr
    assert "seconds" in r.stderr and len([l for l in r.stderr.splitlines() if "error" in l]) == 1, r.stderr


def test_a_child_with_an_absurd_flush_interval_records_without_a_traceback(tmp_path: Path) -> None:
    """The children read TB_IOTRACE_FLUSH_S themselves (a job may set it): inf/1e308/nan fall back."""
    from tb_iotrace.cli.run import child_env

    for raw in ("inf", "1e308", "nan"):
        env = child_env(str(tmp_path / raw), None)
        env["TB_IOTRACE_FLUSH_S"] = raw
        r = subprocess.run([sys.executable, "-c", "import time; time.sleep(0.2)"], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert list((tmp_path / raw).rglob("*.json")), "no record written"


def _bucket(env: dict[str, Any]) -> tuple[Any, str]:
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    bucket = f"b{os.urandom(4).hex()}"
    fs.mkdir(bucket)
    return fs, bucket


@pytest.mark.parametrize("lazy", [False, True])
def test_long_object_names_never_fail_the_logdir(env: dict[str, Any], lazy: bool) -> None:
    """Names of 235 to 255 bytes (legal locally and on S3: the temporary names beside them must not
    pass NAME_MAX), multibyte ones, and one longer than a local file's name can be (legal on
    S3): the logdir is read, its other captures with it."""
    from tb_iotrace.plugin.cache import LogdirIndex, _lazy
    from tb_iotrace.store import logdir, remote

    fs, bucket = _bucket(env)
    capture = (ROOT / "tests" / "data" / "jax_io.xplane.pb")
    suffix = ".xplane.pb"
    names = ["ok" + suffix] + ["h" * (n - len(suffix)) + suffix for n in (235, 245, 250, 255, 300)]
    names.append("é" * 120 + suffix)          # 250 bytes in UTF-8
    for i, name in enumerate(names):
        fs.put_file(str(capture), f"{bucket}/logs/plugins/profile/s{i}/{name}")
    url = f"s3://{bucket}/logs"
    got = remote.fetch(url, logdir.is_read_name, lazy=_lazy if lazy else None)
    mirrored = {p.name for p in got.rglob("*" + suffix)}
    assert {n for n in names if len(n.encode()) <= 255} == mirrored
    if not lazy:
        rc, out, err = _cli("report", url, "--no-progress")
        assert rc == 0, err
        assert "ok" in out
    else:
        idx = LogdirIndex(url)
        runs = idx.runs()
        assert idx.remote_error is None
        assert len(runs) == len(mirrored)
        for r in runs:                         # each opens (fetched when opened)
            for host, path in r.hosts.items():
                assert idx.capture(path, host) is not None


def test_staging_folders_of_failed_uploads_are_bounded(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run to a missing bucket keeps its records in a staging folder (nothing lost); 20
    such runs keep the newest few, not 20. A folder whose process still runs is never removed."""
    from tb_iotrace.cli._upload import RecordUploader
    from tb_iotrace.recording.window_writer import WindowWriter
    from tb_iotrace.store.runrecord import record_dir

    monkeypatch.setenv("TBIO_STAGING_KEEP", "3")
    base = env["cache"].parent / "staging"
    live = []
    for i in range(20):
        up = RecordUploader("s3://nosuchbucket-staging/logs", interval=0)
        record_dir(up.staging).mkdir(parents=True, exist_ok=True)
        (record_dir(up.staging) / f"h.{i}.json").write_text("{}")
        with contextlib.redirect_stderr(io.StringIO()):
            up.finish()
        assert up.staging.is_dir() and not up.ok        # kept: its upload failed
        live.append(up.staging)
        os.utime(up.staging, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
    runs = sorted(p.name for p in base.glob("run-*"))
    # (made by this process, which still runs: none could be pruned yet)
    assert len(runs) == 20
    # the same 20 as another process's, long gone
    for p in live:
        p.rename(p.with_name(p.name.replace(f"run-{os.getpid()}-", "run-999999999-")))
    up = RecordUploader("s3://nosuchbucket-staging/logs", interval=0)
    left = sorted(base.glob("run-*"))
    assert len(left) == 3 + 1 and up.staging in left
    kept = sorted(int(p.stat().st_mtime_ns) for p in left if p != up.staging)
    assert kept == [10**18 + i * 10**9 for i in (17, 18, 19)]       # the newest
    up.discard()
    # profile windows for a URL: the same bound
    for i in range(6):
        (base / f"window-999999999-{i}").mkdir()
    w = WindowWriter("s3://nosuchbucket-staging/logs")
    w.open_staging()
    assert len(list(base.glob("window-*"))) == 3 + 1
    w.close_staging(publish=False)


def test_pytorch_traces_that_were_not_uploaded_are_bounded(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    from tb_iotrace.recording.pytorch.parent.handler import TraceHandler

    monkeypatch.setenv("TBIO_STAGING_KEEP", "3")
    h = TraceHandler("s3://nosuchbucket-torch/traces")
    for i in range(10):
        out = tmp_path / f"w.{i}.pt.trace.json"
        out.write_text("{}")
        os.utime(out, ns=(10**18 + i * 10**9, 10**18 + i * 10**9))
        h._upload(str(out))
    kept = sorted(p.name for p in (env["cache"].parent / "staging" / "torch").iterdir())
    assert kept == ["w.7.pt.trace.json", "w.8.pt.trace.json", "w.9.pt.trace.json"]
