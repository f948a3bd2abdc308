"""The I/O tab on whole-run records (``tb-iotrace run``): discovery, routes, partial and
capped records, hostile names, symlinks, caching. The records are real: small scripts run
under ``tb-iotrace run`` (no TensorFlow, no GPU capture needed)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from werkzeug.test import Client
from werkzeug.wrappers import Response

from tb_iotrace.store import logdir as logdir_mod
from tb_iotrace.plugin import cache as cache_mod
from tb_iotrace.store.runrecord import read_record, table_path
from plugin_client import items_of, make_client

PY = sys.executable
EVIL = "<img src=x onerror=alert(1)>"
EVIL_FILE = f"{EVIL}.tfrecord"
EVIL_HOST = f"{EVIL}.7"
READ_SIZE = 4096
DATA_BYTES = 300_000
EVIL_BYTES = 50_000

# Two threads: the main one writes data.bin and the hostile-named file, a thread named
# "reader" (its OS name, as the record keeps it) reads data.bin in 4 KiB reads; then a
# child Python (recorded too) reads the hostile file.
SCRIPT = textwrap.dedent(f"""
    import ctypes, os, subprocess, sys, threading
    d = sys.argv[1]
    data, evil = os.path.join(d, "data.bin"), os.path.join(d, {EVIL_FILE!r})
    with open(data, "wb") as f:
        f.write(os.urandom({DATA_BYTES}))
    with open(evil, "wb") as f:
        f.write(b"e" * {EVIL_BYTES})
    def reader():
        ctypes.CDLL(None).prctl(15, b"reader")  # PR_SET_NAME
        fd = os.open(data, os.O_RDONLY)
        while os.read(fd, {READ_SIZE}):
            pass
        os.close(fd)
    t = threading.Thread(target=reader)
    t.start(); t.join()
    subprocess.run([sys.executable, "-c", "import sys; open(sys.argv[1], 'rb').read()", evil], check=True)
""")

KILLED = textwrap.dedent("""
    import os, sys, time
    fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"k" * 2222)
    os.close(fd)
    print("ok", flush=True)
    time.sleep(60)
