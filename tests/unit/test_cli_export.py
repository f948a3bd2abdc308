"""tb-iotrace export: chrome (validated by parsing, on the shared GPU capture), darshan text
parsed back, parquet/csv round-trips, a million events in bounded memory with progress."""
from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.store import xplane as X
from tb_iotrace.cli import main
from tb_iotrace.export import darshan
from tb_iotrace.base.progress import Progress
from tb_iotrace.base.recordid import record_id
from tb_iotrace.store.runrecord import FORMAT as RECORD_FORMAT

from test_cli_report import COUNTERS, GPU_HOST, T0, logdir, small_trace  # noqa: F401  (fixture)

PY = sys.executable
RUN = "2020_01_01_00_00_00"


def capture_path(root: Path) -> Path:
    return root / "plugins" / "profile" / RUN / f"{GPU_HOST}.xplane.pb"


def test_chrome_gpu_capture(logdir, tmp_path):  # noqa: F811
    out = tmp_path / "trace.json.gz"
    assert main(["export", str(logdir), "--run", RUN, "--format", "chrome", "-o", str(out)]) == 0
    with gzip.open(out, "rt") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    spans = [e for e in events if e["ph"] == "X"]
    for e in spans:
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and e["pid"] in procs
        assert isinstance(e["tid"], int) and 0 <= e["tid"] <= 0x7FFFFFFF
    by_proc: dict[str, list] = {}
    for e in spans:
        by_proc.setdefault(procs[e["pid"]], []).append(e)
    assert any(p.startswith("/device:GPU") for p in by_proc), procs
    assert "/host:CPU" in by_proc
    assert not any(e["name"] == "pread64" for e in by_proc["/host:CPU"])  # I/O lines not duplicated
    io_events = [e for p, evs in by_proc.items() if p.startswith("I/O") for e in evs]
    assert len(io_events) == 50
    trace = small_trace()
    first = min(io_events, key=lambda e: e["ts"])
    assert first["args"]["file"] == "/data/a.tfrecord" and first["args"]["bytes"] == 4096
    assert first["args"]["offset"] == 0
    # one clock: the I/O event is where its absolute time puts it relative to the profile start
    assert first["ts"] == pytest.approx((trace.start_ns.min() - T0) / 1e3, abs=0.01)
    assert doc["otherData"]["clock_origin_ns"] == T0


