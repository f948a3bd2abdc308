"""The CLI against hostile input: names from inside files never leave the logdir,
outputs replace the old file only when complete, terminal text has no control characters,
the Darshan reading child is contained, and every bad input is one line, never a traceback."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import darshan
import numpy as np
import pytest

from tb_iotrace.cli import import_darshan, main
from tb_iotrace.model.open_source import open_source as resolve
from tb_iotrace.export import darshan_log
from tb_iotrace.recording.opnames import MODULES, counter_names
from tb_iotrace.store.runrecord import FORMAT as RECORD_FORMAT

PY = sys.executable
DXT_LOG = Path(darshan.__file__).parent / "examples" / "example_logs" / "dxt.darshan"
T0 = 1_700_000_000_000_000_000
# C0 controls but newline, DEL, C1 controls: what a terminal acts on
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
COUNTERS = [
    {"path": "/data/a.tfrecord", "module": "POSIX",
     "counters": {"POSIX_OPENS": 1, "POSIX_READS": 3, "POSIX_BYTES_READ": 12288}, "fcounters": {}},
]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([PY, "-m", "tb_iotrace", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env, errors="surrogateescape")


def one_line_error(r: subprocess.CompletedProcess, command: str) -> None:
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"tb-iotrace {command}: error: "), r.stderr
    assert not CONTROL.search(r.stderr), r.stderr


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def make_record(root: Path, *, host: str = "h", n: int = 2000, paths: list[str] | None = None,
                **doc_changes) -> Path:
    """A whole-run record with a trace of ``n`` small reads (enough for a finding)."""
    rec = root / "plugins" / "iotrace"
    rec.mkdir(parents=True, exist_ok=True)
    paths = paths or [f"/d/f{i}" for i in range(7)]
    st = T0 + np.arange(n, dtype=np.int64) * 1000
    np.savez(rec / f"{host}.1.npz", start_ns=st, end_ns=st + 500, op_id=np.zeros(n, np.int32),
             file_id=(np.arange(n) % len(paths)).astype(np.int32), offset=np.arange(n, dtype=np.int64) * 4096,
             requested=np.full(n, 4096, np.int64), returned=np.full(n, 4096, np.int64),
             fd=np.full(n, 3, np.int64), errno=np.zeros(n, np.int64), tid=np.full(n, 77, np.int64),
             op_names=np.array(["pread64"]), paths=np.array(paths))
    doc = {"format": RECORD_FORMAT, "host": host, "pid": 1, "ppid": 0, "argv": [], "start_ns": T0,
           "end_ns": int(st[-1]), "partial": False, "exit": {"how": "exit"}, "files": COUNTERS,
           "threads": [{"tid": 77, "name": "w"}], "nevents": n, "dropped": 0, "trace": f"{host}.1.npz"}
    doc.update(doc_changes)
    (rec / f"{host}.1.json").write_text(json.dumps(doc))
    return root


# --------------------------------------------------------------------------- 2: names from a log


def hostile_log(base: Path, hostname: str) -> Path:
    """PyDarshan's dxt.darshan, with its DXT hostname replaced (read in, written back)."""
    logdir = base / "imported"
    if not logdir.exists():
        assert main(["import-darshan", str(DXT_LOG), "--logdir", str(logdir)]) == 0
    (src,) = resolve(str(logdir), None, None)
    src.host = hostname
    out = base / f"log{abs(hash(hostname))}.darshan"
    layout = {m: (counter_names(m, False), counter_names(m, True)) for m in MODULES}
    darshan_log.write([src], str(out), layout)
    rep = darshan.DarshanReport(str(out), read_all=False)
    rep.mod_read_all_dxt_records("DXT_POSIX")
    assert rep.records["DXT_POSIX"].to_df()[0]["hostname"] == hostname   # the log really says so
    return out