""")


def tb_run(logdir: Path, *args: str, env: dict[str, str] | None = None, flush: str = "0") -> None:
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--flush", flush, "--logdir", str(logdir), "--", PY, *args],
                       capture_output=True, text=True, timeout=180, env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    """``train/iotrace``: a two-thread process and its child Python; ``killed/iotrace``: a
    process SIGKILLed after a periodic flush (partial); ``capped/iotrace``: a trace capped
    at 20 calls (dropped); ``hostile/iotrace``: a record whose file name is HTML."""
    base = tmp_path_factory.mktemp("records")
    data = base / "data"
    data.mkdir()
    ld = base / "logdir"
    script = base / "job.py"
    script.write_text(SCRIPT)
    tb_run(ld / "train", str(script), str(data))
    # partial: killed after a flush
    killed = base / "killed.py"
    killed.write_text(KILLED)
    p = subprocess.Popen([PY, "-m", "tb_iotrace", "run", "--flush", "0.3", "--logdir", str(ld / "killed"), "--",
                          PY, str(killed), str(data / "k.bin")], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert p.stdout.readline().strip() == b"ok"
        rec = ld / "killed" / "plugins" / "iotrace"
        deadline = time.monotonic() + 30
        while not list(rec.glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.8)  # a flush after the write
        os.killpg(p.pid, signal.SIGKILL)
    finally:
        p.wait(timeout=30)
        p.stdout.close()
    # dropped: trace capped at 20 calls
    tb_run(ld / "capped", str(script), str(data), env={"TBIO_TRACE_CAP": "20"})
    # hostile record file name: a copy of a real record
    src = sorted((ld / "capped" / "plugins" / "iotrace").glob("*.json"))[0]
    hostile = ld / "hostile" / "plugins" / "iotrace"
    hostile.mkdir(parents=True)
    shutil.copyfile(src, hostile / f"{EVIL_HOST}.json")
    shutil.copyfile(src.with_suffix(".npz"), hostile / src.with_suffix(".npz").name)
    shutil.copyfile(table_path(src), table_path(hostile / f"{EVIL_HOST}.json"))
    return ld


@pytest.fixture(scope="module")
def client(logdir):
    return make_client(logdir)


def _hosts(ld: Path, sub: str) -> list[str]:
    return sorted(p.name[:-5] for p in (ld / sub / "plugins" / "iotrace").glob("*.json"))


def _main_host(ld: Path) -> str:
    """The record of train.py itself (the one that wrote data.bin)."""
    for h in _hosts(ld, "train"):
        rec = read_record(ld / "train" / "plugins" / "iotrace" / f"{h}.json")
        if any(f["path"].endswith("data.bin") for f in rec.files):
            return h
    raise AssertionError("no record of the main process")


# --------------------------------------------------------------------------- discovery


def test_runs_list_record_folders_with_one_host_per_process(client, logdir):
    plugin, get = client
    assert plugin.is_active() is True
    code, body = get("/runs")
    assert code == 200
    runs = {r["run"]: r for r in body["runs"]}
    assert set(runs) == {"train/iotrace", "killed/iotrace", "capped/iotrace", "hostile/iotrace"}
    assert all(r["kind"] == "record" for r in runs.values())
    assert runs["train/iotrace"]["hosts"] == _hosts(logdir, "train") and len(_hosts(logdir, "train")) == 2
    assert runs["hostile/iotrace"]["hosts"] == [EVIL_HOST]
    assert len(runs["killed/iotrace"]["hosts"]) == 1


def test_is_active_finds_a_record_and_stays_cheap(tmp_path, monkeypatch):
    ld = tmp_path / "ld"
    for i in range(300):
        (ld / f"d{i:03d}" / "x").mkdir(parents=True)
    rec = ld / "zz" / "plugins" / "iotrace"
    rec.mkdir(parents=True)
    (rec / "notes.json").write_text('{"something": "else"}')  # not a record: does not count
    index = cache_mod.LogdirIndex(str(ld))
    assert index.is_active() is False
    (rec / "h.1.json").write_text(json.dumps({"format": "tb_iotrace.run/1", "files": []}))
    calls = []
    real = logdir_mod.is_record_file
    monkeypatch.setattr(logdir_mod, "is_record_file", lambda p: calls.append(p) or real(p))
    assert cache_mod.LogdirIndex(str(ld)).is_active() is True
    assert len(calls) <= 2  # stops at the first record
    # bounded walk: a logdir deeper than ACTIVE_MAX_DIRS directories is not searched to the end
    monkeypatch.setattr(cache_mod, "ACTIVE_MAX_DIRS", 50)
    assert cache_mod.LogdirIndex(str(ld)).is_active() is False


def test_record_folder_named_like_a_profile_session_keeps_both(tmp_path, logdir):
    ld = tmp_path / "ld"
    shutil.copytree(logdir / "train" / "plugins" / "iotrace", ld / "plugins" / "iotrace")
    sess = ld / "plugins" / "profile" / "iotrace"
    sess.mkdir(parents=True)
    (sess / "h.xplane.pb").write_bytes(b"\x0a\x00")
    runs, _ = logdir_mod.scan(str(ld), records=True)
    assert sorted((r.run, r.kind) for r in runs) == [("iotrace", "profile"), ("iotrace (records)", "record")]
    # without records=True (what `tb-iotrace report` asks for: it finds record folders itself)
    assert [(r.run, r.kind) for r in logdir_mod.scan(str(ld))[0]] == [("iotrace", "profile")]


# --------------------------------------------------------------------------- routes


def test_capture_one_io_lane_per_thread_on_the_record_clock(client, logdir):
    _, get = client
    host = _main_host(logdir)
    code, cap = get("/capture", run="train/iotrace", host=host)
    assert code == 200, cap
    rec = read_record(logdir / "train" / "plugins" / "iotrace" / f"{host}.json").doc
    assert cap["source"] == "record" and cap["processes"][0]["pid"] == rec["pid"]
    assert {ln["group"] for ln in cap["lanes"]} == {"io"}  # no host/device lanes
    assert cap["steps"] == [] and cap["messages"] == [] and cap["warnings"] == []
    names = {th["tid"]: th["name"] for th in rec["threads"] if th["nevents"]}
    assert {ln["tid"] for ln in cap["lanes"]} == set(names)
    reader = next(ln for ln in cap["lanes"] if ln["comm"] == "reader")
    assert reader["name"].startswith("reader (tid ")
    main = next(ln for ln in cap["lanes"] if ln["tid"] == rec["pid"])
    assert main["name"].endswith(", main)")
    assert cap["io"]["events"] == rec["nevents"] == sum(ln["events"] for ln in cap["lanes"])
    assert cap["io"]["has_io"] and cap["io"]["dropped"] == 0
    lo, hi = cap["extent"]
    assert lo >= 0 and hi <= rec["end_ns"] - rec["start_ns"] + 1
    # the reader's 4 KiB reads are all on its lane
    assert reader["events"] >= DATA_BYTES // READ_SIZE


def test_timeline_items_cover_every_call(client, logdir):
    _, get = client
    host = _main_host(logdir)
    code, cap = get("/capture", run="train/iotrace", host=host)
    code, tl = get("/timeline", run="train/iotrace", host=host, width=1200)
    assert code == 200, tl
    assert [ln["key"] for ln in tl["lanes"]] == [ln["key"] for ln in cap["lanes"]]
    per_lane: dict[int, int] = {}
    for lane, _, count in items_of(tl):
        per_lane[lane] = per_lane.get(lane, 0) + count
    assert per_lane == {i: ln["events"] for i, ln in enumerate(cap["lanes"])}
    assert any(f.endswith("data.bin") for f in tl["files"])
    # zoomed in between the 1st and 3rd quarter of the item starts: fewer calls, none after it
    starts = sorted(s for _, s, _ in items_of(tl))
    a, b = starts[len(starts) // 4], starts[3 * len(starts) // 4]
    code, z = get("/timeline", run="train/iotrace", host=host, start=a, end=b, width=1200)
    got = items_of(z)
    assert code == 200 and 0 < sum(c for _, _, c in got) < cap["io"]["events"]
    assert all(s <= b for _, s, _ in got)
    # an I/O event's details
    lane = next(ln for ln in cap["lanes"] if ln["comm"] == "reader")
    code, ev = get("/event", run="train/iotrace", host=host, lane=lane["key"], index=5)
    assert code == 200 and ev["group"] == "io" and ev["tid"] == lane["tid"]
    assert ev["host_op"] is None


def test_files_table_has_the_records_counters(client, logdir):
    _, get = client
    host = _main_host(logdir)
    code, files = get("/files", run="train/iotrace", host=host)
    assert code == 200, files
    rows = {p: i for i, p in enumerate(files["path"]) if files["module"][i] == "POSIX"}
    data = next(p for p in rows if p.endswith("/data.bin"))
    i = rows[data]
    assert files["columns"]["bytes_read"][i] == DATA_BYTES
    assert files["columns"]["bytes_written"][i] == DATA_BYTES
    assert files["columns"]["traced_calls"][i] >= DATA_BYTES // READ_SIZE
    evil = next(p for p in rows if p.endswith(EVIL_FILE))
    assert files["columns"]["bytes_written"][rows[evil]] == EVIL_BYTES
    # code loading is marked (the tab lists it only on request) and summed; data is not code
    assert not files["code"][i] and not files["code"][rows[evil]]
    code = {p for p, c in zip(files["path"], files["code"]) if c}
    assert any(p.endswith(".py") for p in code)                     # at least the script itself
    assert all(c for p, c in zip(files["path"], files["code"]) if p.endswith((".py", ".pyc", ".so")))
    assert files["code_loading"]["files"] == len(code)
    assert files["code_loading"]["bytes_read"] == sum(files["columns"]["bytes_read"][k] or 0
                                                      for k, c in enumerate(files["code"]) if c)
    # the child process read it: its own host
    child = next(h for h in _hosts(logdir, "train") if h != host)
    code, cf = get("/files", run="train/iotrace", host=child)
    j = next(k for k, p in enumerate(cf["path"]) if p.endswith(EVIL_FILE) and cf["module"][k] == "POSIX")
    assert cf["columns"]["bytes_read"][j] == EVIL_BYTES


def test_histograms_and_per_file_lanes(client, logdir):
    _, get = client
    host = _main_host(logdir)
    code, files = get("/files", run="train/iotrace", host=host)
    data = next(p for p in files["path"] if p.endswith("/data.bin"))
    code, h = get("/histograms", run="train/iotrace", host=host, path=data)
    assert code == 200, h
    reads = DATA_BYTES // READ_SIZE  # full 4 KiB reads, then the tail and the final empty read
    assert h["read"][h["bins"].index("1K_10K")] == reads and h["write"][h["bins"].index("100K_1M")] == 1
    assert h["ops"]["read"] == reads + 2
    code, cap = get("/capture", run="train/iotrace", host=host, io_by="file")
    lane = next(ln for ln in cap["lanes"] if ln.get("file") == data)
    assert lane["events"] == sum(n for op, n in h["ops"].items())
    code, ev = get("/event", run="train/iotrace", host=host, lane=lane["key"], index=0)
    assert code == 200 and ev["file"] == data


def test_steps_fall_back_to_windows_and_bandwidth_adds_up(client, logdir):
    _, get = client
    host = _main_host(logdir)
    code, st = get("/steps", run="train/iotrace", host=host)
    assert code == 200 and st["has_steps"] is False and "whole-run record" in st["message"]
    code, cap = get("/capture", run="train/iotrace", host=host)
    assert sum(s["calls"] for s in st["steps"]) == cap["io"]["events"]
    assert sum(s["bytes_read"] for s in st["steps"]) >= DATA_BYTES
    code, bw = get("/bandwidth", run="train/iotrace", host=host, bins=50)
    assert code == 200 and bw["total_read"] >= DATA_BYTES


def test_all_hosts_lines_processes_up_on_their_start_times(client, logdir):
    _, get = client
    hosts = _hosts(logdir, "train")
    code, cap = get("/capture", run="train/iotrace", host="__all__")
    assert code == 200, cap
    assert cap["hosts"] == hosts and {ln["host"] for ln in cap["lanes"]} == set(hosts)
    recs = [read_record(logdir / "train" / "plugins" / "iotrace" / f"{h}.json") for h in hosts]
    docs = [r.doc for r in recs]
    t0 = min(d["start_ns"] for d in docs)
    code, tl = get("/timeline", run="train/iotrace", host="__all__", width=1000)
    # the child starts later than its parent: its first item is offset by its start time
    child = next(i for i, r in enumerate(recs) if not any(f["path"].endswith("data.bin") for f in r.files))
    prefix = f"h{child}/"
    child_lanes = [k for k, ln in enumerate(tl["lanes"]) if ln["key"].startswith(prefix)]
    first = min(s for lane, s, _ in items_of(tl) if lane in child_lanes)
    assert first >= docs[child]["start_ns"] - t0 > 0


@pytest.mark.slow
def test_findings_from_the_records_trace(client, logdir):
    _, get = client
    code, fi = get("/findings", run="train/iotrace", host=_main_host(logdir))
    assert code == 200, fi
    assert set(fi) >= {"findings", "message", "notes"}
    assert any("no TensorFlow host timeline" in n for n in fi["notes"])
    # the analysis saw the trace: the reader's 4 KiB reads of data.bin
    small = next(f for f in fi["findings"] if f["id"] == "small-reads")
    assert small["evidence"]["reads"] >= DATA_BYTES // READ_SIZE
    assert small["evidence"]["median_small_read_bytes"] == READ_SIZE
    assert any(p.endswith("/data.bin") for p in small["files"])


@pytest.mark.slow
def test_partial_record_shows_counters_and_says_so(client, logdir):
    _, get = client
    (host,) = _hosts(logdir, "killed")
    doc = read_record(logdir / "killed" / "plugins" / "iotrace" / f"{host}.json").doc
    # a periodic flush keeps the flushed windows' calls: the write is on the timeline
    assert doc["partial"] is True and doc["trace_parts"] and doc["nevents"] > 0
    code, cap = get("/capture", run="killed/iotrace", host=host)
    assert code == 200, cap
    assert cap["io"]["events"] == doc["nevents"] and cap["io"]["files"] > 0
    assert any("Partial record" in w and "calls up to then" in w for w in cap["warnings"]), cap["warnings"]
    code, files = get("/files", run="killed/iotrace", host=host)
    i = next(k for k, p in enumerate(files["path"]) if p.endswith("/k.bin") and files["module"][k] == "POSIX")
    assert files["columns"]["bytes_written"][i] == 2222
    code, tl = get("/timeline", run="killed/iotrace", host=host, width=500)
    assert code == 200 and tl["lanes"] and tl["items"]["start"]
    code, fi = get("/findings", run="killed/iotrace", host=host)
    assert code == 200 and isinstance(fi["findings"], list)
    assert any("This record is partial" in n and "up to the last periodic flush" in n for n in fi["notes"]), \
        fi["notes"]


def test_dropped_calls_are_reported(client, logdir):
    _, get = client
    host = next(h for h in _hosts(logdir, "capped")
                if read_record(logdir / "capped" / "plugins" / "iotrace" / f"{h}.json").doc["dropped"])
    doc = read_record(logdir / "capped" / "plugins" / "iotrace" / f"{host}.json").doc
    code, cap = get("/capture", run="capped/iotrace", host=host)
    assert code == 200
    assert cap["io"]["dropped"] == doc["dropped"] > 0 and cap["io"]["events"] == doc["nevents"] <= 20
    assert any(f"{doc['dropped']} I/O operations were not recorded" in m for m in cap["messages"])


def test_whole_run_series_is_served_past_the_trace_cap(client, logdir):
    """The capped record (20 trace rows) still serves its whole-run series with every byte,
    on the record's clock; "All hosts" has one series per process."""
    _, get = client
    host = next(h for h in _hosts(logdir, "capped")
                if read_record(logdir / "capped" / "plugins" / "iotrace" / f"{h}.json").doc["dropped"])
    record = read_record(logdir / "capped" / "plugins" / "iotrace" / f"{host}.json")
    doc = record.doc
    code, cap = get("/capture", run="capped/iotrace", host=host)
    assert code == 200
    (rs,) = cap["run_series"]
    ts = doc["timeseries"]
    assert rs["host"] == host and rs["bin_ns"] == ts["bin_ns"]
    assert rs["start"] == ts["start_ns"] - doc["start_ns"]
    assert rs["calls"] == ts["calls"] and sum(rs["calls"]) == doc["nevents"] + doc["dropped"] > 20
    read = sum(f["counters"][f"{f['module']}_BYTES_READ"] for f in record.files)
    assert rs["bytes_read"] == read >= DATA_BYTES
    assert abs(sum(rs["read_bps"]) * rs["bin_ns"] / 1e9 - read) < 1e-6 * read
    code, allh = get("/capture", run="capped/iotrace", host="__all__")
    assert code == 200 and [r["host"] for r in allh["run_series"]] == _hosts(logdir, "capped")


