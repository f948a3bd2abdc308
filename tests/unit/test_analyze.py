"""tb_iotrace.analysis.analyze: what analyze() adds to the context and rules: its argument
rules (nothing to analyse is a ValueError, a file without an I/O record is None, a trace given
with a file wins), its notes (no host timeline, dropped calls, the analysing machine's mounts),
the summary's totals (failed and library calls left out, negative returns clipped), the files
ordered by bytes and opens, and Analysis' text and JSON shape."""
from __future__ import annotations

from pathlib import Path

import pytest

from tb_iotrace.analysis.analyze import Analysis, analyze
from tb_iotrace.store.xplane import HOST_PLANE, IoTrace, XPlaneError, XSpace

from built_inputs import io_trace

MOUNTINFO = "27 1 254:0 / / rw - ext4 /dev/vda rw\n40 27 0:50 / /data rw - nfs4 srv:/x rw\n"
T0 = 10**18
MiB = 1 << 20


def trace(rows: list[tuple], dropped: int = 0) -> IoTrace:
    return io_trace(rows, dropped=dropped)


ROWS = [("open", "/data/big", -1, 3, T0, 1_000),
        ("pread", "/data/big", 0, 2 * MiB, T0 + 10_000, 1_000_000),
        ("pread", "/data/big", 2 * MiB, -1, T0 + 2_000_000, 1_000, 5),        # failed: left out
        ("open", "/data/small", -1, 3, T0 + 3_000_000, 1_000),
        ("open", "/data/small", -1, 3, T0 + 3_100_000, 1_000),
        ("open", "/data/small", -1, 3, T0 + 3_200_000, 1_000),
        ("write", "/data/out", 0, 100, T0 + 4_000_000, 10_000),
        ("stat", "/usr/lib/python3.11/os.py", -1, 0, T0 + 5_000_000, 1_000)]   # code loading: left out


def test_nothing_to_analyse_is_an_error() -> None:
    with pytest.raises(ValueError, match="needs an XSpace or an IoTrace"):
        analyze()


def test_summary_totals_and_notes() -> None:
    a = analyze(trace=trace(ROWS, dropped=7), mountinfo=MOUNTINFO)
    assert a is not None
    s = a.summary
    assert (s["io_calls"], s["reads"], s["writes"], s["meta_calls"]) == (6, 1, 1, 4)
    assert (s["bytes_read"], s["bytes_written"], s["files"], s["dropped"]) == (2 * MiB, 100, 3, 7)
    assert s["library_calls_left_out"] == 1 and s["steps"] == 0 and s["step_time_ps"] == 0
    assert [f["path"] for f in a.files] == ["/data/big", "/data/out", "/data/small"]   # bytes + opens
    assert any("no TensorFlow host timeline" in n for n in a.notes)
    assert any("dropped 7 calls" in n for n in a.notes)
    assert not any("mountinfo" in n for n in a.notes)          # the table given, not this machine's
    assert a.filesystems[0]["mount_point"] == "/data" and a.filesystems[0]["fs_type"] == "nfs4"


def test_no_dropped_note_when_nothing_dropped() -> None:
    a = analyze(trace=trace(ROWS), mountinfo=MOUNTINFO)
    assert a is not None and not any("dropped" in n for n in a.notes)


def test_to_dict_and_lookups() -> None:
    a = analyze(trace=trace(ROWS), mountinfo=MOUNTINFO)
    assert a is not None
    d = a.to_dict()
    assert set(d) == {"verdict", "summary", "steps", "stages", "filesystems", "files", "findings", "notes",
                      "thresholds", "checkpoints"}
    assert d["thresholds"]["small_read_bytes"] == 64 << 10
    assert a.finding("no-such-finding") is None and a.ids == [f["id"] for f in a.findings]


def test_text_of_findings_and_file_systems() -> None:
    fs = {"mount_point": "/data", "fs_type": "nfs4", "num_files": 2, "reads": 4, "bytes_read": 3 * MiB,
          "read_bandwidth": 6 * MiB, "meta_latency_median_s": 25e-6}
    quiet = {"mount_point": "/", "fs_type": "ext4", "num_files": 1, "reads": 0, "bytes_read": 0,
             "read_bandwidth": None, "meta_latency_median_s": None}
    f = {"id": "small-reads", "severity": "warning", "statement": "Many small reads.", "suggestion": "Batch them.",
         "files": [f"/data/f{i}" for i in range(5)], "ops": ["a", "b", "c", "d"]}
    summary = {"steps": 4, "input_wait_ps": 50, "step_time_ps": 200, "io_during_wait_ps": 25}
    a = Analysis(steps=[], stages=[], filesystems=[fs, quiet], files=[], findings=[f], summary=summary,
                 notes=["n1"], verdict={"bound": "input", "advice": "more workers"})
    lines = a.text().splitlines()
    assert lines[0] == "verdict: input: more workers"
    assert lines[1] == "4 steps, input wait 25% of step time, file I/O during the wait 50%"
    assert lines[2] == "/data (nfs4): 2 files, 4 reads, 3.0 MiB read at 6 MiB/s, metadata median 25 us"
    assert lines[3] == "/ (ext4): 1 files, 0 reads, 0.0 MiB read"
    assert lines[4] == "[warning] small-reads: Many small reads."
    assert lines[5] == "    suggestion: Batch them."
    assert lines[6] == "    files: /data/f0, /data/f1, /data/f2 (+2 more)"
    assert lines[7] == "    ops: a, b, c"
    assert lines[-1] == "note: n1" and "No findings." not in lines
    empty = Analysis(steps=[], stages=[], filesystems=[], files=[], findings=[],
                     summary={"steps": 0}, notes=[])
    assert empty.text().splitlines()[0] == "No findings."


def test_a_file_without_io_record_is_none_unless_a_trace_is_given(tmp_path: Path) -> None:
    sp = XSpace()
    sp.planes.add(id=2, name=HOST_PLANE).lines.add(id=1, name="python")
    path = tmp_path / "plain.xplane.pb"
    path.write_bytes(sp.SerializeToString())
    assert analyze(str(path)) is None
    a = analyze(path, trace=trace(ROWS), mountinfo=MOUNTINFO)
    assert a is not None and a.summary["bytes_read"] == 2 * MiB


def test_a_space_without_io_record_is_none() -> None:
    sp = XSpace()
    sp.planes.add(id=2, name=HOST_PLANE)
    assert analyze(sp) is None


def test_an_unreadable_file_raises_not_none(tmp_path: Path) -> None:
    path = tmp_path / "junk.xplane.pb"
    path.write_bytes(b"\xff" * 64)
    with pytest.raises(XPlaneError, match="truncated or corrupt XSpace"):
        analyze(str(path))
