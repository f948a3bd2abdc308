"""Record ids are Darshan's: lookup8 of the path (tb_iotrace.base.recordid and native/recordid.c)
against id/name pairs of Darshan's own logs, and in what a capture stores."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tb_iotrace.recording.ffi import native
from tb_iotrace.base.recordid import lookup8, record_id

DATA = Path(__file__).resolve().parents[1] / "data" / "darshan_record_ids.tsv"


def pairs() -> list[tuple[int, str]]:
    out = []
    for line in DATA.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            rid, name, _ = line.split("\t")
            out.append((int(rid), name))
    return out


def test_known_pairs_every_tail_length():
    known = pairs()
    assert len({len(n.encode()) % 24 for _, n in known}) >= 20   # the tail code paths are covered
    assert max(len(n.encode()) for _, n in known) > 3 * 24       # several full blocks
    for rid, name in known:
        assert record_id(name) == rid, name


def test_native_equals_python_on_random_bytes():
    ffi, lib = native()
    rng = random.Random(13)
    for n in list(range(0, 100)) + [200, 1000, 4096]:
        b = bytes(rng.randrange(256) for _ in range(n))
        assert lib.tbio_record_id(b, len(b)) == lookup8(b), n
    assert lookup8(b"abc", 1) != lookup8(b"abc")   # the level takes part


def test_every_name_of_pydarshans_logs():
    darshan = pytest.importorskip("darshan")
    logs = Path(darshan.__file__).parent / "examples"
    # noposix.darshan's names are anonymised (numbers in place of paths): not a path's hash
    chosen = ["example_logs/dxt.darshan", "example_logs/example.darshan", "example_logs/sample-badost.darshan",
              "example_logs/ior_hdf5_example.darshan"]
    n = 0
    for rel in chosen:
        rep = darshan.DarshanReport(str(logs / rel), read_all=True)
        for rid, name in rep.name_records.items():
            assert record_id(name) == rid, (rel, name)
            n += 1
    assert n > 2000


def test_capture_stores_darshan_ids(shim, tmp_path):
    """The shim's record_id and POSIX_RENAMED_FROM are Darshan's id of the path."""
    shim.set_filters(include=[str(tmp_path)], exclude=["/"])
    src, dst = tmp_path / "a.bin", tmp_path / "b.bin"
    with shim.capture() as cap:
        with open(src, "wb") as fh:
            fh.write(b"x" * 100)
        os.rename(src, dst)
    a, b = cap.file(src), cap.file(dst)
    assert a is not None and b is not None
    assert a.record_id == record_id(str(src))
    assert b.record_id == record_id(str(dst))
    # an int64 counter, as in Darshan: the id's two's complement when it is >= 2**63
    assert b.counters["POSIX_RENAMED_FROM"] % (1 << 64) == record_id(str(src))
