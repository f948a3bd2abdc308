"""tb-iotrace fleet: a dataset built from real sources (TF/JAX captures, a PyTorch trace, a
whole-run record, a Darshan log written by tb_iotrace's own export) holds the counters,
host rows, steps and findings that `tb-iotrace report --json` gives for each; building again
adds only what is new; bad sources and bad queries are one line each."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tb_iotrace.fleet import Dataset, FleetError, host_tables, query, sql_of, write_parts
from tb_iotrace.fleet.engines import engine
from tb_iotrace.fleet.names import component
from tb_iotrace.fleet.reports import REPORTS
from tb_iotrace.fleet.rows import host_table, text

pytestmark = pytest.mark.slow   # builds datasets in child processes: ~30 s in all (./dev.sh quick leaves it out)

DATA = Path(__file__).resolve().parents[1] / "data"
PY = sys.executable


def cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tb_iotrace", *args], capture_output=True, text=True, timeout=timeout)


def report(path: Path | str) -> dict:
    r = cli("report", str(path), "--json", "--jobs", "1")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def rows(ds: Path, sql: str) -> list[dict]:
    r = cli("fleet", "query", str(ds), sql, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def sources(tmp_path_factory, gpu_capture, jax_captures) -> dict[str, Path]:
    """The sources: a logdir with a JAX capture and the GPU capture (one run), a folder with
    the PyTorch trace, the repository's whole-run record, and a Darshan log exported from
    the JAX capture."""
    root = tmp_path_factory.mktemp("fleet-src")
    run = root / "logdir" / "plugins" / "profile" / "2026_01_01"
    run.mkdir(parents=True)
    shutil.copy(jax_captures[0], run / "jaxhost.xplane.pb")
    shutil.copy(gpu_capture, run / "gpuhost.xplane.pb")
    torch = root / "torchjob"
    torch.mkdir()
    shutil.copy(DATA / "torch_loader.pt.trace.json.gz", torch / "worker0.1700000000000.pt.trace.json.gz")
    log = root / "darshan" / "job42.darshan"
    log.parent.mkdir()
    r = cli("export", str(jax_captures[0]), "--format", "darshan-log", "-o", str(log))
    assert r.returncode == 0, r.stderr
    from tb_iotrace.plugin.synthetic_ranks import make_ranks

    make_ranks(DATA / "ddp_rank0.pt.trace.json.gz", root / "ddpjob", 2, 1)     # two ranks, rank 1 slow
    return {"logdir": root / "logdir", "torch": torch, "record": DATA / "run_v1", "darshan": log,
            "jax": jax_captures[0], "ddp": root / "ddpjob"}


@pytest.fixture(scope="module")
def dataset(sources, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    ds = tmp_path_factory.mktemp("fleet-ds") / "ds"
    r = cli("fleet", "build", str(sources["logdir"]), str(sources["torch"]), str(sources["record"]),
            str(sources["darshan"]), str(sources["ddp"]), "-o", str(ds), "--jobs", "2")
    return ds, r


def counters_of(host: dict) -> dict:
    return {(f["module"], text(f["path"])): {**f["counters"], **f["fcounters"]} for f in host["files"]}


def test_build_reports_what_it_added(dataset):
    ds, r = dataset
    assert r.returncode == 0, r.stderr
    assert "7 sources added, 0 replaced, 0 unchanged; 7 sources, 9 hosts in the dataset" in r.stderr
    parts = sorted(str(p.relative_to(ds)) for p in ds.rglob("part-*.parquet"))
    assert any(p.startswith("hosts/run=2026_01_01/host=jaxhost/part-") for p in parts)
    assert any(p.startswith("files/run=torchjob/host=worker0.1700000000000%2Fpid") for p in parts)


def test_files_hold_the_reports_counters(dataset, sources):
    ds, _ = dataset
    got: dict = {}
    for r in rows(ds, "SELECT * FROM files"):
        key = (r["run"], r["host"])
        got.setdefault(key, {})[(r["module"], r["path"])] = r
    want = {}
    for name in ("logdir", "torch", "record", "ddp"):
        for run in report(sources[name])["runs"]:
            for h in run["hosts"]:
                want[(run["run"], h["host"])] = counters_of(h)
    # the Darshan log: run = the log's name, host = its DXT host name; its counters are the
    # exported capture's
    (jax_host,) = report(sources["jax"])["runs"][0]["hosts"]
    want[("job42", "jaxhost" if ("job42", "jaxhost") in got else "jax_io")] = counters_of(jax_host)
    assert {k for k, v in want.items() if v} == set(got)
    checked = 0
    for key, files in want.items():
        if not files:
            continue
        assert set(got[key]) == set(files), key
        for fk, counters in files.items():
            row = got[key][fk]
            assert {c: row[c] for c in counters} == counters, (key, fk)
            # a module's columns the record lacks (another module's counters) are null
            other = "STDIO_" if fk[0] == "POSIX" else "POSIX_"
            assert all(v is None for c, v in row.items() if c.startswith(other))
            checked += len(counters)
    assert checked > 500


def test_hosts_steps_findings_match_the_report(dataset, sources):
    ds, _ = dataset
    hosts = {(r["run"], r["host"]): r for r in rows(ds, "SELECT * FROM hosts")}
    steps = rows(ds, "SELECT * FROM steps ORDER BY run, host, index")
    findings = rows(ds, "SELECT * FROM findings ORDER BY run, host, index")
    n_steps = n_findings = 0
    for name in ("logdir", "torch", "record"):
        for run in report(sources[name])["runs"]:
            for h in run["hosts"]:
                row = hosts[(run["run"], h["host"])]
                summary = {k: v for k, v in h["summary"].items() if k not in ("host", "source")}
                assert {k: row[k] for k in summary} == summary
                assert row["summary_source"] == h["summary"]["source"]
                assert (row["kind"], row["partial"], row["dropped"], row["nevents"]) == (
                    h["kind"], h["partial"], h["dropped"], h["nevents"])
                assert json.loads(row["totals"]) == h["totals"]
                assert row["source"] == os.path.realpath(h["source"])
                mine = [s for s in steps if (s["run"], s["host"]) == (run["run"], h["host"])]
                assert [{k: s[k] for k in want} for s, want in zip(mine, h["steps"])] == h["steps"]
                got_f = [f for f in findings if (f["run"], f["host"]) == (run["run"], h["host"])]
                assert [f["id"] for f in got_f] == [f["id"] for f in h["findings"]]
                assert [json.loads(f["evidence"]) for f in got_f] == [f["evidence"] for f in h["findings"]]
                n_steps += len(mine)
                n_findings += len(got_f)
    assert n_steps >= 9 and n_findings >= 1       # the JAX capture's 4 steps, the trace's 5
    darshan = hosts[next(k for k in hosts if k[0] == "job42")]
    assert darshan["kind"] == "darshan" and darshan["source"] == os.path.realpath(sources["darshan"])


def test_building_again_adds_only_what_is_new(sources, tmp_path, jax_captures):
    logdir = tmp_path / "logdir"
    shutil.copytree(sources["logdir"], logdir)
    ds = tmp_path / "ds"
    assert cli("fleet", "build", str(logdir), "-o", str(ds), "--jobs", "1").returncode == 0
    before = rows(ds, "SELECT run, host, path, POSIX_READS FROM files ORDER BY path")
    again = cli("fleet", "build", str(logdir), "-o", str(ds), "--jobs", "1")
    assert again.returncode == 0 and "0 sources added, 0 replaced, 2 unchanged" in again.stderr
    assert rows(ds, "SELECT run, host, path, POSIX_READS FROM files ORDER BY path") == before
    # a changed capture replaces its hosts' rows (here: the same job without tb_iotrace)
    cap = logdir / "plugins" / "profile" / "2026_01_01" / "jaxhost.xplane.pb"
    old_parts = {p for p in ds.rglob("part-*.parquet") if "host=jaxhost" in str(p)}
    shutil.copy(jax_captures[1], cap)
    # and a new run appears beside it
    new_run = logdir / "plugins" / "profile" / "2026_01_02"
    new_run.mkdir()
    shutil.copy(jax_captures[0], new_run / "jaxhost.xplane.pb")
    third = cli("fleet", "build", str(logdir), "-o", str(ds), "--jobs", "1")
    assert third.returncode == 0, third.stderr
    assert "1 sources added, 1 replaced, 1 unchanged; 3 sources, 3 hosts" in third.stderr
    assert not any(p.exists() for p in old_parts)
    got = rows(ds, "SELECT run, COUNT(*) AS n FROM files WHERE host = 'jaxhost' GROUP BY run ORDER BY run")
    assert got == [{"run": "2026_01_02", "n": 5}]   # the plain capture has no I/O record
    (h,) = rows(ds, "SELECT nevents, kind FROM hosts WHERE run = '2026_01_01' AND host = 'jaxhost'")
    assert h == {"nevents": 0, "kind": "xplane"}


def test_a_corrupt_source_is_named_and_skipped(tmp_path, jax_captures):
    run = tmp_path / "logdir" / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    shutil.copy(jax_captures[0], run / "good.xplane.pb")
    (run / "bad.xplane.pb").write_bytes(jax_captures[0].read_bytes()[:5000])
    rec = tmp_path / "recs" / "plugins" / "iotrace"
    rec.mkdir(parents=True)
    (rec / "vm.1.json").write_text('{"format": "tb_iotrace.run/1", "files": [')
    torch = tmp_path / "torchjob"
    torch.mkdir()
    shutil.copy(DATA / "torch_loader.pt.trace.json.gz", torch / "w0.1.pt.trace.json.gz")
    (torch / "w1.2.pt.trace.json.gz").write_bytes(b"\x1f\x8b not gzip")
    log = tmp_path / "broken.darshan"
    log.write_bytes(b"3.41\0\0\0\0" + (6567223).to_bytes(8, "little") + b"\0" * 40)
    ds = tmp_path / "ds"
    r = cli("fleet", "build", str(tmp_path / "logdir"), str(tmp_path / "recs"), str(torch), str(log),
            str(tmp_path / "nothere"), "-o", str(ds), "--jobs", "2")
    assert r.returncode == 3, r.stderr
    skipped = [ln for ln in r.stderr.splitlines() if ln.startswith("tb-iotrace fleet: skipped ")]
    assert len(skipped) == 5, r.stderr
    for name in ("bad.xplane.pb", "vm.1.json", "w1.2.pt.trace.json.gz", "broken.darshan", "nothere"):
        assert sum(name in ln for ln in skipped) == 1, (name, r.stderr)
    assert "Traceback" not in r.stderr
    assert rows(ds, "SELECT DISTINCT run, host FROM hosts WHERE host NOT LIKE '%/pid%' ORDER BY run") == [
        {"run": "r1", "host": "good"}, {"run": "torchjob", "host": "w0.1"}]
    # nothing readable at all: exit 1
    r = cli("fleet", "build", str(log), "-o", str(tmp_path / "ds2"))
    assert r.returncode == 1 and "nothing built" in r.stderr.splitlines()[-1]
    # tables without a part are views of their schema: every column, no rows
    assert rows(tmp_path / "ds2", "SELECT COUNT(*) AS n, MAX(POSIX_READS) AS m FROM files") == [{"n": 0, "m": None}]


def test_query_errors_are_one_line(dataset):
    ds, _ = dataset
    for sql, words in (("SELECT nope FROM files", "nope"), ("SELEC 1", "syntax"),
                       ("SELECT * FROM no_such_table", "no_such_table")):
        r = cli("fleet", "query", str(ds), sql)
        assert r.returncode == 1 and r.stdout == ""
        (line,) = r.stderr.strip().splitlines()
        assert line.startswith("tb-iotrace fleet: error: query failed: ") and words in line.lower()
    r = cli("fleet", "query", str(ds.parent / "missing"), "SELECT 1")
    assert r.returncode == 1 and "not a fleet dataset" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_spark_without_java_is_one_line(dataset):
    ds, _ = dataset
    env = dict(os.environ, JAVA_HOME=str(ds / "no-java"))
    r = subprocess.run([PY, "-m", "tb_iotrace", "fleet", "query", str(ds), "SELECT 1", "--engine", "spark"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("tb-iotrace fleet: error: Spark did not start: ") and "default-jre-headless" in line
    r = cli("fleet", "query", str(ds), "SELECT 1", "--master", "local[1]")
    assert r.returncode == 1 and "--master is Spark's" in r.stderr


def test_query_formats(dataset):
    ds, _ = dataset
    sql = "SELECT run, host, files, partial FROM hosts WHERE host = 'vm.21889'"
    assert rows(ds, sql) == [{"run": "iotrace", "host": "vm.21889", "files": 3, "partial": False}]
    r = cli("fleet", "query", str(ds), sql, "--csv")
    assert r.stdout.splitlines() == ["run,host,files,partial", "iotrace,vm.21889,3,false"]
    r = cli("fleet", "query", str(ds), sql)
    assert r.stdout.splitlines()[1].split() == ["iotrace", "vm.21889", "3", "False"]


def test_ready_reports(dataset):
    ds, _ = dataset
    r = cli("fleet", "report", str(ds), "--json", "--limit", "100")     # every row of these few sources
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert list(got) == [rep.name for rep in REPORTS]
    # the PyTorch job waited on input in its steps; the JAX run's steps did not
    wait = {row["run"]: row for row in got["input-wait"]}
    assert wait["torchjob"]["input_wait_pct"] > 10
    # every data file here is read in requests under 1 MiB; the JAX files by two jobs (the
    # capture and the Darshan log made from it)
    small = {row["path"]: row for row in got["small-reads"]}
    assert small["/tmp/tbio_jax_data/part0.npy"]["jobs"] == 2
    assert small["/tmp/tbio_torch_data/sample0.bin"]["small_pct"] == 100.0
    # the two DDP ranks: rank 1 (its waits exchanged) holds the job; the other waits for it in gloo
    (strag,) = got["input-stragglers"]
    assert strag["run"] == "ddpjob" and strag["ranks"] == 2 and strag["slowest_host"].startswith("rank1.")
    assert strag["others_collective_pct"] > 50 and strag["job_input_wait_pct"] > 50
    fs = got["slow-fs"]
    assert fs and all(row["read_mib_s"] is None or row["read_mib_s"] > 0 for row in fs)
    assert sum(row["bytes_read"] for row in fs) == rows(ds, "SELECT SUM(COALESCE(POSIX_BYTES_READ, STDIO_BYTES_READ)) AS b "
                                                            "FROM files WHERE NOT code")[0]["b"]


def test_missing_extra_is_one_line(dataset):
    ds, _ = dataset
    code = ("import sys; sys.modules['duckdb'] = None; from tb_iotrace.cli import main; "
            f"sys.exit(main(['fleet', 'query', {str(ds)!r}, 'SELECT 1']))")
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()
    assert "duckdb" in line and "tb_iotrace[fleet]" in line


def test_hostile_names_stay_inside_the_dataset(tmp_path, jax_captures):
    """Run and host names come from folder and file names (and a TensorBoard run's sub-folder
    puts a "/" in the run): each is one percent-encoded folder, the rows keep the names."""
    run = tmp_path / "logdir" / "a\x01b" / "plugins" / "profile" / "s%=1"
    run.mkdir(parents=True)
    shutil.copy(jax_captures[0], run / "h=1%\n.xplane.pb")
    ds = tmp_path / "ds"
    r = cli("fleet", "build", str(tmp_path / "logdir"), "-o", str(ds), "--jobs", "1")
    assert r.returncode == 0, r.stderr
    parts = list(tmp_path.rglob("part-*.parquet"))
    assert parts and all(ds in p.parents for p in parts)
    assert {p.relative_to(ds).parts[1:3] for p in parts} == {("run=a%01b%2Fs%25%3D1", "host=h%3D1%25%0A")}
    assert rows(ds, "SELECT DISTINCT run, host FROM hosts") == [{"run": "a\x01b/s%=1", "host": "h=1%\n"}]


@pytest.mark.parametrize("name, want", [
    ("a/b", "a%2Fb"), ("..", "%2E."), (".x", "%2Ex"), ("x\ny\x00", "x%0Ay%00"), ("h:1=%", "h%3A1%3D%25"),
    ("", "__empty__"), ("é", "%C3%A9"), ("odd-\udcff", "odd-%FF")])
def test_component(name, want):
    assert component(name) == want


def test_long_names_are_cut_with_a_hash():
    a, b = component("x" * 300), component("x" * 299 + "y")
    assert len(a) <= 160 and len(b) <= 160 and a != b and "/" not in a
    c = component("%" * 200)
    assert len(c) <= 160 and "%" not in c.split("~")[0][-2:]


def test_new_host_keys_flow_into_the_hosts_table():
    """A key the report's host document gains (the verdict, and any other) becomes a column."""
    doc = {"host": "h", "kind": "xplane", "source": "/c.xplane.pb", "files": [], "steps": [], "findings": [],
           "summary": {"host": "h", "source": "none", "bytes_read": 0, "files": 0},
           "verdict": {"bound": "input", "why": ["steps wait 40%"]}, "new_score": 3, "new_flag": True}
    t = host_table("r", doc).to_pylist()[0]
    assert json.loads(t["verdict"]) == doc["verdict"]
    assert (t["new_score"], t["new_flag"], t["files"], t["summary_source"]) == (3.0, True, 0, "none")


