"""The first (empty, partial) record of a process under ``run``: written at once by the run's
thread, except in a forked child (a DataLoader worker), which writes it after
``FORKED_FIRST_RECORD_S`` of life: a worker that ends sooner writes only its final record, and
its start does not share the GIL with the first record's write."""
from __future__ import annotations

import gc
import json
import time
from pathlib import Path

import pytest

from tb_iotrace.recording import api, autostart, shim_settings
from tb_iotrace.recording.autostart import _Run
from tb_iotrace.store.runrecord import record_paths


@pytest.fixture
def run_dir(tmp_path):
    api.enable()
    before = shim_settings.excludes()
    shim_settings.set_filters(None, before + [str(tmp_path)])   # as `run` excludes its record folder
    yield tmp_path
    shim_settings.set_filters(None, before)


def _record(run_dir: Path, deadline_s: float) -> dict | None:
    path = record_paths(str(run_dir))[0]
    end = time.monotonic() + deadline_s
    while True:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            if time.monotonic() > end:
                return None
        time.sleep(0.02)


def _begin(run_dir: Path, forked: bool) -> _Run:
    st = _Run(str(run_dir), 5.0)
    st.forked = forked
    st.begin()
    return st


def test_a_forked_child_that_ends_soon_writes_only_its_final_record(run_dir, monkeypatch) -> None:
    monkeypatch.setattr(autostart, "FORKED_FIRST_RECORD_S", 60.0)
    st = _begin(run_dir, forked=True)
    try:
        assert _record(run_dir, 0.5) is None          # no partial record at its start
    finally:
        st.finish("os._exit", code=0)
    doc = _record(run_dir, 0)
    assert doc is not None and not doc["partial"] and doc["exit"]["how"] == "os._exit"


def test_a_forked_child_that_lives_on_gets_its_first_record(run_dir, monkeypatch) -> None:
    monkeypatch.setattr(autostart, "FORKED_FIRST_RECORD_S", 0.2)
    st = _begin(run_dir, forked=True)
    try:
        doc = _record(run_dir, 30)
        assert doc is not None and doc["partial"] and doc["exit"]["how"] == "flush"
    finally:
        st.finish("exit")


def test_a_process_not_forked_writes_its_first_record_at_once(run_dir, monkeypatch) -> None:
    monkeypatch.setattr(autostart, "FORKED_FIRST_RECORD_S", 60.0)   # not its rule
    st = _begin(run_dir, forked=False)
    try:
        doc = _record(run_dir, 30)
        assert doc is not None and doc["partial"]
    finally:
        st.finish("exit")
    assert not json.loads(record_paths(str(run_dir))[0].read_text())["partial"]


def test_ending_the_record_starts_no_collection(run_dir) -> None:
    """The record's allocations start no cyclic collection: in a forked child of a torch parent
    one was a full collection of the inherited heap, 75 ms of CPU for a 5 ms record. With every
    threshold at 1, any allocation would start one."""
    st = _begin(run_dir, forked=True)
    inside, seen = [False], []

    def note(phase: str, info: dict) -> None:
        if phase == "start" and inside[0]:
            seen.append(info["generation"])

    thresholds = gc.get_threshold()
    gc.callbacks.append(note)
    gc.set_threshold(1, 1, 1)
    try:
        inside[0] = True
        st.finish("os._exit", code=0)
        inside[0] = False
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(note)
    assert seen == []
    assert gc.isenabled()
    doc = _record(run_dir, 0)
    assert doc is not None and not doc["partial"]
