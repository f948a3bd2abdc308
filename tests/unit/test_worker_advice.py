"""The DataLoader-workers advice (tb_iotrace.analysis.worker_advice) on hand-made measured work
(tb_iotrace.analysis.loader_capacity.LoaderWork): more workers only while they wait on reads and
cores are free, never a step shorter than a batch's load time over the workers, and when the
cores are the limit, no more workers and what can help instead."""
from __future__ import annotations

import re

import pytest

from tb_iotrace.analysis.loader_capacity import LoaderWork, half_work_after, step_after
from tb_iotrace.analysis.worker_advice import LESS_WORK, NO_MORE, UNMEASURED, workers_change


def _workers(text: str) -> int:
    m = re.match(r"num_workers=\d+ -> (\d+)", text)
    assert m, text
    return int(m.group(1))


def test_busy_workers_on_two_cores_get_no_more_workers() -> None:
    """2 workers decoding on 2 cores (their work 170 of a 180 ms batch): more workers would share
    the same cores. The cut said is that of the loader's work halved, by the stated model."""
    w = LoaderWork(step_ms=100, wait_share=0.8, batch_ms=180, work_ms=170, cpus=2, workers=2)
    text, cut, model = workers_change(w, "decode", {})
    assert text.startswith(NO_MORE) and "num_workers" not in text and LESS_WORK in text
    assert cut == pytest.approx(1 - half_work_after(w) / w.step_ms) and "more workers: none" in model


def test_workers_waiting_on_reads_get_more_up_to_the_cores_less_one() -> None:
    w = LoaderWork(step_ms=100, wait_share=0.6, batch_ms=200, work_ms=10, cpus=8, workers=2)
    text, cut, _ = workers_change(w, "file_io", {})
    m = _workers(text)
    assert 2 < m <= 7 and "8 usable cores are the limit" in text and "reads in flight" in text
    assert cut == pytest.approx(1 - step_after(w, m) / w.step_ms)
    assert step_after(w, m) >= w.compute_ms          # never shorter than the step's own work


def test_the_main_process_loading_gets_one_worker_and_no_more_than_its_load_time_allows() -> None:
    """The job that loaded JPEGs in the main process on 2 cores: one worker does the main
    process's work, so the step cannot get shorter than a batch's load time (90 ms of 100 ms);
    the advice once predicted -94%."""
    w = LoaderWork(step_ms=100, wait_share=0.9, batch_ms=90, work_ms=85, cpus=2, workers=0, main_cpu_ms=95)
    text, cut, _ = workers_change(w, "decode", {})
    assert _workers(text) == 1 and "persistent_workers=True" in text
    assert cut <= 1 - w.batch_ms / w.step_ms + 1e-9


def test_unmeasured_work_past_the_cores_predicts_no_gain() -> None:
    w = LoaderWork(step_ms=100, wait_share=0.5, batch_ms=None, work_ms=None, cpus=2, workers=2)
    text, cut, model = workers_change(w, "decode", {})
    assert text.startswith(UNMEASURED) and cut == 0.0 and "not in this capture" in model


def test_without_the_cores_known_the_proposal_follows_the_wait() -> None:
    """Unknown cores: 2 workers that leave the step waiting 60% of it, throughput x1.5 / (1 - 0.6)."""
    w = LoaderWork(step_ms=100, wait_share=0.6, batch_ms=200, work_ms=10, cpus=None, workers=2)
    text, cut, _ = workers_change(w, "decode", {})
    assert _workers(text) == 8 and "usable cores" not in text and 0 < cut <= 1 - w.compute_ms / w.step_ms + 1e-9