def test_parts_with_columns_of_their_own(tmp_path):
    """A host whose document has a key the others lack: its part has one more column, the
    table is no longer uniform, and the column is null for the other hosts."""
    layout = {"POSIX": (("POSIX_READS",), ("POSIX_F_READ_TIME",))}
    ds = Dataset.open(tmp_path / "ds", create=True)
    base = {"kind": "xplane", "source": "/c", "files": [], "steps": [], "findings": [],
            "summary": {"source": "none", "bytes_read": 0}}
    parts = []
    for seq, extra in enumerate(({}, {"new_score": 2.5})):
        doc = {**base, "host": f"h{seq}", **extra}
        got = write_parts(ds.root, seq, "r", doc["host"], host_tables("r", doc, layout))
        ds.put(f"/src{seq}", [], "xplane", [("r", doc["host"])], got)
        parts += got
        ds.commit(layout, got)
        assert ds.uniform("hosts") == (seq == 0)
    (res,) = query(Dataset.open(ds.root), "SELECT host, new_score, bytes_read FROM hosts ORDER BY host")
    assert res.records() == [{"host": "h0", "new_score": None, "bytes_read": 0},
                             {"host": "h1", "new_score": 2.5, "bytes_read": 0}]


def test_manifest_lists_every_part(dataset):
    ds, _ = dataset
    d = Dataset.open(ds)
    listed = {p for t in ("files", "hosts", "steps", "findings") for p in d.parts(t)}
    assert listed == {str(p) for p in ds.rglob("part-*.parquet")}


