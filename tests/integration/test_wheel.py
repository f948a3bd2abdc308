"""The wheel carries the I/O tab's bundle: it is a build output (tools/bundle_frontend.mjs, run by
setup.py's build_frontend step), not a file of the source tree, so a wheel built from a fresh
checkout must make it and ship it, with the frontend sources beside it."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = "tb_iotrace/plugin/frontend-build/index.js"


# what .gitignore leaves out, for a tree that is not a git checkout (a source archive)
_OUTPUTS = shutil.ignore_patterns("*.egg-info", "*.so", "*.o", "*.pyc", "__pycache__", "frontend-build", "_native.c",
                                  "_codec.c", ".git")


def build_outputs(folder: str, names: list[str]) -> set[str]:
    top = Path(folder) == ROOT and {n for n in names if n.startswith(("build", "test-artifacts", ".venv", ".whl", ".gl",
                                                                       ".pytest_cache"))}
    return set(_OUTPUTS(folder, names)) | (top or set())


def checkout_copy(dst: Path) -> Path:
    """The files git tracks or would track (the working tree as a fresh clone would have it:
    no build outputs, no built bundle), links kept."""
    if not (ROOT / ".git").exists():
        shutil.copytree(ROOT, dst, symlinks=True, ignore=build_outputs)
        return dst
    names = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src, out = ROOT / name, dst / name
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree, not yet committed
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            out.symlink_to(src.readlink())
        else:
            shutil.copy2(src, out)
    return dst


@pytest.mark.slow
def test_wheel_from_a_fresh_checkout_ships_the_bundle(tmp_path):
    src = checkout_copy(tmp_path / "src")
    assert not (src / BUNDLE).exists() and not (src / "plugin_frontend" / "index.js").exists()
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                        "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "importable" not in r.stderr  # no "Package would be ignored" warning for the build folder
    (wheel,) = (tmp_path / "dist").glob("tb_iotrace-*.whl")
    subprocess.run(["node", str(ROOT / "tools" / "bundle_frontend.mjs"), "--out", str(tmp_path / "fresh.js")],
                           check=True, capture_output=True)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert z.read(BUNDLE) == (tmp_path / "fresh.js").read_bytes()
    assert {"tb_iotrace/plugin/static/main.js", "tb_iotrace/plugin/static/style.css"} <= names
    assert "tb_iotrace/plugin/static/index.js" not in names
    assert any(n.startswith("tb_iotrace/_native") for n in names) and any(n.startswith("tb_iotrace/_codec") for n in names)


@pytest.mark.slow
def test_an_sdist_builds_a_wheel_with_the_native_modules(tmp_path):
    """pip builds from an sdist when no wheel fits: the sdist must carry the native sources the
    cffi builders read (native/sources.cmake and the files it names), or the build fails."""
    src = checkout_copy(tmp_path / "src")
    r = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path / "sdist")], cwd=src,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (sdist,) = (tmp_path / "sdist").glob("tb_iotrace-*.tar.gz")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                        "-w", str(tmp_path / "dist"), str(sdist)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("tb_iotrace-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assert BUNDLE in names
    assert any(n.startswith("tb_iotrace/_native") for n in names) and any(n.startswith("tb_iotrace/_codec") for n in names)