def test_darshan_parses_back(logdir, tmp_path):  # noqa: F811
    out = tmp_path / "d.txt"
    assert main(["export", str(logdir), "--format", "darshan", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# darshan log version:")
    assert "#<module>\t<rank>\t<record id>\t<counter>\t<value>\t<file name>\t<mount pt>\t<fs type>" in text
    recs = darshan.parse(text)
    # two sources (capture + record), each with the two COUNTERS files
    assert len(recs) == 4 and {r["rank"] for r in recs} == {0, 1}
    for r in recs:
        want = next(c for c in COUNTERS if c["path"] == r["path"] and c["module"] == r["module"])
        assert r["record_id"] == record_id(r["path"])   # Darshan's id of the path
        assert r["counters"] == want["counters"]
        assert r["fcounters"] == pytest.approx(want["fcounters"], abs=1e-6)
    # awk-style column access works like on darshan-parser output
    lines = [ln.split("\t") for ln in text.splitlines() if ln.startswith("POSIX\t")]
    assert all(len(p) == 8 for p in lines)
    assert sum(int(p[4]) for p in lines if p[3] == "POSIX_BYTES_READ") == 2 * 12288


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_tables_round_trip(logdir, tmp_path, fmt):  # noqa: F811
    out = tmp_path / "tables"
    assert main(["export", str(logdir), "--run", RUN, "--format", fmt, "-o", str(out)]) == 0
    trace = X.read_io_data(X.load_xspace(capture_path(logdir)))
    if fmt == "parquet":
        import pyarrow.parquet as pq

        files = pq.read_table(out / "files.parquet").to_pylist()
        ops = pq.read_table(out / "ops.parquet").to_pydict()
    else:
        with open(out / "files.csv", newline="") as fh:
            files = list(csv.DictReader(fh))
        with open(out / "ops.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        ops = {k: [r[k] for r in rows] for k in rows[0]}
    assert len(files) == 2
    for row in files:
        assert int(row["record_id"]) == record_id(row["path"])
        want = next(c for c in COUNTERS if c["path"] == row["path"] and c["module"] == row["module"])
        for k, v in want["counters"].items():
            assert int(row[k]) == v
        for k, v in want["fcounters"].items():
            assert float(row[k]) == pytest.approx(v)
    assert len(ops["start_ns"]) == len(trace)
    for k in ("start_ns", "end_ns", "offset", "requested", "returned", "fd", "errno", "tid"):
        assert [int(v) for v in ops[k]] == getattr(trace, k).tolist(), k
    assert list(ops["op"]) == trace.op.tolist() and list(ops["path"]) == trace.path.tolist()
    assert set(ops["host"]) == {GPU_HOST}


def test_export_refuses_file_as_table_folder(logdir, tmp_path):  # noqa: F811
    f = tmp_path / "x"
    f.write_text("")
    assert main(["export", str(logdir), "--format", "csv", "-o", str(f)]) == 1
    assert main(["export", str(logdir), "--format", "chrome", "-o", str(tmp_path / "no" / "t.json")]) == 1


def test_progress_on_terminal_only():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    s = Tty()
    p = Progress("export chrome", 10, stream=s)
    p.add(10)
    p.close()
    assert "10/10 events (100%)" in s.getvalue()
    s2 = io.StringIO()
    p = Progress("export chrome", 10, stream=s2)
    p.add(10)
    p.close()
    assert s2.getvalue() == ""


def big_record(root: Path, n: int) -> Path:
    rec = root / "plugins" / "iotrace"
    rec.mkdir(parents=True)
    st = T0 + np.arange(n, dtype=np.int64) * 1000
    np.savez(rec / "h.1.npz", start_ns=st, end_ns=st + 500, op_id=(np.arange(n) % 3).astype(np.int32),
             file_id=(np.arange(n) % 7).astype(np.int32), offset=np.arange(n, dtype=np.int64) * 4096,
             requested=np.full(n, 4096, np.int64), returned=np.full(n, 4096, np.int64), fd=np.full(n, 3, np.int64),
             errno=np.zeros(n, np.int64), tid=np.full(n, 77, np.int64),
             op_names=np.array(["read", "pread64", "write"]), paths=np.array([f"/d/f{i}" for i in range(7)]))
    doc = {"format": RECORD_FORMAT, "host": "h", "pid": 1, "ppid": 0, "argv": [], "start_ns": T0,
           "end_ns": int(st[-1]), "partial": False, "exit": {"how": "exit"}, "files": COUNTERS,
           "threads": [{"tid": 77, "name": "w"}], "nevents": n, "dropped": 0, "trace": "h.1.npz"}
    (rec / "h.1.json").write_text(json.dumps(doc))
    return root


# The child's own peak (VmHWM of its address space), not ru_maxrss: Linux keeps ru_maxrss across
# execve, and a child spawned with vfork starts from the parent's (the pytest worker's) peak.
PEAK = r'''
import sys
from tb_iotrace.cli import main
rc = main(sys.argv[1:])
print(int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024)
sys.exit(rc)
'''


@pytest.mark.slow
def test_million_events_bounded_memory(tmp_path):
    n = 1_000_000
    root = big_record(tmp_path / "big", n)
    base = subprocess.run([PY, "-c", "import tb_iotrace.cli, numpy; "
                           "print(int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024)"],
                          capture_output=True, text=True, check=True)
    base_mb = int(base.stdout.split()[-1])
    for fmt, out in (("csv", tmp_path / "csv"), ("chrome", tmp_path / "t.json.gz")):
        r = subprocess.run([PY, "-c", PEAK, "export", str(root), "--format", fmt, "-o", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        peak = int(r.stdout.split()[-1])
        # the source's columns (~80 MB for 1M rows) + one chunk; never one object per event
        assert peak - base_mb < 400, (fmt, peak, base_mb)
    with open(tmp_path / "csv" / "ops.csv") as fh:
        assert sum(1 for _ in fh) == n + 1
    with gzip.open(tmp_path / "t.json.gz", "rt") as fh:
        doc = json.load(fh)
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == n
