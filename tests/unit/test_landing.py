"""tb_iotrace.recording.landing, with subprocess.Popen replaced by a recorder (no child runs):
which settings turn summaries off, which paths a child can read (_usable), the child's command
line and environment, that landed()/landed_uploaded() start the child they should (or drop the
local copies when none can start), and keep_for_landing's moves into a staging folder."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.recording import landing


class _Popen:
    """Popen's stand-in: records the argv and keywords, ends at once."""

    seen: list[tuple[list[str], dict[str, Any]]]

    def __init__(self, argv: list[str], **kw: Any) -> None:
        type(self).seen.append((argv, kw))

    def wait(self, timeout: float | None = None) -> int:
        return 0

    def poll(self) -> int:
        return 0


@pytest.fixture()
def spawned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[list[str], dict[str, Any]]]:
    monkeypatch.delenv(landing.ENV, raising=False)
    monkeypatch.delenv("TBIO_SUMMARIES", raising=False)
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(landing, "_uploading", [])
    monkeypatch.setattr(_Popen, "seen", [], raising=False)
    monkeypatch.setattr(landing.subprocess, "Popen", _Popen)
    return _Popen.seen


@pytest.mark.parametrize(("landed_env", "summaries_env", "on"), [
    (None, None, True), ("1", "yes", True), ("", None, True), ("0", None, False), (" OFF ", None, False),
    ("No", None, False), ("false", None, False), (None, "0", False), ("1", "off", False)])
def test_enabled(monkeypatch: pytest.MonkeyPatch, landed_env: str | None, summaries_env: str | None, on: bool) -> None:
    for name, value in ((landing.ENV, landed_env), ("TBIO_SUMMARIES", summaries_env)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert landing.enabled() is on


def test_usable_wants_a_local_path_and_a_python_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landing.sys, "executable", "/opt/venv/bin/python3.11")
    assert landing._usable("/logs/h.xplane.pb") and landing._usable("rel/h.xplane.pb")
    assert not landing._usable("") and not landing._usable("s3://b/h.xplane.pb")
    assert not landing._usable("gs://b/logs")
    monkeypatch.setattr(landing.sys, "executable", "/usr/bin/uwsgi")     # an embedded interpreter
    assert not landing._usable("/logs/h.xplane.pb")


def test_the_childs_command_line() -> None:
    argv = landing._command([("h1", "/l/h1.xplane.pb"), ("h2", "/l/h2.xplane.pb")], scans=[("/logs", 12.9)],
                            uploaded=[("h3", "/stage/0.h3.xplane.pb", "s3://b/h3.xplane.pb")],
                            records=[("/run", 7)])
    assert argv[:4] == [sys.executable, "-c", landing._PRELUDE, "--facts"]
    assert argv[4:] == ["--scan", "/logs", "12", "--records", "/run", "7",
                        "--uploaded", "h3", "/stage/0.h3.xplane.pb", "s3://b/h3.xplane.pb",
                        "h1", "/l/h1.xplane.pb", "h2", "/l/h2.xplane.pb"]
    assert landing._command([]) == [sys.executable, "-c", landing._PRELUDE, "--facts"]
    assert repr(landing.CHILD) in landing._PRELUDE
    compile(landing._PRELUDE, "<prelude>", "exec")


def test_the_childs_environment_records_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    autostart = os.path.join(landing._ROOT, "tb_iotrace", "recording", "autostart")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([autostart, "/mine", landing._ROOT, ""]))
    monkeypatch.setenv("TB_IOTRACE_RUN_DIR", "/run")
    monkeypatch.setenv("TB_IOTRACE_CACHE", "/cache")
    monkeypatch.setenv("TB_IOTRACE_CACHE_BYTES", "10")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    env = landing._env()
    assert env["PYTHONPATH"].split(os.pathsep) == [landing._ROOT, "/mine"]
    assert "TB_IOTRACE_RUN_DIR" not in env and env["TB_IOTRACE_CACHE"] == "/cache"
    assert env["TB_IOTRACE_CACHE_BYTES"] == "10" and env["TF_CPP_MIN_LOG_LEVEL"] == "1"
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
    assert landing._env()["TF_CPP_MIN_LOG_LEVEL"] == "3"


