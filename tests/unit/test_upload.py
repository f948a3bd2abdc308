"""tb_iotrace.cli._upload: RecordUploader, ``tb-iotrace run --logdir URL``'s uploads of the
records staged locally (fsspec's memory:// filesystem as the bucket).

Proves: a sync sends what changed since the last one, the tables before the record JSON readers
open first, never a hidden (temporary) file, and nothing twice; a failing streak is one stderr
line (none when quiet) and the next success clears it; finish removes the staging folder and
hands the record JSONs to the summary child when the last upload worked, else keeps the folder
and names it (the URL's credentials left out); an unwritable logdir is said at once and the run
goes on; a URL without a client is refused before any staging folder is made; with an interval
the uploads run on their own thread.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tb_iotrace.cli import _upload
from tb_iotrace.cli._upload import RecordUploader
from tb_iotrace.store import remote, staging
from tb_iotrace.store.record_files import record_dir


@pytest.fixture()
def bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str, list[Any]]]:
    """(fs, URL, what was handed to the summary child) of a folder of its own in memory://."""
    import fsspec

    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    from tb_iotrace.recording import landing

    handed: list[Any] = []
    monkeypatch.setattr(landing, "keep_for_landing", lambda files: handed.append(files) or [])
    monkeypatch.setattr(landing, "landed_uploaded", lambda items: None)
    fs = fsspec.filesystem("memory")
    name = f"tbio-upload-{os.getpid()}-{tmp_path.name}"
    fs.mkdir(f"/{name}/logs")
    try:
        yield fs, f"memory://{name}/logs", handed
    finally:
        fs.rm(f"/{name}", recursive=True)


def _write(up: RecordUploader, name: str, data: bytes) -> Path:
    d = record_dir(up.staging)
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)
    return d / name


def _in_bucket(fs: Any, url: str) -> dict[str, bytes]:
    top = "/" + url.split("://", 1)[1] + "/"
    return {p[len(top):]: fs.cat_file(p) for p in fs.find(top)}


def test_sync_sends_what_changed_tables_first(bucket: tuple[Any, str, list[Any]],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    fs, url, _ = bucket
    up = RecordUploader(url + "/", interval=0)
    assert up.url == url and up.failing is None
    sent: list[str] = []
    real = remote.upload_file
    monkeypatch.setattr(remote, "upload_file", lambda p, dest, fs=None: (sent.append(Path(p).name), real(p, dest))[1])
    _write(up, "h.1.json", b"{}")
    _write(up, "h.1.files.npz", b"npz")
    _write(up, ".h.2.json.tmp", b"half")
    (record_dir(up.staging) / "sub").mkdir()
    assert up.sync()
    assert sent == ["h.1.files.npz", "h.1.json"]                   # the JSON readers open first: last
    assert _in_bucket(fs, url) == {"plugins/iotrace/h.1.files.npz": b"npz", "plugins/iotrace/h.1.json": b"{}"}
    assert up.uploaded_records == 1
    assert up.sync() and sent == ["h.1.files.npz", "h.1.json"]     # nothing changed: nothing sent
    p = _write(up, "h.1.json", b'{"v": 2}')
    os.utime(p, ns=(p.stat().st_mtime_ns + 10**9,) * 2)
    assert up.sync() and sent[2:] == ["h.1.json"]
    assert _in_bucket(fs, url)["plugins/iotrace/h.1.json"] == b'{"v": 2}'
    up.discard()
    assert not up.staging.exists()


def test_a_failing_streak_is_said_once(bucket: tuple[Any, str, list[Any]], monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    fs, url, _ = bucket
    up = RecordUploader(url, interval=0)
    real = remote.upload_file
    down = [True]

    def flaky(p: Any, dest: str, fs: Any = None) -> int:
        if down[0]:
            raise remote.RemoteError("storage down")
        return real(p, dest)

    monkeypatch.setattr(remote, "upload_file", flaky)
    _write(up, "h.1.json", b"{}")
    assert not up.sync() and not up.sync()
    err = capsys.readouterr().err
    assert err.count("upload failed, retrying at the next flush: storage down") == 1
    assert err.startswith("tb-iotrace run: ") and up.failing == "storage down"
    down[0] = False
    assert up.sync() and up.failing is None and up.uploaded_records == 1
    down[0] = True
    _write(up, "h.2.json", b"{}")
    assert not up.sync(quiet=True) and capsys.readouterr().err == ""   # quiet: nothing said
    assert not up.sync() and capsys.readouterr().err == ""             # the same streak
    up.discard()


def test_finish_lands_the_records_and_removes_the_staging(bucket: tuple[Any, str, list[Any]]) -> None:
    fs, url, handed = bucket
    up = RecordUploader(url, interval=0)
    _write(up, "h.1.json", b"{}")
    _write(up, "h.1.files.npz", b"t")
    _write(up, "h.2.json", b"{}")
    up.finish()
    assert up.ok and not up.staging.exists()
    [files] = handed
    assert sorted((p.name, u) for p, u in files) == [("h.1.json", url + "/plugins/iotrace/h.1.json"),
                                                     ("h.2.json", url + "/plugins/iotrace/h.2.json")]
    assert len(_in_bucket(fs, url)) == 3


def test_finish_keeps_what_was_not_uploaded(bucket: tuple[Any, str, list[Any]], monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fs, url, handed = bucket
    secret = url.replace("memory://", "memory://user:hunter2@")
    up = RecordUploader(url, interval=0)
    up.url = secret                                                # (as a URL with credentials reads)

    def fail(*a: Any, **k: Any) -> int:
        raise remote.RemoteError("denied")

    monkeypatch.setattr(remote, "upload_file", fail)
    _write(up, "h.1.json", b"{}")
    up.finish()
    err = capsys.readouterr().err
    assert not up.ok and up.staging.is_dir() and handed == []
    assert "were not uploaded" in err and str(up.staging) in err and "(denied)" in err
    assert "hunter2" not in err
    up.discard()


def test_an_unwritable_logdir_is_said_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    up = RecordUploader(f"memory://tbio-no-such-{os.getpid()}-{tmp_path.name}/logs", interval=0)
    err = capsys.readouterr().err
    assert "cannot write to the logdir" in err and str(up.staging) in err
    assert up.failing is not None and up.staging.is_dir()
    assert not up.sync()                                           # nothing to send, still failing
    up.discard()


def test_a_url_without_a_client_makes_no_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    with pytest.raises(remote.RemoteError, match="nosuchscheme"):
        RecordUploader("nosuchscheme://bucket/logs", interval=0)
    assert not staging.where().exists() or list(staging.where().glob("run-*")) == []


def test_the_interval_uploads_on_its_own_thread(bucket: tuple[Any, str, list[Any]]) -> None:
    fs, url, _ = bucket
    up = RecordUploader(url, interval=0.02)
    _write(up, "h.1.json", b"{}")
    up.start()
    assert up._thread is not None and up._thread.name == "tb-iotrace-upload"
    deadline = time.monotonic() + 5
    while up.uploaded_records == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert up.uploaded_records == 1 and _in_bucket(fs, url) == {"plugins/iotrace/h.1.json": b"{}"}
    up.finish()
    assert not up._thread.is_alive() and up.ok
    still = _upload.RecordUploader(url, interval=0)
    still.start()
    assert still._thread is None                                   # no interval: no thread
    still.discard()
