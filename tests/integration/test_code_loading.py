"""Code loading apart from data I/O, on a real whole-run record: a job that imports TensorFlow
and Keras and reads one data file in small reads. The report gives the imports one line, lists
the data file first, and the findings cite the data file only; --all-files shows everything."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf
PY = sys.executable
DATA_BYTES = 64 * 4096

JOB = textwrap.dedent(r'''
    import os, sys
    import tensorflow as tf
    import keras
    fd = os.open(sys.argv[1], os.O_RDONLY)
    while os.read(fd, 4096):        # 64 small reads: small-reads fires on this file
        pass
    os.close(fd)
    print(int(tf.size(tf.constant([1, 2, 3]))))
''')


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    return subprocess.run([PY, "-m", "tb_iotrace", *args], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("codeload")
    data = root / "data" / "samples.bin"
    data.parent.mkdir()
    data.write_bytes(os.urandom(DATA_BYTES))
    script = root / "job.py"
    script.write_text(JOB)
    logdir = root / "logs"
    got = cli("run", "--logdir", str(logdir), "--", PY, str(script), str(data))
    assert got.returncode == 0, got.stderr[-3000:]
    return logdir, data


def report(logdir: Path, *flags: str) -> str:
    from tb_iotrace.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", str(logdir), "--no-progress", *flags]) == 0
    return out.getvalue()


def host(logdir: Path) -> dict:
    runs = json.loads(report(logdir, "--json"))["runs"]
    assert len(runs) == 1 and len(runs[0]["hosts"]) == 1
    return runs[0]["hosts"][0]


def is_tempfile_probe(f: dict) -> bool:
    """Python's tempfile checks its directory with a 4-byte write to a random name."""
    c = f["counters"]
    return (os.path.dirname(f["path"]) == tempfile.gettempdir() and not c.get("POSIX_BYTES_READ")
            and c.get("POSIX_BYTES_WRITTEN", 0) <= 4)


def test_record_separates_code_loading_from_data(job: tuple[Path, Path]) -> None:
    logdir, data = job
    h = host(logdir)
    files = h["files"]
    code = [f for f in files if f["code"]]
    data_files = [f for f in files if not f["code"]]
    # the interpreter, the standard library, site-packages, the import scans are code ...
    assert len(code) > 1000
    for f in code:
        p = f["path"]
        assert (p.endswith((".py", ".pyc", ".so", ".pth", ".json", ".cfg")) or ".so." in p
                or "site-packages" in p or os.path.isdir(p) or os.path.basename(p).startswith("python")
                or p.startswith(tuple(sorted({sys.prefix, sys.base_prefix, sys.exec_prefix})))), p
    kinds = {os.path.splitext(f["path"])[1] for f in code}
    assert {".pyc", ".so", ".py"} <= kinds
    paths = {f["path"] for f in code}
    assert str(data.parent.parent) in paths           # the script's directory (import scans it)
    assert os.path.expanduser("~/.keras/keras.json") in paths or not os.path.exists(
        os.path.expanduser("~/.keras/keras.json"))
    # ... and the data is the one data file (plus Python's tempfile probe)
    assert str(data) in {f["path"] for f in data_files}
    assert all(f["path"] == str(data) or is_tempfile_probe(f) for f in data_files), \
        [f["path"] for f in data_files]
    mine = [f for f in data_files if f["path"] == str(data)]
    assert sum(f["counters"].get(f"{f['module']}_BYTES_READ", 0) for f in mine) == DATA_BYTES

    # one summary line: exactly the code files' files, bytes and calls
    summary = h["code_loading"]
    assert summary["files"] == len({f["path"] for f in code})
    assert summary["bytes_read"] == sum(f["counters"].get(f"{f['module']}_BYTES_READ", 0) for f in code)
    assert summary["bytes_read"] > 10 * DATA_BYTES          # the imports read far more than the data

    # findings: the small reads of the data file, and no code path as evidence
    by_id = {f["id"]: f for f in h["findings"]}
    assert "small-reads" in by_id, h["findings"]
    assert by_id["small-reads"]["files"] == [str(data)]
    for f in h["findings"]:
        assert not set(f["files"]) & paths, (f["id"], f["files"])


def test_text_report_lists_data_first_and_all_files_on_request(job: tuple[Path, Path]) -> None:
    logdir, data = job
    text = report(logdir)
    assert "Code loading (Python imports, shared libraries, interpreter, framework config): " in text
    assert "left out below (--all-files shows them)" in text
    busiest = text.split("Busiest files")[1].split("\n\n")[0].splitlines()[1:]
    assert repr(str(data)) in busiest[0]
    assert not any(".pyc" in ln or "site-packages" in ln for ln in busiest), busiest
    files_line = [ln for ln in text.splitlines() if ln.startswith("      files: ")]
    assert files_line and all(str(data) in ln for ln in files_line), files_line
    everything = report(logdir, "--all-files")
    busiest_all = everything.split("Busiest files")[1].split("\n\n")[0].splitlines()[1:]
    assert any(".pyc" in ln or ".so" in ln for ln in busiest_all), busiest_all
