"""The tab's findings answer (analysis.capture_findings.findings_of) shaped from the host result's
analysed part is field by field the answer the former path (its own analyze() run) gave, on
every source held in tests/data the tab reads: captures, PyTorch traces converted to captures,
the whole-run record, and records without their trace (kept none; a partial one missing its
parts)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.analysis import capture_findings as cf

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(p.name for p in DATA.glob("*.xplane.pb"))
TRACES = sorted(p.name for p in DATA.iterdir() if ".pt.trace.json" in p.name)


def _both(path: str) -> tuple[Any, Any]:
    def run(f: Any) -> Any:
        try:
            return json.loads(json.dumps(f(path)))
        except Exception as exc:  # noqa: BLE001 - both paths must fail alike too
            return {"error": str(exc)}
    return run(cf._findings_of_old), run(cf.findings_of)


def _same(old: Any, new: Any) -> None:
    assert sorted(old) == sorted(new)
    for key in old:
        assert new[key] == old[key], key


@pytest.mark.parametrize("name", CAPTURES)
def test_captures(name: str) -> None:
    old, new = _both(str(DATA / name))
    _same(old, new)


@pytest.mark.parametrize("name", TRACES)
def test_pytorch_traces_converted(name: str, tmp_path: Path) -> None:
    from tb_iotrace.store.kineto_xspace import read_xspace

    out = tmp_path / "h.xplane.pb"
    out.write_bytes(read_xspace(DATA / name).SerializeToString())
    old, new = _both(str(out))
    assert old.get("findings") or old.get("message"), old
    _same(old, new)


def test_whole_run_record() -> None:
    old, new = _both(str(DATA / "run_v1/plugins/iotrace/vm.21889.json"))
    assert old["findings"] or old["steps"] == [], old
    _same(old, new)


def test_record_without_its_trace(tmp_path: Path) -> None:
    from tb_iotrace.store.runrecord import read_record

    src = DATA / "run_v1/plugins/iotrace/vm.21889.json"
    dst = tmp_path / "vm.21889.json"
    shutil.copyfile(src, dst)
    old, new = _both(str(dst))            # names its trace, which is not there: an error, alike
    assert "error" in old, old
    _same(old, new)
    doc = read_record(src).doc
    doc.pop("trace", None)
    dst.write_text(json.dumps(doc))       # kept no trace: the counters' findings
    old, new = _both(str(dst))
    assert "error" not in old, old
    _same(old, new)


def test_partial_record_missing_its_parts(tmp_path: Path) -> None:
    from tb_iotrace.store.runrecord import read_record, write_record

    files = [{"path": "/data/k.bin", "module": "POSIX", "record_id": 1,
              "counters": {"POSIX_OPENS": 1, "POSIX_READS": 4, "POSIX_BYTES_READ": 1 << 30}, "fcounters": {}}]
    jpath = write_record(tmp_path / "killed", None, partial=True, files=files, trace_parts=[("ignored", 1)])
    rec = read_record(jpath)
    rec.doc["trace_parts"] = [f"{jpath.name[:-5]}.part1.npz"]
    rec.doc["rank"] = 3
    jpath.write_text(json.dumps(rec.doc))
    old, new = _both(str(jpath))
    assert any("parts are missing" in n for n in old["notes"]), old
    _same(old, new)
    assert old["rank"] == 3