@pytest.mark.slow   # eight crafted Darshan logs through PyDarshan: ~18 s
def test_import_darshan_hostname_stays_in_logdir(tmp_path):
    outside = Path(tempfile.mkdtemp(prefix="h", dir="/tmp"))   # short: DXT hostnames hold 63 bytes
    try:
        work = tmp_path / "w" / "a" / "b"
        work.mkdir(parents=True)
        names = ["../../../../x", "../x", "..", ".", f"{outside}/x", "/x", ".hidden", "a\x1b]0;t\x07\r\nb"]
        for i, name in enumerate(names):
            log = hostile_log(tmp_path, name)
            logdir = work / f"L{i}"
            before = files_under(tmp_path) | files_under(outside)
            r = cli("import-darshan", str(log), "--logdir", f"L{i}", cwd=work)
            assert r.returncode == 0, r.stderr
            new = (files_under(tmp_path) | files_under(outside)) - before
            assert len(new) == 1, (name, new)
            (out,) = new
            assert out.parent.parent == logdir / "plugins" / "profile", (name, out)
            assert not out.name.startswith(".") and out.name.endswith(".xplane.pb")
            assert not CONTROL.search(r.stderr), r.stderr
            rep = cli("report", f"L{i}", "--json", cwd=work)
            assert rep.returncode == 0, rep.stderr
            assert len(json.loads(rep.stdout)["runs"][0]["hosts"]) == 1
        assert not (tmp_path / "x.xplane.pb").exists() and not (outside / "x.xplane.pb").exists()
    finally:
        shutil.rmtree(outside)


def test_import_darshan_host_option_still_checked(tmp_path):
    for bad in ("../x", "/x", ".x", ""):
        r = cli("import-darshan", str(DXT_LOG), "--logdir", str(tmp_path / "L"), "--host", bad)
        one_line_error(r, "import-darshan")
    assert not (tmp_path / "L").exists() or not files_under(tmp_path / "L")


def test_record_names_stay_in_the_record_folder(tmp_path, monkeypatch):
    """A machine's name is set by whoever runs it: a record's file name is one component."""
    from tb_iotrace.store import runrecord

    for name in ("../../../x", "/abs", "..", ".h", "a\nb"):
        monkeypatch.setattr(runrecord.socket, "gethostname", lambda name=name: name)
        jpath, npath = runrecord.record_paths(tmp_path, pid=7)
        for p in (jpath, npath, runrecord.table_path(jpath)):
            assert p.parent == runrecord.record_dir(tmp_path) and not p.name.startswith("."), p
        assert jpath.name.endswith(".7.json")


# --------------------------------------------------------------------------- 7: outputs replaced whole


# inputs that make each format fail after it began writing
FAILING = [("chrome", "t.json", {"start_ns": 2**70}),            # "Python int too large" half-way
           ("chrome", "t.json.gz", {"start_ns": 2**70}),
           ("darshan", "d.txt", {"start_ns": 10**30}),            # its header's time out of range
           ("csv", "tables", {"threads": "x"}),                   # files.csv written, ops.csv fails
           ("parquet", "tables", {"threads": "x"}),
           ("darshan-log", "x.darshan", {"files": [1]})]


@pytest.mark.parametrize("fmt, out, change", FAILING, ids=[f"{f}-{o}" for f, o, _ in FAILING])
def test_failed_export_keeps_the_previous_output(tmp_path, fmt, out, change):
    good = make_record(tmp_path / "good")
    bad = make_record(tmp_path / "bad", **change)
    target = tmp_path / "out" / out
    target.parent.mkdir()
    assert main(["export", str(good), "--format", fmt, "-o", str(target), "--no-progress"]) == 0
    before = {p: p.read_bytes() for p in ([target] if target.is_file() else sorted(target.iterdir()))}
    assert before
    r = cli("export", str(bad), "--format", fmt, "-o", str(target), "--no-progress")
    one_line_error(r, "export")
    after = {p: p.read_bytes() for p in ([target] if target.is_file() else sorted(target.iterdir()))}
    assert after == before                                # byte for byte, nothing half-written
    assert sorted(os.listdir(target.parent)) == [out]     # no temporary file left beside it


def test_export_writes_through_a_temporary_name(tmp_path, monkeypatch):
    """While the export runs, the output's name still holds the old file (or nothing)."""
    good = make_record(tmp_path / "good")
    target = tmp_path / "t.json"
    seen = []
    from tb_iotrace.export import chrome

    real = chrome._io

    def spy(*a, **k):
        seen.append(target.exists())
        return real(*a, **k)

    monkeypatch.setattr(chrome, "_io", spy)
    assert main(["export", str(good), "--format", "chrome", "-o", str(target), "--no-progress"]) == 0
    assert seen == [False]
    json.loads(target.read_text())


