"""Periodic flushes of a ``tb-iotrace run`` process that records nothing new write nothing: no
new trace part, the partial record left as it was; calls that come later are flushed as usual
(the process then killed with SIGKILL keeps them). Ground truth: the job reads data.bin
(12345 B) once, after an idle stretch of many flush periods, and snapshots the record folder
(names and the partial record's generation) before and after the idle stretch."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
PY = sys.executable

JOB = r'''
import json, os, signal, sys, time
rec, data, out = sys.argv[1], sys.argv[2], sys.argv[3]

def snap():
    names = sorted(n for n in os.listdir(rec) if not n.startswith("."))
    doc = json.load(open(os.path.join(rec, [n for n in names if n.endswith(".json")][0])))
    return {"names": names, "generation": doc["generation"], "partial": doc["partial"]}

time.sleep(1.5)                 # start-up settles: the flushes after it see an idle process
snaps = {"before": snap()}
time.sleep(1.5)                 # 7 flush periods of 0.2 s with no call
snaps["idle"] = snap()
with open(data, "rb") as fh:
    n = len(fh.read())
time.sleep(1.5)                 # the read's flush
snaps["after"] = snap()
snaps["read"] = n
with open(out, "w") as fh:
    json.dump(snaps, fh)
os.kill(os.getpid(), signal.SIGKILL)
'''


def test_idle_flushes_write_nothing_and_later_calls_are_kept(tmp_path: Path) -> None:
    data, logdir, out = tmp_path / "data.bin", tmp_path / "logs", tmp_path / "job.json"
    data.write_bytes(b"x" * 12345)
    rec = logdir / "plugins" / "iotrace"
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--flush", "0.2", "--logdir", str(logdir), "--quiet", "--",
                        PY, "-c", JOB, str(rec), str(data), str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0, r.stderr[-3000:]    # killed by SIGKILL: only the flushes are left
    snaps = json.loads(out.read_text())
    before, idle, after = snaps["before"], snaps["idle"], snaps["after"]
    assert before["partial"] and idle["partial"]
    assert idle["names"] == before["names"], "an idle flush wrote a trace part"
    assert idle["generation"] == before["generation"], "an idle flush rewrote the record"
    new_parts = [n for n in after["names"] if ".part" in n and n not in idle["names"]]
    assert len(new_parts) == 1 and after["generation"] != idle["generation"]

    from tb_iotrace.store.runrecord import find_records, read_record

    (path,) = find_records(rec)
    record = read_record(path)
    assert record.partial
    read = {f["path"]: f["counters"]["POSIX_BYTES_READ"] for f in record.files if f["module"] == "POSIX"}
    assert read.get(str(data)) == 12345 == snaps["read"]
    tr = record.trace()
    assert tr is not None
    paths = tr["paths"].tolist()
    assert any(paths[i] == str(data) for i in tr["file_id"].tolist() if i >= 0)
