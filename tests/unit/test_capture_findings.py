"""The tab's findings answer (analysis.capture_findings.findings_of) says what ``tb-iotrace report
--json`` says of the same file, field by field (both are the host result's analysed part), on
every source held in tests/data the tab reads: the captures, the PyTorch traces converted to
captures (as the tab converts them), the whole-run record, and that record without its trace;
and a partial record, a capture without tb_iotrace's I/O and a rank read as the tab needs them."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.analysis.capture_findings import findings_of
from tb_iotrace.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
RECORD = DATA / "run_v1/plugins/iotrace/vm.21889.json"
CAPTURES = sorted(p.name for p in DATA.glob("*.xplane.pb"))
TRACES = sorted(p.name for p in DATA.iterdir() if ".pt.trace.json" in p.name)
STEP_KEYS = ("step_num", "start_ps", "end_ps", "duration_ps", "input_wait_ps", "collective_wait_ps")


def _reported(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The report's JSON entry of the one host ``path`` is."""
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        capsys.readouterr()
        rc = main(["report", "--json", path.name])
        out, err = capsys.readouterr()
    finally:
        os.chdir(cwd)
    assert rc == 0, err
    (host,) = [h for run in json.loads(out)["runs"] for h in run["hosts"]]
    return host


def _agree(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    got = json.loads(json.dumps(findings_of(str(path))))
    host = _reported(path, capsys)
    if host.get("no_io_reason"):
        assert got == {"findings": [], "message": host["no_io_reason"]}
        return got
    for key in ("findings", "verdict", "checkpoints", "training"):
        assert got[key] == host[key], key
    assert got["steps"] == [{k: s.get(k) for k in STEP_KEYS} for s in host["steps"]]
    assert got["message"] == ("" if host["findings"] else "No findings for this capture.")
    if host.get("process"):
        rank = host["process"].get("rank")
        assert got["rank"] == (rank if isinstance(rank, int) else None)
    return got


@pytest.mark.parametrize("name", CAPTURES)
def test_a_capture_as_the_report_says(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(DATA / name, tmp_path / name)
    _agree(tmp_path / name, capsys)


@pytest.mark.parametrize("name", TRACES)
def test_a_converted_pytorch_trace_as_the_report_says(name: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from tb_iotrace.store.kineto_xspace import read_xspace

    out = tmp_path / "h.xplane.pb"
    out.write_bytes(read_xspace(DATA / name).SerializeToString())
    got = _agree(out, capsys)
    assert got["verdict"] and got["steps"], got


def test_the_record_as_the_report_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(RECORD.parent, tmp_path / "iotrace")
    got = _agree(tmp_path / "iotrace" / RECORD.name, capsys)
    assert got["verdict"] and got["read"]["bytes_read"] > 0, got


def test_a_record_without_its_trace_gives_the_findings_of_its_counters(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from tb_iotrace.store.runrecord import read_record

    doc = read_record(RECORD).doc
    doc.pop("trace")
    dst = tmp_path / RECORD.name
    dst.write_text(json.dumps(doc))
    got = _agree(dst, capsys)
    assert got["verdict"] and got["read"]["bytes_read"] > 0, got


def test_a_partial_record_missing_its_parts_says_so_and_keeps_its_rank(tmp_path: Path) -> None:
    from tb_iotrace.store.runrecord import read_record, write_record

    files = [{"path": "/data/k.bin", "module": "POSIX", "record_id": 1,
              "counters": {"POSIX_OPENS": 1, "POSIX_READS": 4, "POSIX_BYTES_READ": 1 << 20}, "fcounters": {}}]
    jpath = write_record(tmp_path / "killed", None, partial=True, files=files, trace_parts=[("ignored", 1)])
    rec = read_record(jpath)
    rec.doc["trace_parts"] = [f"{jpath.name[:-5]}.part1.npz"]     # as a flush lists it; not beside it
    rec.doc["rank"] = 3
    jpath.write_text(json.dumps(rec.doc))
    got = findings_of(str(jpath))
    assert got["notes"][0].startswith("This record is partial (the process did not finish writing it): findings "
                                      "come from its counters up to the last periodic flush (its per-call trace "
                                      "parts are missing"), got["notes"]
    assert got["rank"] == 3 and got["read"] == {"bytes_read": 1 << 20, "files": 1, "dirs": {"/data": 1 << 20}}


def test_a_capture_without_io_says_why_as_the_full_reader_does() -> None:
    from tb_iotrace.store.xplane import load_xspace
    from tb_iotrace.store.xplane.origin import missing_io_reason

    for name in ("jax_plain.xplane.pb", "gpu_multi_worker.xplane.pb"):
        got = findings_of(str(DATA / name))
        assert got == {"findings": [], "message": missing_io_reason(load_xspace(str(DATA / name)).planes)}
        assert got["message"].startswith("This capture has no I/O data"), got
