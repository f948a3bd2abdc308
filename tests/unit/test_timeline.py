"""``/timeline`` (tb_iotrace.plugin.endpoints.timeline): a view's events at a level of detail, each
I/O call in exactly one item, no more items per lane row than the width allows."""
from __future__ import annotations

import pytest

from tab_view import synthetic_view
from tb_iotrace.plugin.endpoints.timeline import timeline_impl


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    return synthetic_view(tmp_path_factory.mktemp("timeline"))


def test_every_call_in_one_item_and_items_bounded_by_the_width(view) -> None:
    width = 400
    got = timeline_impl(view, None, None, width)
    items, lanes = got["items"], got["lanes"]
    n = len(items["start"])
    assert n > 0 and all(len(v) == n for v in items.values())
    assert got["lane_count"] == len(lanes)
    # items carry no lane of their own: the segments say which lane row runs of them are on
    seg = got["segments"]
    assert sum(seg["length"]) == n
    per_row: dict = {}
    io_count = 0
    k = 0
    for lane, row, length in zip(seg["lane"], seg["row"], seg["length"]):
        per_row[(lane, row)] = per_row.get((lane, row), 0) + length
        if lanes[lane]["group"] == "io":
            io_count += sum(items["count"][k:k + length])
        k += length
    assert max(per_row.values()) <= 2 * width + 2
    assert io_count == len(view.single.io) == 2000
    assert any(c > 1 for c in items["count"])          # merged at this resolution


def test_without_a_window_the_extent_with_a_margin(view) -> None:
    got = timeline_impl(view, None, None, 100)
    lo, hi = got["extent"]
    assert got["start"] < lo and got["end"] > hi
    assert got["ns_per_px"] == pytest.approx((got["end"] - got["start"]) / 100)


def test_asked_lanes_only(view) -> None:
    io = [ln["key"] for ln in timeline_impl(view, None, None, 100)["lanes"] if ln["group"] == "io"]
    got = timeline_impl(view, None, None, 100, lanes=[io[0]])
    keys = {got["lanes"][lane]["key"] for lane in got["segments"]["lane"]}
    assert keys == {io[0]}
