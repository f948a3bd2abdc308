"""tb-iotrace run: every Python process of a run leaves a record, and the report's counters
equal the ground truth (exact byte totals of known files), whichever way each process ends."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

from tb_iotrace.store.runrecord import read_record

PY = sys.executable

SCRIPT = textwrap.dedent(r'''
    import multiprocessing as mp, os, signal, subprocess, sys, time

    D = sys.argv[1]

    def put(name, n, chunk=1000):
        fd = os.open(os.path.join(D, name), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        left = n
        while left:
            left -= os.write(fd, b"x" * min(chunk, left))
        os.close(fd)

    def get(name, chunk=4096):
        fd = os.open(os.path.join(D, name), os.O_RDONLY)
        off = 0
        while True:
            b = os.pread(fd, chunk, off)
            if not b:
                break
            off += len(b)
        os.close(fd)

    def fork_worker(i):          # multiprocessing fork workers end with os._exit
        put(f"fork{i}", 5000 + i)
        get(f"fork{i}")

    def spawn_worker(i):
        put(f"spawn{i}", 7000 + i)
        get(f"spawn{i}")

    def explicit_exit():
        put("osexit", 3333)
        os._exit(0)

    if __name__ == "__main__":
        put("main", 12345)
        get("main")
        procs = [mp.get_context("fork").Process(target=fork_worker, args=(i,)) for i in range(2)]
        procs += [mp.get_context("spawn").Process(target=spawn_worker, args=(i,)) for i in range(2)]
        procs += [mp.get_context("fork").Process(target=explicit_exit)]
        for p in procs: p.start()
        for p in procs: p.join()
        assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
        # a subprocess Python that dies of an uncaught exception
        sub = f"import os; fd=os.open({os.path.join(D, 'exc')!r}, os.O_CREAT|os.O_WRONLY, 0o644); os.write(fd, b'y'*777); os.close(fd); raise RuntimeError('boom')"
        assert subprocess.run([sys.executable, "-c", sub], stderr=subprocess.DEVNULL).returncode == 1
        # one ended by SIGTERM (default handler) and one by SIGKILL after a flush
        body = "import os,sys,time; fd=os.open(sys.argv[1], os.O_CREAT|os.O_WRONLY, 0o644); os.write(fd, b'z'*int(sys.argv[2])); os.close(fd); print('ok', flush=True); time.sleep(60)"
        for name, n, sig, wait in (("term", 1111, signal.SIGTERM, 0), ("kill", 2222, signal.SIGKILL, 1.5)):
            p = subprocess.Popen([sys.executable, "-c", body, os.path.join(D, name), str(n)], stdout=subprocess.PIPE)
            assert p.stdout.readline().strip() == b"ok"
            time.sleep(wait)
            p.send_signal(sig)
            assert p.wait() == -sig
        sys.exit(3)
''')

TRUTH_WRITTEN = {"main": 12345, "fork0": 5000, "fork1": 5001, "spawn0": 7000, "spawn1": 7001, "osexit": 3333,
                 "exc": 777, "term": 1111, "kill": 2222}
TRUTH_READ = {"main": 12345, "fork0": 5000, "fork1": 5001, "spawn0": 7000, "spawn1": 7001}


def test_run_counts_every_process(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    logdir = tmp_path / "logs"
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--flush", "0.3", "--",
                        PY, str(script), str(data)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr  # the script's exit code
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True, text=True,
                         timeout=120)
    assert rep.returncode == 0, rep.stderr
    doc = json.loads(rep.stdout)
    (run,) = doc["runs"]
    assert run["run"] == "iotrace"
    written, read, opens = defaultdict(int), defaultdict(int), defaultdict(int)
    how = {}
    for h in run["hosts"]:
        for f in h["files"]:
            p = Path(f["path"])
            if f["module"] != "POSIX" or p.parent != data:
                continue
            written[p.name] += f["counters"]["POSIX_BYTES_WRITTEN"]
            read[p.name] += f["counters"]["POSIX_BYTES_READ"]
            opens[p.name] += f["counters"]["POSIX_OPENS"]
            how[p.name] = ("partial" if h["partial"] else h["process"]["exit"]["how"])
    assert dict(written) == TRUTH_WRITTEN
    assert {k: v for k, v in read.items() if v} == TRUTH_READ
    assert opens["main"] == 2 and opens["kill"] == 1
    assert how["fork0"] == "os._exit" and how["osexit"] == "os._exit"
    assert how["exc"] == "exception" and how["term"] == "signal" and how["kill"] == "partial"
    assert how["main"] == "exit"
    # the text report says which record is partial
    txt = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir)], capture_output=True, text=True, timeout=120)
    assert txt.returncode == 0 and "PARTIAL" in txt.stdout
    # every complete record with a trace has its .npz beside it, with matching row counts
    import numpy as np

    for h in run["hosts"]:
        rec = json.loads(Path(h["source"]).read_text())
        if rec["trace"]:
            with np.load(Path(h["source"]).parent / rec["trace"]) as z:
                assert len(z["start_ns"]) == rec["nevents"]


TF_SCRIPT = textwrap.dedent(r'''
    import os, sys
    import tensorflow as tf   # no tb_iotrace import: the runner enables it
    D, LOG = sys.argv[1], sys.argv[2]
    with open(os.path.join(D, "before"), "wb") as f:
        f.write(b"b" * 4321)
    tf.profiler.experimental.start(LOG)
    data = tf.io.read_file(os.path.join(D, "inside")).numpy()
    assert len(data) == 65536
    tf.profiler.experimental.stop()
''')


@pytest.mark.tf
def test_run_keeps_tf_captures_carrying_io(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "inside").write_bytes(b"i" * 65536)
    script = tmp_path / "tfjob.py"
    script.write_text(TF_SCRIPT)
    logdir = tmp_path / "logs"
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--",
                        PY, str(script), str(data), str(logdir)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True, text=True,
                         timeout=300)
    assert rep.returncode == 0, rep.stderr
    runs = {run["run"]: run for run in json.loads(rep.stdout)["runs"]}
    assert "iotrace" in runs and len(runs) == 2, list(runs)
    (profile,) = [run for name, run in runs.items() if name != "iotrace"]

    def bytes_read(hosts, name):
        return sum(f["counters"]["POSIX_BYTES_READ"] for h in hosts for f in h["files"]
                   if f["module"] == "POSIX" and f["path"] == str(data / name))

    # the TF window saw the read inside it, not the write before it
    assert bytes_read(profile["hosts"], "inside") == 65536
    assert not any(f["path"] == str(data / "before") for h in profile["hosts"] for f in h["files"])
    # the whole-run record saw both
    whole = runs["iotrace"]["hosts"]
    assert bytes_read(whole, "inside") == 65536
    assert sum(f["counters"]["POSIX_BYTES_WRITTEN"] for h in whole for f in h["files"]
               if f["path"] == str(data / "before") and f["module"] == "POSIX") == 4321


def test_runner_forwards_sigterm_and_returns_signal_code(tmp_path):
    import signal
    import time

    data = tmp_path / "f"
    script = tmp_path / "sleeper.py"
    script.write_text(textwrap.dedent(f'''
        import os, time
        fd = os.open({str(data)!r}, os.O_CREAT | os.O_WRONLY, 0o644); os.write(fd, b"q" * 999); os.close(fd)
        print("ready", flush=True)
        time.sleep(60)
    '''))
    logdir = tmp_path / "logs"
    p = subprocess.Popen([PY, "-m", "tb_iotrace", "run", "--flush", "0", "--logdir", str(logdir), "--", str(script)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True, text=True,
                         timeout=120)
    (run,) = json.loads(rep.stdout)["runs"]
    (host,) = run["hosts"]
    assert host["process"]["exit"]["how"] == "signal" and host["process"]["exit"]["signal"] == signal.SIGTERM
    assert not host["partial"]
    (f,) = [f for f in host["files"] if f["path"] == str(data) and f["module"] == "POSIX"]
    assert f["counters"]["POSIX_BYTES_WRITTEN"] == 999


@pytest.mark.parametrize("flush", ["0", "5"])
def test_sigterm_while_a_session_lock_is_held_still_writes_the_record(tmp_path, flush):
    """A SIGTERM handled while the main thread holds the lock that begins and ends sessions
    (any capture() entering or leaving) must not deadlock: the handler hands the signal over,
    the main thread goes on and releases the lock, and the record is written."""
    import os
    import signal

    data = tmp_path / "f"
    script = tmp_path / "locked.py"
    script.write_text(textwrap.dedent(f'''
        import os, signal, time
        from tb_iotrace.recording import session
        fd = os.open({str(data)!r}, os.O_CREAT | os.O_WRONLY, 0o644); os.write(fd, b"L" * 4242); os.close(fd)
        with session._lock:                # held by begin_session/end_session by design
            signal.raise_signal(signal.SIGTERM)   # the Python handler runs before this returns
            print("handled", flush=True)
        print("released", flush=True)
        time.sleep(60)
    '''))
    logdir = tmp_path / "logs"
    p = subprocess.Popen([PY, "-m", "tb_iotrace", "run", "--flush", flush, "--logdir", str(logdir), "--", str(script)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # the runner and the hung script
        out, err = p.communicate()
        pytest.fail(f"the process hung after SIGTERM inside the session lock\n{out}\n{err}")
    assert out.split() == ["handled", "released"]
    assert p.returncode == 128 + signal.SIGTERM, err
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True, text=True,
                         timeout=120)
    (run,) = json.loads(rep.stdout)["runs"]
    (host,) = run["hosts"]
    assert host["process"]["exit"]["how"] == "signal" and host["process"]["exit"]["signal"] == signal.SIGTERM
    assert not host["partial"]
    (f,) = [f for f in host["files"] if f["path"] == str(data) and f["module"] == "POSIX"]
    assert f["counters"]["POSIX_BYTES_WRITTEN"] == 4242


def test_exec_keeps_both_images(tmp_path):
    script = tmp_path / "ex.py"
    script.write_text(textwrap.dedent('''
        import os, sys
        open(sys.argv[1] + ".a", "w").write("a" * 10)
        if len(sys.argv) < 3:
            os.execv(sys.executable, [sys.executable, __file__, sys.argv[1], "again"])
        open(sys.argv[1] + ".b", "w").write("b" * 20)
    '''))
    out = tmp_path / "f"
    logdir = tmp_path / "logs"
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--", PY, str(script), str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True, text=True,
                         timeout=120)
    hosts = json.loads(rep.stdout)["runs"][0]["hosts"]
    got = {}
    for h in hosts:
        got[h["process"]["exit"]["how"]] = {Path(f["path"]).name: f["counters"]["POSIX_BYTES_WRITTEN"]
                                            for f in h["files"] if f["module"] == "POSIX" and
                                            Path(f["path"]).name.startswith("f.")}
    assert got == {"exec": {"f.a": 10}, "exit": {"f.a": 10, "f.b": 20}}
    assert sum(h["host"].endswith(".exec1") for h in hosts) == 1


def test_report_findings_on_run_records(tmp_path):
    pytest.importorskip("tb_iotrace.analysis")
    data = tmp_path / "small.bin"
    data.write_bytes(b"s" * 100 * 300)
    script = tmp_path / "smallreads.py"
    script.write_text(textwrap.dedent(f'''
        import os
        fd = os.open({str(data)!r}, os.O_RDONLY)
        for i in range(300):
            os.pread(fd, 100, i * 100)
        os.close(fd)
    '''))
    logdir = tmp_path / "logs"
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--", PY, str(script)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True, text=True,
                         timeout=120)
    (host,) = json.loads(rep.stdout)["runs"][0]["hosts"]
    ids = [f["id"] for f in host["findings"]]
    assert "small-reads" in ids, (ids, host["notes"])
    txt = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir)], capture_output=True, text=True, timeout=120)
    assert "Findings" in txt.stdout and "Most reads are small" in txt.stdout


def test_files_past_the_bound_are_in_the_record_and_the_report(tmp_path):
    """TBIO_MAX_FILES=4: the run record carries what did not fit (counted, never silent)
    and `tb-iotrace report` prints it, text and JSON."""
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "many.py"
    script.write_text(textwrap.dedent(r'''
        import os, sys, time
        D = sys.argv[1]
        for i in range(10):
            fd = os.open(os.path.join(D, f"f{i}"), os.O_CREAT | os.O_WRONLY, 0o644)
            os.write(fd, b"x" * (100 + i))
            os.close(fd)
        time.sleep(1.0)      # a periodic flush sees them too
    '''))
    logdir = tmp_path / "logs"
    env = dict(__import__("os").environ, TBIO_MAX_FILES="4", TBIO_INCLUDE=str(data) + "/", TBIO_EXCLUDE="/")
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--flush", "0.3", "--",
                        PY, str(script), str(data)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = (logdir / "plugins" / "iotrace").glob("*.json")
    record = read_record(rec)
    doc = record.doc
    assert not doc["partial"]
    tracked = [f for f in record.files if f["module"] == "POSIX"]
    assert len(tracked) == 4
    u = doc["untracked"]
    assert (u["files"], u["calls"], u["bytes_written"], u["bytes_read"]) == (6, 18, sum(range(104, 110)), 0)
    assert sum(f["counters"]["POSIX_BYTES_WRITTEN"] for f in tracked) + u["bytes_written"] == sum(range(100, 110))
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True, text=True,
                         timeout=300)
    assert rep.returncode == 0, rep.stderr
    (host,) = [h for run in json.loads(rep.stdout)["runs"] for h in run["hosts"]]
    assert host["untracked"] == u
    text = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir)], capture_output=True, text=True,
                          timeout=300).stdout
    assert "files not tracked" in text and "6 opens, 18 calls" in text, text
