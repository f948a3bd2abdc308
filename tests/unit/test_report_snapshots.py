"""``tb-iotrace report`` (text and ``--json``) on every source held in tests/data, compared with the
snapshots under tests/data/snapshots/: a change in what the report says is seen in review.

After a deliberate change of output, write the snapshots anew and read their diff before committing:

    TBIO_UPDATE_SNAPSHOTS=1 python -m pytest tests/unit/test_report_snapshots.py

A host's per-file rows are cut to the first few (a PyTorch trace of the H200 lists 64 files per
worker: 1.2 MB of JSON); the cut keeps the row count, so a file gained or lost is still seen.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
SNAPSHOTS = DATA / "snapshots"
SOURCES = [
    "gpu_multi_worker.xplane.pb",
    "jax_io.xplane.pb",
    "jax_plain.xplane.pb",
    "jax_gpu_h200_noio.xplane.pb",
    "torch_loader.pt.trace.json.gz",
    "h200_tuned.pt.trace.json.gz",
    "kineto_gpu_synthetic.pt.trace.json",
    "run_v1",
    "ddp_rank0.pt.trace.json.gz",
    "dlio_one_step_window.pt.trace.json.gz",
]
FILES_KEPT = 8
UPDATE = os.environ.get("TBIO_UPDATE_SNAPSHOTS") == "1"


def _cut(doc: Any) -> Any:
    """The report's JSON with each host's ``files`` list cut to its first rows (count kept)."""
    if isinstance(doc, dict):
        out = {}
        for k, v in doc.items():
            if k == "files" and isinstance(v, list) and len(v) > FILES_KEPT:
                out[k] = [_cut(x) for x in v[:FILES_KEPT]]
                out["files_listed_in_full"] = len(v)
            else:
                out[k] = _cut(v)
        return out
    if isinstance(doc, list):
        return [_cut(x) for x in doc]
    return doc


def _report(tmp_path: Path, name: str, as_json: bool, capsys: pytest.CaptureFixture[str]) -> str:
    src = DATA / name
    dst = tmp_path / name
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy(src, dst)
    cwd = os.getcwd()
    os.chdir(tmp_path)          # the report names its sources relative to the working folder
    try:
        capsys.readouterr()
        rc = main(["report", *(["--json"] if as_json else []), name])
        out, err = capsys.readouterr()
    finally:
        os.chdir(cwd)
    assert rc == 0, err
    assert str(tmp_path) not in out, "a report names its sources by the path it was given"
    if as_json:
        return json.dumps(_cut(json.loads(out)), indent=1, sort_keys=True) + "\n"
    return out


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("name", SOURCES)
def test_report_matches_its_snapshot(tmp_path: Path, name: str, as_json: bool,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    got = _report(tmp_path, name, as_json, capsys)
    snap = SNAPSHOTS / f"{name}.report.{'json' if as_json else 'txt'}"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        snap.write_text(got)
    assert snap.is_file(), f"no snapshot {snap.name}: write it with TBIO_UPDATE_SNAPSHOTS=1 and review it"
    want = snap.read_text()
    if got != want:
        # the first differing line, so the failure says what changed without a 1,000-line diff
        for i, (a, b) in enumerate(zip(got.splitlines(), want.splitlines())):
            if a != b:
                pytest.fail(f"{snap.name} line {i + 1} differs:\n  now:  {a}\n  was:  {b}\n"
                            "(a deliberate change: TBIO_UPDATE_SNAPSHOTS=1, then review the diff)")
        pytest.fail(f"{snap.name}: {len(got.splitlines())} lines now, {len(want.splitlines())} in the snapshot")


def test_snapshots_cover_every_held_source() -> None:
    """A source added to tests/data without a snapshot is named here."""
    held = {p.name for p in DATA.iterdir()
            if p.name.endswith((".xplane.pb", ".pt.trace.json", ".pt.trace.json.gz")) or p.name.startswith("run_")}
    assert held == set(SOURCES)
