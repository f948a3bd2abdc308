"""Per-file counters as columns (tb_iotrace.store.filetable): a capture's stop copies them in bulk and
builds no Python object per file; whole-run records (tb_iotrace.run/2) keep them in a columnar
``.files.npz`` with paths as exact bytes, stored once; records of format run/1 (per-file JSON,
tests/data/run_v1, written by the code before this format) stay readable everywhere."""
from __future__ import annotations

import gc
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.store.filetable import Accumulator, FileTable, TableError, load_table
from tb_iotrace.store.runrecord import FORMAT, FORMAT_V1, RecordError, read_record, table_path, write_record

PY = sys.executable
V1_DIR = Path(__file__).resolve().parents[1] / "data" / "run_v1"
V1_JSON = V1_DIR / "plugins" / "iotrace" / "vm.21889.json"
ODD = "/data/odd-\udcff\udcfe.bin"   # os.fsdecode(b"/data/odd-\xff\xfe.bin")


@pytest.fixture()
def only(shim, tmp_path):
    """The shim tracing tmp_path only."""
    shim.set_filters(include=[str(tmp_path) + "/"], exclude=["/"])
    yield shim


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tb_iotrace", *args], capture_output=True, text=True, timeout=300)


def rec(path: str, module: str, **counters: float) -> dict:
    ints = {k: int(v) for k, v in counters.items() if "_F_" not in k}
    floats = {k: float(v) for k, v in counters.items() if "_F_" in k}
    return {"path": path, "module": module, "record_id": 7, "counters": ints, "fcounters": floats}


# --------------------------------------------------------------------------- the table

