"""``/histograms`` (tb_iotrace.plugin.endpoints.histograms): the access-size histograms and
patterns the view's file records sum to, of all files or of one."""
from __future__ import annotations

import pytest

from tab_view import synthetic_view
from tb_iotrace.plugin.endpoints.histograms import histograms_impl


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    return synthetic_view(tmp_path_factory.mktemp("histograms"), ("worker0", "worker1"))


def test_histograms_sum_to_the_access_counts(view) -> None:
    got = histograms_impl(view)
    assert len(got["read"]) == len(got["write"]) == len(got["bins"])
    pattern = got["pattern"]
    assert sum(got["read"]) == pattern["reads"] > 0
    assert sum(got["write"]) == pattern["writes"] > 0
    assert pattern["seq_reads"] <= pattern["reads"] and pattern["consec_reads"] <= pattern["seq_reads"]
    ops = got["ops"]
    assert ops.get("read", 0) + ops.get("pread64", 0) == pattern["reads"]
    assert ops.get("write", 0) == pattern["writes"]


def test_histograms_of_one_file_are_part_of_the_whole(view) -> None:
    whole = histograms_impl(view)
    path = "/data/train-00000-of-00064.tfrecord"
    one = histograms_impl(view, path)
    assert one["path"] == path
    assert 0 < sum(one["read"]) < sum(whole["read"])