def test_a_bad_series_is_a_warning_not_a_failure(tmp_path, logdir):
    ld = tmp_path / "ld"
    shutil.copytree(logdir / "train", ld / "train")
    host = _main_host(ld)
    jpath = ld / "train" / "plugins" / "iotrace" / f"{host}.json"
    doc = json.loads(jpath.read_text())
    doc["timeseries"]["calls"] = doc["timeseries"]["calls"][:-1]
    jpath.write_text(json.dumps(doc))
    _, get = make_client(ld)
    code, cap = get("/capture", run="train/iotrace", host=host)
    assert code == 200 and cap["run_series"] == [] and cap["io"]["events"] > 0
    assert any("time series cannot be read" in w for w in cap["warnings"]), cap["warnings"]


def test_hostile_record_name_is_served_as_data(client):
    _, get = client
    code, cap = get("/capture", run="hostile/iotrace", host=EVIL_HOST)
    assert code == 200 and cap["hosts"] == [EVIL_HOST]
    code, files = get("/files", run="hostile/iotrace", host=EVIL_HOST)
    assert code == 200 and any(p.endswith(EVIL_FILE) for p in files["path"])


@pytest.mark.parametrize("run,host", [
    ("train/iotrace/..", "x"), ("..", "x"), ("train/../train/iotrace", "x"), ("/etc", "passwd"),
    ("train/iotrace", "../../../etc/passwd"), ("train/iotrace", "/etc/passwd"), ("train/iotrace", "a/b"),
    ("%2e%2e", "x"), ("train/iotrace", "%2e%2e"), ("train", "x"), ("iotrace", "x"),
    ("train/plugins/iotrace", "x"), ("train/iotrace", "nope.1"), ("train/iotrace", "\x00"),
])
def test_names_that_escape_are_refused(client, run, host):
    _, get = client
    for route in ("/capture", "/timeline", "/files", "/findings", "/event"):
        code, body = get(route, run=run, host=host, lane="io.t1", index=0)
        assert code in (400, 404), (route, run, host, code)
        assert set(body) == {"error"}


