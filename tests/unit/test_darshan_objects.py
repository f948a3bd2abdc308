"""Object-storage requests in the Darshan exports: a ``tb-iotrace run`` job GETs and PUTs
objects on local servers (127.0.0.1); PyDarshan reads its log back with one POSIX record per
object, named by URL, with exact op and byte counts, and the text export says the same."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from test_object_uploads import sink  # noqa: F401  (fixture)

pytest.importorskip("requests")
pytest.importorskip("darshan")
sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from slow_proxy import FileServer  # noqa: E402

PY = sys.executable
READ = r'''
import json, sys, darshan
rep = darshan.DarshanReport(sys.argv[1], read_all=True)
out = {}
for r in rep.records["POSIX"].to_dict():
    out[rep.name_records[r["id"]]] = {"c": {k: int(v) for k, v in r["counters"].items()},
                                       "f": {k: float(v) for k, v in r["fcounters"].items()}}
print(json.dumps(out))
'''
JOB = """import requests, sys
get, put = sys.argv[1], sys.argv[2]
for name in ('a.bin', 'b.bin', 'a.bin'):
    assert len(requests.get(get + '/d/' + name + '?X-Amz-Signature=SECRETSIG', timeout=10).content)
assert requests.get(get + '/d/nope.bin', timeout=10).status_code == 404
for n in (70001, 3):
    assert requests.put(put + '/up.bin', data=b'u' * n, timeout=10).status_code == 200
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    (root / "d").mkdir()
    (root / "d" / "a.bin").write_bytes(b"a" * 100_000)
    (root / "d" / "b.bin").write_bytes(b"b" * 5_000)
    srv = FileServer(str(root))
    try:
        yield srv
    finally:
        srv.stop()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tb_iotrace", *args], capture_output=True, text=True, timeout=300)


