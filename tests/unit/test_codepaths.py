"""tb_iotrace.base.codepaths: the one rule for which recorded paths are the process loading code."""
from __future__ import annotations

import sys

import pytest

from tb_iotrace.base.codepaths import code_paths, is_code_path, this_python


@pytest.mark.parametrize("path", [
    "/usr/lib/python3.11/os.py",
    "/x/venv/lib/python3.11/site-packages/numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so",
    "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13",
    "/srv/app/__pycache__/train.cpython-311.pyc",
    "/x/venv/pyvenv.cfg",
    "/root/.keras/keras.json",
    "/opt/pkgs/foo-1.0.dist-info/METADATA",
    "",
])
def test_code_by_name_or_place(path: str) -> None:
    assert is_code_path(path)


@pytest.mark.parametrize("path", [
    "/data/train/shard-00001.tfrecord",
    "/tmp/s1.npy",
    "/data/python/images/cat.jpg",        # "python" in a data folder's name is not an interpreter
    "/ckpt/model.pt",
])
def test_data_is_not_code(path: str) -> None:
    assert not is_code_path(path)


def test_prefixes_and_sys_path_entries_and_their_parent_folders() -> None:
    python = {"prefixes": ["/opt/conda"], "path": ["/srv/app/src"]}
    paths = ["/opt/conda/share/zoneinfo/UTC", "/srv/app/src", "/srv/app", "/srv/app/data.bin",
             "/opt/conda", "/data/x.npy", "/srv/app/src/model/__init__.py", "/srv/app/src/model"]
    got = code_paths(paths, python)
    assert got == {"/opt/conda/share/zoneinfo/UTC", "/opt/conda", "/srv/app/src",
                   "/srv/app/src/model/__init__.py", "/srv/app/src/model", "/srv/app"}
    # the prefix "/" would make everything code: it is ignored
    assert code_paths(["/data/x.npy"], {"prefixes": ["/"], "path": []}) == set()


def test_this_python_names_the_running_interpreter() -> None:
    py = this_python()
    assert sys.prefix in py["prefixes"] and py["path"] == [p for p in sys.path if p]
    assert is_code_path(sys.executable, py["prefixes"])     # the interpreter lies under its own prefix
