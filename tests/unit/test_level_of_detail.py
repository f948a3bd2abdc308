"""tb_iotrace.plugin.level_of_detail: the row window's bounds (events touching t0 or t1
included, a long event that began far left kept through the running max end, sub-ranges
of a lane), merging (a wide event never absorbs nor is absorbed, one pixel column per
merged item, count and extent exact), and sums over items starting mid-lane."""
from __future__ import annotations

import numpy as np

from tb_iotrace.plugin import level_of_detail as lod


def a(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


def test_window_includes_events_touching_its_edges_and_long_ones_from_the_left() -> None:
    start, end = a(0, 10, 20, 30, 40), a(100, 15, 25, 35, 45)
    maxend = np.maximum.accumulate(end)
    # [0,100] covers the window though it began long before: kept (maxend), the rest by start
    assert lod.window(start, maxend, 0, 5, 50, 60) == (0, 5)
    ends_only = a(5, 15, 25, 35, 45)
    assert lod.window(start, ends_only, 0, 5, 15, 30) == (1, 4)     # ends at t0 and starts at t1: in
    assert lod.window(start, ends_only, 0, 5, 46, 50) == (5, 5)     # nothing: empty, never i1 < i0
    assert lod.window(start, ends_only, 0, 5, -10, -5) == (0, 0)


def test_window_stays_inside_its_row() -> None:
    start = a(0, 10, 20, 0, 10, 20)          # two rows: [0, 3) and [3, 6)
    end = start + 5
    maxend = end.copy()
    i0, i1 = lod.window(start, maxend, 3, 6, 8, 12)
    assert (i0, i1) == (4, 5)
    assert lod.window(start, maxend, 3, 6, 100, 200) == (6, 6)


def test_sub_pixel_events_in_one_column_merge_and_wide_ones_stand_alone() -> None:
    # 1 ns per pixel x 10: columns of 10 ns
    start = a(0, 2, 4, 5, 30, 31, 52)
    end = a(1, 3, 5, 25, 31, 32, 53)    # the 4th (index 3) is 20 ns: wide
    items = lod.merge_row(start, end, 0, 7, 0.0, 10.0)
    assert items.first.tolist() == [0, 3, 4, 6]
    assert items.count.tolist() == [3, 1, 2, 1]
    assert items.start.tolist() == [0, 5, 30, 52]
    assert items.end.tolist() == [5, 25, 32, 53]
    assert len(items) == 4 and items.count.sum() == 7


def test_a_merged_item_ends_at_the_latest_end_not_the_last_one() -> None:
    start, end = a(0, 1, 2), a(9, 3, 4)     # 10 ns per pixel: all three sub-pixel, same column
    items = lod.merge_row(start, end, 0, 3, 0.0, 10.0)
    assert items.count.tolist() == [3] and items.end.tolist() == [9]


def test_an_event_exactly_one_pixel_wide_is_drawn_alone() -> None:
    start, end = a(0, 1, 2), a(1, 11, 3)    # the middle one is exactly 10 ns = 1 px
    items = lod.merge_row(start, end, 0, 3, 0.0, 10.0)
    assert items.count.tolist() == [1, 1, 1]


def test_empty_window_gives_no_items_and_group_sum_is_empty() -> None:
    items = lod.merge_row(a(1, 2), a(2, 3), 1, 1, 0.0, 1.0)
    assert len(items) == 0 and items.start.dtype == np.int64
    got = lod.group_sum(np.array([5.0, 6.0]), items)
    assert got.tolist() == [] and got.dtype == np.float64


def test_group_sum_of_a_window_that_starts_mid_lane() -> None:
    start = a(0, 100, 101, 102, 300, 301)
    end = start + 1
    values = a(1000, 1, 2, 4, 8, 16)
    items = lod.merge_row(start, end, 1, 6, 100.0, 10.0)     # skips event 0
    assert items.first.tolist() == [1, 4] and items.count.tolist() == [3, 2]
    assert lod.group_sum(values, items).tolist() == [7, 24]
