"""Write an ``.npz`` whose members are stored, not deflated: what ``np.savez`` writes (NumPy's
``.npy`` format 1.0 in a plain zip, with a zip comment), read back by ``np.load`` and ``zipfile``.

Small ones (:data:`IN_ONE_CALL_BYTES` or less) are laid out here and written in one call (to a
file, one ``os.writev`` of the headers and the arrays' own memory): ``zipfile`` and
``np.lib.format`` spend ~10 us of Python per member on headers, and a forked DataLoader worker's
record has ~60 members (its file table's columns and its trace's), written at its exit while the
training loop waits for it (``bench/worker_lifetime.py``: 1.9 of its 7.6 ms of CPU, under load,
went to the two zips). Larger ones (a long trace) are streamed through ``zipfile`` (Zip64 where
needed)."""
from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np

IN_ONE_CALL_BYTES = 16 << 20
MAX_MEMBERS = 0xFFFF           # past this the zip needs Zip64's end record: zipfile writes it
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END = struct.Struct("<IHHHHIIH")
_DOS_DATE = 0x21               # 1980-01-01, as zipfile writes members with no date
_ALIGN = 64                    # NumPy pads a header so the data starts 64-byte aligned
_IOV_MAX = 1024                # pieces per writev (Linux's IOV_MAX)


def npy_header(a: np.ndarray) -> bytes:
    """The ``.npy`` 1.0 header of a C-ordered array of a plain dtype (no objects, no fields)."""
    if a.dtype.hasobject or a.dtype.fields is not None:
        raise ValueError(f"not a plain dtype: {a.dtype}")
    text = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (a.dtype.str, tuple(a.shape))
    pad = -(10 + len(text) + 1) % _ALIGN
    body = (text + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body


def write(fh: BinaryIO, arrays: Sequence[tuple[str, np.ndarray]], comment: bytes = b"") -> None:
    """Write ``arrays`` (name, array) as the members ``<name>.npy`` of a stored zip to ``fh``."""
    arrays = [(name, a if a.flags.c_contiguous else np.ascontiguousarray(a)) for name, a in
              ((name, np.asarray(a)) for name, a in arrays)]
    if sum(a.nbytes for _, a in arrays) > IN_ONE_CALL_BYTES or len(arrays) > MAX_MEMBERS:
        _stream(fh, arrays, comment)
        return
    parts: list[bytes | memoryview] = []     # the file, piece by piece: written with one writev
    central = []
    offset = 0
    for name, a in arrays:
        head = npy_header(a)
        data = memoryview(a.reshape(-1).view(np.uint8)) if a.size else b""
        crc = zlib.crc32(data, zlib.crc32(head))
        size = len(head) + a.nbytes
        fname = (name + ".npy").encode("utf-8")
        flags = 0x800 if not fname.isascii() else 0      # a UTF-8 name, as zipfile marks it
        local = _LOCAL.pack(0x04034B50, 20, flags, 0, 0, _DOS_DATE, crc, size, size, len(fname), 0) + fname + head
        parts += (local, data) if a.size else (local,)
        central.append(_CENTRAL.pack(0x02014B50, 20, 20, flags, 0, 0, _DOS_DATE, crc, size, size, len(fname),
                                     0, 0, 0, 0, 0o600 << 16, offset) + fname)
        offset += len(local) + a.nbytes
    tail = b"".join(central)
    parts.append(tail + _END.pack(0x06054B50, 0, 0, len(central), len(central), len(tail), offset,
                                  len(comment)) + comment)
    _write_parts(fh, parts)


def _write_parts(fh: BinaryIO, parts: list[bytes | memoryview]) -> None:
    """``parts`` one after the other: with ``os.writev`` on a file's descriptor (no copy of the
    arrays into one buffer: a worker's record is ~400 KB, and a copy's fresh pages are faulted
    in while the training loop waits), else joined (an in-memory file, or one that encodes what
    it is given: its descriptor is not where the bytes go)."""
    if not isinstance(fh, (io.BufferedWriter, io.BufferedRandom, io.FileIO)):
        fh.write(b"".join(parts))
        return
    fh.flush()
    fd = fh.fileno()
    total = sum(len(p) for p in parts)
    done = 0
    while done < total:                      # a short write (a signal, a full pipe): the rest
        i, skip = 0, done
        while skip >= len(parts[i]):
            skip -= len(parts[i])
            i += 1
        chunk = [memoryview(parts[i])[skip:]] + parts[i + 1:i + _IOV_MAX]
        n = os.writev(fd, chunk)
        if n <= 0:
            raise OSError("writev wrote nothing")
        done += n
    try:
        fh.seek(0, os.SEEK_CUR)     # the file object learns where the descriptor now is
    except (OSError, io.UnsupportedOperation):
        pass


def _stream(fh: BinaryIO, arrays: Sequence[tuple[str, np.ndarray]], comment: bytes) -> None:
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, a in arrays:
            with z.open(name + ".npy", "w", force_zip64=True) as out:
                np.lib.format.write_array(out, a, allow_pickle=False)
        z.comment = comment
