"""tb_iotrace.analysis.intervals: sets of time intervals (sorted starts and ends): their
overlap, clipping, and how many calls are in flight at once inside windows."""
from __future__ import annotations

import numpy as np

from tb_iotrace.analysis.intervals import clip, in_flight, merge, overlap


def iv(*pairs: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)


def test_overlap_of_two_sets() -> None:
    a = iv((0, 10), (20, 30), (40, 50))
    b = iv((5, 25), (29, 41), (60, 70))
    # [5,10] 5 + [20,25] 5 + [29,30] 1 + [40,41] 1
    assert overlap(a, b) == 12 == overlap(b, a)
    assert overlap(a, iv((10, 20))) == 0                  # touching ends: nothing shared
    assert overlap(a, iv()) == 0 and overlap(iv(), a) == 0
    assert overlap(a, iv((-100, 100))) == 30


def test_clip_cuts_to_the_range_and_drops_what_is_left_empty() -> None:
    s, e = clip(iv((0, 10), (20, 30), (40, 50)), 5, 40)
    assert s.tolist() == [5, 20] and e.tolist() == [10, 30]     # [40,50] clipped to [40,40]: gone


def test_merge_is_the_union() -> None:
    s, e = merge(np.array([5, 0, 20, 9]), np.array([10, 6, 30, 9]))
    assert s.tolist() == [0, 20] and e.tolist() == [10, 30]     # [9,9] is empty


def test_calls_in_flight_counted_inside_the_windows() -> None:
    # reads [0,10] [5,15] [15,20] [30,40]; windows [2,18] [35,50]; by hand, inside the windows:
    # 1 in flight 2-5 (3), 2 in flight 5-10 (5), 1 in 10-15 (5), 1 in 15-18 (3; [5,15] ends as
    # [15,20] starts: no overlap), none 18-20 and 20-30, 1 in 35-40 (5)
    n, w = in_flight(np.array([0, 5, 15, 30]), np.array([10, 15, 20, 40]),
                           (np.array([2, 35]), np.array([18, 50])))
    got: dict[int, int] = {}
    for k, t in zip(n.tolist(), w.tolist()):
        got[k] = got.get(k, 0) + t
    assert {k: t for k, t in got.items() if t} == {1: 3 + 5 + 3 + 5, 2: 5}
    assert in_flight(np.zeros(0, np.int64), np.zeros(0, np.int64), (np.array([0]), np.array([9])))[0].size == 0


def test_in_flight_counts_outside_every_window_as_nothing() -> None:
    n, w = in_flight(np.array([0, 0]), np.array([10, 10]), (np.array([20]), np.array([30])))
    assert int(w.sum()) == 0
    n, w = in_flight(np.array([0, 0]), np.array([10, 10]), (np.array([0]), np.array([10])))
    assert dict(zip(n.tolist(), w.tolist())).get(2) == 10       # two calls at once all along
    assert in_flight(np.array([0]), np.array([5]), iv())[0].size == 0
