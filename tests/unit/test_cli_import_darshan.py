"""tb-iotrace import-darshan on the logs PyDarshan ships (skipped without PyDarshan)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")

PY = sys.executable
LOGS = Path(darshan.__file__).parent / "examples" / "example_logs"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "tb_iotrace", *args], capture_output=True, text=True, timeout=300)


def truth(log: Path) -> tuple[dict, int]:
    rep = darshan.DarshanReport(str(log), read_all=False)
    out = {}
    for mod in ("POSIX", "STDIO"):
        if mod in rep.modules:
            rep.mod_read_all_records(mod)
            c = rep.records[mod].to_df()["counters"]
            names = [k for k in c.columns if k not in ("rank", "id")]
            vals = c[names].to_numpy().tolist()
            for rank, rid, row in zip(c["rank"].tolist(), c["id"].tolist(), vals):
                out[(mod, int(rank), int(rid))] = dict(zip(names, map(int, row)))
    segs = 0
    if "DXT_POSIX" in rep.modules:
        rep.mod_read_all_dxt_records("DXT_POSIX")
        segs = sum(e["read_count"] + e["write_count"] for e in rep.records["DXT_POSIX"].to_df())
    return out, segs


@pytest.mark.parametrize("name", ["dxt.darshan", "noposix.darshan"])
@pytest.mark.slow
def test_import_matches_pydarshan(tmp_path, name):
    log = LOGS / name
    r = cli("import-darshan", str(log), "--logdir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    want, segs = truth(log)
    rep = cli("report", str(tmp_path), "--json")
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    (host,) = run["hosts"]
    got = {(f["module"], f.get("rank", 0), f["record_id"]): f["counters"] for f in host["files"]}
    assert len(host["files"]) == len(want)
    assert {(m, rid): c for (m, _, rid), c in got.items()} == {(m, rid): c for (m, _, rid), c in want.items()}
    assert host["nevents"] == segs
    if segs:
        assert "DXT" not in r.stderr or "counters only" not in r.stderr
        out = tmp_path / "t.json"
        assert cli("export", str(tmp_path), "--format", "chrome", "-o", str(out)).returncode == 0
        ev = [e for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "X"]
        assert len(ev) == segs and {e["name"] for e in ev} <= {"read", "write"}
        assert all(not e["args"]["file"].isdigit() for e in ev)  # names resolved, not record ids
    else:
        assert "counters only" in r.stderr


@pytest.mark.slow
def test_import_bad_inputs(tmp_path):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"garbage garbage garbage")
    trunc = tmp_path / "trunc.darshan"
    trunc.write_bytes((LOGS / "dxt.darshan").read_bytes()[:3000])
    for p in (bad, trunc, tmp_path / "missing.darshan", tmp_path):
        r = cli("import-darshan", str(p), "--logdir", str(tmp_path / "out"))
        assert r.returncode == 1, (p, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    f = tmp_path / "f"
    f.write_text("")
    r = cli("import-darshan", str(LOGS / "dxt.darshan"), "--logdir", str(f))
    assert r.returncode == 1 and "not a directory" in r.stderr
    assert cli("import-darshan", str(LOGS / "dxt.darshan")).returncode == 2
