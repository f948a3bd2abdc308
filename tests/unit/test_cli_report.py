"""tb-iotrace report, and the CLI's exit codes and bad-input handling (no TensorFlow)."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.store import xplane as X
from tb_iotrace.cli import main
from tb_iotrace.store.runrecord import FORMAT as RECORD_FORMAT

GPU_HOST = "34.83.195.179_6003"
T0 = 1_700_000_000_000_000_000
PY = sys.executable

COUNTERS = [
    {"path": "/data/a.tfrecord", "module": "POSIX",
     "counters": {"POSIX_OPENS": 1, "POSIX_READS": 3, "POSIX_BYTES_READ": 12288, "POSIX_SIZE_READ_1K_10K": 3,
                  "POSIX_SEQ_READS": 2, "POSIX_CONSEC_READS": 2},
     "fcounters": {"POSIX_F_READ_TIME": 0.25}},
    {"path": "/data/b.txt", "module": "STDIO",
     "counters": {"STDIO_WRITES": 1, "STDIO_BYTES_WRITTEN": 7}, "fcounters": {}},
]


def small_trace(n: int = 50) -> X.IoTrace:
    rng = np.random.default_rng(1)
    st = T0 + 1_000_000 + np.sort(rng.integers(0, 10_000_000, n))
    return X.IoTrace(
        op=np.array(["pread64"] * n, dtype=object), path=np.array(["/data/a.tfrecord"] * n, dtype=object),
        offset=np.arange(n) * 4096, requested=np.full(n, 4096), returned=np.full(n, 4096),
        fd=np.full(n, 5), errno=np.zeros(n, int), start_ns=st, end_ns=st + 1000, tid=np.full(n, 4000),
        threads={4000: (0x7F0000000000, "reader")}, counters=COUNTERS)


@pytest.fixture(scope="module")
def logdir(gpu_capture, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "logdir"
    run = root / "plugins" / "profile" / "2020_01_01_00_00_00"
    run.mkdir(parents=True)
    dst = run / f"{GPU_HOST}.xplane.pb"
    shutil.copyfile(gpu_capture, dst)
    os.chmod(dst, 0o644)
    X.merge_into_capture(dst, small_trace(), start_ns=T0)
    rec = root / "plugins" / "iotrace"
    rec.mkdir(parents=True)
    doc = {"format": RECORD_FORMAT, "host": "h", "pid": 12, "ppid": 1, "argv": ["x.py"], "start_ns": T0,
           "end_ns": T0 + 10, "partial": True, "exit": {"how": "flush"}, "files": COUNTERS, "threads": [],
           "nevents": 0, "dropped": 0, "trace": None}
    (rec / "h.12.json").write_text(json.dumps(doc))
    return root


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tb_iotrace", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_json_schema_on_logdir(logdir, capsys):
    assert main(["report", str(logdir), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    runs = {r["run"]: r for r in doc["runs"]}
    assert set(runs) == {"2020_01_01_00_00_00", "iotrace"}
    host = runs["2020_01_01_00_00_00"]["hosts"][0]
    assert host["host"] == GPU_HOST and host["kind"] == "xplane" and host["nevents"] == 50
    assert isinstance(host["findings"], list)
    by = {(f["path"], f["module"]): f for f in host["files"]}
    assert by[("/data/a.tfrecord", "POSIX")]["counters"]["POSIX_BYTES_READ"] == 12288
    assert by[("/data/a.tfrecord", "POSIX")]["record_id"] == 16019910728809678723   # Darshan's id of the path
    assert set(by[("/data/a.tfrecord", "POSIX")]) >= {"path", "module", "counters", "fcounters"}
    assert host["totals"]["POSIX"]["bytes_read"] == 12288
    assert host["totals"]["STDIO"]["bytes_written"] == 7
    rec = runs["iotrace"]["hosts"][0]
    assert rec["host"] == "h.12" and rec["kind"] == "record" and rec["partial"] is True
    assert rec["process"]["pid"] == 12


def test_text_report_and_filters(logdir, capsys):
    assert main(["report", str(logdir), "--run", "iotrace"]) == 0
    out = capsys.readouterr().out
    assert "PARTIAL" in out and "/data/a.tfrecord" in out and "POSIX read pattern" in out
    assert GPU_HOST not in out
    assert main(["report", str(logdir), "--host", GPU_HOST]) == 0
    out = capsys.readouterr().out
    assert GPU_HOST in out and "h.12" not in out


def test_paths_of_each_kind(logdir, capsys):
    run_dir = logdir / "plugins" / "profile" / "2020_01_01_00_00_00"
    for p in (run_dir, run_dir / f"{GPU_HOST}.xplane.pb", logdir / "plugins" / "iotrace",
              logdir / "plugins" / "iotrace" / "h.12.json"):
        assert main(["report", str(p), "--json"]) == 0, p
        doc = json.loads(capsys.readouterr().out)
        assert len(doc["runs"]) == 1 and len(doc["runs"][0]["hosts"]) == 1


def test_unknown_run_and_host(logdir, capsys):
    assert main(["report", str(logdir), "--run", "nope"]) == 1
    err = capsys.readouterr().err
    assert "no run 'nope'" in err and "iotrace" in err
    assert main(["report", str(logdir), "--host", "nope"]) == 1


@pytest.mark.parametrize("command", [["report"], ["export", "--format", "csv", "-o", "OUT"]])
@pytest.mark.slow
def test_bad_inputs_one_line_exit_1(tmp_path, command):
    corrupt = tmp_path / "bad.xplane.pb"
    corrupt.write_bytes(b"\x0a\xff\xff\xff\xff\x0fgarbage")
    badjson = tmp_path / "rec.json"
    badjson.write_text("{not json")
    empty = tmp_path / "empty"
    empty.mkdir()
    unknown = tmp_path / "notes.bin"
    unknown.write_bytes(b"\x00\x01hello")
    emptyfile = tmp_path / "zero.xplane.pb"
    emptyfile.write_bytes(b"")
    for bad in (tmp_path / "missing", corrupt, badjson, empty, unknown, emptyfile):
        args = [a.replace("OUT", str(tmp_path / "out.csv")) for a in command]
        r = cli(args[0], str(bad), *args[1:])
        assert r.returncode == 1, (bad, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.stderr
        assert r.stderr.startswith(f"tb-iotrace {args[0]}: error: ")
    r = cli("-v", args[0], str(corrupt), *args[1:])
    assert r.returncode == 1 and "Traceback" in r.stderr


@pytest.mark.slow
def test_usage_errors_exit_2(tmp_path):
    assert cli().returncode == 2
    assert cli("report").returncode == 2
    assert cli("frobnicate").returncode == 2
    assert cli("export", str(tmp_path), "--format", "xml", "-o", "x").returncode == 2
    r = cli("report", "--help")
    assert r.returncode == 0 and "--json" in r.stdout and "tb_iotrace.report/1" in r.stdout
    for sub in ("run", "export"):
        r = cli(sub, "--help")
        assert r.returncode == 0 and r.stdout


@pytest.mark.slow
def test_run_bad_inputs(tmp_path):
    r = cli("run", "--logdir", str(tmp_path / "l"), "--")
    assert r.returncode == 1 and "no command" in r.stderr
    r = cli("run", "--logdir", str(tmp_path / "l"), "--", "/no/such/program")
    assert r.returncode == 1 and "command not found" in r.stderr and "Traceback" not in r.stderr
    f = tmp_path / "file"
    f.write_text("x")
    r = cli("run", "--logdir", str(f), "--", "true")
    assert r.returncode == 1 and "not a directory" in r.stderr


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("command", ["report", "export"])
@pytest.mark.slow
def test_progress_on_stderr_of_a_terminal_only(logdir, tmp_path, capsys, monkeypatch, command):
    """Long work over many hosts shows which host it is on, on stderr, only on a terminal, and
    erases the line before the result; a pipe or --no-progress gets none."""
    args = [command, str(logdir)] + (["--format", "csv", "-o", str(tmp_path / "t")] if command == "export" else [])
    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(args) == 0
    out = capsys.readouterr().out
    shown = tty.getvalue()
    assert "2/2 hosts (100%)" in shown, shown
    assert f"{command}" in shown.split(":")[0]
    assert "\r\x1b[K" in shown and "hosts" not in out
    if command == "report":
        assert shown.endswith("\r\x1b[K") and "/data/a.tfrecord" in out
    for quiet in ([*args, "--no-progress"], None):
        pipe = io.StringIO()
        monkeypatch.setattr(sys, "stderr", pipe)
        assert main(quiet or args) == 0
        assert "hosts" not in pipe.getvalue()
