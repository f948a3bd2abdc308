"""TensorFlow's own reads are captured exactly: a real TFRecord file written
with tf.io.TFRecordWriter and read to the end with tf.data.TFRecordDataset
inside capture(): POSIX bytes read == the file's size, and the reads are in
the trace.  Run twice, in fresh processes: TensorFlow imported before
enable() (its libraries are patched in place, including the pointers
libtensorflow_cc keeps in data) and after it (every TF library arrives
through the dlopen wrapper, along TF's $ORIGIN RUNPATHs)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

NRECORDS = 300

WORKLOAD = r'''
import json, os, sys
from pathlib import Path

mode, out, nrec = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
import tb_iotrace
if mode == "after":
    tb_iotrace.enable()
import tensorflow as tf
tb_iotrace.enable()

path = out / "data.tfrecord"
payload = bytes(range(256)) * 5
with tb_iotrace.capture() as wcap:
    with tf.io.TFRecordWriter(str(path)) as w:
        for i in range(nrec):
            w.write(payload[: 900 + (i % 200)])
with tb_iotrace.capture() as rcap:
    n = sum(1 for _ in tf.data.TFRecordDataset(str(path)))


def summary(cap):
    ev = cap.events
    rows = [[ev.op[i], ev.module[i], int(ev.offset[i]), int(ev.requested[i]), int(ev.returned[i]),
             int(ev.errno[i])] for i in range(len(ev)) if ev.path[i] == str(path)]
    return {"files": [f.to_dict() for f in cap.files if f.path == str(path)], "rows": rows}


json.dump({"path": str(path), "size": os.path.getsize(path), "n": n,
           "write": summary(wcap), "read": summary(rcap)}, open(out / "result.json", "w"))
'''

READ_OPS = {"read", "pread", "pread64", "__read_chk", "__pread_chk", "__pread64_chk", "readv", "preadv",
            "preadv64", "preadv2", "preadv64v2"}


def run(mode: str, work: Path) -> dict:
    script = work / "workload.py"
    script.write_text(WORKLOAD)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    p = subprocess.run([sys.executable, str(script), mode, str(work), str(NRECORDS)], capture_output=True,
                       text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads((work / "result.json").read_text())


def counters(part: dict, module: str) -> dict[str, int]:
    recs = [f["counters"] for f in part["files"] if f["module"] == module]
    assert len(recs) == 1, part["files"]
    return recs[0]


@pytest.mark.parametrize("mode", ["before", "after"])
def test_tfrecord_read_to_the_end_is_captured(tmp_path: Path, mode: str) -> None:
    r = run(mode, tmp_path)
    # TFRecord framing: 8-byte length + 4-byte CRC + data + 4-byte CRC per record
    size = sum(900 + (i % 200) + 16 for i in range(NRECORDS))
    assert r["size"] == size
    assert r["n"] == NRECORDS

    c = counters(r["read"], "POSIX")
    assert c["POSIX_BYTES_READ"] == size
    assert c["POSIX_OPENS"] == 1
    reads = [row for row in r["read"]["rows"] if row[0] in READ_OPS]
    assert reads, r["read"]["rows"]
    assert all(module == "POSIX" and err == 0 for op, module, off, req, ret, err in reads)
    assert sum(ret for op, module, off, req, ret, err in reads) == size
    assert c["POSIX_READS"] == len(reads)
    # the reads tile the file from 0 in order, and TF's reader ends with a
    # zero-length read at the end of the file, which is traced and counted
    offsets = [off for op, module, off, req, ret, err in reads]
    assert offsets == [sum(row[4] for row in reads[:k]) for k in range(len(reads))]
    assert reads[-1][2] == size and reads[-1][4] == 0
    assert c["POSIX_MAX_BYTE_READ"] == size - 1

    # the writer's bytes reach the file through STDIO (fopen/fwrite): all of them
    w = counters(r["write"], "STDIO")
    assert w["STDIO_BYTES_WRITTEN"] == size
    assert w["STDIO_OPENS"] == 1
    assert sum(row[4] for row in r["write"]["rows"] if row[0] == "fwrite") == size
