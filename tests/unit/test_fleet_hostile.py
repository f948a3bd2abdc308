"""A fleet dataset is a shared folder: a planted manifest never gets anything outside it
deleted, and names from files never reach a terminal raw."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

DATA = Path(__file__).resolve().parents[1] / "data"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tb_iotrace", *args], capture_output=True, text=True, timeout=600)


def test_a_planted_manifest_never_deletes_outside_the_dataset(tmp_path: Path) -> None:
    run = tmp_path / "logdir" / "plugins" / "profile" / "s1"
    run.mkdir(parents=True)
    src = run / "vm.xplane.pb"
    shutil.copy(DATA / "jax_io.xplane.pb", src)
    ds = tmp_path / "ds"
    r = cli("fleet", "build", str(tmp_path / "logdir"), "-o", str(ds), "--jobs", "1")
    assert r.returncode == 0, r.stderr
    # the victims: files beside the dataset, reached by an absolute path, by "..", and through
    # links inside the dataset (a link to a folder outside, named as a run's folder and as a table)
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    victims = [outside / "a.txt", outside / "deep" / "b.txt", outside / "part-3.parquet",
               outside / "deep" / "part-4.parquet"]
    for v in victims:
        v.write_text("keep me")
    (ds / "files" / "run=evil").symlink_to(outside)
    (ds / "checkpoints").exists() and shutil.rmtree(ds / "checkpoints")
    (ds / "checkpoints").symlink_to(outside / "deep")
    mf = ds / "_fleet" / "manifest.json"
    doc = json.loads(mf.read_text())
    (key,) = doc["sources"]
    doc["sources"][key]["parts"] += [str(victims[0]), "../outside/deep/b.txt", "files/../../outside/a.txt",
                                     "files/run=evil/host=x/../part-3.parquet", "files/run=evil/part-3.parquet",
                                     "checkpoints/run=a/host=b/part-4.parquet", "files/run=evil/deep/part-4.parquet"]
    doc["sources"]["/elsewhere/x.xplane.pb"] = {"stamp": [], "kind": "capture", "hosts": [],
                                                 "parts": [str(outside / "deep")]}
    mf.write_text(json.dumps(doc))
    # the source changed: its old parts (the planted list) are replaced, and deleted
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    r = cli("fleet", "build", str(tmp_path / "logdir"), "-o", str(ds), "--jobs", "1")
    assert r.returncode == 0, r.stderr
    for v in victims:
        assert v.read_text() == "keep me", f"{v} deleted by fleet build"
    assert (outside / "deep").is_dir()
    # and the queries read only the dataset's own parts
    r = cli("fleet", "query", str(ds), "SELECT COUNT(*) AS n FROM hosts", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == [{"n": 1}], r.stderr


def test_query_and_report_escape_names(tmp_path: Path) -> None:
    """Run and host names are folder and file names: a terminal escape or a line break in one
    is written out (as report writes it), never sent to the terminal or forging a row."""
    run = tmp_path / "logdir" / "r\x1b]0;owned\x07\x9b2J" / "plugins" / "profile" / "s1"
    run.mkdir(parents=True)
    shutil.copy(DATA / "jax_io.xplane.pb", run / "h\x1b[31mred\nforged  row.xplane.pb")
    ds = tmp_path / "ds"
    r = cli("fleet", "build", str(tmp_path / "logdir"), "-o", str(ds), "--jobs", "1")
    assert r.returncode == 0, r.stderr
    for args in (["query", str(ds), "SELECT run, host FROM hosts"],
                 ["query", str(ds), "SELECT run, host FROM hosts", "--csv"],
                 ["query", str(ds), "SELECT run, host FROM hosts", "--json"],
                 ["report", str(ds)], ["report", str(ds), "--json"]):
        r = cli("fleet", *args)
        assert r.returncode == 0, r.stderr
        out = r.stdout
        assert not any(ord(c) < 0x20 and c != "\n" or 0x7f <= ord(c) < 0xa0 for c in out), repr(out)
        assert not any(line.startswith("forged") for line in out.splitlines()), out
        if args[-1] == "--json":
            json.loads(out)                    # the names, whole, in its strings (checked below)
        elif args[0] == "query":
            assert "\\x1b[31mred\\nforged" in out
    rows = json.loads(cli("fleet", "query", str(ds), "SELECT host FROM hosts", "--json").stdout)
    assert rows == [{"host": "h\x1b[31mred\nforged  row"}]