def test_url_encoded_names_are_refused_over_http(client):
    plugin, _ = client
    app = plugin.get_plugin_apps()["/capture"]
    for raw in ("run=train%2fiotrace%2f%2e%2e&host=x", "run=%2e%2e&host=x", "run=train%2Fiotrace&host=%2e%2e%2fx",
                "run=%252e%252e%2fiotrace&host=x"):
        resp = Client(app, Response).get("/data/plugin/iotrace/capture?" + raw)
        assert resp.status_code in (400, 404), raw
        assert b"format" not in resp.get_data()


def test_symlinks_out_of_the_logdir_are_not_served(tmp_path, logdir):
    outside = tmp_path / "outside"
    shutil.copytree(logdir / "train", outside)
    src = sorted((outside / "plugins" / "iotrace").glob("*.json"))[0]
    ld = tmp_path / "logdir"
    # a record folder that is a symlink; a record file that is a symlink; a dir symlink
    (ld / "a" / "plugins").mkdir(parents=True)
    os.symlink(outside / "plugins" / "iotrace", ld / "a" / "plugins" / "iotrace")
    (ld / "b" / "plugins" / "iotrace").mkdir(parents=True)
    os.symlink(src, ld / "b" / "plugins" / "iotrace" / src.name)
    os.symlink(outside, ld / "c")
    plugin, get = make_client(ld)
    code, body = get("/runs")
    assert body["runs"] == []
    assert plugin.is_active() is False
    for run in ("a/iotrace", "b/iotrace", "c/iotrace"):
        code, body = get("/capture", run=run, host=src.name[:-5])
        assert code == 404 and "lanes" not in body


