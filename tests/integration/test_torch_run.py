"""``tb-iotrace run -- python train.py`` on a PyTorch job: no tb_iotrace in the job,
and its DataLoader workers (fork and spawn) leave whole-run records holding their reads, with
exact bytes per worker pid (the job says which worker read which file), and the report shows
them per process."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.torch
PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "torch_run_job.py"


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_run_records_dataloader_workers(method: str, tmp_path: Path) -> None:
    data, logdir, out = tmp_path / "data", tmp_path / "logs", tmp_path / "job.json"
    data.mkdir()
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--", PY, str(JOB), str(data),
                        method, str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    job = json.loads(out.read_text())
    sizes, read_by, main = job["sizes"], job["read_by"], job["main_pid"]
    workers = set(read_by.values())
    assert len(workers) == 2 and main not in workers and set(read_by) == set(sizes)

    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    hosts = {h["process"]["pid"]: h for h in run["hosts"]}
    assert {main} | workers <= set(hosts)
    got: dict[str, dict[int, int]] = defaultdict(dict)
    written: dict[str, int] = defaultdict(int)
    for pid, h in hosts.items():
        assert not h["partial"], pid
        for f in h["files"]:
            if f["module"] == "POSIX" and f["path"] in sizes:
                c = f["counters"]
                if c["POSIX_BYTES_READ"]:
                    got[f["path"]][pid] = c["POSIX_BYTES_READ"]
                written[f["path"]] += c["POSIX_BYTES_WRITTEN"]
    # each file read whole, once, by the worker that says it read it; written by the main process
    assert {p: by_pid for p, by_pid in got.items()} == {p: {read_by[p]: sizes[p]} for p in sizes}
    assert dict(written) == sizes
    for pid in workers:
        assert hosts[pid]["process"]["ppid"] == main

    # the text report has a section per worker process listing the files it read
    txt = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir)], capture_output=True, text=True,
                         timeout=120)
    assert txt.returncode == 0, txt.stderr
    sections = {}
    for part in txt.stdout.split("iotrace / ")[1:]:
        head = part.split()[0]
        sections[int(head.rsplit(".", 1)[1])] = part
    for path, pid in read_by.items():
        line = next(ln for ln in sections[pid].splitlines() if ln.endswith(f"'{path}'"))
        assert "reads=0 " not in line, line


def test_run_and_trace_handler_together(tmp_path: Path) -> None:
    """A job that profiles with tb_iotrace.torch.trace_handler, run under ``tb-iotrace run``
    (spawn workers, persistent, one unprofiled epoch then one profiled): the profiled window's
    trace holds that epoch's reads, the whole-run records both epochs', exactly."""
    from tb_iotrace.analysis.attribution import op_kind
    from tb_iotrace.store.kineto import CATEGORY, read_trace

    work, logdir = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    script = Path(__file__).parent / "scripts" / "torch_loader.py"
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--", PY, str(script), "spawn",
                        str(work)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    result = json.loads((work / "result.json").read_text())
    files, workers = result["files"], set(result["worker_pids"])
    (written,) = result["written"]
    window: dict[str, int] = defaultdict(int)
    for e in read_trace(written)["traceEvents"]:
        if e.get("cat") == CATEGORY and op_kind(e["name"]) == "read" and e["args"].get("path") in files:
            assert e["pid"] in workers
            window[e["args"]["path"]] += e["args"]["bytes"]
    assert dict(window) == files

    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    whole: dict[str, int] = defaultdict(int)
    for h in run["hosts"]:
        for f in h["files"]:
            if f["module"] == "POSIX" and f["path"] in files and f["counters"]["POSIX_BYTES_READ"]:
                assert h["process"]["pid"] in workers
                whole[f["path"]] += f["counters"]["POSIX_BYTES_READ"]
    assert dict(whole) == {p: 2 * n for p, n in files.items()}
