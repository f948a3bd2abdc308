"""Storage that is not a file in the verdict and the findings: synthetic PyTorch traces
(tests/unit/fixtures/torch_fetch_trace.py) whose workers GET objects during their fetches.
Every 10 ms step waits 4 ms; the fetching worker reads a file for 1 ms, then GETs."""
from __future__ import annotations

from pathlib import Path

import pytest

from tb_iotrace.analysis import analyze
from tb_iotrace.store.kineto_xspace import read_xspace

import torch_fetch_trace


def _analysis(path: Path):
    a = analyze(read_xspace(path))
    assert a is not None
    return a


def test_object_requests_are_object_io_not_decode(tmp_path: Path) -> None:
    """GETs for 2 ms of each 4 ms fetch after a 1 ms read: file_io 1/4, object_io 1/2, decode
    1/4 (before: decode 3/4)."""
    p = tmp_path / "obj.pt.trace.json.gz"
    torch_fetch_trace.make(p, object_ms=2)
    v = _analysis(p).verdict
    assert v["wait_breakdown"] == pytest.approx({"file_io": 0.25, "object_io": 0.5, "decode": 0.25, "starved": 0.0,
                                                 "copy": 0.0, "other": 0.0})
    assert v["cause"] == "object_io"


def test_latency_bound_small_gets_named(tmp_path: Path) -> None:
    """Four 16 KiB ranged GETs per object for 3 ms of each wait, 90% first-byte latency:
    object_io 3/4; the change: s3fs's block_size, by the stated model: 4 GETs -> 1 saves 3/4 of
    the latency (0.9): step time -0.4 x 0.75 x 0.9 x 0.75."""
    p = tmp_path / "small.pt.trace.json.gz"
    torch_fetch_trace.make(p, object_ms=3)
    a = _analysis(p)
    v = a.verdict
    assert v["wait_breakdown"]["object_io"] == pytest.approx(0.75) and v["cause"] == "object_io"
    assert v["change"].startswith("s3fs: fewer, larger GETs: fs.open(path, block_size=65536")
    assert v["expected_step_time_change"] == pytest.approx(-0.4 * 0.75 * 0.9 * 0.75)
    assert "first-byte latency" in v["model"]
    ids = [f["id"] for f in a.findings]
    assert ids[0] == "input-bound" and "fewer, larger GETs" in a.findings[0]["suggestion"]
    assert "in flight during 75% of the wait" in a.findings[0]["statement"]
    [small] = [f for f in a.findings if f["id"] == "object-small-requests"]
    assert small["impact"]["step_share"] == pytest.approx(0.4 * 0.75)
    assert small["severity"] == "warning" and small["evidence"]["gets_per_object"] == pytest.approx(4.0)
    assert small["files"][0].startswith("s3://objs/shards/")
    # every worker made its GETs one after another
    assert "object-serial-requests" in ids


def test_throttled_requests(tmp_path: Path) -> None:
    """503 SlowDown answers: the object-throttled finding, counted."""
    p = tmp_path / "slow.pt.trace.json.gz"
    torch_fetch_trace.make(p, object_ms=2, statuses=(503, 503, 206, 206, 429))
    a = _analysis(p)
    [f] = [f for f in a.findings if f["id"] == "object-throttled"]
    assert f["evidence"] == {"throttled": 3, "statuses": [429, 503]}


def test_without_objects_nothing_changes(tmp_path: Path) -> None:
    p = tmp_path / "plain.pt.trace.json.gz"
    torch_fetch_trace.make(p)
    a = _analysis(p)
    assert a.verdict["wait_breakdown"]["object_io"] == 0.0
    assert not [f for f in a.findings if f["id"].startswith("object-")]
    assert "Object-storage" not in a.findings[0]["statement"]