def test_landed_starts_one_child_for_the_local_captures(spawned: list[Any], tmp_path: Path) -> None:
    cap = tmp_path / "logs" / "plugins" / "profile" / "s" / "h1.xplane.pb"
    landing.landed([str(cap), "s3://b/h2.xplane.pb", ""])
    assert landing.wait_idle(10)
    [(argv, kw)] = spawned
    assert argv[4:] == ["h1", str(cap)]
    assert kw["start_new_session"] and kw["stdout"] == kw["stderr"] == kw["stdin"] == subprocess.DEVNULL
    landing.landed(["s3://b/h2.xplane.pb"])                     # nothing a child could read
    assert landing.wait_idle(10) and len(spawned) == 1


def test_landed_and_landed_profile_start_nothing_when_off(spawned: list[Any], monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    monkeypatch.setenv(landing.ENV, "0")
    landing.landed([str(tmp_path / "h.xplane.pb")])
    landing.landed_profile(str(tmp_path), 5)
    landing.landed_run(str(tmp_path), 5)
    assert landing.wait_idle(10) and spawned == []


def test_landed_profile_hands_the_folder_and_start_to_the_child(spawned: list[Any], tmp_path: Path) -> None:
    landing.landed_profile(str(tmp_path / "logs"), 99)
    landing.landed_profile("gs://b/logs", 99)                  # a URL: the writer's business
    assert landing.wait_idle(10)
    [(argv, _)] = spawned
    assert argv[4:] == ["--scan", str(tmp_path / "logs"), "99"]


def test_uploaded_copies_are_removed_when_no_child_can_start(spawned: list[Any], monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    def refuse(*a: Any, **kw: Any) -> None:
        raise OSError("no fork for you")

    local = tmp_path / "stage" / "0.h.xplane.pb"
    local.parent.mkdir()
    local.write_bytes(b"x")
    monkeypatch.setattr(landing, "_warned", False)
    monkeypatch.setattr(landing.subprocess, "Popen", refuse)
    landing.landed_uploaded([(str(local), "s3://b/logs/h.xplane.pb")])
    assert not local.exists() and landing._warned
    local.write_bytes(b"x")
    monkeypatch.setenv(landing.ENV, "off")
    landing.landed_uploaded([(str(local), "s3://b/logs/h.xplane.pb")])
    assert not local.exists()


def test_landed_uploaded_starts_one_child_and_tracks_it(spawned: list[Any], tmp_path: Path) -> None:
    local = tmp_path / "0.h.xplane.pb"
    local.write_bytes(b"x")
    landing.landed_uploaded([(str(local), "s3://b/logs/plugins/profile/s/h.xplane.pb")])
    [(argv, _)] = spawned
    assert argv[4:] == ["--uploaded", "h", str(local), "s3://b/logs/plugins/profile/s/h.xplane.pb"]
    assert local.exists() and len(landing._uploading) == 1      # the child's to remove
    landing.landed_uploaded([])
    assert len(spawned) == 1


def test_keep_for_landing_moves_each_file_and_a_records_tables(spawned: list[Any], tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    trace = src / "w0.pt.trace.json"
    rec = src / "h.1.json"
    for p in (trace, rec, src / "h.1.npz"):                   # the record's .files.npz is missing
        p.write_text(p.name)
    got = landing.keep_for_landing([(trace, "s3://b/torch/w0.pt.trace.json"), (src / "gone.json", "s3://b/gone.json"),
                                    (rec, "s3://b/iotrace/h.1.json")])
    assert [url for _, url in got] == ["s3://b/torch/w0.pt.trace.json", "s3://b/iotrace/h.1.json"]
    folder = Path(got[0][0]).parent
    assert folder.name.startswith(f"landed-{os.getpid()}-") and folder.parent == tmp_path / "staging"
    assert [Path(p).name for p, _ in got] == ["0.w0.pt.trace.json", "2.h.1.json"]
    assert sorted(p.name for p in folder.iterdir()) == ["0.w0.pt.trace.json", "2.h.1.json", "2.h.1.npz"]
    assert (folder / "2.h.1.npz").read_text() == "h.1.npz" and list(src.iterdir()) == []


@pytest.mark.parametrize("why", ["off", "memory", "empty", "no staging"])
def test_keep_for_landing_moves_nothing(spawned: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                        why: str) -> None:
    f = tmp_path / "h.xplane.pb"
    f.write_bytes(b"x")
    url = "memory://logs/h.xplane.pb" if why == "memory" else "s3://b/h.xplane.pb"
    if why == "off":
        monkeypatch.setenv("TBIO_SUMMARIES", "0")
    if why == "no staging":
        def fail(kind: str) -> Path:
            raise PermissionError("read-only cache")
        monkeypatch.setattr(landing.staging, "new", fail)
    assert landing.keep_for_landing([] if why == "empty" else [(f, url)]) == []
    assert f.read_bytes() == b"x"
