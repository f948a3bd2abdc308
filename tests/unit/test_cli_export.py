"""tb-iotrace export: chrome (validated by parsing, on the shared GPU capture), darshan text
parsed back, parquet/csv round-trips, a million events in bounded memory with progress.
The command's own logic (tb_iotrace.cli.export): each format's summary line against counts and
byte totals read from the input, --run/--host, file:// and URL outputs (staged, uploaded, errors
said of the URL without its credentials), darshan text to a pipe, and each bad argument, input or
output one line (UserError), exit code 1, nothing written."""
from __future__ import annotations

import argparse
import csv
import errno
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_iotrace.store import xplane as X
from tb_iotrace.cli import export, main
from tb_iotrace.cli._base import UserError
from tb_iotrace.export import darshan
from tb_iotrace.base.redact import redact_url
from tb_iotrace.base.safenames import printable
from tb_iotrace.store import remote
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


# --------------------------------------------------------------------------- the command's own logic
# tb_iotrace.cli.export on tests/data/run_v1 (one whole-run record: 24 calls on 3 files, one name
# with non-UTF-8 bytes); what each format's summary line says is read back from the input.

V1 = Path(__file__).resolve().parents[1] / "data" / "run_v1"
V1_RECORD = V1 / "plugins" / "iotrace" / "vm.21889.json"


def v1_truth(record: Path = V1_RECORD) -> dict[str, Any]:
    """What run_v1 (or a copy's ``record``) holds, read from its record and its trace directly."""
    doc = json.loads(record.read_text(encoding="utf-8"))
    files = doc["files"]
    with np.load(record.with_name(doc["trace"])) as trace:
        events = len(trace["start_ns"])

    def total(kind: str) -> int:
        return sum(int(f["counters"].get(f"{f['module']}_BYTES_{kind}", 0)) for f in files)

    return {"host": f"{doc['host']}.{doc['pid']}", "events": events, "files": len(files),
            "posix": sum(f["module"] == "POSIX" for f in files), "stdio": sum(f["module"] == "STDIO" for f in files),
            "counter_lines": sum(len(f["counters"]) + len(f["fcounters"]) for f in files),
            "read": total("READ"), "written": total("WRITTEN"), "paths": {f["path"] for f in files}}


def parse(*argv: str) -> argparse.Namespace:
    """``argv`` as the command's own parser reads it."""
    parser = argparse.ArgumentParser(prog="tb-iotrace export")
    export.Export.add_arguments(parser)
    return parser.parse_args(list(argv))


