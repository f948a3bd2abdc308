"""tb_iotrace.base.seconds: a user's number of seconds, finite and within bounds."""
from __future__ import annotations

import pytest

from tb_iotrace.base.seconds import MAX_SECONDS, parse_seconds


@pytest.mark.parametrize("raw,want", [("0", 0.0), (" 2.5 ", 2.5), (3, 3.0), ("1e3", 1000.0),
                                      (str(MAX_SECONDS), MAX_SECONDS)])
def test_accepts_a_finite_number_in_range(raw: object, want: float) -> None:
    assert parse_seconds(raw, "--every") == want


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "1e308", "-1", "-0.001", str(MAX_SECONDS + 1), "abc", "",
                                 "1s"])
def test_refuses_with_one_line_naming_the_option(raw: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_seconds(raw, "TBIO_FLUSH")
    msg = str(err.value)
    assert msg.startswith("TBIO_FLUSH: ") and "\n" not in msg and "seconds" in msg


def test_zero_only_where_allowed() -> None:
    assert parse_seconds("0", "x", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match="more than 0"):
        parse_seconds("0", "x", allow_zero=False)
    assert parse_seconds("0.001", "x", allow_zero=False) == 0.001


def test_a_long_value_is_cut_in_the_message() -> None:
    with pytest.raises(ValueError) as err:
        parse_seconds("9" * 500, "x")
    assert len(str(err.value)) < 200
