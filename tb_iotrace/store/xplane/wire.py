"""Vectorized protobuf wire-format encoding with numpy.

Building a million XEvents through the protobuf Python API costs several microseconds per
event and per stat. The events tb_iotrace writes contain only varint fields and nested
messages of varint fields, so their bytes can be produced column by column with numpy and
handed to protobuf (``MergeFromString``) or spliced into a serialized XSpace directly:
protobuf defines the concatenation of two serialized messages as their merge, and repeated
fields append.

``Rows`` builds one byte string per row (one XEvent per row) from parts appended left to
right; ``Segments`` is the result: all rows' bytes as one flat uint8 array plus a length per
row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WT_VARINT = 0
WT_LEN = 2

_SHIFTS = (np.arange(10, dtype=np.uint64) * np.uint64(7))
_THRESHOLDS = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)


@dataclass
class Segments:
    """One byte string per row: ``data`` is their concatenation, ``lengths`` their sizes."""

    data: np.ndarray  # uint8
    lengths: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.lengths)

    def ends(self) -> np.ndarray:
        return np.cumsum(self.lengths)


def varint_lengths(values: np.ndarray) -> np.ndarray:
    """Encoded size of each uint64 value as a varint (1..10)."""
    v = np.asarray(values, dtype=np.uint64)
    return 1 + np.searchsorted(_THRESHOLDS, v, side="right").astype(np.int64)


def _as_uint64(values) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype != np.uint64:
        # Signed values as two's complement, which is how protobuf encodes int64
        # (negative numbers take 10 bytes).
        arr = arr.astype(np.int64, copy=False).view(np.uint64)
    return arr


def varint_matrix(values) -> tuple[np.ndarray, np.ndarray]:
    """Varint encoding of each value as a (n, width) uint8 matrix padded on the right, and
    each row's encoded length."""
    arr = _as_uint64(values)
    lengths = varint_lengths(arr)
    width = int(lengths.max()) if len(arr) else 1
    groups = ((arr[:, None] >> _SHIFTS[:width]) & np.uint64(0x7F)).astype(np.uint8)
    groups[np.arange(width)[None, :] < (lengths - 1)[:, None]] |= 0x80
    return groups, lengths


def varint_bytes(value: int) -> bytes:
    """Varint encoding of one non-negative or int64 value."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(field_number: int, wire_type: int) -> bytes:
    return varint_bytes((field_number << 3) | wire_type)


def len_field_bytes(field_number: int, payload: bytes) -> bytes:
    return tag(field_number, WT_LEN) + varint_bytes(len(payload)) + payload


class Rows:
    """Builds one serialized byte string per row from parts appended left to right.

    Each part is a padded (n, width) uint8 matrix plus a length per row (0 = absent on that
    row). :meth:`finish` lays all parts side by side and keeps, row by row, the first
    ``length`` bytes of each part: a single boolean compress, no per-byte index arrays.
    """

    def __init__(self, n: int):
        self.n = n
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []

    def _present(self, lengths: np.ndarray, present) -> np.ndarray:
        return lengths if present is None else np.where(present, lengths, 0)

    def const(self, blob: bytes, present=None) -> "Rows":
        mat = np.broadcast_to(np.frombuffer(blob, dtype=np.uint8), (self.n, len(blob)))
        self.parts.append((mat, self._present(np.full(self.n, len(blob), dtype=np.int64), present)))
        return self

    def varint(self, values, present=None) -> "Rows":
        mat, lengths = varint_matrix(values)
        self.parts.append((mat, self._present(lengths, present)))
        return self

    def varint_field(self, field_number: int, values, present=None) -> "Rows":
        self.const(tag(field_number, WT_VARINT), present)
        return self.varint(values, present)

    def lengths(self) -> np.ndarray:
        total = np.zeros(self.n, dtype=np.int64)
        for _, lengths in self.parts:
            total += lengths
        return total

    def wrap(self, field_number: int) -> "Rows":
        """Turn each row into a length-delimited field: prepend ``tag + varint(len)``."""
        mat, lengths = varint_matrix(self.lengths())
        head = np.broadcast_to(np.frombuffer(tag(field_number, WT_LEN), dtype=np.uint8),
                               (self.n, len(tag(field_number, WT_LEN))))
        self.parts[:0] = [(head, np.full(self.n, head.shape[1], dtype=np.int64)), (mat, lengths)]
        return self

    def finish(self) -> Segments:
        mats = [m for m, _ in self.parts]
        keeps = [np.arange(m.shape[1])[None, :] < lengths[:, None] for m, lengths in self.parts]
        data = np.hstack(mats)[np.hstack(keeps)]
        return Segments(data, self.lengths())


def top_level_fields(data, limit: int | None = None):
    """Walk the top-level fields of a serialized message without decoding them.

    Yields ``(field_number, wire_type, value_start, value_end)``; for varint and fixed fields
    the range covers the value bytes. Raises ValueError on a malformed tag, an unknown wire
    type, or a length running past the end of the data (a truncated or corrupt message).
    """
    mv = memoryview(data)
    end = len(mv) if limit is None else limit
    pos = 0
    while pos < end:
        key, pos = read_varint(mv, pos, end)
        field_number, wire_type = key >> 3, key & 7
        if field_number == 0:
            raise ValueError(f"invalid field number 0 at byte {pos}")
        start = pos
        if wire_type == 0:
            _, pos = read_varint(mv, pos, end)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, pos = read_varint(mv, pos, end)
            start = pos
            pos += length
        elif wire_type == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire_type} at byte {start}")
        if pos > end:
            raise ValueError(f"field {field_number} runs past the end of the data ({pos} > {end})")
        yield field_number, wire_type, start, pos


def read_varint(mv, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ValueError("varint runs past the end of the data")
        b = mv[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError(f"varint longer than 10 bytes at byte {pos}")

