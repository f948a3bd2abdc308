"""tb-iotrace report on PyTorch Kineto traces written by tb_iotrace.torch.trace_handler:
one host per process, counters as recorded; foreign or corrupt traces give a
clear error, and beside good ones are skipped while the good ones load (no torch needed)."""
from __future__ import annotations

import json
from pathlib import Path

from tb_iotrace.cli import main
from tb_iotrace.store.kineto import add_io, write_trace

BASE = 1_790_857_026_000_000_000


def proc(pid: int, role: str, nbytes: int) -> dict:
    return {"pid": pid, "role": role, "start_ns": BASE + 1000, "end_ns": BASE + 9000,
            "threads": [[pid, 1, "python"]],
            "events": {"op": ["read"], "path": [f"/d/{pid}"], "offset": [0], "requested": [nbytes],
                       "returned": [nbytes], "fd": [3], "errno": [0], "start_ns": [BASE + 2000],
                       "end_ns": [BASE + 3000], "tid": [pid]},
            "counters": [{"path": f"/d/{pid}", "module": "POSIX", "record_id": 1,
                          "counters": {"POSIX_OPENS": 1, "POSIX_READS": 1, "POSIX_BYTES_READ": nbytes},
                          "fcounters": {"POSIX_F_READ_TIME": 0.001}}],
            "dropped": 0}


def make_trace(path: Path) -> None:
    trace = {"baseTimeNanoseconds": BASE, "traceEvents": []}
    write_trace(path, add_io(trace, [proc(10, "main", 5), proc(11, "worker", 700), proc(12, "worker", 900)]))


