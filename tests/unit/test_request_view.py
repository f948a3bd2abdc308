"""tb_iotrace.plugin.request_view: hosts aligned on their profile starts (or not at all when
one lacks it), a single host with unreadable peers still prefixed, lane keys and names made
per host (hostile host names kept as text), find_lane never crossing hosts, the memo's LRU
bound and sharing, steps of the first host that has any, and the small parsers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tb_iotrace.model.tab.columns import TabCapture, make_lane
from tb_iotrace.plugin import request_view as rv


def cap(host: str, start: int | None = None, steps: list[dict] | None = None, extent: tuple[int, int] = (0, 100),
        lanes: tuple[str, ...] = ("host.a",)) -> TabCapture:
    made = [make_lane(k, "host", f"name {k}", "/host:CPU", np.array([0], np.int64), np.array([5], np.int64),
                      np.array([0], np.int32)) for k in lanes]
    return TabCapture(path=f"/x/{host}.xplane.pb", host=host, size=0, mtime_ns=0, names=["n"], lanes=made,
                      planes={}, io=None, io_info=None, counter_records=[], steps=steps or [],
                      steps_source="markers", extent=extent, profile_start_ns=start, hostnames=[])


def test_a_single_host_is_its_own_clock_without_prefix() -> None:
    v = rv.make_view("r", [("h", cap("h", start=10 ** 12))])
    assert [(p.prefix, p.offset) for p in v.parts] == [("", 0)] and v.single.host == "h"
    assert v.extent() == (0, 100)


def test_hosts_are_aligned_on_their_profile_starts() -> None:
    v = rv.make_view("r", [("a", cap("a", 1_000, extent=(0, 50))), ("b", cap("b", 400, extent=(5, 70)))])
    assert [(p.prefix, p.offset, p.host) for p in v.parts] == [("h0/", 600, "a"), ("h1/", 0, "b")]
    assert v.extent() == (5, 650)


def test_one_host_without_a_profile_start_leaves_every_host_on_its_own_clock() -> None:
    v = rv.make_view("r", [("a", cap("a", 1_000)), ("b", cap("b", None))])
    assert [p.offset for p in v.parts] == [0, 0]


def test_one_readable_host_of_several_is_still_a_multi_host_view() -> None:
    v = rv.make_view("r", [("a", cap("a"))], unreadable=[("b\x1b]0;x\x07", "b.xplane.pb", "truncated")])
    assert v.parts[0].prefix == "h0/"
    assert rv.unreadable_json(v) == [{"host": "b\x1b]0;x\x07", "file": "b.xplane.pb",
                                      "error": "cannot read this capture: truncated"}]
    assert rv.lane_json(v.parts[0], v.parts[0].capture.lanes[0], True)["name"] == "[a] name host.a"


def test_lane_keys_and_names_are_per_host() -> None:
    hostile = "w\n\x1b[31m1"
    v = rv.make_view("r", [("w0", cap("w0", 0)), (hostile, cap(hostile, 0))])
    described = v.lane_table("thread").described
    assert [d["key"] for d in described] == ["h0/host.a", "h1/host.a"]
    assert [d["host"] for d in described] == ["w0", hostile]
    assert described[1]["name"] == f"[{hostile}] name host.a"
    assert v.lane_table("thread") is v.lane_table("thread")
    assert v.find_lane("h1/host.a")[0].host == hostile
    for bad in ("host.a", "h2/host.a", "h0/", "h1/host.b", "h10/host.a"):
        with pytest.raises(rv.NotFound):
            v.find_lane(bad)


def test_lane_json_of_a_single_host_drops_an_empty_host_lane_and_prefixes_a_real_one() -> None:
    c = cap("h")
    ln = c.lanes[0]
    ln.extra["host_lane"] = None
    single = rv.lane_json(rv.Part(c, "", 0, "h"), ln, False)
    assert "host_lane" not in single and "host" not in single and single["name"] == "name host.a"
    ln.extra["host_lane"] = "host.t1"
    multi = rv.lane_json(rv.Part(c, "h3/", 0, "h"), ln, True)
    assert multi["host_lane"] == "h3/host.t1" and multi["key"] == "h3/host.a"


def test_memo_keeps_the_most_recent_answers_and_computes_each_once() -> None:
    v = rv.make_view("r", [("h", cap("h"))])
    calls: list[int] = []

    def compute(i: int):
        return lambda: calls.append(i) or [i]

    first = v.memo((0,), compute(0))
    assert v.memo((0,), compute(99)) is first
    for i in range(1, rv.MEMO_KEPT):
        v.memo((i,), compute(i))
    v.memo((0,), compute(98))           # touched: now the most recent
    v.memo(("new",), compute(-1))       # one past the bound: (1,) is dropped, not (0,)
    assert v.memo((0,), compute(97)) is first
    v.memo((1,), compute(101))
    assert calls[-1] == 101 and 97 not in calls and 98 not in calls
    assert len(v._memo) == rv.MEMO_KEPT


def test_steps_come_from_the_first_host_that_has_any_on_the_view_clock() -> None:
    steps = [{"index": 3, "name": "s3", "start": 10, "end": 20, "extra": 1}]
    v = rv.make_view("r", [("a", cap("a", 500)), ("b\n", cap("b\n", 200, steps=steps))])
    got, source = rv.view_steps(v)
    assert got == [{"index": 3, "name": "s3", "start": 10, "end": 20}] and source == "markers on b\n"
    v2 = rv.make_view("r", [("a", cap("a", 0)), ("b", cap("b", 100, steps=steps))])
    assert rv.view_steps(v2)[0][0]["start"] == 110
    assert rv.view_steps(rv.make_view("r", [("a", cap("a", steps=steps))])) == (
        [{"index": 3, "name": "s3", "start": 10, "end": 20}], "markers")
    assert rv.view_steps(rv.make_view("r", [("a", cap("a"))])) == ([], "")


def test_small_parsers() -> None:
    assert [rv.fmt_float(x) for x in (1.5, math.nan, math.inf, -math.inf)] == [1.5, 0.0, 0.0, 0.0]
    assert [rv.io_by_choice(x) for x in ("file", None, "FILE", "thread", "x\n")] == [
        "file", "thread", "thread", "thread", "thread"]
