"""tb_iotrace.store.xplane.wire: the vectorized varint encoding equals the scalar one (and a
reference encoder) at every length boundary and for negative int64; Rows lays out present parts only
and wraps rows as length-delimited fields; top_level_fields walks messages and refuses
truncated or malformed ones with a ValueError saying where."""
from __future__ import annotations

import numpy as np
import pytest

from tb_iotrace.store.xplane import wire

EDGES = [0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**35, 2**49 - 1, 2**56, 2**63 - 1]


def ref_varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def test_scalar_varint_matches_reference_and_negatives_take_ten_bytes() -> None:
    for v in EDGES + [-1, -(2**63), 2**64 - 1]:
        assert wire.varint_bytes(v) == ref_varint(v), v
    assert len(wire.varint_bytes(-1)) == 10 and wire.varint_bytes(300) == b"\xac\x02"


def test_matrix_rows_equal_the_scalar_encoding() -> None:
    vals = np.array(EDGES + [-1, -5, -(2**63)], dtype=np.int64)
    mat, lengths = wire.varint_matrix(vals)
    for row, n, v in zip(mat, lengths, vals.tolist()):
        assert bytes(row[:n]) == wire.varint_bytes(v), v
    assert wire.varint_lengths(np.array([0, 127, 128, 2**63], dtype=np.uint64)).tolist() == [1, 1, 2, 10]
    u = np.array([2**64 - 1, 2**63], dtype=np.uint64)
    m, n = wire.varint_matrix(u)
    assert [bytes(r[:k]) for r, k in zip(m, n)] == [ref_varint(2**64 - 1), ref_varint(2**63)]
    empty, el = wire.varint_matrix(np.zeros(0, dtype=np.int64))
    assert empty.shape[0] == 0 and len(el) == 0


def test_rows_keep_only_present_parts_and_wrap() -> None:
    rows = wire.Rows(3)
    rows.varint_field(1, [5, 300, 0]).varint_field(2, [-1, 7, 9], present=[True, False, True])
    rows.const(b"\x1a\x00", present=np.array([False, False, True]))
    rows.wrap(4)
    seg = rows.finish()
    bodies = [wire.tag(1, 0) + ref_varint(5) + wire.tag(2, 0) + ref_varint(-1),
              wire.tag(1, 0) + ref_varint(300),
              wire.tag(1, 0) + b"\x00" + wire.tag(2, 0) + b"\x09" + b"\x1a\x00"]
    want = [wire.len_field_bytes(4, b) for b in bodies]
    assert len(seg) == 3 and seg.lengths.tolist() == [len(w) for w in want]
    got = bytes(seg.data)
    ends = seg.ends().tolist()
    assert [got[a:b] for a, b in zip([0] + ends[:-1], ends)] == want


def test_a_long_row_gets_a_two_byte_length() -> None:
    rows = wire.Rows(2).const(b"\x08\x01" * 100).wrap(3)
    seg = rows.finish()
    assert seg.lengths.tolist() == [203, 203] and bytes(seg.data[:3]) == b"\x1a\xc8\x01"


def test_walk_of_every_wire_type() -> None:
    msg = (wire.tag(1, 0) + ref_varint(2**40) + wire.tag(2, 1) + b"\x01" * 8 + wire.len_field_bytes(3, b"abc")
           + wire.tag(4, 5) + b"\x02" * 4 + wire.tag(20000, 0) + b"\x00")
    got = list(wire.top_level_fields(msg))
    assert [(f, t) for f, t, _, _ in got] == [(1, 0), (2, 1), (3, 2), (4, 5), (20000, 0)]
    _, _, s, e = got[2]
    assert msg[s:e] == b"abc"
    assert wire.read_varint(memoryview(msg), got[0][2], len(msg))[0] == 2**40
    assert [f for f, *_ in wire.top_level_fields(msg, limit=got[1][3])] == [1, 2]
    assert list(wire.top_level_fields(b"")) == []


@pytest.mark.parametrize("data, words", [
    (wire.len_field_bytes(3, b"abcdef")[:-1], "runs past the end"),
    (wire.tag(2, 1) + b"\x00" * 7, "runs past the end"),
    (wire.tag(1, 0) + b"\x80", "varint runs past the end"),
    (b"\x80", "varint runs past the end"),
    (wire.tag(1, 0) + b"\xff" * 11, "longer than 10 bytes"),
    (b"\x00\x01", "invalid field number 0"),
    (wire.tag(5, 3), "unsupported wire type 3"),
    (wire.tag(5, 4), "unsupported wire type 4"),
    (wire.tag(5, 7), "unsupported wire type 7"),
])
def test_corrupt_messages_raise_value_error(data: bytes, words: str) -> None:
    with pytest.raises(ValueError) as exc:
        list(wire.top_level_fields(data))
    assert words in str(exc.value)
