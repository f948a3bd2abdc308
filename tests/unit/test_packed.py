"""tb_iotrace.plugin.packed: the narrowest dtype chosen at every integer boundary, bools and
unsigned columns, big-endian input, columns that cannot be packed, fields JSON cannot hold
(NaN, hostile text), and damaged or truncated bodies refused with ValueError, never
decoded into wrong columns."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from tb_iotrace.plugin import packed


@pytest.mark.parametrize("values, want", [
    ([-128, 127], "i8"), ([-129], "i16"), ([128], "i16"), ([-32768, 32767], "i16"), ([32768], "i32"),
    ([-(2 ** 31), 2 ** 31 - 1], "i32"), ([2 ** 31], "f64"), ([-(2 ** 31) - 1], "f64")])
def test_narrow_picks_the_narrowest_type_at_each_boundary(values: list[int], want: str) -> None:
    name, col = packed.narrow(np.array(values, dtype=np.int64))
    assert name == want and col.dtype == packed.DTYPES[want]
    assert col.tolist() == values


def test_bools_unsigned_and_big_endian_columns_keep_their_values() -> None:
    assert packed.narrow(np.array([True, False]))[0] == "i8"
    name, col = packed.narrow(np.array([2 ** 64 - 1], dtype=np.uint64))
    assert name == "f64" and col[0] == float(2 ** 64 - 1)
    big = np.array([1, -70_000], dtype=">i8")
    fields, cols = packed.unpack(packed.pack({}, {"b": big, "f": np.array([1.5, -0.25], dtype=">f8")}))
    assert cols["b"].tolist() == [1, -70_000] and cols["f"].tolist() == [1.5, -0.25]


@pytest.mark.parametrize("bad", [np.array(["a", "b"]), np.array([object(), 1], dtype=object),
                                 np.array([1 + 2j])])
def test_columns_that_are_not_numbers_are_refused(bad: np.ndarray) -> None:
    with pytest.raises(TypeError, match="cannot pack"):
        packed.narrow(bad)


def test_a_field_json_cannot_hold_is_refused_and_hostile_text_round_trips() -> None:
    with pytest.raises(ValueError):
        packed.pack({"q": float("nan")}, {})
    name = "h\x1b[31m\n\x00é\u2028"
    fields, cols = packed.unpack(packed.pack({"host": name}, {name: np.array([1, 2])}))
    assert fields == {"host": name} and cols[name].tolist() == [1, 2]


def test_float_columns_keep_nan_and_infinity() -> None:
    _, cols = packed.unpack(packed.pack({}, {"x": np.array([np.nan, np.inf, -0.0])}))
    assert np.isnan(cols["x"][0]) and cols["x"][1] == np.inf and np.signbit(cols["x"][2])


def test_every_column_starts_on_8_bytes_whatever_the_header_length() -> None:
    for pad in range(9):
        body = packed.pack({"p": "x" * pad}, {"a": np.array([1], np.int8), "b": np.array([2, 3], np.int16),
                                               "c": np.array([4.0])})
        (n,) = struct.unpack_from("<I", body, 4)
        base = -(-(8 + n) // 8) * 8
        assert len(body) % 8 == 0 and base % 8 == 0
        _, cols = packed.unpack(body)
        assert [c.tolist() for c in cols.values()] == [[1], [2, 3], [4.0]]


@pytest.mark.parametrize("body", [b"", b"TBI", b"TBIO", b"TBIO\x01\x00", b"XXXX\x00\x00\x00\x00"])
def test_short_or_foreign_bodies_are_refused(body: bytes) -> None:
    with pytest.raises(ValueError):
        packed.unpack(body)


def test_truncated_answers_are_refused_not_misread() -> None:
    body = packed.pack({"k": 1}, {"a": np.arange(100, dtype=np.int64) * 1000})
    (n,) = struct.unpack_from("<I", body, 4)
    with pytest.raises(ValueError):          # header cut
        packed.unpack(body[:8 + n // 2])
    with pytest.raises(ValueError):          # columns cut
        packed.unpack(body[:-8])
    with pytest.raises(ValueError):          # header length past the end
        packed.unpack(body[:4] + struct.pack("<I", len(body) * 2) + body[8:])