def _same(a: list[tuple], b: list[tuple]) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        for x, y in zip(ra, rb):
            if isinstance(x, float) or isinstance(y, float):
                if x != pytest.approx(y, rel=1e-9, abs=1e-12):
                    return False
            elif x != y:
                return False
    return True


@pytest.mark.spark
def test_duckdb_and_spark_give_the_same_rows(dataset):
    ds, _ = dataset
    d = Dataset.open(ds)
    sqls = [
        "SELECT * FROM files ORDER BY run, host, module, path",
        "SELECT * FROM hosts ORDER BY run, host",
        "SELECT * FROM steps ORDER BY run, host, index",
        "SELECT * FROM findings ORDER BY run, host, index",
        "SELECT run, COUNT(*) AS n, SUM(POSIX_BYTES_READ) AS b, MAX(POSIX_F_READ_TIME) AS t FROM files "
        "GROUP BY run ORDER BY run",
        *(sql_of(r, 20) for r in REPORTS),
    ]
    duck = query(d, sqls, "duckdb")
    eng = engine(d, "spark")
    try:
        spark = [eng.query(sql) for sql in sqls]
        with pytest.raises(FleetError) as err:
            eng.query("SELECT nope FROM files")
    finally:
        eng.close()
    msg = str(err.value)
    assert msg.startswith("query failed: ") and "nope" in msg and "\n" not in msg and len(msg) < 400
    for sql, a, b in zip(sqls, duck, spark):
        assert a.rows, sql
        ca, cb = dict.fromkeys(a.columns), dict.fromkeys(b.columns)
        assert set(ca) == set(cb), sql
        order = [b.columns.index(c) for c in a.columns]
        assert _same(a.rows, [tuple(r[i] for i in order) for r in b.rows]), sql


