"""The shared walk of a capture's events chosen by name (tb_iotrace.model.named_spans)."""
from __future__ import annotations

import numpy as np

from tb_iotrace.model.named_spans import named_intervals, named_spans, on_host, on_host_or_device
from tb_iotrace.store.xplane import HOST_PLANE, LINE_PREFIX, XSpace

from built_inputs import add_plane

MS = 10**9   # ps


_plane = add_plane   # a plane with lines: line name -> events (name, start ms, end ms)


def space() -> XSpace:
    sp = XSpace()
    _plane(sp, 1, HOST_PLANE, {
        "python": [("wait", 0, 10), ("fetch", 20, 30), ("wait", 40, 45), ("other", 50, 60)],
        "worker": [("wait", 5, 15), ("fetch", 12, 18)],
        LINE_PREFIX + "reads": [("wait", 100, 200)],        # tb_iotrace's own: never walked
        "empty": [],
    })
    _plane(sp, 2, "/device:GPU:0", {"stream": [("wait", 70, 80)]})
    _plane(sp, 3, "/host:metadata", {"x": [("wait", 90, 95)]})
    return sp


def ms(a: np.ndarray) -> list[int]:
    return (a // MS).tolist()


def test_spans_per_predicate_in_one_walk_unmerged_in_walk_order() -> None:
    (ws, we), (fs, fe) = named_spans(space(), [lambda n: n == "wait", lambda n: n == "fetch"])
    assert (ms(ws), ms(we)) == ([0, 40, 5], [10, 45, 15])
    assert (ms(fs), ms(fe)) == ([20, 12], [30, 18])
    assert ws.dtype == np.int64 and fe.dtype == np.int64


def test_planes_chosen_by_name() -> None:
    wait = [lambda n: n == "wait"]
    assert ms(named_spans(space(), wait, on_host)[0][0]) == [0, 40, 5]
    assert sorted(ms(named_spans(space(), wait, on_host_or_device)[0][0])) == [0, 5, 40, 70, 90]


def test_intervals_are_the_union_across_lines() -> None:
    s, e = named_intervals(space(), lambda n: n == "wait")
    assert (ms(s), ms(e)) == ([0, 40], [15, 45])
    s, e = named_intervals(space(), lambda n: n == "wait", on_host_or_device)
    assert (ms(s), ms(e)) == ([0, 40, 70, 90], [15, 45, 80, 95])


def test_predicate_asked_once_per_distinct_name_of_a_line() -> None:
    asked: list[str] = []

    def select(name: str) -> bool:
        asked.append(name)
        return False

    (s, e), = named_spans(space(), [select])
    assert len(s) == 0 and len(e) == 0
    assert sorted(asked) == ["fetch", "fetch", "other", "wait", "wait"]   # python: 3 names, worker: 2


def test_nothing_chosen_or_no_planes_gives_empty_int64() -> None:
    for sp in (space(), XSpace(), None, object()):
        for s, e in [*named_spans(sp, [lambda n: n == "absent", lambda n: False]),
                     named_intervals(sp, lambda n: n == "absent")]:
            assert s.dtype == np.int64 and e.dtype == np.int64 and len(s) == 0 and len(e) == 0