def test_report_one_host_per_process(tmp_path: Path, capsys) -> None:
    make_trace(tmp_path / "h_10.1.pt.trace.json.gz")
    assert main(["report", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    hosts = {h["host"]: h for r in doc["runs"] for h in r["hosts"]}
    assert set(hosts) == {"h_10.1", "h_10.1/pid11", "h_10.1/pid12"}
    assert {h["kind"] for h in hosts.values()} == {"kineto"}
    assert hosts["h_10.1/pid11"]["totals"]["POSIX"]["bytes_read"] == 700
    assert hosts["h_10.1/pid12"]["process"] == {"pid": 12, "role": "worker", "start_ns": BASE + 1000,
                                                "end_ns": BASE + 9000, "rank": None}
    assert hosts["h_10.1"]["nevents"] == 1
    # the file itself is a path too
    assert main(["report", str(tmp_path / "h_10.1.pt.trace.json.gz"), "--host", "h_10.1/pid12"]) == 0
    assert "/d/12" in capsys.readouterr().out


def test_corrupt_trace_skipped_beside_good_one(tmp_path: Path, capsys) -> None:
    make_trace(tmp_path / "good.pt.trace.json")
    (tmp_path / "bad.pt.trace.json").write_text("{\"traceEvents\": [")
    assert main(["report", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr()
    assert len(json.loads(out.out)["runs"][0]["hosts"]) == 3
    assert "bad.pt.trace.json: not a readable Kineto trace" in out.err


def test_corrupt_or_foreign_trace_clear_error(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_bytes(b"\x1f\x8b\x08garbage")
    assert main(["report", str(bad)]) == 1
    assert "not a readable Kineto trace" in capsys.readouterr().err
    plain = tmp_path / "plain.pt.trace.json"
    plain.write_text(json.dumps({"traceEvents": [], "baseTimeNanoseconds": BASE}))
    assert main(["report", str(plain)]) == 1
    assert "without tb_iotrace I/O" in capsys.readouterr().err
    foreign = tmp_path / "x.pt.trace.json"
    foreign.write_text(json.dumps({"traceEvents": [], "tb_iotrace": {"format": "nope/3"}}))
    assert main(["report", str(foreign)]) == 1
    assert "unknown format" in capsys.readouterr().err


def test_logdir_with_trace_folders_as_the_tab_lists_them(tmp_path: Path, capsys) -> None:
    """A logdir holding run folders of traces (where the tab finds them): each folder a run,
    its traces' processes the hosts; a corrupt trace in another run is skipped with a note."""
    (tmp_path / "exp1").mkdir()
    make_trace(tmp_path / "exp1" / "h_10.1.pt.trace.json.gz")
    (tmp_path / "exp2").mkdir()
    (tmp_path / "exp2" / "w.1.pt.trace.json").write_text("{\"traceEvents\": [")
    assert main(["report", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr()
    runs = {r["run"]: r for r in json.loads(out.out)["runs"]}
    assert set(runs) == {"exp1"}
    assert {h["host"] for h in runs["exp1"]["hosts"]} == {"h_10.1", "h_10.1/pid11", "h_10.1/pid12"}
    assert "w.1.pt.trace.json: not a readable Kineto trace" in out.err


DATA = Path(__file__).resolve().parents[1] / "data"


def test_exports_of_a_real_pytorch_trace(tmp_path: Path, capsys) -> None:
    """The exports read a Kineto trace's events through its conversion: the chrome export has
    the main process's aten ops and steps and each worker's reads (bytes equal the files); the
    ops table one row per call (the chrome export crashed on a Kineto trace before)."""
    import csv
    from collections import defaultdict

    man = json.loads((DATA / "torch_loader.json").read_text())
    src = tmp_path / "worker0.1.pt.trace.json.gz"
    src.write_bytes((DATA / "torch_loader.pt.trace.json.gz").read_bytes())
    out = tmp_path / "chrome.json"
    assert main(["export", str(src), "--format", "chrome", "-o", str(out), "--no-progress"]) == 0
    ev = json.loads(out.read_text())["traceEvents"]
    names = {e["name"] for e in ev if e["ph"] == "X"}
    assert {"aten::linear", "ProfilerStep#0", "step 4"} <= names
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    got: dict[int, dict[str, int]] = defaultdict(dict)
    for e in ev:
        if e.get("cat") == "io" and e["name"] == "read" and e["args"]["file"] in man["files"]:
            pid = int(procs[e["pid"]].rsplit("pid", 1)[1])
            got[pid][e["args"]["file"]] = got[pid].get(e["args"]["file"], 0) + e["args"]["bytes"]
    assert sorted(got) == man["worker_pids"]
    assert {f: n for by in got.values() for f, n in by.items()} == man["files"]
    table = tmp_path / "tables"
    assert main(["export", str(src), "--format", "csv", "-o", str(table), "--no-progress"]) == 0
    with open(table / "ops.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 64 and {r["host"] for r in rows} == {f"worker0.1/pid{p}" for p in man["worker_pids"]}
    assert main(["export", str(src), "--format", "darshan-log", "-o", str(tmp_path / "x.darshan"), "--no-progress"]) == 0


MiB = 1 << 20


def rank_trace(path: Path, rank: int, *, distributed: bool, late_ms: int = 0) -> None:
    """One rank's trace: a torch.save span (the hook's) over 8 writes of 1 MiB and an fsync to its
    own file, the rank known from Kineto's distributedInfo or else from the record (RANK at
    capture); rank 1 may write ``late_ms`` slower."""
    pid = 100 + rank
    f = f"/ck/step4/rank{rank}.pt"
    t0 = BASE + 10_000_000
    step = (2 + late_ms // 8) * 1_000_000           # ns per 1 MiB write
    starts = [t0 + k * step for k in range(8)] + [t0 + 8 * step]
    ends = [s + step // 2 for s in starts[:8]] + [starts[8] + 1_000_000]
    ops = ["write"] * 8 + ["fsync"]
    n = len(ops)
    p = {"pid": pid, "role": "main", "start_ns": BASE, "end_ns": ends[-1] + 5_000_000,
         "threads": [[pid, 1, "python"]],
         "events": {"op": ops, "path": [f] * n, "offset": [k * MiB for k in range(8)] + [-1],
                    "requested": [MiB] * 8 + [0], "returned": [MiB] * 8 + [0], "fd": [5] * n, "errno": [0] * n,
                    "start_ns": starts, "end_ns": ends, "tid": [pid] * n},
         "counters": [], "dropped": 0}
    span = {"ph": "X", "name": "tb_iotrace::checkpoint", "cat": "user_annotation", "pid": pid, "tid": pid,
            "ts": (t0 - BASE) / 1000 - 1, "dur": (ends[-1] - t0) / 1000 + 2,
            "args": {"kind": "save", "path": f, "call": "torch.save", "root": f}}
    trace = {"baseTimeNanoseconds": BASE, "traceEvents": [span]}
    if distributed:
        trace["distributedInfo"] = {"backend": "gloo", "rank": rank, "world_size": 2}
    write_trace(path, add_io(trace, [p], extra={} if distributed else {"rank": rank}))


def test_rank_of_pytorch_traces_and_their_saves_side_by_side(tmp_path: Path, capsys) -> None:
    rank_trace(tmp_path / "r0.1.pt.trace.json", 0, distributed=True)
    rank_trace(tmp_path / "r1.1.pt.trace.json", 1, distributed=False, late_ms=400)
    assert main(["report", str(tmp_path), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    hosts = {h["host"]: h for h in run["hosts"]}
    assert hosts["r0.1"]["process"]["rank"] == 0 and hosts["r1.1"]["process"]["rank"] == 1
    assert [p["source"] for h in hosts.values() for p in h["checkpoints"]] == ["torch.save"] * 2
    (save,) = run["checkpoint_saves"]
    assert [r["rank"] for r in save["ranks"]] == [0, 1] and save["straggler"] == "r1.1", save
    (f,) = [f for f in hosts["r1.1"]["findings"] if f["id"] == "checkpoint-straggler"]
    assert f["evidence"]["rank"] == 1 and "rank 1" in f["statement"]


def test_tab_gets_the_rank_of_a_pytorch_trace(tmp_path: Path) -> None:
    """The tab reads a PyTorch trace converted to a capture: its /checkpoints answer has the rank."""
    from tb_iotrace.plugin.findings_worker import findings_of
    from tb_iotrace.store.kineto_xspace import read_xspace

    rank_trace(tmp_path / "r1.1.pt.trace.json", 1, distributed=True)
    out = tmp_path / "r1.xplane.pb"
    out.write_bytes(read_xspace(tmp_path / "r1.1.pt.trace.json").SerializeToString())
    got = findings_of(str(out))
    assert got["rank"] == 1 and [p["source"] for p in got["checkpoints"]] == ["torch.save"]