def test_round_trip_keeps_odd_bytes_and_stores_each_path_once():
    files = [rec(ODD, "POSIX", POSIX_OPENS=2, POSIX_BYTES_READ=1200, POSIX_F_READ_TIME=0.5),
             rec("/data/b", "POSIX", POSIX_OPENS=1, POSIX_BYTES_WRITTEN=10),
             rec(ODD, "STDIO", STDIO_OPENS=1, STDIO_BYTES_READ=3, STDIO_F_META_TIME=0.25)]
    t = FileTable.from_dicts(files)
    buf = io.BytesIO()
    t.save(buf)
    buf.seek(0)
    back = load_table(buf)
    # every row has its module's columns (a counter a record lacked is 0)
    files[1]["counters"]["POSIX_BYTES_READ"] = 0
    files[0]["counters"]["POSIX_BYTES_WRITTEN"] = 0
    files[1]["fcounters"]["POSIX_F_READ_TIME"] = 0.0
    assert list(back.dicts()) == files
    assert back.module("POSIX").path_bytes(0) == b"/data/odd-\xff\xfe.bin"
    # the path both modules name is stored once: two paths for three rows
    buf.seek(0)
    with np.load(buf) as z:
        assert len(z["paths.end"]) == 2 and z["paths.data"].tobytes() == b"/data/odd-\xff\xfe.bin/data/b"
        assert z["STDIO.path"].tolist() == [0]
        assert z["POSIX.names"].tolist() == ["POSIX_OPENS", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"]
    assert back.column("POSIX_BYTES_READ")[:2].tolist() == [1200.0, 0.0]
    assert np.isnan(back.column("POSIX_BYTES_READ")[2])   # no such counter in STDIO


def test_small_tables_are_stored_large_ones_deflated_both_exact():
    """A worker's few hundred rows are written without deflate (cheaper at its exit); a table of
    DEFLATE_ROWS rows or more deflates its integer columns as before; both read back exactly."""
    import zipfile

    from tb_iotrace.store.filetable import DEFLATE_ROWS

    for n, deflated in ((300, False), (DEFLATE_ROWS, True)):
        files = [rec(f"/data/f{i:05d}", "POSIX", POSIX_OPENS=1, POSIX_BYTES_READ=65664 + i, POSIX_F_READ_TIME=i / 7)
                 for i in range(n)]
        t = FileTable.from_dicts(files)
        buf = io.BytesIO()
        t.save(buf, comment=b"c")
        buf.seek(0)
        with zipfile.ZipFile(buf) as z:
            kinds = {i.filename: i.compress_type for i in z.infolist()}
            assert z.comment == b"c"
        assert (kinds["POSIX.c.POSIX_BYTES_READ.npy"] == zipfile.ZIP_DEFLATED) is deflated
        assert kinds["POSIX.f.POSIX_F_READ_TIME.npy"] == zipfile.ZIP_STORED
        buf.seek(0)
        assert list(load_table(buf).dicts()) == files


def test_same_record_id_other_bytes_stays_two_paths():
    """Dedup needs the same bytes, not only the same record id (a hash)."""
    t = FileTable.from_dicts([rec("/a", "POSIX", POSIX_OPENS=1), rec("/b", "STDIO", STDIO_OPENS=1)])
    buf = io.BytesIO()
    t.save(buf)
    buf.seek(0)
    assert [f["path"] for f in load_table(buf).dicts()] == ["/a", "/b"]


def test_many_shared_record_ids_are_checked_byte_for_byte():
    """A worker's table: a STDIO row beside each POSIX one, record ids shared; each pair stored as
    one path only where the bytes agree (same length, other bytes; other length; empty path)."""
    posix = [f"/d/f{i:04d}" for i in range(300)]
    stdio = list(posix)
    stdio[5] = "/d/g0005"            # same length, one byte differs
    stdio[7] = "/d/f0007x"           # longer
    posix[9] = stdio[9] = ""         # empty, the same
    files = [{**rec(p, "POSIX", POSIX_OPENS=1), "record_id": 1000 + i} for i, p in enumerate(posix)]
    files += [{**rec(p, "STDIO", STDIO_OPENS=1), "record_id": 1000 + i} for i, p in enumerate(stdio)]
    buf = io.BytesIO()
    FileTable.from_dicts(files).save(buf)
    buf.seek(0)
    with np.load(buf) as z:
        assert len(z["paths.end"]) == 302
        stdio_at = z["STDIO.path"].tolist()
    assert stdio_at[:5] == [0, 1, 2, 3, 4] and stdio_at[5] == 300 and stdio_at[7] == 301 and stdio_at[9] == 9
    buf.seek(0)
    assert [f["path"] for f in load_table(buf).dicts()] == posix + stdio


def test_a_broken_table_is_a_clear_error(tmp_path):
    for data in (b"", b"PK\x03\x04garbage", b"not a zip at all"):
        with pytest.raises(TableError):
            load_table(io.BytesIO(data), "x.files.npz")
    t = FileTable.from_dicts([rec("/a", "POSIX", POSIX_OPENS=1)])
    buf = io.BytesIO()
    t.save(buf)
    buf.seek(0)
    with np.load(buf) as z:
        cols = {k: z[k] for k in z.files}
    cols["POSIX.path"] = np.array([5])   # names a path that is not stored
    bad = io.BytesIO()
    np.savez(bad, **cols)
    bad.seek(0)
    with pytest.raises(TableError, match="not stored"):
        load_table(bad)


def test_accumulator_sums_windows_as_darshan_does():
    w1 = [rec("/a", "POSIX", POSIX_OPENS=1, POSIX_BYTES_READ=100, POSIX_MAX_BYTE_READ=99, POSIX_MODE=0o644,
              POSIX_F_OPEN_START_TIMESTAMP=2.0, POSIX_F_READ_END_TIMESTAMP=3.0, POSIX_F_READ_TIME=0.5),
          rec("/b", "POSIX", POSIX_OPENS=1, POSIX_BYTES_READ=1, POSIX_MAX_BYTE_READ=0, POSIX_MODE=0,
              POSIX_F_OPEN_START_TIMESTAMP=0.0, POSIX_F_READ_END_TIMESTAMP=0.0, POSIX_F_READ_TIME=0.0)]
    w2 = [rec("/a", "POSIX", POSIX_OPENS=2, POSIX_BYTES_READ=50, POSIX_MAX_BYTE_READ=49, POSIX_MODE=0o600,
              POSIX_F_OPEN_START_TIMESTAMP=5.0, POSIX_F_READ_END_TIMESTAMP=6.0, POSIX_F_READ_TIME=0.25),
          rec("/c", "POSIX", POSIX_OPENS=3, POSIX_BYTES_READ=0, POSIX_MAX_BYTE_READ=0, POSIX_MODE=0,
              POSIX_F_OPEN_START_TIMESTAMP=0.0, POSIX_F_READ_END_TIMESTAMP=0.0, POSIX_F_READ_TIME=0.0)]
    acc = Accumulator()
    acc.add(FileTable.from_dicts(w1))
    acc.add(FileTable.from_dicts(w2))
    got = {f["path"]: f for f in acc.table().dicts()}
    a = got["/a"]
    assert a["counters"] == {"POSIX_OPENS": 3, "POSIX_BYTES_READ": 150, "POSIX_MAX_BYTE_READ": 99, "POSIX_MODE": 0o600}
    assert a["fcounters"] == {"POSIX_F_OPEN_START_TIMESTAMP": 2.0, "POSIX_F_READ_END_TIMESTAMP": 6.0,
                              "POSIX_F_READ_TIME": 0.75}
    assert got["/b"]["counters"]["POSIX_BYTES_READ"] == 1 and got["/c"]["counters"]["POSIX_OPENS"] == 3
    assert list(got) == ["/a", "/b", "/c"]


# --------------------------------------------------------------------------- captures

def test_stop_builds_no_python_object_per_file(only, tmp_path):
    """The stop of a capture of 1,000 files copies their counters as columns: no FileRecord
    exists until someone reads ``cap.files`` (the code before built all 1,000 in the stop)."""
    from tb_iotrace.recording.session import FileRecord

    only.enable()
    n = 1000
    with only.capture() as cap:
        for i in range(n):
            fd = os.open(tmp_path / f"f{i}", os.O_CREAT | os.O_WRONLY, 0o600)
            os.write(fd, b"x" * (i % 13 + 1))
            os.close(fd)
    gc.collect()
    assert sum(type(o) is FileRecord for o in gc.get_objects()) == 0   # type(): no module proxy's __class__
    assert len(cap.table) == n == len(cap.files)
    written = cap.table.module("POSIX").column("POSIX_BYTES_WRITTEN")
    assert int(written.sum()) == sum(i % 13 + 1 for i in range(n))
    assert sum(f.counters["POSIX_BYTES_WRITTEN"] for f in cap.files) == int(written.sum())
    assert {f.path for f in cap.files} == {str(tmp_path / f"f{i}") for i in range(n)}
    f7 = cap.file(tmp_path / "f7")
    assert f7 is cap.files[[f.path for f in cap.files].index(str(tmp_path / "f7"))]
    assert f7.counters["POSIX_BYTES_WRITTEN"] == 8 and f7.record_id == cap.table.module("POSIX").record_id[
        [f.path for f in cap.files].index(str(tmp_path / "f7"))]


def test_record_of_a_capture_round_trips(only, tmp_path, monkeypatch):
    only.enable()
    data = tmp_path / "d"
    data.mkdir()
    odd = os.fsencode(data) + b"/odd-\xff\xfe.bin"
    with only.capture() as cap:
        fd = os.open(odd, os.O_CREAT | os.O_RDWR, 0o600)
        os.write(fd, b"y" * 4096)
        os.pread(fd, 100, 0)
        os.close(fd)
        (data / "plain").write_bytes(b"z" * 10)
    run = tmp_path / "run"
    jpath = write_record(run, cap, partial=False, exit={"how": "exit"})
    doc = json.loads(jpath.read_text())
    assert doc["format"] == FORMAT and "files" not in doc
    assert doc["file_table"] == table_path(jpath).name and doc["nfiles"] == {"POSIX": 2}
    r = read_record(jpath)
    assert r.nfiles == 2
    assert list(r.files) == list(cap.table.dicts())
    t = r.table()
    assert t.module("POSIX").path_bytes([f.path_bytes for f in cap.files].index(odd)) == odd
    # the trace's file ids name the capture's paths
    tr = r.trace()
    assert tr is not None and set(tr["paths"].tolist()) == {os.fsdecode(odd), str(data / "plain")}
    assert set(tr["paths"][tr["file_id"][tr["file_id"] >= 0]].tolist()) == set(tr["paths"].tolist())


def test_missing_or_broken_table_is_a_clear_error(only, tmp_path):
    only.enable()
    with only.capture() as cap:
        (tmp_path / "x").write_bytes(b"1")
    jpath = write_record(tmp_path / "run", cap, partial=False)
    table_path(jpath).write_bytes(b"garbage")
    with pytest.raises(RecordError, match="files.npz"):
        read_record(jpath).table()
    table_path(jpath).unlink()
    with pytest.raises(RecordError, match="missing"):
        read_record(jpath).table()
    r = cli("report", str(jpath))
    assert r.returncode != 0 and "missing" in r.stderr and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- run/1 records

@pytest.fixture()
def v1(tmp_path) -> Path:
    """The committed run/1 record (written by tb-iotrace run before the columnar format), copied."""
    d = tmp_path / "old"
    shutil.copytree(V1_DIR, d)
    return d


def test_old_records_are_read(v1):
    path = v1 / "plugins" / "iotrace" / V1_JSON.name
    raw = json.loads(path.read_text())
    assert raw["format"] == FORMAT_V1
    r = read_record(path)
    assert list(r.files) == raw["files"] and r.nfiles == 3
    t = r.table()
    assert t.counts() == {"POSIX": 2, "STDIO": 1}
    posix = t.module("POSIX")
    odd = [i for i in range(len(posix)) if b"\xff\xfe" in posix.path_bytes(i)]
    assert len(odd) == 1 and posix.path_bytes(odd[0]).endswith(b"/odd-\xff\xfe.bin")
    assert int(posix.column("POSIX_BYTES_WRITTEN").sum()) == 1000 + 300
    assert int(t.module("STDIO").column("STDIO_BYTES_WRITTEN").sum()) == 77


def test_old_records_in_report_exports_and_plugin(v1, tmp_path):
    raw = json.loads(V1_JSON.read_text())
    rep = cli("report", str(v1), "--json")
    assert rep.returncode == 0, rep.stderr
    (host,) = json.loads(rep.stdout)["runs"][0]["hosts"]
    assert [(f["path"], f["module"], f["counters"]) for f in host["files"]] == \
        [(f["path"], f["module"], f["counters"]) for f in raw["files"]]
    assert host["totals"]["POSIX"]["bytes_written"] == 1300 and host["totals"]["STDIO"]["bytes_written"] == 77
    out = tmp_path / "old.txt"
    r = cli("export", str(v1), "--format", "darshan", "-o", str(out))
    assert r.returncode == 0, r.stderr
    lines = [ln.split(b"\t") for ln in out.read_bytes().splitlines() if ln.count(b"\t") >= 5 and not ln.startswith(b"#")]
    assert sum(int(ln[4]) for ln in lines if ln[3] == b"POSIX_BYTES_WRITTEN") == 1300
    assert any(ln[5].endswith(b"/odd-\xff\xfe.bin") for ln in lines if len(ln) > 5)
    from tb_iotrace.model.tab.of_record import decode_record

    cap = decode_record(str(v1 / "plugins" / "iotrace" / V1_JSON.name), "vm.21889")
    ct = cap.counters
    assert sorted(zip(ct.modules, ct.paths)) == sorted((f["module"], f["path"]) for f in raw["files"])
    assert np.nansum(ct.col("POSIX_BYTES_WRITTEN")) == 1300


@pytest.mark.slow
def test_report_from_columns_equals_report_from_records(only, tmp_path):
    """report --json and the text report of a run/2 record (columns, entries streamed) say
    exactly what they say of the same record with its files inline (the per-record path)."""
    only.enable()
    data = tmp_path / "d"
    data.mkdir()
    with only.capture() as cap:
        for i in range(30):
            p = data / (f"f{i}.py" if i % 10 == 0 else f"f{i}.bin")   # a few "code" files
            p.write_bytes(b"x" * (100 * i + 1))
            with open(p, "rb") as fh:
                fh.read()
        fd = os.open(os.fsencode(data) + b"/odd-\xff.bin", os.O_CREAT | os.O_WRONLY, 0o600)
        os.write(fd, b"q" * 5000)
        os.close(fd)
    cols = write_record(tmp_path / "cols", cap, partial=False, exit={"how": "exit"})
    inline = tmp_path / "inline" / "plugins" / "iotrace" / cols.name
    inline.parent.mkdir(parents=True)
    doc = json.loads(cols.read_text())
    doc.pop("file_table")
    doc["files"] = list(read_record(cols).files)
    doc["python"] = {"prefixes": [str(data / "f0.py")], "path": []}
    inline.write_text(json.dumps(doc))
    shutil.copyfile(cols.with_suffix(".npz"), inline.with_suffix(".npz"))   # the same trace
    d2 = json.loads(cols.read_text())
    d2["python"] = doc["python"]
    cols.write_text(json.dumps(d2))
    a, b = cli("report", str(cols), "--json"), cli("report", str(inline), "--json")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    ha, hb = json.loads(a.stdout)["runs"][0]["hosts"][0], json.loads(b.stdout)["runs"][0]["hosts"][0]
    for k in ("files", "totals", "code_loading", "summary"):
        assert ha[k] == hb[k], k
    assert len(ha["files"]) == 31 and sum(f["code"] for f in ha["files"]) == 3, [f["path"] for f in ha["files"] if f["code"]]
    ta, tb = cli("report", str(cols)), cli("report", str(inline))
    assert ta.returncode == 0 and ta.stdout.replace(str(cols), "X") == tb.stdout.replace(str(inline), "X")
    assert "Busiest files" in ta.stdout and "Code loading" in ta.stdout


def test_accumulator_agrees_with_the_dict_merge():
    """The columnar merge of flush windows and runrecord.merge_files (dicts) give the same records."""
    from tb_iotrace.store.runrecord import merge_files

    rng = np.random.default_rng(7)
    names = ["POSIX_OPENS", "POSIX_BYTES_READ", "POSIX_MAX_BYTE_READ", "POSIX_MODE", "POSIX_ACCESS1_ACCESS"]
    fnames = ["POSIX_F_OPEN_START_TIMESTAMP", "POSIX_F_READ_END_TIMESTAMP", "POSIX_F_MAX_READ_TIME",
              "POSIX_F_READ_TIME"]
    windows = []
    for _ in range(4):
        files = []
        for p in rng.choice(12, size=8, replace=False).tolist():
            vals = {k: int(v) for k, v in zip(names, rng.integers(0, 1000, len(names)))}
            vals.update({k: float(v) for k, v in zip(fnames, rng.choice([0.0, 1.5, 2.5, 7.25], len(fnames)))})
            files.append(rec(f"/d/{p}", "POSIX", **vals))
        windows.append(files)
    acc, dicts = Accumulator(), {}
    for w in windows:
        acc.add(FileTable.from_dicts(w))
        merge_files(dicts, w)
    got = {f["path"]: f for f in acc.table().dicts()}
    assert got.keys() == {p for _, p in dicts}
    for (_, p), want in dicts.items():
        assert got[p]["counters"] == want["counters"] and got[p]["fcounters"] == want["fcounters"], p


def test_accumulator_keeps_a_column_a_later_window_sets():
    """A counter 0 in every row of the first window (not stored for it) but set by a later one
    is written: the known-zero columns are merged, not kept from the first window."""
    acc = Accumulator()
    w1 = FileTable.from_dicts([rec("/a", "POSIX", POSIX_OPENS=1, POSIX_BYTES_READ=0)])
    w1.module("POSIX").used = np.array([True, False])
    w1.module("POSIX").fused = np.zeros(0, bool)
    acc.add(w1)
    w2 = FileTable.from_dicts([rec("/a", "POSIX", POSIX_OPENS=0, POSIX_BYTES_READ=5),
                               rec("/b", "POSIX", POSIX_OPENS=0, POSIX_BYTES_READ=7)])
    w2.module("POSIX").used = np.array([False, True])
    w2.module("POSIX").fused = np.zeros(0, bool)
    acc.add(w2)
    buf = io.BytesIO()
    acc.table().save(buf)
    buf.seek(0)
    got = {f["path"]: f["counters"] for f in load_table(buf).dicts()}
    assert got == {"/a": {"POSIX_OPENS": 1, "POSIX_BYTES_READ": 5}, "/b": {"POSIX_OPENS": 0, "POSIX_BYTES_READ": 7}}


def test_periodic_flush_waits_in_proportion_to_its_cost():
    """A run of a million files rewrites a ~100 MB record per flush: flushes take at most
    1/FLUSH_COST_FACTOR of the time, whatever TB_IOTRACE_FLUSH_S asks."""
    from tb_iotrace.recording.autostart import FLUSH_COST_FACTOR, flush_wait

    assert flush_wait(5.0, 0.01) == 5.0
    assert flush_wait(5.0, 1.5) == 1.5 * FLUSH_COST_FACTOR >= 20 * 1.5
