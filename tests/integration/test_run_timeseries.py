"""A whole-run record keeps a time series of the whole process life in fixed memory,
independent of the trace cap: a run of ~3.5 s with reads at known times and a trace cap of
50 rows still shows every burst in its bins, with exact bytes."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tb_iotrace.store.runrecord import read_record

PY = sys.executable

# Bursts of reads at ~0, 1, 2 and 3 s after start, each of known bytes (POSIX preads of 100
# bytes, one burst of STDIO freads through libc), then a quiet half second.
SCRIPT = textwrap.dedent(r'''
    import ctypes, json, os, sys, time

    D = sys.argv[1]
    t_start = time.time_ns()
    sizes = [30000, 50000, 70000, 90000]
    for k, n in enumerate(sizes):
        fd = os.open(os.path.join(D, f"f{k}"), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        os.write(fd, b"x" * n)
        os.close(fd)
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fread.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    buf = ctypes.create_string_buffer(1000)
    bursts = []
    for k, n in enumerate(sizes):
        while time.time_ns() < t_start + k * 1_000_000_000:
            time.sleep(0.01)
        t0 = time.time_ns()
        path = os.path.join(D, f"f{k}")
        if k == 2:   # STDIO: fread through libc (its own read(2) is not a second count)
            fp = libc.fopen(path.encode(), b"rb")
            got = 0
            while True:
                m = libc.fread(buf, 1, 1000, fp)
                if not m:
                    break
                got += m
            libc.fclose(fp)
        else:
            fd = os.open(path, os.O_RDONLY)
            got = 0
            while True:
                b = os.pread(fd, 100, got)
                if not b:
                    break
                got += len(b)
            os.close(fd)
        assert got == n
        bursts.append([t0, time.time_ns(), n])
    time.sleep(0.5)
    print(json.dumps(bursts))
''')


def test_run_record_time_series_covers_the_run_with_exact_bytes(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    logdir = tmp_path / "logs"
    env = {**__import__("os").environ, "TBIO_TRACE_CAP": "50", "TBIO_INCLUDE": f"{data}/", "TBIO_EXCLUDE": "/"}
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--flush", "0", "--",
                        PY, str(script), str(data)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    bursts = json.loads(r.stdout.strip().splitlines()[-1])
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    (run,) = json.loads(rep.stdout)["runs"]
    (host,) = run["hosts"]
    ts = host["timeseries"]
    n = len(ts["calls"])
    assert {len(ts[k]) for k in ("bytes_read", "bytes_written", "calls", "io_time_s")} == {n}
    start, width = ts["start_ns"], ts["bin_ns"]

    # the trace kept 50 rows; the series counts every call, dropped ones too
    assert host["nevents"] <= 50 and host["dropped"] > 1000
    assert sum(ts["calls"]) == host["nevents"] + host["dropped"]

    # bytes equal the files' counters exactly: POSIX plus STDIO, read and written
    files = host["files"]
    assert {f["module"] for f in files} == {"POSIX", "STDIO"}
    rd = sum(f["counters"][f"{f['module']}_BYTES_READ"] for f in files)
    wr = sum(f["counters"][f"{f['module']}_BYTES_WRITTEN"] for f in files)
    assert rd == sum(b[2] for b in bursts) == sum(ts["bytes_read"])
    assert wr == sum(b[2] for b in bursts) == sum(ts["bytes_written"])
    # and per module (Darshan's HEATMAP records): each module's bins sum to its files' bytes
    for mod in ("POSIX", "STDIO"):
        mine = [f["counters"] for f in files if f["module"] == mod]
        got = ts["modules"][mod]
        assert sum(got["bytes_read"]) == sum(c[f"{mod}_BYTES_READ"] for c in mine)
        assert sum(got["bytes_written"]) == sum(c[f"{mod}_BYTES_WRITTEN"] for c in mine)
    assert sum(ts["modules"]["STDIO"]["bytes_read"]) == bursts[2][2]   # the fread burst
    assert sum(ts["modules"]["POSIX"]["bytes_read"]) == sum(b[2] for b in bursts) - bursts[2][2]

    # from the process's start to its end, in at most 256 bins that widened from 1 ms
    proc = host["process"]
    assert start <= proc["start_ns"] and start + n * width >= proc["end_ns"]
    assert proc["end_ns"] - start > 3.4e9
    assert 128 < n <= 256 and width > 8e6

    # each burst lies in the bins of its own time (a bin either side for clock rounding),
    # and no read anywhere else: first second to last
    def bin_of(t: int) -> int:
        return int((t - start) // width)

    seen = 0
    for t0, t1, nbytes in bursts:
        lo, hi = max(bin_of(t0) - 1, 0), min(bin_of(t1) + 1, n - 1)
        assert sum(ts["bytes_read"][lo:hi + 1]) == nbytes, (t0, t1, lo, hi)
        assert sum(ts["calls"][lo:hi + 1]) >= nbytes // 1000
        seen += nbytes
    assert seen == sum(ts["bytes_read"])
    first = next(i for i, v in enumerate(ts["bytes_read"]) if v)
    last = max(i for i, v in enumerate(ts["bytes_read"]) if v)
    assert first * width < 0.5e9 + (bursts[0][0] - start) and (last + 1) * width > 2.9e9
    assert sum(ts["io_time_s"]) > 0

    # the record itself holds it, and the text report draws it
    rec = json.loads(Path(host["source"]).read_text())
    assert rec["timeseries"] == ts
    txt = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir)], capture_output=True, text=True,
                         timeout=120)
    assert txt.returncode == 0, txt.stderr
    assert "I/O over the whole run" in txt.stdout and "read  |" in txt.stdout


KILLED = textwrap.dedent(r'''
    import os, sys, time
    t = time.time_ns()
    for k, n in enumerate((11111, 22222)):
        while time.time_ns() < t + k * 1_200_000_000:
            time.sleep(0.01)
        fd = os.open(os.path.join(sys.argv[1], f"w{k}"), os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"k" * n)
        os.close(fd)
    print("ok", flush=True)
    time.sleep(60)
''')


def test_a_killed_process_keeps_the_series_of_its_flushed_windows(tmp_path):
    """SIGKILL leaves the last periodic flush: its series folds the flushed windows onto
    one grid from the process's start, bytes equal to the partial record's counters."""
    import os
    import signal
    import time

    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    logdir = tmp_path / "logs"
    env = {**os.environ, "TBIO_INCLUDE": f"{data}/", "TBIO_EXCLUDE": "/"}
    p = subprocess.Popen([PY, "-m", "tb_iotrace", "run", "--flush", "0.3", "--logdir", str(logdir), "--",
                          PY, str(script), str(data)], stdout=subprocess.PIPE, start_new_session=True, env=env)
    try:
        assert p.stdout.readline().strip() == b"ok"
        time.sleep(1.0)  # flushes after the last write
        os.killpg(p.pid, signal.SIGKILL)
    finally:
        p.wait(timeout=30)
        p.stdout.close()
    (rec,) = (logdir / "plugins" / "iotrace").glob("*.json")
    record = read_record(rec)
    doc = record.doc
    assert doc["partial"] is True
    tr = record.trace()   # the flushed windows' calls: both writes
    w = [i for i in range(len(tr["start_ns"])) if tr["op_names"][tr["op_id"][i]].startswith("write")
         and tr["file_id"][i] >= 0 and tr["paths"][tr["file_id"][i]].startswith(str(data))]
    assert sorted(int(tr["returned"][i]) for i in w) == [11111, 22222]
    ts = doc["timeseries"]
    written = sum(f["counters"][f"{f['module']}_BYTES_WRITTEN"] for f in record.files)
    assert written == 11111 + 22222 == sum(ts["bytes_written"])
    # every flushed window kept its split by module: all of it POSIX's
    assert ts["modules"]["POSIX"]["bytes_written"] == ts["bytes_written"]
    assert not any(ts["modules"]["STDIO"]["bytes_written"])
    assert ts["start_ns"] == doc["start_ns"] and len(ts["calls"]) <= 256
    # the two writes 1.2 s apart land about 1.2 s apart (a window bin's worth of error)
    hit = [i for i, v in enumerate(ts["bytes_written"]) if v]
    assert [ts["bytes_written"][i] for i in hit] == [11111, 22222]
    gap = (hit[1] - hit[0]) * ts["bin_ns"]
    assert 1.0e9 < gap < 1.4e9, gap
