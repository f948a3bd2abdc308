"""How a profile window is published (tb_iotrace.recording.window_writer), with the framework's
profiler played by a stand-in that writes a capture into the folder it is given, as TensorFlow
and JAX do: uploaded whole to a URL (fsspec's memory://), renamed into a folder, two windows of
one second kept apart, a failed upload kept locally with one warning; and the checks of
``--profile-every``/``--profile-for``. The real frameworks: tests/integration/test_profile_windows.py."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.store import remote
from tb_iotrace.recording import periodic, window_writer as windows

SESSION = "2026_11_26_15_00_00"


@pytest.fixture()
def profiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """A stand-in profiler: start remembers the folder, stop writes <folder>/plugins/profile/
    SESSION/vm.xplane.pb (a different payload each window)."""
    state: dict[str, Any] = {"logdir": None, "n": 0, "started": []}

    def start(framework: str, logdir: str) -> None:
        state["logdir"] = logdir
        state["started"].append(framework)

    def stop(framework: str) -> None:
        state["n"] += 1
        d = Path(state["logdir"]) / "plugins" / "profile" / SESSION
        d.mkdir(parents=True)
        (d / "vm.xplane.pb").write_bytes(b"\x0a\x00" * (100 * state["n"]))

    monkeypatch.setattr(windows, "_start_profiler", start)
    monkeypatch.setattr(windows, "_stop_profiler", stop)
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    return state


def _staged(tmp_path: Path) -> list[Path]:
    root = tmp_path / "staging"
    return sorted(root.iterdir()) if root.exists() else []


def test_windows_go_to_a_folder_whole_and_apart(profiler: dict[str, Any], tmp_path: Path) -> None:
    w = windows.WindowWriter(str(tmp_path / "logs"), "tensorflow")
    got = []
    for _ in range(3):
        assert w.start() and w.active == "tensorflow"
        assert not w.start()                               # one window at a time
        got += w.stop()
    prof = tmp_path / "logs" / "plugins" / "profile"
    assert got == [str(prof / s / "vm.xplane.pb") for s in (SESSION, SESSION + "_2", SESSION + "_3")]
    assert [Path(p).stat().st_size for p in got] == [200, 400, 600]
    assert sorted(p.name for p in prof.rglob("*")) == sorted([SESSION, SESSION + "_2", SESSION + "_3"] +
                                                             ["vm.xplane.pb"] * 3)   # no hidden temporary
    assert w.windows == 3 and w.published == got and _staged(tmp_path) == []
    assert w.stop() == []                                  # nothing open


def test_windows_are_uploaded_to_a_url(profiler: dict[str, Any], tmp_path: Path) -> None:
    import fsspec

    url = f"memory://b{os.getpid()}/logs"
    w = windows.WindowWriter(url, "jax")
    assert w.start() and profiler["started"] == ["jax"]
    assert profiler["logdir"].startswith(str(tmp_path / "staging"))   # profiled locally
    [dest] = w.stop()
    assert dest == f"{url}/plugins/profile/{SESSION}/vm.xplane.pb"
    fs = fsspec.filesystem("memory")
    assert fs.cat_file(dest[len("memory://"):]) == b"\x0a\x00" * 100
    assert _staged(tmp_path) == [] and not (tmp_path / "logs").exists()


def test_a_failed_upload_is_kept_and_said_once(profiler: dict[str, Any], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    def refuse(local: Any, url: str, fs: Any = None) -> int:
        raise remote.RemoteError(f"{url}: access denied (check the credentials)")

    monkeypatch.setattr(remote, "upload_file", refuse)
    w = windows.WindowWriter("memory://nobucket/logs", "tensorflow")
    with caplog.at_level(logging.WARNING, logger="tb_iotrace"):
        for _ in range(2):
            assert w.start()
            assert w.stop() == []
    said = [r.getMessage() for r in caplog.records if "was not written" in r.getMessage()]
    assert len(said) == 1 and "access denied" in said[0]
    kept = _staged(tmp_path)
    assert len(kept) == 2 and any(str(k) in said[0] for k in kept)
    assert all((k / "plugins" / "profile" / SESSION / "vm.xplane.pb").is_file() for k in kept)
    assert w.windows == 0


def test_a_url_without_its_client_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import fsspec  # noqa: F401  (fsspec.registry is then its module in sys.modules)

    monkeypatch.setitem(sys.modules, "s3fs", None)
    # fsspec keeps the class of a scheme once loaded (another test of this worker may have): drop it
    monkeypatch.delitem(sys.modules["fsspec.registry"]._registry, "s3", raising=False)
    with pytest.raises(remote.RemoteError, match=r"s3fs, which is not installed: pip install tb_iotrace\[cloud\]"):
        windows.WindowWriter("s3://bucket/logs")


def test_no_window_without_a_framework(profiler: dict[str, Any], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    assert windows.pick_framework([]) is None
    assert windows.pick_framework(["tensorflow"]) == "tensorflow"
    assert windows.pick_framework(["jax"]) == "jax"
    assert windows.pick_framework(["tensorflow", "jax"]) == "tensorflow"
    assert windows.pick_framework(["tensorflow", "jax"], prefer="jax") == "jax"
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert windows.pick_framework(["tensorflow", "jax"]) == "jax"
    monkeypatch.setattr(windows, "loaded_framework", lambda prefer=None: None)
    w = windows.WindowWriter(str(tmp_path / "logs"))
    assert not w.start() and w.active is None and profiler["started"] == [] and _staged(tmp_path) == []
    with pytest.raises(ValueError, match="framework must be one of"):
        windows.WindowWriter(str(tmp_path / "logs"), "torch")


def test_periodic_windows_check_their_times(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="never end before the next"):
        periodic.PeriodicWindows(str(tmp_path), 2.0, 2.0)
    with pytest.raises(ValueError, match="> 0"):
        periodic.PeriodicWindows(str(tmp_path), 0.0, 1.0)


@pytest.mark.parametrize("args, says", [
    (["--profile-for", "1"], "--profile-for needs --profile-every"),
    (["--profile-every", "1", "--profile-for", "2"], "must be shorter than --profile-every"),
    (["--profile-every", "0"], "from more than 0"),
])
def test_run_checks_the_window_options(args: list[str], says: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from tb_iotrace.cli import main

    try:
        rc = main(["run", "--logdir", str(tmp_path / "logs"), *args, "--", "true"])
    except SystemExit as exc:       # a value that is not seconds: argparse's usage error
        rc = exc.code
    assert rc not in (0, None)
    assert says in capsys.readouterr().err
    assert not (tmp_path / "logs").exists()


def test_two_processes_in_one_second_keep_both_windows(profiler: dict[str, Any], tmp_path: Path) -> None:
    """Two writers (two processes of a job on one host) whose windows stop in the same second
    write the same <session>/<host>.xplane.pb: the second one took the first's place in a bucket.
    Now it gets the next free name, in a bucket as in a folder."""
    import fsspec

    for dest in (f"memory://two{os.getpid()}/logs", str(tmp_path / "logs")):
        got = []
        for _ in range(2):
            w = windows.WindowWriter(dest, "tensorflow")
            assert w.start()
            got += w.stop()
        assert [p.rsplit("/", 2)[-2] for p in got] == [SESSION, SESSION + "_2"]
        if dest.startswith("memory://"):
            fs = fsspec.filesystem("memory")
            assert [len(fs.cat_file(p[len("memory://"):])) for p in got] == [len(b"\x0a\x00") * 100 * k
                                                                            for k in (profiler["n"] - 1, profiler["n"])]


def test_tb_iotrace_imports_no_framework() -> None:
    """`import tb_iotrace` and `enable()` (which wraps the frameworks' profilers once they are
    imported) import neither TensorFlow, Keras, JAX nor a cloud client; `tb_iotrace.keras` is
    what imports Keras."""
    import subprocess
    import sys

    code = ("import sys, tb_iotrace; tb_iotrace.enable()\n"
            "import tb_iotrace.recording.periodic, tb_iotrace.recording.url_profiles, tb_iotrace.analysis.jobwindows\n"
            "print(sorted(m for m in ('tensorflow', 'keras', 'jax', 'fsspec', 's3fs', 'gcsfs') if m in sys.modules))")
    root = str(Path(__file__).resolve().parents[2])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": root})
    assert r.returncode == 0 and r.stdout.strip() == "[]", (r.stdout, r.stderr[-2000:])