def test_a_trace_linked_from_outside_the_logdir_is_not_read(tmp_path, logdir):
    """The .npz beside a record is opened without following links: a record whose trace is a
    symlink to a file outside the logdir shows its counters only, never that file's rows."""
    ld = tmp_path / "ld"
    shutil.copytree(logdir / "train", ld / "train")
    host = _main_host(ld)
    rec = ld / "train" / "plugins" / "iotrace"
    outside = tmp_path / "outside.npz"
    (rec / f"{host}.npz").rename(outside)
    os.symlink(outside, rec / f"{host}.npz")
    _, get = make_client(ld)
    code, cap = get("/capture", run="train/iotrace", host=host)
    assert code == 200 and cap["io"]["events"] == 0 and cap["io"]["files"] > 0
    assert any("trace cannot be read" in w for w in cap["warnings"]), cap["warnings"]


@pytest.mark.parametrize("field, value, expect", [("threads", [{"tid": None}], 422), ("start_ns", [1], 422),
                                                  ("trace", 7, 200)])
def test_a_record_field_of_the_wrong_type_is_a_clear_answer(tmp_path, logdir, field, value, expect):
    """422 (cached: not decoded again per request) for a record the tab cannot lay out; a
    trace entry that names no file only loses the trace."""
    ld = tmp_path / "ld"
    shutil.copytree(logdir / "train", ld / "train")
    host = _main_host(ld)
    jpath = ld / "train" / "plugins" / "iotrace" / f"{host}.json"
    doc = json.loads(jpath.read_text())
    doc[field] = value
    jpath.write_text(json.dumps(doc))
    plugin, get = make_client(ld)
    for _ in range(2):  # the failure is cached like a corrupt file's, not decoded again per request
        code, body = get("/capture", run="train/iotrace", host=host)
        assert code == expect, body
        if code == 422:
            assert "cannot decode" in body["error"]
        else:
            assert body["io"]["events"] == 0 and any("trace cannot be read" in w for w in body["warnings"])


