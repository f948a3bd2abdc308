"""tb-iotrace export --format darshan-log: a binary Darshan log that Darshan's tools read.

Ground truth: PyDarshan 3.5.0 reads back every counter equal to `tb-iotrace report --json`, the
DXT segments equal the trace's POSIX reads and writes, ids equal Darshan's hash;
`python -m darshan summary`, Drishti and DXT Explorer run on it; import-darshan gives the same
counters back. The workload (fixtures/darshan_workload.py) runs under `tb-iotrace run`.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.export.darshan_log import DXT_READS, DXT_WRITES
from tb_iotrace.base.recordid import record_id
from tb_iotrace.store.runrecord import FORMAT as RECORD_FORMAT
from tb_iotrace.store.runrecord import read_record

from test_cli_report import GPU_HOST, T0, logdir, small_trace  # noqa: F401  (fixture)

darshan = pytest.importorskip("darshan")

PY = sys.executable
BIN = Path(PY).parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TIMESTAMPS = "TIMESTAMP"
RUN = "2020_01_01_00_00_00"


def cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tb_iotrace", *args], capture_output=True, text=True, timeout=timeout)


def in_child(code: str, *args: str) -> str:
    """Run PyDarshan in a child: libdarshan-util may abort the process on a bad log."""
    r = subprocess.run([PY, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


READ_LOG = r'''
import json, sys, darshan
rep = darshan.DarshanReport(sys.argv[1], read_all=True)
out = {"job": rep.metadata["job"], "exe": rep.metadata["exe"], "mounts": [list(m) for m in rep.mounts],
       "modules": {k: {kk: vv for kk, vv in v.items()} for k, v in rep.modules.items()},
       "names": {str(k): v for k, v in rep.name_records.items()}, "records": {}, "dxt": []}
for mod in ("POSIX", "STDIO"):
    if mod not in rep.records:
        continue
    for r in rep.records[mod].to_dict():
        out["records"].setdefault(mod, []).append(
            {"id": int(r["id"]), "rank": int(r["rank"]), "counters": {k: int(v) for k, v in r["counters"].items()},
             "fcounters": {k: float(v) for k, v in r["fcounters"].items()}})
if "DXT_POSIX" in rep.records:
    for e in rep.records["DXT_POSIX"].to_df():
        segs = {k: {c: (e[k + "_segments"][c].tolist() if len(e[k + "_segments"]) else [])
                    for c in ("offset", "length", "start_time", "end_time")} for k in ("write", "read")}
        out["dxt"].append({"id": int(e["id"]), "rank": int(e["rank"]), "hostname": e["hostname"], **segs})
print(json.dumps(out))
'''


def read_log(path: Path) -> dict:
    return json.loads(in_child(READ_LOG, str(path)))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, libio_path) -> Path:
    root = tmp_path_factory.mktemp("dlog")
    libio = libio_path
    data = root / "data"
    data.mkdir()
    env = dict(os.environ, TBIO_EXCLUDE="/", TBIO_INCLUDE=str(data))
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(root / "logdir"), "--",
                        PY, str(FIXTURES / "darshan_workload.py"), str(data), str(libio)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return root


@pytest.fixture(scope="module")
def exported(run_dir) -> tuple[Path, dict, dict]:
    """(log, what PyDarshan reads, `report --json` of the same records)."""
    log = run_dir / "run.darshan"
    r = cli("export", str(run_dir / "logdir"), "--format", "darshan-log", "-o", str(log))
    assert r.returncode == 0, r.stderr
    assert "2 rank(s)" in r.stderr
    rep = cli("report", str(run_dir / "logdir"), "--json")
    assert rep.returncode == 0, rep.stderr
    return log, read_log(log), json.loads(rep.stdout)


def hosts(report: dict) -> list[dict]:
    (run,) = report["runs"]
    return run["hosts"]


def rank_of(got: dict) -> dict[str, int]:
    meta = got["job"]["metadata"]
    return {v.split("/", 1)[1]: int(k[4:]) for k, v in meta.items() if k.startswith("rank")}


@pytest.mark.slow
def test_every_counter_reads_back(exported):
    log, got, report = exported
    assert got["job"]["log_ver"] == "3.41" and got["job"]["metadata"]["lib_ver"] == "3.5.0"
    assert got["job"]["nprocs"] == 2 and got["exe"].startswith(str(FIXTURES / "darshan_workload.py"))
    assert got["mounts"], "at least one mount entry"
    job_start = got["job"]["start_time_sec"] * 10**9 + got["job"]["start_time_nsec"]
    ranks = rank_of(got)
    want = {}
    for h in hosts(report):
        rank = ranks[h["host"]]
        shift = (h["process"]["start_ns"] - job_start) / 1e9
        assert rank == 0 or shift > 0
        for f in h["files"]:
            want[(f["module"], rank, record_id(f["path"]))] = (f, shift)
    n = 0
    for mod, recs in got["records"].items():
        for r in recs:
            f, shift = want.pop((mod, r["rank"], r["id"]))
            assert r["counters"] == f["counters"], f["path"]
            assert f["record_id"] == r["id"]        # the capture stored Darshan's id too
            for k, v in f["fcounters"].items():
                expect = v + shift if TIMESTAMPS in k and v else v
                assert r["fcounters"][k] == pytest.approx(expect, abs=1e-9), (f["path"], k)
            n += 1
    assert not want and n == 5
    assert {m: len(v) for m, v in got["records"].items()} == {"POSIX": 4, "STDIO": 1}


@pytest.mark.slow
def test_names_ids_and_rename(exported, run_dir):
    _, got, report = exported
    data = run_dir / "data"
    names = {int(k): v for k, v in got["names"].items()}
    for path in ("a.bin", "b.bin", "s.txt", "c.bin"):
        assert names[record_id(str(data / path))] == str(data / path)
    odd = os.path.join(os.fsencode(data), b"odd-\xff\xfe.bin")
    assert names[record_id(odd)] == str(data) + "/odd-\\xff\\xfe.bin"   # escaped, id of the real bytes
    posix = {r["id"]: r for r in got["records"]["POSIX"]}
    renamed = posix[record_id(str(data / "b.bin"))]["counters"]["POSIX_RENAMED_FROM"]
    assert renamed % (1 << 64) == record_id(str(data / "a.bin"))


def expected_dxt(run_dir: Path, job_start: int) -> dict[tuple[str, int], dict]:
    out = {}
    for j in sorted((run_dir / "logdir" / "plugins" / "iotrace").glob("*.json")):
        rec = read_record(j)
        t = rec.trace()
        ops = t["op_names"][t["op_id"]]
        paths = np.append(t["paths"], "")[t["file_id"]]
        for p in sorted(set(paths.tolist()) - {""}):
            segs = {}
            for kind, names in (("write", DXT_WRITES), ("read", DXT_READS)):
                sel = np.flatnonzero((paths == p) & np.isin(ops, list(names)) & (t["returned"] >= 0))
                sel = sel[np.argsort(t["start_ns"][sel], kind="stable")]
                segs[kind] = {"offset": t["offset"][sel].tolist(), "length": t["returned"][sel].tolist(),
                              "start_time": ((t["start_ns"][sel] - job_start) / 1e9).tolist(),
                              "end_time": ((t["end_ns"][sel] - job_start) / 1e9).tolist()}
            if segs["write"]["offset"] or segs["read"]["offset"]:
                out[(rec.doc["host"], record_id(p))] = segs
    return out


@pytest.mark.slow
def test_dxt_segments_are_the_trace(exported, run_dir):
    _, got, _ = exported
    job_start = got["job"]["start_time_sec"] * 10**9 + got["job"]["start_time_nsec"]
    want = expected_dxt(run_dir, job_start)
    assert len(got["dxt"]) == len(want) == 3        # a.bin, the odd name, c.bin (b.bin only renamed)
    for e in got["dxt"]:
        w = want.pop((e["hostname"], e["id"]))
        for kind in ("write", "read"):
            assert e[kind]["offset"] == w[kind]["offset"] and e[kind]["length"] == w[kind]["length"]
            assert e[kind]["start_time"] == pytest.approx(w[kind]["start_time"], abs=1e-9)
            assert e[kind]["end_time"] == pytest.approx(w[kind]["end_time"], abs=1e-9)
    a = record_id(str(run_dir / "data" / "a.bin"))
    (ae,) = [e for e in got["dxt"] if e["id"] == a]
    assert len(ae["write"]["offset"]) == 16 and ae["read"]["length"][-5:] == [0, 1000, 1000, 1000, 1000]
    assert len(ae["read"]["offset"]) == 1311 + 1 + 4     # 50-byte reads, the EOF read, the preads
    assert not got["modules"]["DXT_POSIX"]["partial_flag"]


READ_HEATMAP = r'''
import json, sys, darshan
rep = darshan.DarshanReport(sys.argv[1], read_all=False)
out = {}
if "HEATMAP" in rep.modules:
    rep.read_all_heatmap_records()
    for mod, hm in rep.heatmaps.items():
        cols = hm.to_df(ops=["read"]).columns          # IntervalIndex of the bins, in seconds
        # the first bin's right edge, from np.linspace(0, nbins * width): rounded off its last bits
        out[mod] = {"nbins": len(cols), "width": round(float(cols[0].right), 12),
                    **{op: {str(r): [int(v) for v in row]
                            for r, row in hm.to_df(ops=[op], interval_index=False).iterrows()}
                       for op in ("read", "write")}}
print(json.dumps(out))
'''


def read_heatmaps(path: Path) -> dict:
    """PyDarshan's heatmaps: module -> {nbins, width, read/write: rank -> bins}."""
    return json.loads(in_child(READ_HEATMAP, str(path)))