def test_checkpoints_table_rows_per_save_with_rank(tmp_path):
    """A host's checkpoint phases become checkpoints rows with its rank; a host without
    checkpoints writes none, and the view still has every column."""
    layout = {"POSIX": (("POSIX_READS",), ("POSIX_F_READ_TIME",))}
    ds = Dataset.open(tmp_path / "ds", create=True)
    phase = {"kind": "save", "start_ns": 10, "end_ns": 90, "finish_ns": 80, "files": 1, "bytes": 8 << 20,
             "io_time_s": 0.01, "fsync_time_s": 0.5, "rename_time_s": 0.0, "blocking_ns": 80, "background_ns": 0,
             "calls": 32, "median_call_bytes": 262144.0, "path": "/ck/__1_0.distcp", "source": "shape",
             "fs_type": "ext4", "mount_point": "/", "paths": ["/ck/__1_0.distcp"]}
    base = {"kind": "record", "source": "/r", "files": [], "steps": [], "findings": [], "summary": {"bytes_read": 0}}
    docs = [{**base, "host": "h1", "process": {"pid": 1, "rank": 1}, "checkpoints": [phase, {**phase, "index": 9}]},
            {**base, "host": "h2", "process": {"pid": 2, "rank": None}, "checkpoints": []}]
    for seq, doc in enumerate(docs):
        tables = host_tables("r", doc, layout)
        assert ("checkpoints" in tables) == (seq == 0) and "checkpoints" not in tables["hosts"].column_names
        got = write_parts(ds.root, seq, "r", doc["host"], tables)
        ds.put(f"/src{seq}", [], "record", [("r", doc["host"])], got)
        ds.commit(layout, got)
    (res,) = query(Dataset.open(ds.root), "SELECT host, rank, \"index\", kind, bytes, fsync_time_s, finish_ns, paths "
                                         "FROM checkpoints ORDER BY \"index\"")
    assert res.records() == [{"host": "h1", "rank": 1, "index": i, "kind": "save", "bytes": 8 << 20,
                              "fsync_time_s": 0.5, "finish_ns": 80, "paths": '["/ck/__1_0.distcp"]'} for i in (0, 1)]


def test_a_darshan_log_without_its_suffix_is_told_by_its_header(tmp_path: Path) -> None:
    """``fleet build`` takes a Darshan log by the model's one rule: a log Darshan itself wrote,
    renamed without ``.darshan``, is still one; a text file or an unreadable path is not."""
    import darshan

    from tb_iotrace.cli.fleet import is_darshan_log

    shipped = sorted((Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan"))
    assert shipped
    renamed = tmp_path / "job.log"
    renamed.write_bytes(shipped[0].read_bytes())
    text = tmp_path / "notes.log"
    text.write_text("3. not a log at all, though it starts like one\n")
    assert is_darshan_log(renamed)
    assert not is_darshan_log(text)
    assert not is_darshan_log(tmp_path / "missing.log")
