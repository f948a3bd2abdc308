"""tb_iotrace.store.staging: staging folders of URL logdirs, the newest kept and those of live
processes never removed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tb_iotrace.store import staging


@pytest.fixture()
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache" / "remote"))
    monkeypatch.delenv(staging.ENV_KEEP, raising=False)
    return tmp_path / "cache" / "staging"


def dead_pid() -> int:
    """A pid no process has: above the kernel's pid_max (at most 2**22), so never reused."""
    return 2**31 - 2


def folder(root: Path, name: str, age: int) -> Path:
    p = root / name
    p.mkdir(parents=True)
    t = 1_700_000_000 + age
    os.utime(p, (t, t))
    return p


def test_root_is_beside_the_remote_cache(base: Path) -> None:
    assert staging.root() == base and base.is_dir()


@pytest.mark.parametrize("raw,want", [(None, staging.KEEP), ("3", 3), ("-2", 0), ("x", staging.KEEP)])
def test_keep_from_the_environment(base: Path, monkeypatch: pytest.MonkeyPatch, raw: str | None, want: int) -> None:
    if raw is not None:
        monkeypatch.setenv(staging.ENV_KEEP, raw)
    assert staging.keep() == want


def test_prune_keeps_the_newest_and_the_live_ones(base: Path) -> None:
    gone = dead_pid()
    old = [folder(base, f"run-{gone}-{i}", age=i) for i in range(4)]          # oldest first
    live = folder(base, f"run-{os.getpid()}-x", age=-10)                      # the oldest, but alive
    other = folder(base, f"window-{gone}-y", age=-20)                         # another kind
    unnamed = folder(base, "run-nopid", age=-30)                              # no pid: not alive
    (base / "run-file").write_text("a file, not a folder")
    removed = staging.prune("run", kept=2)
    assert sorted(removed) == sorted([old[0], old[1], unnamed])
    assert all(p.exists() for p in (old[2], old[3], live, other, base / "run-file"))


def test_new_prunes_then_names_the_folder_by_pid(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(staging.ENV_KEEP, "0")
    stale = folder(base, f"window-{dead_pid()}-a", age=0)
    made = staging.new("window")
    assert made.is_dir() and made.name.startswith(f"window-{os.getpid()}-") and not stale.exists()


def test_prune_files_keeps_the_newest_files(base: Path) -> None:
    torch = base / "torch"
    torch.mkdir(parents=True)
    files = []
    for i in range(4):
        p = torch / f"t{i}.json"
        p.write_text("{}")
        os.utime(p, (1_700_000_000 + i, 1_700_000_000 + i))
        files.append(p)
    (torch / "sub").mkdir()
    removed = staging.prune_files("torch", kept=1)
    assert sorted(removed) == files[:3] and files[3].exists() and (torch / "sub").is_dir()
