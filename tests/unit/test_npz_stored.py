"""npz_stored.write lays out what np.savez writes: np.load and zipfile read every member back
exactly (dtype, shape, bytes), with the comment; large ones go through zipfile."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from tb_iotrace.store import npz_stored

ARRAYS = [
    ("i8", np.arange(-5, 11, dtype=np.int64)),
    ("u1", np.frombuffer(b"/data/\xff\xfe name", np.uint8)),
    ("u8", np.array([2**64 - 1, 0, 7], np.uint64)),
    ("f8", np.array([0.5, -1e300, np.inf])),
    ("i2.col", np.array([1, -2, 3], np.int16)),
    ("b", np.array([True, False])),
    ("names", np.array(["POSIX_READS", "POSIX_BYTES_READ", "é"], dtype=str)),
    ("empty", np.zeros(0, np.int32)),
    ("empty_str", np.array([], dtype=str)),
    ("scalar", np.array(3.25)),
    ("matrix", np.arange(12, dtype=np.int32).reshape(3, 4)),
    ("strided", np.arange(20, dtype=np.int64)[::3]),
    ("fortran", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))),
    ("naïve", np.array([1], np.uint32)),
]


def _written(arrays, comment=b"") -> io.BytesIO:
    buf = io.BytesIO()
    npz_stored.write(buf, arrays, comment)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("in_one_call", [True, False])
def test_members_read_back_exactly(monkeypatch, in_one_call) -> None:
    if not in_one_call:
        monkeypatch.setattr(npz_stored, "IN_ONE_CALL_BYTES", 0)   # zipfile's streamed path
    buf = _written(ARRAYS, b"tbio-gen:42")
    with zipfile.ZipFile(buf) as z:
        assert z.testzip() is None and z.comment == b"tbio-gen:42"
        assert z.namelist() == [n + ".npy" for n, _ in ARRAYS]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as got:
        for name, a in ARRAYS:
            b = got[name]
            assert b.dtype == a.dtype and b.shape == a.shape and np.array_equal(b, a), name


def test_same_npy_bytes_as_numpy() -> None:
    """Each member is what np.save writes (of the array in C order: a Fortran-ordered one is stored
    as its C-ordered copy, equal when read)."""
    for name, a in ARRAYS:
        ours = _written([(name, a)])
        theirs = io.BytesIO()
        np.save(theirs, a if a.flags.c_contiguous else np.ascontiguousarray(a), allow_pickle=False)
        with zipfile.ZipFile(ours) as z:
            assert z.read(name + ".npy") == theirs.getvalue(), name


def test_object_arrays_are_refused() -> None:
    with pytest.raises(ValueError):
        npz_stored.write(io.BytesIO(), [("o", np.array([{}], dtype=object))])


@pytest.mark.parametrize("short", [False, True])
def test_a_file_gets_the_same_bytes_in_pieces(tmp_path, monkeypatch, short) -> None:
    """To a file the pieces go with os.writev (no copy of the arrays into one buffer), short writes
    continued; the bytes are those written to memory, and the file object knows its position."""
    if short:
        real = npz_stored.os.writev
        monkeypatch.setattr(npz_stored.os, "writev", lambda fd, bufs: real(fd, [bytes(bufs[0])[:1000]]))
    want = _written(ARRAYS, b"c").getvalue()
    path = tmp_path / "t.npz"
    with open(path, "wb") as fh:
        fh.write(b"")
        npz_stored.write(fh, ARRAYS, b"c")
        assert fh.tell() == len(want)
    assert path.read_bytes() == want