def test_report_carries_objects(tmp_path: Path) -> None:
    """report --json: each worker's objects with per-object counters; the text's table."""
    import json
    import subprocess
    import sys

    p = tmp_path / "w.pt.trace.json.gz"
    torch_fetch_trace.make(p, object_ms=2)
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", "--json", str(p)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    hosts = json.loads(r.stdout)["runs"][0]["hosts"]
    objs = {h["process"]["pid"]: h["objects"] for h in hosts}
    assert objs[100] is None
    assert objs[201]["requests"] == 20 and objs[201]["bytes_read"] == 20 * 16384
    [rec] = [o for o in objs[201]["objects"] if o["object"] == "s3://objs/shards/s000.bin"]
    assert rec["counters"]["OBJ_RANGED_GETS"] == 4 and rec["counters"]["OBJ_SEQ_RANGES"] == 3
    assert rec["counters"]["OBJ_UNIQUE_BYTES_READ"] == 65536 and rec["counters"]["OBJ_MAX_CONCURRENCY"] == 1
    t = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", str(p)], capture_output=True, text=True, timeout=120)
    assert "Objects: 20 requests (GET 20)" in t.stdout and "object I/O 50%" in t.stdout


def test_exports_carry_objects(tmp_path: Path) -> None:
    """Chrome: an "Objects" process with each request; Parquet and CSV: objects and requests."""
    import csv
    import json

    import pyarrow.parquet as pq

    from tb_iotrace.cli import main

    p = tmp_path / "w.pt.trace.json.gz"
    torch_fetch_trace.make(p, object_ms=2)
    assert main(["export", str(p), "--format", "chrome", "-o", str(tmp_path / "c.json")]) == 0
    doc = json.loads((tmp_path / "c.json").read_text())
    objs = [e for e in doc["traceEvents"] if e.get("cat") == "object"]
    assert len(objs) == 40 and objs[0]["name"].startswith("GET s3://objs/shards/")
    assert objs[0]["args"]["range"] == "0-16383" and objs[0]["args"]["bytes"] == 16384
    assert main(["export", str(p), "--format", "parquet", "-o", str(tmp_path / "pq")]) == 0
    t = pq.read_table(tmp_path / "pq" / "objects.parquet").to_pylist()
    assert len(t) == 10 and all(r["OBJ_BYTES_READ"] == 65536 and r["OBJ_RANGED_GETS"] == 4 for r in t)
    assert pq.read_table(tmp_path / "pq" / "requests.parquet").num_rows == 40
    assert main(["export", str(p), "--format", "csv", "-o", str(tmp_path / "csv")]) == 0
    with open(tmp_path / "csv" / "requests.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 40


def test_fleet_objects_table(tmp_path: Path) -> None:
    """The fleet dataset's ``objects`` table: one row per object of each host, its counters."""
    import json
    import subprocess
    import sys

    pytest.importorskip("pyarrow")
    from tb_iotrace.fleet import host_tables

    p = tmp_path / "w.pt.trace.json.gz"
    torch_fetch_trace.make(p, object_ms=2)
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", "--json", str(p)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    layout = {"POSIX": (("POSIX_READS",), ("POSIX_F_READ_TIME",))}
    rows = []
    for doc in json.loads(r.stdout)["runs"][0]["hosts"]:
        tables = host_tables("r", doc, layout)
        assert "objects" not in tables["hosts"].column_names
        if "objects" in tables:
            rows += tables["objects"].to_pylist()
    assert len(rows) == 10 and {x["host"].rsplit("/", 1)[1] for x in rows} == {"pid201", "pid202"}
    assert all(x["OBJ_BYTES_READ"] == 65536 and x["OBJ_GETS"] == 4 for x in rows)


def test_tab_objects_endpoint(tmp_path: Path) -> None:
    """The tab's /objects on a logdir holding the trace (one host: the trace, its workers'
    requests together): the objects, most bytes first."""
    from tb_iotrace.plugin.cache import LogdirIndex
    from tb_iotrace.plugin.endpoints.objects import objects_impl

    run = tmp_path / "logs" / "job"
    run.mkdir(parents=True)
    torch_fetch_trace.make(run / "w0.1790857026000.pt.trace.json.gz", object_ms=2)
    index = LogdirIndex(str(tmp_path / "logs"))
    [info] = index.runs()
    body = objects_impl(index.view(info.run, sorted(info.hosts.items())))
    assert body["errors"] == []
    [h] = body["hosts"]
    assert h["host"] == "w0"
    assert h["requests"] == 40 and h["ops"] == {"GET": 40} and h["bytes_read"] == 40 * 16384
    assert [o["counters"]["OBJ_BYTES_READ"] for o in h["objects"]] == [65536] * 10
