"""A process of a ``tb-iotrace run`` job killed with SIGKILL after a periodic flush: its record
is partial and keeps its per-call trace up to the flush; the run's totals keep it apart from
the whole processes; a Darshan log of the run names its rank partial and carries its calls in
DXT. Ground truth: the child read a.bin (16384 B) in four preads of 4096 B at known offsets,
the main process read b.bin (3000 B)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
PY = sys.executable
JOB = Path(__file__).parent / "scripts" / "killed_child_job.py"


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory) -> tuple[Path, dict, Path]:
    root = tmp_path_factory.mktemp("killed")
    data, logdir, out = root / "data", root / "logs", root / "job.json"
    data.mkdir()
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--flush", "0.2", "--logdir", str(logdir), "--", PY, str(JOB),
                        str(data), str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    job = json.loads(out.read_text())
    assert job["child_rc"] == -9
    return logdir, job, data


def test_partial_process_keeps_its_trace_and_stays_apart(killed_run) -> None:
    logdir, job, data = killed_run
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True, text=True,
                         timeout=120)
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    hosts = {h["process"]["pid"]: h for h in run["hosts"]}
    child, main = hosts[job["child_pid"]], hosts[job["main_pid"]]
    assert child["partial"] and not main["partial"]

    def read(h: dict, name: str) -> int:
        return sum(f["counters"]["POSIX_BYTES_READ"] for f in h["files"]
                   if f["module"] == "POSIX" and f["path"] == str(data / name))
    assert read(child, "a.bin") == 16384 and read(main, "b.bin") == 3000
    t = run["totals"]
    assert t["partial"]["processes"] == 1 and t["whole"]["processes"] == 1
    assert [h["host"] for h in t["partial"]["hosts"]] == [child["host"]]
    assert t["partial"]["modules"]["POSIX"]["bytes_read"] == child["totals"]["POSIX"]["bytes_read"]
    assert t["whole"]["modules"]["POSIX"]["bytes_read"] == main["totals"]["POSIX"]["bytes_read"]

    from tb_iotrace.store.runrecord import find_records, read_record

    (rec,) = [read_record(p) for p in find_records(logdir / "plugins" / "iotrace")
              if read_record(p).doc["pid"] == job["child_pid"]]
    tr = rec.trace()
    assert tr is not None
    paths = tr["paths"].tolist()
    rows = [i for i in range(len(tr["start_ns"]))
            if tr["file_id"][i] >= 0 and paths[tr["file_id"][i]] == str(data / "a.bin")
            and tr["op_names"][tr["op_id"][i]].startswith("pread")]
    assert sorted((int(tr["offset"][i]), int(tr["returned"][i])) for i in rows) == [(k * 4096, 4096) for k in range(4)]

    txt = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir)], capture_output=True, text=True, timeout=120)
    assert "PARTIAL processes: 1" in txt.stdout and "whole processes: 1" in txt.stdout


def test_darshan_log_names_the_partial_rank_and_carries_its_calls(killed_run, tmp_path) -> None:
    darshan = pytest.importorskip("darshan")
    logdir, job, data = killed_run
    log = tmp_path / "run.darshan"
    r = subprocess.run([PY, "-m", "tb_iotrace", "export", str(logdir), "--format", "darshan-log", "-o", str(log)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "1 rank(s) PARTIAL" in r.stderr
    code = r'''
import json, sys, darshan
rep = darshan.DarshanReport(sys.argv[1], read_all=True)
dxt = []
for e in rep.records["DXT_POSIX"].to_df():
    s = e["read_segments"]
    dxt.append({"id": int(e["id"]), "rank": int(e["rank"]),
                "reads": sorted(zip(s["offset"].tolist(), s["length"].tolist())) if len(s) else []})
print(json.dumps({"meta": rep.metadata["job"]["metadata"], "dxt": dxt,
                  "names": {str(k): v for k, v in rep.name_records.items()},
                  "flags": {k: bool(v["partial_flag"]) for k, v in rep.modules.items()}}))
'''
    got = subprocess.run([PY, "-c", code, str(log)], capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    got = json.loads(got.stdout)
    meta = got["meta"]
    ranks = {v.split("/", 1)[1]: int(k[4:]) for k, v in meta.items() if k.startswith("rank")}
    child_rank = next(r for host, r in ranks.items() if host.endswith(f".{job['child_pid']}"))
    main_rank = next(r for host, r in ranks.items() if host.endswith(f".{job['main_pid']}"))
    assert meta["partial_ranks"] == str(child_rank)
    assert "last periodic flush" in meta[f"partial_rank{child_rank}"]
    assert f"partial_rank{main_rank}" not in meta
    assert got["flags"]["POSIX"] and got["flags"]["DXT_POSIX"]
    a_id = next(k for k, v in got["names"].items() if v == str(data / "a.bin"))
    (seg,) = [d for d in got["dxt"] if str(d["id"]) == a_id and d["rank"] == child_rank]
    assert seg["reads"] == [[k * 4096, 4096] for k in range(4)]
