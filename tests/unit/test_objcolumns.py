"""tb_iotrace.store.objcolumns: requests round-trip through columns; malformed stored columns
(not a dict, a column missing, unequal lengths, a wrong type) raise one-line
ObjectColumnsError naming the fault; flags become bools; concat joins in order and sums left_out."""
from __future__ import annotations

from typing import Any

import pytest

from tb_iotrace.store.objcolumns import (COLUMNS, LEFT_OUT, ObjectColumnsError, checked, concat, left_out, rows,
                                         to_columns)


def req(i: int, **over: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"object": f"s3://b/k{i}", "service": "s3", "bucket": "b", "key": f"k{i}", "op": "GET",
                         "range_start": -1, "range_end": -1, "status": 200, "error": "", "bytes": 10 * i,
                         "start_ns": i, "ttfb_ns": i + 1, "end_ns": i + 2, "tid": 7, "pid": 8,
                         "client": "urllib3", "complete": True}
    r.update(over)
    return r


def test_round_trip_keeps_every_request_in_order() -> None:
    reqs = [req(i) for i in range(3)]
    cols = to_columns(reqs)
    assert set(cols) == set(COLUMNS) and cols["key"] == ["k0", "k1", "k2"]
    assert rows(checked(cols)) == reqs
    assert rows(None) == [] and checked(None) is None


@pytest.mark.parametrize("doc, words", [
    ([1, 2], "is a list, not columns"),
    ({c: [] for c in COLUMNS if c != "bytes"}, "lacks the column(s) bytes"),
    ({**to_columns([req(1)]), "status": [200, 404]}, "unequal length"),
    (to_columns([req(1, key=5)]), "column 'key' holds a int, not text"),
    (to_columns([req(1, bytes=True)]), "column 'bytes' holds a bool, not an integer"),
    (to_columns([req(1, status=1.5)]), "column 'status' holds a float, not an integer"),
    (to_columns([req(1, error=None)]), "column 'error' holds a NoneType"),
])
def test_malformed_columns_are_refused_in_one_line(doc: Any, words: str) -> None:
    with pytest.raises(ObjectColumnsError) as exc:
        checked(doc)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_flags_become_bools_and_bad_left_out_is_dropped() -> None:
    cols = to_columns([req(1, complete=0), req(2, complete=1)])
    cols[LEFT_OUT] = "9"
    back = checked(cols)
    assert back is not None and back["complete"] == [False, True] and LEFT_OUT not in back


def test_concat_joins_in_order_and_sums_left_out() -> None:
    a, b = checked(to_columns([req(1)], 2)), checked(to_columns([req(2), req(3)], 5))
    both = concat([None, a, {}, b])
    assert both is not None and [r["key"] for r in rows(both)] == ["k1", "k2", "k3"]
    assert left_out(both) == 7
    assert concat([None, {}]) is None
    assert LEFT_OUT not in concat([checked(to_columns([req(1)]))])   # type: ignore[operator]
    assert left_out("nope") == 0 and left_out({LEFT_OUT: 3.0}) == 0


def test_a_negative_left_out_is_not_stored() -> None:
    """What is stored is what left_out() reads back: a count below 0 is none."""
    doc = to_columns([], left_out=-3)
    assert LEFT_OUT not in doc and left_out(doc) == 0
