"""``/hosts`` (tb_iotrace.plugin.endpoints.hosts): one row per host of the view, its bytes from the
host's Darshan counters, its traced calls and its input wait by the steps rule."""
from __future__ import annotations

import pytest

from tab_view import synthetic_view
from tb_iotrace.plugin.endpoints.files import files_impl
from tb_iotrace.plugin.endpoints.hosts import hosts_impl


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    return synthetic_view(tmp_path_factory.mktemp("hosts"), ("worker0", "worker1"))


def test_a_row_per_host_with_its_counters_and_calls(view) -> None:
    got = hosts_impl(view)
    assert got["unreadable"] == []
    rows = {r["host"]: r for r in got["hosts"]}
    assert set(rows) == {"worker0", "worker1"}
    files = files_impl(view)
    col = {c: i for i, c in enumerate(files["counters"])}
    for part in view.parts:
        row = rows[part.host]
        assert row["source"] == "counters"
        assert row["io_calls"] == len(part.capture.io) == 2000
        # the bytes are the host's POSIX and STDIO records summed, as /files lists them
        mine = [k for k, h in enumerate(files["host"]) if h == part.host]
        assert row["bytes_read"] == sum(files["values"][k][col[f"{files['module'][k]}_BYTES_READ"]] for k in mine)
        assert row["files"] > 0


def test_input_wait_share_is_the_wait_over_the_steps_time(view) -> None:
    for row in hosts_impl(view)["hosts"]:
        assert row["wait_basis"] == "steps"
        assert 0 < row["input_wait_ns"] <= row["span_ns"]
        assert row["input_wait_pct"] == pytest.approx(100 * row["input_wait_ns"] / row["span_ns"], abs=0.01)
