"""tb_iotrace.model.tab.load: a listed file decoded by the reader of the kind its name says, into
the tab's columns (a capture by of_xplane, a whole-run record by of_record, a PyTorch trace by
of_kineto); a file the name does not place is read as a capture and fails as one."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tb_iotrace.model.tab.columns import TabCapture
from tb_iotrace.model.tab.load import load_any
from tb_iotrace.store.xplane import XPlaneError

DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_capture_is_read_by_the_xplane_reader(tmp_path):
    path = shutil.copy(DATA / "jax_io.xplane.pb", tmp_path / "h.xplane.pb")
    cap = load_any(str(path), "h")
    assert isinstance(cap, TabCapture) and cap.host == "h"
    assert cap.io is not None and len(cap.io) > 0               # the capture's I/O lines
    assert any(lane.group == "host" for lane in cap.lanes)      # and its host threads


def test_a_record_is_read_by_the_record_reader(tmp_path):
    shutil.copytree(DATA / "run_v1", tmp_path / "run")
    path = tmp_path / "run" / "plugins" / "iotrace" / "vm.21889.json"
    cap = load_any(str(path), "vm.21889")
    # a record has no profile timeline: its lanes are its threads' I/O, its counters its files
    assert cap.io is not None and len(cap.io) > 0
    assert all(lane.group != "device" for lane in cap.lanes)
    assert len(cap.counters.paths) > 0


def test_a_pytorch_trace_is_read_by_the_kineto_reader(tmp_path):
    path = shutil.copy(DATA / "torch_loader.pt.trace.json.gz", tmp_path / "w.pt.trace.json.gz")
    cap = load_any(str(path), "w")
    assert cap.steps and cap.steps_source                        # ProfilerStep#N markers
    assert cap.io is not None and len(cap.io) > 0


def test_an_unplaced_name_is_read_as_a_capture(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a profile\n")
    with pytest.raises(XPlaneError):
        load_any(str(path), "h")
