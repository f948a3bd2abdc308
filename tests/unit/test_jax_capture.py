"""The surfaces read a real JAX capture made with tb_iotrace (tests/data/jax_io.xplane.pb) as
they read TensorFlow's: report (files, per-step I/O from StepTraceAnnotation) and exports."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from tb_iotrace.cli import main

FILES = {f"/tmp/tbio_jax_data/part{i}.npy" for i in range(4)} | {"/tmp/tbio_jax_data/side.bin"}


def test_report_json(jax_captures, tmp_path: Path, capsys) -> None:
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    (run / "vm.xplane.pb").write_bytes(jax_captures[0].read_bytes())
    assert main(["report", str(tmp_path), "--json"]) == 0
    host = json.loads(capsys.readouterr().out)["runs"][0]["hosts"][0]
    assert "no_io_reason" not in host
    assert {f["path"] for f in host["files"]} == FILES
    assert all(f["counters"]["POSIX_BYTES_READ"] == 16384 for f in host["files"])
    assert [(s["name"], s["step_num"], s["io_bytes"]) for s in host["steps"]] == \
        [("train", i, 16384) for i in range(4)]


def test_exports(jax_captures, tmp_path: Path, capsys) -> None:
    out = tmp_path / "csv"
    assert main(["export", str(jax_captures[0]), "--format", "csv", "-o", str(out)]) == 0
    with open(out / "files.csv", newline="") as fh:
        assert {r["path"] for r in csv.DictReader(fh)} == FILES
    with open(out / "ops.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 41
    chrome = tmp_path / "trace.json"
    assert main(["export", str(jax_captures[0]), "--format", "chrome", "-o", str(chrome)]) == 0
    events = json.loads(chrome.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any(FILES & set(map(str, (e.get("args") or {}).values())) for e in events)