def job_seconds(got: dict) -> tuple[int, float]:
    j = got["job"]
    start = j["start_time_sec"] * 10**9 + j["start_time_nsec"]
    return start, (j["end_time_sec"] * 10**9 + j["end_time_nsec"] - start) / 1e9


@pytest.mark.slow
def test_heatmap_bins_sum_to_the_files_bytes(exported, run_dir):
    """Both processes (parent: os.write/os.read/os.pread and libio's fwrite/fread; child:
    os.pwrite/os.pread) on one grid; each module's bins sum to its files' bytes, per rank."""
    log, got, report = exported
    hm = read_heatmaps(log)
    assert set(hm) == {"POSIX", "STDIO"}
    assert got["modules"]["HEATMAP"]["ver"] == 1 and not got["modules"]["HEATMAP"]["partial_flag"]
    assert got["names"][str(record_id("heatmap:POSIX"))] == "heatmap:POSIX"
    assert got["names"][str(record_id("heatmap:STDIO"))] == "heatmap:STDIO"
    # Darshan's grid: 0.1 s doubled until the job fits 200 bins, then ceil(job / width) bins
    job_start, dur = job_seconds(got)
    width = hm["POSIX"]["width"]
    assert hm["STDIO"]["width"] == width and width in {0.1 * 2**k for k in range(40)}
    assert dur <= 200 * width and (width == 0.1 or dur > 100 * width)
    assert hm["POSIX"]["nbins"] == hm["STDIO"]["nbins"] == max(1, math.ceil(dur / width))
    ranks = rank_of(got)
    seen = 0
    for h in hosts(report):
        rank = str(ranks[h["host"]])
        for mod in ("POSIX", "STDIO"):
            rd = sum(f["counters"][f"{mod}_BYTES_READ"] for f in h["files"] if f["module"] == mod)
            wr = sum(f["counters"][f"{mod}_BYTES_WRITTEN"] for f in h["files"] if f["module"] == mod)
            if not rd and not wr:          # Darshan writes no empty heatmap
                assert rank not in hm[mod]["read"]
                continue
            assert sum(hm[mod]["read"][rank]) == rd and sum(hm[mod]["write"][rank]) == wr
            # nothing before the process started
            first = min(i for i, (a, b) in enumerate(zip(hm[mod]["read"][rank], hm[mod]["write"][rank])) if a or b)
            assert first >= int((h["process"]["start_ns"] - job_start) / 1e9 // width)
            seen += 1
    assert seen == 3   # the parent's POSIX and STDIO, the child's POSIX
    # the workload's own bytes (fixtures/darshan_workload.py): 16 x 4 KiB + 10 bytes written and
    # 64 KiB + 4 x 1000 read through POSIX, 3000 bytes through fwrite and read back with fread;
    # the child: 8 KiB pwrite, 4 KiB pread
    (parent,) = [str(ranks[h["host"]]) for h in hosts(report) if any(f["module"] == "STDIO" for f in h["files"])]
    (child,) = [str(r) for r in ranks.values() if str(r) != parent]
    assert (sum(hm["POSIX"]["write"][parent]), sum(hm["POSIX"]["read"][parent])) == (16 * 4096 + 10, 65536 + 4000)
    assert (sum(hm["STDIO"]["write"][parent]), sum(hm["STDIO"]["read"][parent])) == (3000, 3000)
    assert (sum(hm["POSIX"]["write"][child]), sum(hm["POSIX"]["read"][child])) == (8192, 4096)


@pytest.mark.slow
def test_summary_writes_html(exported, tmp_path):
    log, _, _ = exported
    out = tmp_path / "summary.html"
    r = subprocess.run([PY, "-m", "darshan", "summary", str(log), "--output", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    html = out.read_text()
    assert "<html" in html.lower() and "darshan_workload.py" in html
    for section in ("Per-Module Statistics: POSIX", "Per-Module Statistics: STDIO", "Heat Map: DXT_POSIX",
                    "Heat Map: HEATMAP POSIX", "Heat Map: HEATMAP STDIO"):
        assert section in html
    assert "Heatmap data is not available" not in html


@pytest.mark.slow
def test_drishti_flags_small_reads(exported):
    log, _, _ = exported
    pytest.importorskip("drishti")
    r = subprocess.run([str(BIN / "drishti"), str(log)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, COLUMNS="200"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    text = " ".join(r.stdout.split())
    assert "small read requests" in text and "a.bin" in text


@pytest.mark.slow
def test_dxt_explorer_draws_the_log(exported, tmp_path):
    log, _, _ = exported
    pytest.importorskip("explorer")
    mine = tmp_path / "x.darshan"
    mine.write_bytes(log.read_bytes())
    # it calls "python3" and "drishti" by name: this venv's first on PATH
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    r = subprocess.run([str(BIN / "dxt-explorer"), str(mine)], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ERROR" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-3000:]
    a = record_id(str(Path(exported[0]).parent / "data" / "a.bin"))
    assert (tmp_path / f"{a}-operation.html").stat().st_size > 1000
    assert (tmp_path / "index.html").exists()


@pytest.mark.slow
def test_import_darshan_round_trip(exported, tmp_path):
    log, got, report = exported
    r = cli("import-darshan", str(log), "--logdir", str(tmp_path / "back"))
    assert r.returncode == 0, r.stderr
    back = cli("report", str(tmp_path / "back"), "--json")
    assert back.returncode == 0, back.stderr
    (h,) = hosts(json.loads(back.stdout))
    got_back = {(f["module"], f["rank"], f["record_id"]): f["counters"] for f in h["files"]}
    ranks = rank_of(got)
    want = {(f["module"], ranks[x["host"]], record_id(f["path"])): f["counters"]
            for x in hosts(report) for f in x["files"]}
    assert got_back == want
    assert h["nevents"] == sum(len(e["write"]["offset"]) + len(e["read"]["offset"]) for e in got["dxt"])


# --------------------------------------------------------------------------- synthetic records


def record(root: Path, files: list, *, dropped: int = 0, partial: bool = False, trace: bool = False) -> Path:
    rec = root / "plugins" / "iotrace"
    rec.mkdir(parents=True, exist_ok=True)
    t0 = 1_700_000_000_000_000_000
    doc = {"format": RECORD_FORMAT, "host": "h", "pid": 7, "ppid": 1, "argv": ["train.py"], "start_ns": t0,
           "end_ns": t0 + 10**9, "partial": partial, "exit": {"how": "exit"}, "files": files, "threads": [],
           "nevents": 2 if trace else 0, "dropped": dropped, "trace": "h.7.npz" if trace else None}
    if trace:
        np.savez(rec / "h.7.npz", start_ns=np.array([t0 + 10, t0 + 20]), end_ns=np.array([t0 + 15, t0 + 25]),
                 op_id=np.array([0, 0], np.int32), file_id=np.array([0, 0], np.int32),
                 offset=np.array([0, 4096]), requested=np.array([4096, 4096]), returned=np.array([4096, 4096]),
                 fd=np.array([3, 3]), errno=np.array([0, 0]), tid=np.array([1, 1]),
                 op_names=np.array(["pread64"]), paths=np.array(["/d/x"]))
    (rec / "h.7.json").write_text(json.dumps(doc))
    return root


X_FILE = {"path": "/d/x", "module": "POSIX", "record_id": 0, "counters": {"POSIX_READS": 2, "POSIX_BYTES_READ": 8192},
          "fcounters": {"POSIX_F_READ_TIME": 0.01}}


@pytest.mark.slow
def test_partial_flags(tmp_path):
    out = tmp_path / "p.darshan"
    r = cli("export", str(record(tmp_path / "a", [X_FILE], dropped=5, trace=True)), "--format", "darshan-log",
            "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = read_log(out)
    assert got["modules"]["DXT_POSIX"]["partial_flag"] and not got["modules"]["POSIX"]["partial_flag"]
    assert got["records"]["POSIX"][0]["counters"]["POSIX_READS"] == 2
    assert got["records"]["POSIX"][0]["counters"]["POSIX_OPENS"] == 0      # absent counters are 0
    out2 = tmp_path / "q.darshan"
    assert cli("export", str(record(tmp_path / "b", [X_FILE], partial=True)), "--format", "darshan-log",
               "-o", str(out2)).returncode == 0
    got = read_log(out2)
    assert got["modules"]["POSIX"]["partial_flag"] and "DXT_POSIX" not in got["modules"]
    assert "HEATMAP" not in got["modules"] and "HEATMAP" not in read_log(out)["modules"]   # records without a series


def one_line_error(r: subprocess.CompletedProcess, out: Path) -> str:
    assert r.returncode == 1, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")]   # no temp file left
    return lines[0]


@pytest.mark.slow
def test_bad_input(tmp_path):
    out = tmp_path / "o" / "x.darshan"
    out.parent.mkdir()
    err = one_line_error(cli("export", str(record(tmp_path / "empty", [])), "--format", "darshan-log", "-o",
                             str(out)), out)
    assert "no I/O recorded" in err
    from tb_iotrace.store import xplane as X

    plain = tmp_path / "run" / "plain.xplane.pb"      # a capture without I/O data
    plain.parent.mkdir()
    sp = X.XSpace()
    sp.planes.add(id=2, name=X.HOST_PLANE).lines.add(id=1, name="python")
    plain.write_bytes(sp.SerializeToString())
    err = one_line_error(cli("export", str(plain), "--format", "darshan-log", "-o", str(out)), out)
    assert "no I/O recorded" in err
    bad = dict(X_FILE, counters={"POSIX_READS": "many"})
    err = one_line_error(cli("export", str(record(tmp_path / "corrupt", [bad])), "--format", "darshan-log", "-o",
                             str(out)), out)
    assert "cannot be written" in err
    doc = record(tmp_path / "badpid", [X_FILE]) / "plugins" / "iotrace" / "h.7.json"
    doc.write_text(doc.read_text().replace('"pid": 7', '"pid": "seven"'))
    err = one_line_error(cli("export", str(doc), "--format", "darshan-log", "-o", str(out)), out)
    assert "cannot be written" in err
    err = one_line_error(cli("export", str(tmp_path / "missing"), "--format", "darshan-log", "-o", str(out)), out)
    assert "no such file" in err
    (tmp_path / "junk.json").write_text("{not json")
    err = one_line_error(cli("export", str(tmp_path / "junk.json"), "--format", "darshan-log", "-o", str(out)), out)
    assert "junk.json" in err


def series(start: int, bin_ns: float, n: int, put: dict[tuple[str, str, int], int] | None) -> dict:
    """A stored time series of n bins with bytes at (module, "bytes_read"/"bytes_written", bin);
    put None: one recorded before the split by module."""
    mods = {m: {k: [0] * n for k in ("bytes_read", "bytes_written")} for m in ("POSIX", "STDIO")}
    for (m, k, i), v in (put or {}).items():
        mods[m][k][i] += v
    tot = {k: [a + b for a, b in zip(mods["POSIX"][k], mods["STDIO"][k])] for k in ("bytes_read", "bytes_written")}
    d = {"start_ns": start, "bin_ns": bin_ns, **tot, "calls": [1] * n, "io_time_s": [0.0] * n}
    return d if put is None else {**d, "modules": mods}


@pytest.mark.slow
def test_heatmap_ranks_share_one_grid(tmp_path):
    """Four processes of one run: two with series of different bin widths and starts, one
    without a series, one whose series predates the split by module. The log's heatmaps put
    the first two on Darshan's grid from the job start, each bin where its time falls."""
    rec = tmp_path / "l" / "plugins" / "iotrace"
    rec.mkdir(parents=True)
    t0, s = 1_700_000_000_000_000_000, 10**9
    procs = {  # pid: (start, end, series, partial)
        1: (t0, t0 + 30_050_000_000, series(t0, 1e6, 256, {("POSIX", "bytes_read", 0): 100,
                                                            ("STDIO", "bytes_written", 250): 7}), False),
        2: (t0 + 2 * s, t0 + 10 * s, series(t0 + 2 * s, 64e6, 160, {("POSIX", "bytes_read", 0): 1,
                                                                     ("POSIX", "bytes_written", 100): 5000}), True),
        3: (t0 + 1 * s, t0 + 5 * s, None, False),
        4: (t0 + 3 * s, t0 + 6 * s, series(t0 + 3 * s, 1e6, 10, None), False),
    }
    for pid, (start, end, ts, partial) in procs.items():
        doc = {"format": RECORD_FORMAT, "host": "h", "pid": pid, "ppid": 1, "argv": ["train.py"], "start_ns": start,
               "end_ns": end, "partial": partial, "exit": {"how": "exit"}, "files": [dict(X_FILE, path=f"/d/{pid}")],
               "threads": [], "nevents": 0, "dropped": 0, "trace": None}
        if ts is not None:
            doc["timeseries"] = ts
        (rec / f"h.{pid}.json").write_text(json.dumps(doc))
    out = tmp_path / "g.darshan"
    r = cli("export", str(tmp_path / "l"), "--format", "darshan-log", "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = read_log(out)
    assert got["job"]["nprocs"] == 4 and len(got["records"]["POSIX"]) == 4
    assert got["modules"]["HEATMAP"]["partial_flag"]          # process 2 was killed: its series is partial
    rank = {int(h.split(".")[1]): str(r) for h, r in rank_of(got).items()}
    hm = read_heatmaps(out)
    # a 30.05 s job: 0.1 s bins do not fit 200, 0.2 s do; ceil(30.05 / 0.2) = 151 bins
    assert {(m["width"], m["nbins"]) for m in hm.values()} == {(0.2, 151)}
    assert set(hm["POSIX"]["read"]) == {rank[1], rank[2]} and set(hm["STDIO"]["read"]) == {rank[1]}

    def nonzero(bins: list[int]) -> dict[int, int]:
        return {i: v for i, v in enumerate(bins) if v}

    assert nonzero(hm["POSIX"]["read"][rank[1]]) == {0: 100}
    assert nonzero(hm["STDIO"]["write"][rank[1]]) == {1: 7}          # 0.25 s
    assert nonzero(hm["POSIX"]["read"][rank[2]]) == {10: 1}          # 2.0 s from the job start
    assert nonzero(hm["POSIX"]["write"][rank[2]]) == {42: 5000}      # 2 s + 100 x 64 ms = 8.4 s
    assert not any(hm["STDIO"]["read"][rank[1]]) and not any(hm["POSIX"]["write"][rank[1]])
    html = tmp_path / "g.html"
    r = subprocess.run([PY, "-m", "darshan", "summary", str(out), "--output", str(html)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Heat Map: HEATMAP POSIX" in html.read_text() and "Heat Map: HEATMAP STDIO" in html.read_text()


@pytest.mark.slow
def test_several_runs_need_a_run(tmp_path):
    root = record(tmp_path / "l", [X_FILE])
    record(root / "sub", [X_FILE])
    out = tmp_path / "x.darshan"
    err = one_line_error(cli("export", str(root), "--format", "darshan-log", "-o", str(out)), out)
    assert "--run" in err
    assert cli("export", str(root), "--run", "iotrace", "--format", "darshan-log", "-o", str(out)).returncode == 0


# --------------------------------------------------------------------------- a TensorFlow capture


@pytest.mark.slow
def test_tensorflow_capture(logdir, tmp_path):  # noqa: F811
    """A .xplane.pb capture (I/O merged into the shared GPU capture): counters as `report --json`
    gives them, its 50 preads as DXT segments on the capture's clock, STDIO too."""
    out = tmp_path / "tf.darshan"
    r = cli("export", str(logdir), "--run", RUN, "--format", "darshan-log", "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = read_log(out)
    rep = cli("report", str(logdir), "--run", RUN, "--json")
    (h,) = hosts(json.loads(rep.stdout))
    want = {(f["module"], record_id(f["path"])): f for f in h["files"]}
    assert {(m, r["id"]) for m, recs in got["records"].items() for r in recs} == set(want)
    for m, recs in got["records"].items():
        for r in recs:
            f = want[(m, r["id"])]
            assert r["rank"] == 0 and r["counters"] == {**r["counters"], **f["counters"]}
            assert all(v == 0 for k, v in r["counters"].items() if k not in f["counters"])
            assert r["fcounters"] == pytest.approx({**r["fcounters"], **f["fcounters"]})
    job_start = got["job"]["start_time_sec"] * 10**9 + got["job"]["start_time_nsec"]
    assert job_start == T0      # no Task Environment plane: the clock the I/O was merged on
    trace = small_trace()
    (e,) = got["dxt"]
    assert e["id"] == record_id("/data/a.tfrecord") and e["hostname"] == GPU_HOST and not e["write"]["offset"]
    assert e["read"]["offset"] == trace.offset.tolist() and e["read"]["length"] == trace.returned.tolist()
    assert e["read"]["start_time"] == pytest.approx(((trace.start_ns - job_start) / 1e9).tolist(), abs=1e-9)
    assert got["exe"].startswith("tb_iotrace-capture ")


# --------------------------------------------------------------------------- Darshan's own logs


LOG_COMPARE = r'''
import json, sys, darshan
def load(p):
    r = darshan.DarshanReport(p, read_all=True)
    recs = {}
    for m in ("POSIX", "STDIO"):
        for x in (r.records[m].to_dict() if m in r.records else []):
            recs[f"{m} {int(x['rank'])} {int(x['id'])}"] = [{k: int(v) for k, v in x["counters"].items()},
                                                           {k: float(v) for k, v in x["fcounters"].items()}]
    dxt = {}
    for e in (r.records["DXT_POSIX"].to_df() if "DXT_POSIX" in r.records else []):
        dxt[f"{int(e['rank'])} {int(e['id'])}"] = [e[k + "_segments"][c].tolist() if len(e[k + "_segments"]) else []
                                                  for k in ("write", "read") for c in ("offset", "length", "start_time")]
    return {"nprocs": r.metadata["job"]["nprocs"], "recs": recs, "dxt": dxt, "names": {str(k): v for k, v in r.name_records.items()}}
print(json.dumps([load(sys.argv[1]), load(sys.argv[2])]))
'''


@pytest.mark.parametrize("name", ["dxt.darshan", "sample-badost.darshan"])
@pytest.mark.slow
def test_darshan_log_round_trip(tmp_path, name):
    """Darshan's log -> import-darshan -> export darshan-log: the same records (ranks, shared
    rank -1 records, ids, every counter) and the same DXT segments."""
    log = Path(darshan.__file__).parent / "examples" / "example_logs" / name
    assert cli("import-darshan", str(log), "--logdir", str(tmp_path / "imp")).returncode == 0
    out = tmp_path / "back.darshan"
    r = cli("export", str(tmp_path / "imp"), "--format", "darshan-log", "-o", str(out))
    assert r.returncode == 0, r.stderr
    a, b = json.loads(in_child(LOG_COMPARE, str(log), str(out)))
    assert a["nprocs"] == b["nprocs"] and a["recs"].keys() == b["recs"].keys() and len(a["recs"]) > 200
    for k, (c, fc) in a["recs"].items():
        assert b["recs"][k][0] == c, k
        assert b["recs"][k][1] == pytest.approx(fc, abs=1e-6), k
    assert a["dxt"].keys() == b["dxt"].keys()
    for k, segs in a["dxt"].items():
        for x, y in zip(segs, b["dxt"][k]):
            assert y == pytest.approx(x, abs=1e-6), k   # times went through ns on the way
    assert {k: v for k, v in b["names"].items() if k in a["names"]} == {k: a["names"][k] for k in b["names"]}


# --------------------------------------------------------------------------- size


# The child's own peak (VmHWM of its address space), not ru_maxrss: Linux keeps ru_maxrss across
# execve, and a child spawned with vfork starts from the parent's (the pytest worker's) peak.
PEAK = r'''
import sys, time
from tb_iotrace.cli import main
t = time.perf_counter()
rc = main(sys.argv[1:])
print(time.perf_counter() - t, int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024)
sys.exit(rc)
'''


@pytest.mark.slow
def test_million_events(tmp_path):
    """A 1,000,000-call trace: 32 MB of DXT segments, written in seconds, memory a few times the
    trace's columns."""
    from test_cli_export import big_record

    n = 1_000_000
    root = big_record(tmp_path / "big", n)
    doc_path = root / "plugins" / "iotrace" / "h.1.json"
    doc = json.loads(doc_path.read_text())
    doc["files"] = [dict(X_FILE, path=f"/d/f{i}") for i in range(7)]
    doc_path.write_text(json.dumps(doc))
    out = tmp_path / "big.darshan"
    r = subprocess.run([PY, "-c", PEAK, "export", str(root), "--format", "darshan-log", "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    secs, peak_mb = r.stdout.split()
    assert float(secs) < 60 and int(peak_mb) < 1500, r.stdout
    got = json.loads(in_child(r'''
import json, sys, darshan
r = darshan.DarshanReport(sys.argv[1], read_all=False)
r.mod_read_all_dxt_records("DXT_POSIX")
print(json.dumps(sum(e["read_count"] + e["write_count"] for e in r.records["DXT_POSIX"].to_df())))
''', str(out)))
    # big_record: ops read, pread64, write in turn over 7 files: every call is a DXT segment
    assert got == n


@pytest.mark.slow
def test_older_ids_are_translated(tmp_path):
    """A record from before the shim stored Darshan's ids (another hash in record_id and in
    POSIX_RENAMED_FROM): every surface shows Darshan's ids, the rename's source included."""
    old_a, old_b = 12666943987099423862, 1234
    files = [dict(X_FILE, path="/d/a", record_id=old_a),
             dict(X_FILE, path="/d/b", record_id=old_b,
                  counters={"POSIX_RENAME_TARGETS": 1, "POSIX_RENAMED_FROM": old_a - (1 << 64)})]
    root = record(tmp_path / "old", files)
    out = tmp_path / "old.darshan"
    assert cli("export", str(root), "--format", "darshan-log", "-o", str(out)).returncode == 0
    recs = {r["id"]: r for r in read_log(out)["records"]["POSIX"]}
    assert set(recs) == {record_id("/d/a"), record_id("/d/b")}
    assert recs[record_id("/d/b")]["counters"]["POSIX_RENAMED_FROM"] % (1 << 64) == record_id("/d/a")
    rep = cli("report", str(root), "--json")
    (h,) = hosts(json.loads(rep.stdout))
    by = {f["path"]: f for f in h["files"]}
    assert by["/d/a"]["record_id"] == record_id("/d/a")
    assert by["/d/b"]["counters"]["POSIX_RENAMED_FROM"] % (1 << 64) == record_id("/d/a")
    txt = tmp_path / "old.txt"
    assert cli("export", str(root), "--format", "darshan", "-o", str(txt)).returncode == 0
    line = next(ln for ln in txt.read_text().splitlines() if "\tPOSIX_RENAMED_FROM\t" in ln)
    assert line.split("\t")[2] == str(record_id("/d/b")) and int(line.split("\t")[4]) % (1 << 64) == record_id("/d/a")
