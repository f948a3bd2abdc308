"""A named pipe's reads are never "the file read again", but the analysis knew a file's
type only by looking at the path where it ran. A capture now records the type of each of its
files that is not a regular file and is open when it stops (an fstat per open descriptor at
stop: nothing on the calls' path), so a capture analysed on another machine, or after the
pipe is gone, still knows."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import tb_iotrace
from tb_iotrace.analysis import analyze
from tb_iotrace.store.runrecord import merge_files
from tb_iotrace.store.xplane import TASK_ENV_PLANE, XSpace, add_io_to_space

CHUNK = 4096


def test_a_capture_records_a_fifo_open_at_stop(tmp_path: Path) -> None:
    fifo = tmp_path / "feed.fifo"
    os.mkfifo(fifo)
    regular = tmp_path / "data.bin"
    regular.write_bytes(b"r" * CHUNK)

    def write() -> None:
        with open(fifo, "wb") as fh:
            fh.write(b"p" * 2 * CHUNK)

    writer = threading.Thread(target=write)
    writer.start()
    fd = os.open(fifo, os.O_RDONLY)
    try:
        with tb_iotrace.capture() as cap:
            got = os.read(fd, CHUNK) + os.read(fd, CHUNK)
            regular.read_bytes()
    finally:
        os.close(fd)
        writer.join()
    assert len(got) == 2 * CHUNK
    trace = cap.to_iotrace()
    by_path = {r["path"]: r for r in trace.counters}
    assert by_path[str(fifo)]["file_type"] == "fifo"
    assert "file_type" not in by_path[str(regular)]          # regular: the default, not written
    assert {r["path"]: r.get("file_type") for r in cap.records()} == {p: r.get("file_type")
                                                                      for p, r in by_path.items()}
    fifo.unlink()                                            # gone where the analysis runs
    space = XSpace()
    space.planes.add(id=0, name=TASK_ENV_PLANE)
    add_io_to_space(space, trace, start_ns=trace.start_ns.min() if len(trace) else 0)
    a = analyze(space)
    assert next(f for f in a.files if f["path"] == str(fifo))["file_type"] == "fifo"


def test_merged_windows_keep_the_file_type() -> None:
    rec = {"path": "/x/feed", "module": "POSIX", "record_id": 1, "counters": {"POSIX_READS": 1},
           "fcounters": {}, "file_type": "fifo"}
    acc: dict = {}
    merge_files(acc, [dict(rec, file_type=None)])
    merge_files(acc, [rec])
    assert acc[("POSIX", "/x/feed")]["file_type"] == "fifo"
