"""``/bandwidth`` and ``/steps`` (tb_iotrace.plugin.endpoints.bandwidth, .steps): each call's bytes spread
over its duration add up, bin by bin, to the bytes moved inside the asked window."""
from __future__ import annotations

import numpy as np
import pytest

from tab_view import synthetic_view
from tb_iotrace.plugin.endpoints.bandwidth import bandwidth_impl
from tb_iotrace.plugin.endpoints.steps import steps_impl


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    return synthetic_view(tmp_path_factory.mktemp("bw"))


def _moved(view) -> tuple[int, int]:
    io = view.single.io
    ret = np.maximum(io.returned, 0)
    return int(ret[io.is_read[io.op]].sum()), int(ret[io.is_write[io.op]].sum())


def test_whole_extent_totals_are_the_bytes_read_and_written(view) -> None:
    got = bandwidth_impl(view, None, None, 50)
    read, written = _moved(view)
    assert read > 0 and written > 0
    assert got["total_read"] == read and got["total_write"] == written
    # the bins' rates times their width give the same bytes back
    width_s = got["bin_ns"] / 1e9
    assert sum(got["read_bps"]) * width_s == pytest.approx(read, rel=1e-3)
    assert sum(got["write_bps"]) * width_s == pytest.approx(written, rel=1e-3)
    assert len(got["read_bps"]) == len(got["in_flight"]) == 50


def test_two_halves_add_up_to_the_whole(view) -> None:
    whole = bandwidth_impl(view, None, None, 10)
    mid = (whole["start"] + whole["end"]) / 2
    first = bandwidth_impl(view, whole["start"], mid, 5)
    second = bandwidth_impl(view, mid, whole["end"], 5)
    assert 0 < first["total_read"] < whole["total_read"]
    assert first["total_read"] + second["total_read"] == pytest.approx(whole["total_read"], abs=2)


def test_bins_are_bounded_and_a_bad_window_is_refused(view) -> None:
    assert bandwidth_impl(view, None, None, 10 ** 9)["bins"] == 4096
    assert bandwidth_impl(view, None, None, 0)["bins"] == 1
    with pytest.raises(ValueError):
        bandwidth_impl(view, float("nan"), None, 10)


def test_steps_have_the_captures_steps(view) -> None:
    got = steps_impl(view)
    assert got["has_steps"] is True
    assert len(got["steps"]) == len(view.single.steps) > 0