# --------------------------------------------------------------------------- 8: terminal output


def test_text_report_escapes_control_characters(tmp_path):
    evil = ["/d/\x1b]0;pwned\x07", "/d/a\r\nFAKE LINE", "/d/\x1b[2J", "/d/\x9b31mred", "/d/bell\x07\x07"]
    root = make_record(tmp_path / "r", host="h\x1b[2Jx", paths=evil,
                       files=[dict(COUNTERS[0], path="/d/\x1b]0;title\x07")])
    r = cli("report", str(root), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "Findings" in r.stdout and "files: " in r.stdout
    assert not CONTROL.search(r.stdout), [ln for ln in r.stdout.splitlines() if CONTROL.search(ln)]
    assert not CONTROL.search(r.stderr)
    assert "FAKE LINE" not in [ln.strip() for ln in r.stdout.splitlines()]
    assert "\\x1b]0;pwned\\x07" in r.stdout and "a\\r\\nFAKE LINE" in r.stdout
    assert "h\\x1b[2Jx" in r.stdout                 # the host name in the title
    assert "'/d/\\x1b]0;title\\x07'" in r.stdout    # the busiest files table, quoted as before
    js = cli("report", str(root), "--json", "--no-progress")
    assert js.returncode == 0 and evil[1] in js.stdout.encode().decode("unicode_escape")  # JSON keeps names


def test_darshan_text_on_a_terminal_is_escaped(tmp_path):
    """``export --format darshan -o -`` to a terminal escapes each field (tabs and lines kept);
    to a pipe it writes the names exactly, as darshan-parser does."""
    import pty

    name = "/d/\x1b]0;pwned\x07"
    root = make_record(tmp_path / "r", n=10, files=[dict(COUNTERS[0], path=name)])
    args = [PY, "-m", "tb_iotrace", "export", str(root), "--format", "darshan", "-o", "-"]
    piped = subprocess.run(args, capture_output=True, timeout=300)
    assert piped.returncode == 0 and f"\t{name}\t".encode() in piped.stdout
    leader, follower = pty.openpty()
    try:
        p = subprocess.Popen(args, stdout=follower, stderr=subprocess.PIPE)
        os.close(follower)
        data = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:          # EIO: the other end closed
                break
            if not chunk:
                break
            data += chunk
        assert p.wait(timeout=300) == 0
    finally:
        os.close(leader)
    text = data.decode().replace("\r\n", "\n")          # the terminal's line discipline
    lines = [ln for ln in text.splitlines() if ln.startswith("POSIX\t")]
    assert lines and all(len(ln.split("\t")) == 8 for ln in lines)
    assert not CONTROL.search(text.replace("\t", "")), text[-500:]
    assert "\t/d/\\x1b]0;pwned\\x07\t" in text


def test_error_messages_escape_control_characters(tmp_path):
    r = cli("report", str(tmp_path / "no\x1b]0;x\x07such\nfile"))
    one_line_error(r, "report")
    assert "no\\x1b]0;x\\x07such\\nfile" in r.stderr


# --------------------------------------------------------------------------- 9: the Darshan reading child


def segfaulting_log(tmp_path: Path) -> Path:
    """PyDarshan's dxt.darshan with one byte changed: libdarshan-util segfaults reading it."""
    data = bytearray(DXT_LOG.read_bytes())
    data[5357] = 10
    out = tmp_path / "seg.darshan"
    out.write_bytes(bytes(data))
    return out


def test_darshan_child_segfault_is_one_clean_line(tmp_path):
    work = tmp_path / "cwd"
    work.mkdir()
    (work / "keep").write_text("x")
    r = cli("import-darshan", str(segfaulting_log(tmp_path)), "--logdir", "L", cwd=work)
    one_line_error(r, "import-darshan")
    assert "corrupt" in r.stderr
    assert sorted(os.listdir(work)) == ["keep"]


HOSTILE_READER = """
import os, sys, time
open("planted", "w").write("x")
for name in ("victim", "../victim"):
    try:
        os.unlink(name)
    except OSError:
        pass
print(os.getcwd(), file=sys.stderr, flush=True)
time.sleep(60)
"""


def test_darshan_child_runs_in_a_scratch_folder_with_a_time_limit(tmp_path, monkeypatch, capsys):
    """The child's relative paths land in a folder made for it (removed after), and a child
    that hangs is stopped at --timeout with one line."""
    work = tmp_path / "cwd"
    work.mkdir()
    (work / "victim").write_text("x")
    (tmp_path / "victim").write_text("x")
    monkeypatch.chdir(work)
    monkeypatch.setattr(import_darshan, "READER", HOSTILE_READER)
    scratch = tmp_path / "tmp"          # where tb-iotrace makes its scratch folders
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert main(["import-darshan", str(DXT_LOG), "--logdir", "L", "--timeout", "2"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "time limit" in err and "2" in err, err
    assert (work / "victim").exists() and (tmp_path / "victim").exists()
    assert sorted(os.listdir(work)) == ["victim"]                  # nothing planted, no L
    assert list(scratch.iterdir()) == []                           # its scratch folder is gone


def test_darshan_timeout_must_be_positive(tmp_path):
    r = cli("import-darshan", str(DXT_LOG), "--logdir", str(tmp_path / "L"), "--timeout", "0")
    one_line_error(r, "import-darshan")


# --------------------------------------------------------------------------- one line for any bad input


BAD_RECORDS = [
    ({"start_ns": 10**30}, ["export", "--format", "darshan", "-o", "OUT/d.txt"]),
    ({"threads": "x"}, ["export", "--format", "csv", "-o", "OUT/t"]),
    ({"exit": "x"}, ["report"]),
    ({"start_ns": "x"}, ["export", "--format", "chrome", "-o", "OUT/t.json"]),
    ({"files": [{"path": 1}]}, ["report", "--json"]),
    ({"files": [1]}, ["export", "--format", "darshan-log", "-o", "OUT/x.darshan"]),
    ({"dropped": "x"}, ["report"]),
    ({"argv": 5}, ["export", "--format", "darshan", "-o", "OUT/d.txt"]),
]


@pytest.mark.parametrize("change, command", BAD_RECORDS, ids=[json.dumps(c)[:30] for c, _ in BAD_RECORDS])
def test_malformed_record_is_one_line_not_a_traceback(tmp_path, change, command):
    root = make_record(tmp_path / "r", n=50, **change)
    args = [a.replace("OUT", str(tmp_path)) for a in command]
    r = cli(args[0], str(root), *args[1:], "--no-progress")
    one_line_error(r, args[0])
    v = cli("-v", args[0], str(root), *args[1:], "--no-progress")
    assert v.returncode == 1 and "Traceback" in v.stderr


def test_record_trace_op_and_file_ids_out_of_range_read_the_same_everywhere(tmp_path):
    """A whole-run record's trace is converted with one bounds check (store.runrecord.checked_trace)
    for the tab and for the report and exports: an op id outside the op table is "?" and a file id
    outside the path table is no file, in both. Before, the exports' conversion indexed the tables
    as they came: a negative op id took the last op's name, one past the end raised IndexError."""
    from tb_iotrace.model.open_source import open_source
    from tb_iotrace.model.tab.of_record import decode_record

    root = make_record(tmp_path / "r", n=6)
    npz = root / "plugins" / "iotrace" / "h.1.npz"
    t = dict(np.load(npz))
    t["op_names"] = np.array(["pread64", "write"])
    t["op_id"] = np.array([0, 1, -1, 7, 0, 1], np.int32)
    t["file_id"] = np.array([0, -1, 99, -5, 1, 2], np.int32)
    np.savez(npz, **t)
    (src,) = open_source(str(root))
    cols, _ = src.io_columns()
    assert cols["op"].tolist() == ["pread64", "write", "?", "?", "pread64", "write"]
    assert cols["path"].tolist() == ["/d/f0", "", "", "", "/d/f1", "/d/f2"]
    io = decode_record(str(root / "plugins" / "iotrace" / "h.1.json"), "h").io
    assert [io.ops[o] for o in io.op.tolist()] == cols["op"].tolist()   # one tid, already in start order
    assert [io.paths[p] if p >= 0 else "" for p in io.path.tolist()] == cols["path"].tolist()