def test_corrupt_record_is_422_and_others_still_load(tmp_path, logdir):
    ld = tmp_path / "ld"
    shutil.copytree(logdir / "train", ld / "train")
    bad = ld / "bad" / "plugins" / "iotrace"
    bad.mkdir(parents=True)
    (bad / "h.1.json").write_text('{"format":"tb_iotrace.run/1","files": [tru')
    _, get = make_client(ld)
    code, body = get("/capture", run="bad/iotrace", host="h.1")
    assert code == 422 and "cannot read" in body["error"] and body["file"] == "h.1.json"
    host = _hosts(ld, "train")[0]
    assert get("/capture", run="train/iotrace", host=host)[0] == 200


def test_cache_follows_the_json_and_the_trace(tmp_path, logdir):
    ld = tmp_path / "ld"
    shutil.copytree(logdir / "train", ld / "train")
    host = _main_host(ld)
    jpath = ld / "train" / "plugins" / "iotrace" / f"{host}.json"
    plugin, get = make_client(ld)
    _, cap1 = get("/capture", run="train/iotrace", host=host)
    c1 = plugin.index.capture(str(jpath), host)
    assert plugin.index.capture(str(jpath), host) is c1  # cached
    # a new flush of the JSON (as a periodic flush rewrites it): reloaded
    doc = json.loads(jpath.read_text())
    doc["dropped"] = 5
    jpath.write_text(json.dumps(doc))
    _, cap2 = get("/capture", run="train/iotrace", host=host)
    assert cap2["io"]["dropped"] == 5 and plugin.index.capture(str(jpath), host) is not c1
    c2 = plugin.index.capture(str(jpath), host)
    # a rewritten trace alone (same JSON): reloaded too
    npz = jpath.with_suffix(".npz")
    st = npz.stat()
    os.utime(npz, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert plugin.index.capture(str(jpath), host) is not c2


def test_untracked_files_are_shown(tmp_path, logdir):
    """A record that counted files past the file-table bound says so in the tab's messages."""
    src = sorted((logdir / "capped" / "plugins" / "iotrace").glob("*.json"))[0]
    rec = tmp_path / "ld" / "over" / "plugins" / "iotrace"
    rec.mkdir(parents=True)
    doc = json.loads(src.read_text())
    doc["untracked"] = {"files": 3, "calls": 9, "bytes_read": 0, "bytes_written": 300, "reentrant_calls": 0,
                        "examples": ["/data/f7", "/data/f8"]}
    (rec / src.name).write_text(json.dumps(doc))
    shutil.copyfile(src.with_suffix(".npz"), rec / src.with_suffix(".npz").name)
    shutil.copyfile(table_path(src), table_path(rec / src.name))
    _, get = make_client(tmp_path / "ld")
    code, cap = get("/capture", run="over/iotrace", host=src.name[:-5])
    assert code == 200
    assert cap["io"]["untracked"]["files"] == 3
    (msg,) = [m for m in cap["messages"] if "files not tracked" in m]
    assert "3 opens, 9 calls" in msg and "300 B written" in msg and "/data/f7" in msg