def wrote(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """``tb-iotrace export ARGV`` succeeds; its one summary line (stderr)."""
    assert main(["export", *argv, "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("wrote "), err
    return err.rstrip("\n")


def failed(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """``tb-iotrace export ARGV`` fails with exit code 1 and one line; the line's message."""
    capsys.readouterr()
    assert main(["export", *argv, "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tb-iotrace export: error: "), err
    return err[len("tb-iotrace export: error: "):].rstrip("\n")


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The command raises UserError for ``argv``, and the CLI prints it as its one line."""
    with pytest.raises(UserError) as exc:
        export.Export().run(parse(*argv, "--no-progress"))
    assert failed(capsys, *argv) == printable(str(exc.value))
    return str(exc.value)


def io_bytes(rows: list[tuple[str, int]]) -> tuple[int, int]:
    """Bytes moved by the read and by the write calls among ``(op, returned)`` rows."""
    return (sum(n for op, n in rows if "read" in op and n > 0), sum(n for op, n in rows if "write" in op and n > 0))


def table_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("argv", [["V1", "-o", "OUT"], ["V1", "--format", "csv"], ["--format", "csv", "-o", "OUT"]],
                         ids=["no --format", "no -o", "no PATH"])
def test_missing_argument_is_usage_error(tmp_path: Path, argv: list[str]) -> None:
    args = [a.replace("V1", str(V1)).replace("OUT", str(tmp_path / "out")) for a in argv]
    with pytest.raises(SystemExit) as exc:
        main(["export", *args])
    assert exc.value.code == 2
    assert list(tmp_path.iterdir()) == []


def test_chrome_summary_counts_the_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    truth = v1_truth()
    out = tmp_path / "t.json"
    assert wrote(capsys, str(V1), "--format", "chrome", "-o", str(out)) == f"wrote {out}: {truth['events']} events"
    spans = [e for e in json.loads(out.read_text(encoding="utf-8", errors="surrogateescape"))["traceEvents"]
             if e["ph"] == "X"]
    assert len(spans) == truth["events"]
    assert io_bytes([(e["name"], e["args"].get("bytes", 0)) for e in spans]) == (truth["read"], truth["written"])


def test_darshan_file_summary_counts_the_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    truth = v1_truth()
    out = tmp_path / "d.txt"
    got = wrote(capsys, str(V1), "--format", "darshan", "-o", str(out))
    assert got == f"wrote {out}: {truth['counter_lines']} counter lines"
    lines = out.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    assert sum(1 for ln in lines if ln and not ln.startswith("#")) == truth["counter_lines"]


def piped_stdout(monkeypatch: pytest.MonkeyPatch, errors: str) -> io.BytesIO:
    """sys.stdout as a pipe's: UTF-8 text over bytes (not a terminal), with ``errors`` as the
    locale makes it (surrogateescape under C/C.UTF-8, strict under e.g. en_US.UTF-8)."""
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="utf-8", errors=errors, newline="\n",
                                                        write_through=True))
    return raw


def test_darshan_to_a_pipe_is_the_file_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o -`` to a pipe writes exactly the text ``-o FILE`` writes (names as their bytes, no
    escapes) and no summary line."""
    out = tmp_path / "d.txt"
    wrote(capsys, str(V1), "--format", "darshan", "-o", str(out))
    raw = piped_stdout(monkeypatch, "surrogateescape")
    assert main(["export", str(V1), "--format", "darshan", "-o", "-", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    assert raw.getvalue() == out.read_bytes()
    assert all(f"\t{p}\t".encode("utf-8", "surrogateescape") in raw.getvalue() for p in v1_truth()["paths"])


def test_darshan_log_summary_counts_ranks_records_and_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    truth = v1_truth()
    out = tmp_path / "x.darshan"
    got = wrote(capsys, str(V1), "--format", "darshan-log", "-o", str(out))
    assert got == (f"wrote {out}: 1 rank(s), {truth['posix']} POSIX and {truth['stdio']} STDIO records, "
                   f"{out.stat().st_size} bytes")
    assert out.read_bytes()[:8].rstrip(b"\0") == b"3.41"       # the log's format version leads its header


def test_darshan_log_summary_names_objects_and_partial_ranks(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A record cut short (partial) with one object read among its files: both said in the line."""
    root = tmp_path / "obj"
    shutil.copytree(V1, root)
    rec = root / V1_RECORD.relative_to(V1)
    doc = json.loads(rec.read_text(encoding="utf-8"))
    doc["partial"] = True
    doc["files"].append({"path": "s3://bucket/shard-0.tar", "module": "POSIX",
                         "counters": {"POSIX_READS": 2, "POSIX_BYTES_READ": 8192}, "fcounters": {}})
    rec.write_text(json.dumps(doc), encoding="utf-8")
    truth = v1_truth()
    out = tmp_path / "x.darshan"
    got = wrote(capsys, str(root), "--format", "darshan-log", "-o", str(out))
    assert got == (f"wrote {out}: 1 rank(s), {truth['posix'] + 1} POSIX and {truth['stdio']} STDIO records "
                   f"(1 POSIX records are objects, named by URL), {out.stat().st_size} bytes; "
                   f"1 rank(s) PARTIAL (see the log's partial_ranks metadata)")


def utf8_v1(root: Path) -> Path:
    """A copy of run_v1 whose one non-UTF-8 file name is made plain (parquet holds UTF-8 only)."""
    shutil.copytree(V1, root)
    rec = root / V1_RECORD.relative_to(V1)
    text = rec.read_text(encoding="utf-8")
    odd = next(p for p in v1_truth()["paths"] if not p.isprintable())
    rec.write_text(text.replace(json.dumps(odd)[1:-1], "/tmp/odd.bin"), encoding="utf-8")
    npz = rec.with_name("vm.21889.npz")
    with np.load(npz) as t:
        cols = {k: t[k] for k in t.files}
    cols["paths"] = np.array(["/tmp/odd.bin" if p == odd else p for p in cols["paths"].tolist()])
    np.savez(npz, **cols)
    assert all(p.isprintable() for p in v1_truth(rec)["paths"])
    return root


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_tables_summary_counts_the_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    src = V1 if fmt == "csv" else utf8_v1(tmp_path / "v1")
    truth = v1_truth(src / V1_RECORD.relative_to(V1))
    out = tmp_path / "tables"
    got = wrote(capsys, str(src), "--format", fmt, "-o", str(out))
    rows = {name: table_rows(out / f"{name}.{fmt}") for name in ("files", "ops", "objects", "requests")}
    # a record of local files: no object, no object request
    want = {"files": truth["files"], "ops": truth["events"], "objects": 0, "requests": 0}
    assert {k: len(v) for k, v in rows.items()} == want
    assert got == (f"wrote {out}/files.{fmt} ({want['files']} rows), {out}/ops.{fmt} ({want['ops']} rows), "
                   f"{out}/objects.{fmt} (0 rows) and {out}/requests.{fmt} (0 rows)")
    assert io_bytes([(r["op"], int(r["returned"])) for r in rows["ops"]]) == (truth["read"], truth["written"])


def two_records(root: Path, keep: int) -> Path:
    """A logdir of two records: run_v1's, and a copy (host w2, pid 5) keeping its first ``keep`` calls."""
    rec = root / "plugins" / "iotrace"
    shutil.copytree(V1_RECORD.parent, rec)
    with np.load(V1_RECORD.with_name("vm.21889.npz")) as t:
        n = len(t["start_ns"])
        np.savez(rec / "w2.5.npz", **{k: (t[k][:keep] if len(t[k]) == n else t[k]) for k in t.files})
    doc = json.loads(V1_RECORD.read_text(encoding="utf-8"))
    doc.update(host="w2", pid=5, trace="w2.5.npz", nevents=keep)
    (rec / "w2.5.json").write_text(json.dumps(doc), encoding="utf-8")
    return root


def test_run_and_host_pick_the_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    truth = v1_truth()
    root = two_records(tmp_path / "logs", keep=10)
    out = tmp_path / "t"
    for extra, hosts, nops in (([], {truth["host"], "w2.5"}, truth["events"] + 10),
                               (["--host", "w2.5"], {"w2.5"}, 10),
                               (["--run", "iotrace", "--host", truth["host"]], {truth["host"]}, truth["events"])):
        wrote(capsys, str(root), "--format", "csv", "-o", str(out), *extra)
        ops = table_rows(out / "ops.csv")
        assert len(ops) == nops and {r["host"] for r in ops} == hosts, extra
        assert len(table_rows(out / "files.csv")) == truth["files"] * len(hosts)
    shutil.rmtree(out)
    for extra, says in ((["--host", "nope"], "no host 'nope'"), (["--run", "nope"], "no run 'nope'")):
        assert says in failed(capsys, str(root), "--format", "csv", "-o", str(out), *extra)
        assert not out.exists()


def test_file_url_output_is_its_local_path(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    plain, out = tmp_path / "plain.json", tmp_path / "t.json"
    wrote(capsys, str(V1), "--format", "chrome", "-o", str(plain))
    assert wrote(capsys, str(V1), "--format", "chrome", "-o", f"file://{out}").startswith(f"wrote {out}: ")
    assert out.read_bytes() == plain.read_bytes()
    assert list(cwd.iterdir()) == []                    # no folder "file:" beside


def test_darshan_log_refuses_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert refused(capsys, str(V1), "--format", "darshan-log", "-o", "-") == \
        "darshan-log writes a binary file: give -o FILE.darshan"
    assert capsys.readouterr().out == "" and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", export.FORMATS)
def test_output_folder_must_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert refused(capsys, str(V1), "--format", fmt, "-o", "no/such/out") == \
        f"no/such/out: the folder {tmp_path}/no/such does not exist"
    assert list(tmp_path.iterdir()) == []


LONG = "x" * 300      # over NAME_MAX (255)
OS_REFUSES = [("chrome", "dir", errno.EISDIR), ("darshan", "dir", errno.EISDIR), ("darshan-log", "dir", errno.EISDIR),
              ("chrome", LONG, errno.ENAMETOOLONG), ("csv", LONG, errno.ENAMETOOLONG),
              ("parquet", LONG, errno.ENAMETOOLONG)]


@pytest.mark.parametrize("fmt, name, code", OS_REFUSES, ids=[f"{f}-{errno.errorcode[c]}" for f, _, c in OS_REFUSES])
def test_output_the_os_refuses_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           fmt: str, name: str, code: int) -> None:
    """An output that cannot be written (a folder where a file goes, a name too long): the
    system's reason, and the folder as it was (no temporary file left)."""
    folder = tmp_path / "o"
    (folder / "dir").mkdir(parents=True)
    out = folder / name
    assert refused(capsys, str(V1), "--format", fmt, "-o", str(out)) == f"{out}: {os.strerror(code)}"
    assert [p.name for p in folder.iterdir()] == ["dir"] and list((folder / "dir").iterdir()) == []


@pytest.mark.parametrize("fmt", ["chrome", "darshan", "csv", "parquet"])
def test_corrupt_input_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    """Every source is read before anything is written: a corrupt capture fails with one line
    and no output (no empty tables folder either)."""
    bad = tmp_path / "in" / "bad.xplane.pb"
    bad.parent.mkdir()
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0fgarbage")
    out = tmp_path / "out"
    out.mkdir()
    assert str(bad) in failed(capsys, str(bad), "--format", fmt, "-o", str(out / "result"))
    assert list(out.iterdir()) == []


def test_parquet_without_pyarrow(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pyarrow, parquet says what to install (and writes nothing); csv needs none."""
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    out = tmp_path / "pq"
    assert refused(capsys, str(V1), "--format", "parquet", "-o", str(out)) == \
        "the parquet format needs pyarrow (pip install pyarrow)"
    assert not out.exists()
    wrote(capsys, str(V1), "--format", "csv", "-o", str(tmp_path / "csv"))
    assert len(table_rows(tmp_path / "csv" / "ops.csv")) == v1_truth()["events"]


def test_odd_bytes_in_names(tmp_path: Path) -> None:
    """Input and output names with non-UTF-8 bytes and control characters, as a shell passes
    them: written under those exact names, the same tables as from a plain name; a missing one
    is one escaped line."""
    odd_in = os.path.join(os.fsencode(tmp_path), b"in-\xfe\x07\x1b]0;t\x07")
    shutil.copytree(V1, os.fsdecode(odd_in))
    plain = tmp_path / "plain"
    assert main(["export", str(V1), "--format", "csv", "-o", str(plain), "--no-progress"]) == 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    outs = {"csv": b"t\xff\n", "chrome": b"c\xff\x1b[2J.json"}
    for fmt, name in outs.items():
        r = run_child([PY, "-m", "tb_iotrace", "export", odd_in, "--format", fmt, "-o",
                       os.path.join(os.fsencode(tmp_path), name), "--no-progress"], env)
        assert r.returncode == 0, r.stderr
    for table in ("files.csv", "ops.csv"):
        assert (tmp_path / os.fsdecode(outs["csv"]) / table).read_bytes() == (plain / table).read_bytes()
    doc = json.loads((tmp_path / os.fsdecode(outs["chrome"])).read_bytes().decode("utf-8", "surrogateescape"))
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == v1_truth()["events"]
    r = run_child([PY, "-m", "tb_iotrace", "export", odd_in + b"\xff-missing", "--format", "csv", "-o",
                   os.path.join(os.fsencode(tmp_path), b"x"), "--no-progress"], env)
    err = r.stderr.decode("utf-8", "backslashreplace")
    assert r.returncode == 1 and err.count("\n") == 1 and err.startswith("tb-iotrace export: error: "), err
    assert "Traceback" not in err and not any(c in err for c in "\x07\x1b\r"), err
    assert not (tmp_path / "x").exists()


def run_child(cmd: list[Any], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """``cmd`` in a child process (bytes arguments as they are), killed if it outlives ``timeout``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


# ---- -o URL: written locally into a staging folder, then uploaded (fsspec's in-memory filesystem)


@pytest.fixture()
def memory_bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    """(fs, name): a folder of its own in fsspec's memory:// filesystem (removed after), and
    the staging folder of -o URL under tmp_path/staging."""
    fsspec = pytest.importorskip("fsspec")     # the cloud extra
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    fs = fsspec.filesystem("memory")
    name = f"tbio-{os.getpid()}-{tmp_path.name}"
    fs.mkdir(f"/{name}/out")
    try:
        yield fs, name
    finally:
        for top in [p for p in fs.ls("/", detail=False) if name in p]:
            fs.rm(top, recursive=True)


def staged(tmp_path: Path) -> list[Path]:
    """What the -o URL export left in its staging folder."""
    return list((tmp_path / "staging").glob("*")) if (tmp_path / "staging").exists() else []


@pytest.mark.parametrize("fmt, name", [("chrome", "t.json"), ("csv", "tables")])
def test_url_output_uploads_what_a_local_export_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       memory_bucket: tuple[Any, str], fmt: str, name: str) -> None:
    fs, bucket = memory_bucket
    local = tmp_path / "local" / name
    local.parent.mkdir()
    wrote(capsys, str(V1), "--format", fmt, "-o", str(local))
    url = f"memory://{bucket}/out/{name}"
    got = wrote(capsys, str(V1), "--format", fmt, "-o", url + ("/" if fmt == "csv" else ""))
    want = {p.relative_to(local.parent).as_posix(): p.read_bytes()
            for p in ([local] if local.is_file() else sorted(local.iterdir()))}
    assert {k[len(f"/{bucket}/out/"):]: fs.cat_file(k) for k in fs.find(f"/{bucket}/out")} == want
    assert got.startswith(f"wrote {url}") and str(tmp_path) not in got      # the URL, not the staging copy
    assert staged(tmp_path) == []


def test_url_output_folder_must_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      memory_bucket: tuple[Any, str]) -> None:
    fs, bucket = memory_bucket
    url = f"memory://{bucket}/nope/t.json"
    assert "no such bucket or folder" in refused(capsys, str(V1), "--format", "chrome", "-o", url)
    assert fs.find(f"/{bucket}") == [] and staged(tmp_path) == []


def test_url_output_error_names_the_url_without_its_credentials(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                memory_bucket: tuple[Any, str]) -> None:
    """A write that fails in the staging folder is said of the URL (its user-info masked), never
    of the local copy."""
    fs, bucket = memory_bucket
    fs.mkdir(f"/user:secret@{bucket}/o")
    url = f"memory://user:secret@{bucket}/o/{LONG}"
    msg = refused(capsys, str(V1), "--format", "chrome", "-o", url)
    assert msg == f"{redact_url(url)}: {os.strerror(errno.ENAMETOOLONG)}"
    assert "secret" not in msg and str(tmp_path) not in msg
    assert fs.find(f"/user:secret@{bucket}") == [] and staged(tmp_path) == []


def refuse_uploads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(local: Any, url: str, fs: Any = None) -> int:
        raise remote.RemoteError(f"{url}: access denied")

    monkeypatch.setattr(remote, "upload_file", refuse)


@pytest.mark.parametrize("fmt, name", [("chrome", "t.json"), ("csv", "tables")])
def test_upload_failure_is_a_user_error(tmp_path: Path, memory_bucket: tuple[Any, str],
                                        monkeypatch: pytest.MonkeyPatch, fmt: str, name: str) -> None:
    """An upload refused (a file, or a folder's first file): UserError "upload failed", the
    staging copy removed."""
    fs, bucket = memory_bucket
    refuse_uploads(monkeypatch)
    url = f"memory://{bucket}/out/{name}"
    with pytest.raises(UserError) as exc:
        export.Export().run(parse(str(V1), "--format", fmt, "-o", url, "--no-progress"))
    first = url + ("/files.csv" if fmt == "csv" else "")
    assert str(exc.value) == f"upload failed: {first}: access denied"
    assert fs.find(f"/{bucket}") == [] and staged(tmp_path) == []


# --------------------------------------------------------------------------- outputs that once went wrong


@pytest.mark.parametrize("url", ["s3://", "gs://"])
def test_url_without_a_bucket_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """``-o s3://`` names no bucket: one line, exit 1, nothing written (its slashes stripped,
    "s3:" would name a local file in the working folder)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    rc = main(["export", str(V1), "--format", "chrome", "-o", url, "--no-progress"])
    err = capsys.readouterr().err
    assert (rc, sorted(p.name for p in cwd.iterdir())) == (1, []), err
    assert err.count("\n") == 1 and "no bucket" in err, err


def test_darshan_to_a_strict_utf8_pipe_keeps_odd_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o -`` to a pipe under a UTF-8 locale (stdout errors=strict, as en_US.UTF-8 gives) must
    write the text ``-o FILE`` writes: a file name's non-UTF-8 bytes as they are, not an
    UnicodeEncodeError half-way."""
    out = tmp_path / "d.txt"
    wrote(capsys, str(V1), "--format", "darshan", "-o", str(out))
    raw = piped_stdout(monkeypatch, "strict")
    rc = main(["export", str(V1), "--format", "darshan", "-o", "-", "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    assert raw.getvalue() == out.read_bytes()


def test_upload_failure_does_not_say_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            memory_bucket: tuple[Any, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed upload is one line, the error: no "wrote memory://…" line for a URL never
    written."""
    fs, bucket = memory_bucket
    refuse_uploads(monkeypatch)
    url = f"memory://{bucket}/out/t.json"
    failed(capsys, str(V1), "--format", "chrome", "-o", url)
    assert fs.find(f"/{bucket}") == []


def test_parquet_of_a_non_utf8_file_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """run_v1 names a file with non-UTF-8 bytes (csv writes it as its bytes). Parquet holds only
    UTF-8 text: the name's bytes that are not UTF-8 are \\xNN escapes there, the same in the files
    and the ops tables (a path joins across them); every call and every file is written."""
    out = tmp_path / "pq"
    assert export.Export().run(parse(str(V1), "--format", "parquet", "-o", str(out), "--no-progress")) == 0
    truth = v1_truth()
    odd = [p for p in truth["paths"] if p != p.encode("utf-8", "surrogateescape").decode("utf-8", "ignore")]
    assert odd, "run_v1 no longer names a file with non-UTF-8 bytes"
    want = {p.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") for p in truth["paths"]}
    assert all("\\x" in w for w in want - truth["paths"]) and len(want - truth["paths"]) == len(odd)
    files = table_rows(out / "files.parquet")
    ops = table_rows(out / "ops.parquet")
    assert len(files) == truth["files"] and {r["path"] for r in files} == want
    assert len(ops) == truth["events"] and {r["path"] for r in ops if r["path"]} <= want
    assert any(r["path"] in want - truth["paths"] for r in ops)
