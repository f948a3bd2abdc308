"""The report's document (:mod:`tb_iotrace.analysis.run_result`): hosts grouped by run in the
sources' order, each host's entry from the builder given, the same document whether the hosts
are built in one process or several."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.analysis import run_result
from tb_iotrace.model.open_source import open_source

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = "torch_loader.pt.trace.json.gz"      # one run: the main process and two workers


@pytest.fixture
def trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    shutil.copy(DATA / TRACE, tmp_path / TRACE)
    return tmp_path / TRACE


def test_each_host_from_the_builder_given_in_order(trace) -> None:
    seen: list[str] = []

    def make(src: Any) -> dict[str, Any]:
        seen.append(src.host)
        return run_result.host_doc(src)

    doc = run_result.build(open_source(str(trace)), jobs=1, make=make)
    assert doc["format"] == run_result.FORMAT == "tb_iotrace.report/1"
    (run,) = doc["runs"]
    assert [h["host"] for h in run["hosts"]] == seen == ["torch_loader", "torch_loader/pid15360",
                                                         "torch_loader/pid15362"]
    assert list(run) == ["run", "hosts", "totals", "job_verdict", "checkpoint_saves"]
    assert run["totals"]["whole"]["processes"] == 3
    assert [j["job"] for j in doc["jobs"]] == [""] and len(doc["jobs"][0]["windows"]) == 1


@pytest.mark.slow
def test_parallel_build_gives_the_same_document(trace) -> None:
    one = run_result.build(open_source(str(trace)), jobs=1)
    assert run_result.build(open_source(str(trace)), jobs=2) == one
