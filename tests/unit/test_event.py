"""``/event`` (tb_iotrace.plugin.endpoints.event): one event's details; for an I/O call its
columns as recorded, the host op enclosing it on its thread and the step it falls in."""
from __future__ import annotations

import pytest

from tab_view import synthetic_view
from tb_iotrace.plugin.endpoints.event import event_impl
from tb_iotrace.plugin.endpoints.capture import capture_impl
from tb_iotrace.plugin.request_view import NotFound, view_steps


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    return synthetic_view(tmp_path_factory.mktemp("event"))


def _lane(view, group: str) -> str:
    return next(ln["key"] for ln in capture_impl(view)["lanes"] if ln["group"] == group)


def test_an_io_call_is_its_recorded_columns(view) -> None:
    key = _lane(view, "io")
    part, lane = view.find_lane(key)
    io = part.capture.io
    steps, _ = view_steps(view)
    assert steps
    for index in (0, 10, len(lane) - 1):
        got = event_impl(view, key, index)
        k = lane.io_row(index)
        assert got["call"] == got["name"] == io.ops[int(io.op[k])]
        assert got["file"] == io.paths[int(io.path[k])]
        assert (got["offset"], got["bytes"], got["fd"], got["errno"]) == \
            (int(io.offset[k]), int(io.returned[k]), int(io.fd[k]), int(io.errno[k]))
        assert got["dur"] == int(lane.end[index] - lane.start[index]) >= 0
        assert got["start"] == int(lane.start[index]) + part.offset
        # the step it names holds the call's start; none named: no step holds it
        holding = [st["index"] for st in steps if st["start"] <= got["start"] < st["end"]]
        assert got["step"] == ({"index": holding[0], "name": next(st["name"] for st in steps
                                                                  if st["index"] == holding[0])}
                               if holding else None)


def test_a_host_event_has_its_name_and_stats(view) -> None:
    got = event_impl(view, _lane(view, "host"), 0)
    assert got["name"] and isinstance(got["stats"], dict)
    assert "call" not in got


def test_unknown_index_or_lane_is_not_found(view) -> None:
    key = _lane(view, "io")
    with pytest.raises(NotFound):
        event_impl(view, key, 10 ** 9)
    with pytest.raises(NotFound):
        event_impl(view, key, -1)
    with pytest.raises(NotFound):
        event_impl(view, "nolane", 0)
