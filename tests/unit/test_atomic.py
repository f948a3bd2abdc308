"""tb_iotrace.base.atomic: a reader never sees half a file, and a failed write changes nothing."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tb_iotrace.base.atomic import Staged, atomic_write


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    target.write_bytes(b"old")
    atomic_write(target, lambda fh: fh.write(b"new contents"), fsync=True)
    assert target.read_bytes() == b"new contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_a_failing_writer_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    target.write_bytes(b"old")

    def half(fh) -> None:
        fh.write(b"half of a")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, half)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_staged_files_are_renamed_together_in_staging_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.bin"
    with Staged() as st:
        st.write(a, lambda fh: fh.write(b"A"))
        st.write(b, lambda fh: fh.write(b"B"))
        # nothing visible under the targets' names before the block ends; temporaries are dot files
        assert not a.exists() and not b.exists()
        assert all(p.name.startswith(".") and p.name.endswith(".tmp") for p in tmp_path.iterdir())
    assert (a.read_bytes(), b.read_bytes()) == (b"A", b"B")


def test_an_error_inside_the_block_renames_nothing(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.bin"
    a.write_bytes(b"old A")
    with pytest.raises(ValueError):
        with Staged() as st:
            st.write(a, lambda fh: fh.write(b"new A"))
            st.write(b, lambda fh: fh.write(b"new B"))
            raise ValueError("bad input half-way")
    assert a.read_bytes() == b"old A" and not b.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_the_new_file_keeps_the_old_mode_else_0644(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.write_bytes(b"x")
    os.chmod(kept, 0o640)
    atomic_write(kept, lambda fh: fh.write(b"y"))
    fresh = tmp_path / "fresh"
    atomic_write(fresh, lambda fh: fh.write(b"z"))
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    # mkstemp makes 0600: a TensorBoard running as another user could not read that
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
