"""A host's result (:mod:`tb_iotrace.analysis.host_result`) on the held sources: built once, its
attribution made once, its findings and verdict plain JSON values as the analysis gives them,
nothing written while it is built, steps kept when the analysis fails."""
from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.analysis import host_result
from tb_iotrace.cli import hostrows
from tb_iotrace.model.open_source import open_source

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURE = "jax_io.xplane.pb"                 # a capture with steps and a verdict
TRACE = "torch_loader.pt.trace.json.gz"      # a PyTorch trace: the main process and two workers
analyze_module = importlib.import_module("tb_iotrace.analysis.analyze")   # the package names the function so


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The local cache (where a lone file's summary and job facts go) under tmp_path."""
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TBIO_SUMMARIES", raising=False)
    return tmp_path / "cache"


def _main(name: str, tmp_path: Path) -> Any:
    shutil.copy(DATA / name, tmp_path / name)
    return open_source(str(tmp_path / name))[0]


def _plain(x: Any, where: str = "") -> None:
    """``x`` is made of JSON's own types only (what ``json.dumps`` writes without a default)."""
    if isinstance(x, dict):
        for k, v in x.items():
            assert type(k) is str, f"{where}: key {k!r}"
            _plain(v, f"{where}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _plain(v, f"{where}[{i}]")
    else:
        assert x is None or type(x) in (str, int, float, bool), f"{where}: {type(x).__name__}"


@pytest.mark.parametrize("name", [CAPTURE, TRACE])
def test_the_steps_reuse_the_analysis_attribution(name, tmp_path, cache, monkeypatch) -> None:
    calls = []
    real = analyze_module.attribute

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(analyze_module, "attribute", counted)
    monkeypatch.setattr(host_result, "attribute", counted)
    measured = []
    monkeypatch.setattr(host_result, "collective_fields", lambda *a: measured.append(a))
    got = host_result.build(_main(name, tmp_path))
    assert got.steps and got.verdict is not None
    assert len(calls) == 1
    assert measured == [] and all("collective_wait_ps" in s for s in got.steps)   # the analysis's, per step


@pytest.mark.parametrize("name", [CAPTURE, TRACE])
def test_findings_and_verdict_are_plain_json_values(name, tmp_path, cache) -> None:
    doc = host_result.build(_main(name, tmp_path)).to_dict()
    for key in ("verdict", "findings", "checkpoints", "training", "steps", "summary"):
        _plain(doc[key], key)
    assert name != TRACE or doc["findings"]           # the trace's two findings are there
    json.dumps(doc["findings"])                      # no default needed


def test_building_writes_nothing_keeping_writes_the_row_and_facts(tmp_path, cache) -> None:
    src = _main(TRACE, tmp_path)
    pure = host_result.build(src).to_dict()
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))
    assert hostrows.stored(src) is None
    again = open_source(str(tmp_path / TRACE))[0]
    kept = hostrows.kept(again)
    assert kept == pure
    assert hostrows.stored(again) == kept["summary"]


def test_a_failed_analysis_keeps_the_steps_and_says_why(tmp_path, cache, monkeypatch) -> None:
    good = host_result.build(_main(CAPTURE, tmp_path))

    def broken(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("broken rule")

    monkeypatch.setattr(host_result, "analyze", broken)
    bad = host_result.build(open_source(str(tmp_path / CAPTURE))[0])
    assert bad.notes == ["analysis failed: RuntimeError: broken rule"]
    assert bad.verdict is None and bad.findings == []
    assert bad.steps == good.steps and bad.summary == good.summary   # collective waits measured here then


def test_optional_keys_only_when_set(tmp_path, cache) -> None:
    got = host_result.build(_main(CAPTURE, tmp_path))
    assert got.process is None and "process" not in got.to_dict()
    assert got.profile is not None and list(got.to_dict())[-1] == "profile"
    assert list(got.to_dict())[:4] == ["host", "kind", "source", "verdict"]


def test_summary_row_alone_equals_the_results(tmp_path, cache) -> None:
    for src in open_source(str(_main(TRACE, tmp_path).path)):
        assert host_result.summary_row(src) == host_result.build(src).summary