def test_objects_read_back_by_pydarshan(server: FileServer, sink: str, tmp_path: Path) -> None:  # noqa: F811
    script = tmp_path / "job.py"
    script.write_text(JOB)
    logdir = tmp_path / "logs"
    r = _cli("run", "--logdir", str(logdir), "--quiet", "--", PY, str(script), server.endpoint, sink)
    assert r.returncode == 0, r.stderr
    log = tmp_path / "run.darshan"
    r = _cli("export", str(logdir), "--format", "darshan-log", "-o", str(log))
    assert r.returncode == 0, r.stderr
    assert "(4 POSIX records are objects, named by URL)" in r.stderr
    got = subprocess.run([PY, "-c", READ, str(log)], capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    # a path-style URL on a bare host reads as S3 (s3://d/a.bin): names are the capture's own
    recs = {k: v for k, v in json.loads(got.stdout).items() if k.startswith(("http://", "s3://"))}
    assert len(recs) == 4
    by = {next(n for n in ("a.bin", "b.bin", "nope.bin", "up.bin") if n in k): v for k, v in recs.items()}
    a, b, nope, up = by["a.bin"], by["b.bin"], by["nope.bin"], by["up.bin"]
    assert (a["c"]["POSIX_READS"], a["c"]["POSIX_BYTES_READ"], a["c"]["POSIX_MAX_BYTE_READ"]) == (2, 200_000, 99_999)
    assert a["c"]["POSIX_SIZE_READ_100K_1M"] == 0 and a["c"]["POSIX_SIZE_READ_10K_100K"] == 2
    assert b["c"]["POSIX_SIZE_READ_1K_10K"] == 1
    assert (b["c"]["POSIX_READS"], b["c"]["POSIX_BYTES_READ"]) == (1, 5_000)
    assert (nope["c"]["POSIX_READS"], nope["c"]["POSIX_BYTES_READ"]) == (0, 0) and nope["f"]["POSIX_F_META_TIME"] > 0
    assert (up["c"]["POSIX_WRITES"], up["c"]["POSIX_BYTES_WRITTEN"], up["c"]["POSIX_READS"]) == (2, 70_004, 0)
    assert up["c"]["POSIX_SIZE_WRITE_10K_100K"] == 1 and up["c"]["POSIX_SIZE_WRITE_0_100"] == 1
    for rec in recs.values():
        assert rec["c"]["POSIX_OPENS"] == 0
    assert 0 <= a["f"]["POSIX_F_READ_START_TIMESTAMP"] <= a["f"]["POSIX_F_READ_END_TIMESTAMP"]
    assert a["f"]["POSIX_F_READ_TIME"] > 0 and up["f"]["POSIX_F_WRITE_TIME"] > 0
    assert b"SECRETSIG" not in log.read_bytes()
    text = _cli("export", str(logdir), "--format", "darshan", "-o", "-")
    assert text.returncode == 0, text.stderr
    lines = [ln.split("\t") for ln in text.stdout.splitlines() if not ln.startswith("#") and ln]
    rows = {(x[0], x[5], x[3]): x[4] for x in lines}
    up_name, a_name = (next(k for k in recs if n in k) for n in ("up.bin", "a.bin"))
    assert rows[("POSIX", up_name, "POSIX_BYTES_WRITTEN")] == "70004"
    assert rows[("POSIX", a_name, "POSIX_BYTES_READ")] == "200000"


# --------------------------------------------------------------------------- the records, directly

def _req(obj: str, op: str, status: int, nbytes: int, start: int, end: int, rng: int = -1) -> dict:
    return {"object": obj, "op": op, "status": status, "bytes": nbytes, "start_ns": start, "end_ns": end,
            "range_start": rng}


def test_posix_records_count_each_kind_of_request() -> None:
    from tb_iotrace.export.darshan_objects import is_object_name, posix_records

    zero = 1_000_000_000
    a, b = "s3://bkt/a.bin", "gs://g/b.bin"
    reqs = [_req(a, "GET", 206, 100, zero + 2_000_000_000, zero + 3_000_000_000, rng=1000),
            _req(a, "GET", 200, 50, zero + 1_000_000_000, zero + 1_500_000_000),
            _req(a, "GET", 404, 0, zero, zero + 100_000_000),                     # failed: metadata time
            _req(a, "HEAD", 200, 0, zero, zero + 200_000_000),
            _req(a, "PUT", 200, 2048, zero + 4_000_000_000, zero + 6_000_000_000),
            _req(a, "MPU", 200, 0, zero, zero + 50_000_000),                      # create/complete: metadata
            _req(b, "LIST", 200, 10, zero, zero + 10_000_000)]
    recs = posix_records(reqs, zero)
    assert [r["path"] for r in recs] == [b, a]                                   # one per object, by name
    ra, rb = recs[1], recs[0]
    assert ra["module"] == "POSIX"
    assert ra["counters"] == {"POSIX_READS": 2, "POSIX_BYTES_READ": 150,   # 100 B: 0_100 (edges inclusive)
                              "POSIX_SIZE_READ_0_100": 2, "POSIX_MAX_READ_TIME_SIZE": 100,
                              "POSIX_MAX_BYTE_READ": 1099, "POSIX_STATS": 1, "POSIX_WRITES": 1,
                              "POSIX_BYTES_WRITTEN": 2048, "POSIX_SIZE_WRITE_1K_10K": 1,
                              "POSIX_MAX_WRITE_TIME_SIZE": 2048}
    f = ra["fcounters"]
    assert f["POSIX_F_READ_TIME"] == pytest.approx(1.5) and f["POSIX_F_MAX_READ_TIME"] == pytest.approx(1.0)
    assert f["POSIX_F_META_TIME"] == pytest.approx(0.35)
    assert (f["POSIX_F_READ_START_TIMESTAMP"], f["POSIX_F_READ_END_TIMESTAMP"]) == pytest.approx((1.0, 3.0))
    assert (f["POSIX_F_WRITE_START_TIMESTAMP"], f["POSIX_F_WRITE_END_TIMESTAMP"]) == pytest.approx((4.0, 6.0))
    assert rb["counters"] == {"POSIX_STATS": 1}                                  # a LIST is a stat
    assert is_object_name(a) and is_object_name("https://h/p") and not is_object_name("/data/a.bin")


def test_a_failed_stat_is_time_but_no_stat() -> None:
    from tb_iotrace.export.darshan_objects import posix_records

    (rec,) = posix_records([_req("s3://b/k", "HEAD", 0, 0, 0, 10)], 0)
    assert rec["counters"] == {} and rec["fcounters"]["POSIX_F_META_TIME"] > 0
