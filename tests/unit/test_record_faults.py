"""Whole-run records when a write fails: a logdir that fills up keeps a
record whose JSON, file table and trace are from one write, and says what it lost.

The disk is really full: each test mounts a small tmpfs (the tests run as root) and fills it."""
from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tb_iotrace.store.filetable import FileTable
from tb_iotrace.store.runrecord import RecordError, find_records, read_record, record_dir, table_path, write_record

PY = sys.executable
PAGE = os.sysconf("SC_PAGE_SIZE")   # tmpfs allocates whole pages


@pytest.fixture()
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs of its own, unmounted after."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"these tests fill a small tmpfs and need to mount one (as root): mount said "
                    f"{r.stderr.strip() or r.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(fs: Path, leave: int) -> None:
    """Fill ``fs`` until ENOSPC, then free ``leave`` bytes (whole pages)."""
    filler = fs / "filler"
    with open(filler, "wb", buffering=0) as fh:
        chunk = b"\0" * PAGE
        try:
            while True:
                fh.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    size = filler.stat().st_size
    os.truncate(filler, max(0, size // PAGE * PAGE - leave))


def files(n: int, prefix: str = "/d/f") -> FileTable:
    return FileTable.from_dicts([{"path": f"{prefix}{i}", "module": "POSIX",
                                  "counters": {"POSIX_OPENS": 1, "POSIX_READS": i + 1}, "fcounters": {}}
                                 for i in range(n)])


def pages(n: int) -> int:
    return -(-n // PAGE)


def test_failed_write_keeps_the_previous_record_whole(small_fs, tmp_path):
    """The new file table fits on the disk, the new JSON does not: the old JSON must not be
    left paired with the new table (it was: the table was renamed before the JSON failed)."""
    run = small_fs / "logs"
    big = {"files": 1, "calls": 1, "examples": ["x" * (3 * PAGE)]}    # a JSON of 3+ pages
    write_record(run, None, partial=True, exit={"how": "flush"}, files=files(1))
    (jpath,) = find_records(record_dir(run))
    first = read_record(jpath)
    assert len(first.table()) == 1
    # the second write's table, measured: leave room for it and not for its JSON
    buf = io.BytesIO()
    files(400).save(buf)
    fill(small_fs, leave=pages(len(buf.getvalue()) + 64) * PAGE)
    with pytest.raises(OSError) as got:
        write_record(run, None, partial=True, exit={"how": "flush"}, files=files(400), untracked=big)
    assert got.value.errno == errno.ENOSPC
    rec = read_record(jpath)
    assert rec.doc == first.doc
    assert len(rec.table()) == 1                                       # the table of that JSON
    assert sorted(p.name for p in record_dir(run).iterdir()) == sorted([jpath.name, table_path(jpath).name])


def test_reader_refuses_a_table_of_another_write(tmp_path):
    """A JSON and a table of two different writes (a write cut short between its renames) are
    an error, not a silent mix; a JSON rewritten meanwhile is read again."""
    run = tmp_path / "logs"
    jpath = write_record(run, None, partial=True, exit={"how": "flush"}, files=files(1))
    old_json = jpath.read_bytes()
    write_record(run, None, partial=False, exit={"how": "exit"}, files=files(5))
    new_json = jpath.read_bytes()
    jpath.write_bytes(old_json)
    with pytest.raises(RecordError, match="not from the same write"):
        read_record(jpath).table()
    rec = read_record(jpath)            # the JSON is rewritten after it was read: read again
    jpath.write_bytes(new_json)
    assert len(rec.table()) == 5 and rec.doc["exit"]["how"] == "exit"
    # records written before generations (no "generation"): read as before
    doc = json.loads(new_json)
    del doc["generation"]
    jpath.write_text(json.dumps(doc))
    assert len(read_record(jpath).table()) == 5


JOB = textwrap.dedent("""
    import errno, os, sys
    fs, data = sys.argv[1], sys.argv[2]
    with open(data, "rb", buffering=0) as f:    # 20,000 reads: a trace far larger than the disk
        for _ in range(20000):
            f.seek(0)
            f.read(16)
    filler = os.path.join(fs, "filler")
    with open(filler, "wb", buffering=0) as fh:  # the job fills the logdir's disk
        try:
            while True:
                fh.write(b"\\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    os.truncate(filler, os.path.getsize(filler) // 4096 * 4096 - 256 * 1024)   # 256 KiB left
    sys.exit(3)
""")


def test_run_on_a_disk_that_fills_up(small_fs, tmp_path):
    """tb-iotrace run: the job keeps its exit code, the record keeps the final counters of the
    whole run (the trace left out, and said), not an early flush's JSON paired with them."""
    data = tmp_path / "data.bin"
    data.write_bytes(b"y" * 4096)
    job = tmp_path / "job.py"
    job.write_text(JOB)
    logdir = small_fs / "logs"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--flush", "60", "--",
                        PY, str(job), str(small_fs), str(data)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 3, r.stderr
    (jpath,) = find_records(record_dir(logdir))
    rec = read_record(jpath)
    assert not rec.partial and rec.doc["exit"]["how"] == "exit", rec.doc
    assert rec.doc["trace"] is None
    assert rec.doc["write_errors"]["trace_left_out"] is True
    assert "No space left" in rec.doc["write_errors"]["last"]
    reads = {f["path"]: f["counters"].get("POSIX_READS", 0) for f in rec.table().dicts() if f["module"] == "POSIX"}
    assert reads[str(data)] == 20000                   # the final counters, not the first flush's
    rep = subprocess.run([PY, "-m", "tb_iotrace", "report", str(logdir), "--no-progress"], capture_output=True,
                         text=True, timeout=300, env=env)
    assert rep.returncode == 0, rep.stderr
    assert "PARTIAL" not in rep.stdout and "killed" not in rep.stdout
    assert "the trace was left out to keep the final counters" in rep.stdout
    assert "[ended by exit]" in rep.stdout


def test_a_partial_record_copied_without_its_trace_parts_keeps_its_counters(tmp_path) -> None:
    """A killed process's record lists the trace parts of its periodic flushes; copied or renamed
    without them (a hostile host name in the tab's tests did that) it is read from its counters
    with a note saying so, never an error for every host of the run, and never another record's
    parts (the parts are always the record's own, by their number)."""
    import shutil

    from tb_iotrace.plugin.findings_worker import findings_of
    from tb_iotrace.store.runrecord import read_record, table_path, write_record

    files = [{"path": "/data/k.bin", "module": "POSIX", "record_id": 1,
              "counters": {"POSIX_OPENS": 1, "POSIX_WRITES": 1, "POSIX_BYTES_WRITTEN": 3333}, "fcounters": {}}]
    jpath = write_record(tmp_path / "killed", None, partial=True, files=files,
                         trace_parts=[("ignored", 1)])
    rec = read_record(jpath)
    rec.doc["trace_parts"] = [f"{jpath.name[:-5]}.part1.npz"]     # as a flush lists it
    jpath.write_text(json.dumps(rec.doc))
    copy = jpath.with_name("other.7.json")
    shutil.copyfile(jpath, copy)
    if table_path(jpath).exists():
        shutil.copyfile(table_path(jpath), table_path(copy))
    for p in (jpath, copy):
        got = findings_of(str(p))
        assert "could not" not in got.get("message", ""), got
        assert any("parts are missing" in n for n in got["notes"]), got["notes"]
        assert read_record(p).trace() is None
