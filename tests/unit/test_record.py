"""tb_iotrace.recording.pytorch.record, in a process of its own (it begins and ends the native
session): a DataLoader worker's side record of a window holds its reads of a file (calls and the
file's counters: every byte), its fetch spans and worker id, its CPU time; nothing is written
when no session was begun."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, os, sys, time
import tb_iotrace
from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch import record

data, spool = sys.argv[1], sys.argv[2]
tb_iotrace.enable()
state.role, state.worker_id = "worker", 3
assert record.write_side_record(7, spool) is None        # no session begun: nothing
record.begin()
t0 = time.time_ns()
with open(data, "rb", buffering=0) as fh:
    while fh.read(4096):
        pass
state.spans.append((t0, time.time_ns(), 1234, 8))
print(record.write_side_record(7, spool))
"""


def test_a_workers_side_record(tmp_path):
    data = tmp_path / "shard.bin"
    data.write_bytes(b"\x07" * (3 * 4096 + 100))
    spool = tmp_path / "spool"
    spool.mkdir()
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(data), str(spool)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    path = Path(r.stdout.strip().splitlines()[-1])
    assert path.parent == spool and path.name.startswith("7.") and path.name.endswith(".json")
    rec = json.loads(path.read_text())
    assert rec["role"] == "worker" and rec["worker_id"] == 3 and rec["pid"] == int(path.name.split(".")[1])
    ev = rec["events"]
    mine = [i for i, p in enumerate(ev["path"]) if p == str(data)]
    reads = [i for i in mine if ev["op"][i] == "read"]
    assert sum(ev["returned"][i] for i in reads) == data.stat().st_size and len(reads) == 5   # 4 with data, EOF
    [c] = [c for c in rec["counters"] if c["path"] == str(data)]
    assert c["counters"]["POSIX_BYTES_READ"] == data.stat().st_size and c["counters"]["POSIX_READS"] == 5
    assert rec["fetches"]["tid"] == [1234] and rec["fetches"]["samples"] == [8]
    assert rec["fetches"]["start_ns"][0] <= rec["fetches"]["end_ns"][0]
    assert rec["start_ns"] <= min(ev["start_ns"][i] for i in mine) and rec["end_ns"] >= max(ev["end_ns"][i] for i in mine)
    assert rec["cpu_ns"] >= 0 and rec["dropped"] == 0
