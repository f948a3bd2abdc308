"""tb_iotrace.export.darshan: darshan-parser's text layout (header, rank map, one tab-separated
line per counter, objects as POSIX records) written and read back by :func:`parse`."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.base.recordid import record_id
from tb_iotrace.export import darshan
from tb_iotrace.export.darshan import parse, write, write_file

T0 = 1_700_000_000 * 10**9


class Source:
    def __init__(self, run: str, host: str, files: list[dict[str, Any]], reqs: list[dict[str, Any]] | None = None,
                 life: tuple[int, int] | None = (T0, T0 + 5 * 10**9)) -> None:
        self.run, self.host, self._files, self._reqs, self._life = run, host, files, reqs or [], life

    def files(self) -> list[dict[str, Any]]:
        return self._files

    def objects(self) -> list[dict[str, Any]]:
        return self._reqs

    def life_ns(self) -> tuple[int, int] | None:
        return self._life

    def exe(self) -> str:
        return "python\ttrain.py"


POSIX = {"module": "POSIX", "path": "/data/a\tb.rec", "counters": {"POSIX_OPENS": 2, "POSIX_BYTES_READ": 4096},
         "fcounters": {"POSIX_F_READ_TIME": 0.125}}
STDIO = {"module": "STDIO", "path": "/logs/out.txt", "counters": {"STDIO_WRITES": 3}, "fcounters": {}}


@pytest.fixture(autouse=True)
def fixed_mounts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(darshan, "mounts", lambda: [("/data", "nfs4"), ("/", "ext4")])


def test_header_rank_map_and_counter_lines() -> None:
    out = io.StringIO()
    n = write([Source("run1", "hostA", [POSIX]), Source("run1", "hostB", [STDIO], life=None)], out)
    text = out.getvalue()
    assert n == 4
    assert "# exe: python\\ttrain.py\n" in text and "# nprocs: 2\n" in text and "# run time: 6\n" in text
    assert f"# start_time: {T0 // 10**9}\n" in text
    assert "# rank 0: run1 hostA\n# rank 1: run1 hostB\n" in text
    assert "# mount entry:\t/\text4\n# mount entry:\t/data\tnfs4\n" in text
    assert text.index("# POSIX module data") < text.index("# STDIO module data")
    rid = record_id("/data/a\tb.rec")
    assert f"POSIX\t0\t{rid}\tPOSIX_OPENS\t2\t/data/a\\tb.rec\t/data\tnfs4\n" in text
    assert f"POSIX\t0\t{rid}\tPOSIX_F_READ_TIME\t0.125000\t/data/a\\tb.rec\t/data\tnfs4\n" in text
    assert f"STDIO\t1\t{record_id('/logs/out.txt')}\tSTDIO_WRITES\t3\t/logs/out.txt\t/\text4\n" in text


def test_parse_reads_back_what_write_wrote() -> None:
    out = io.StringIO()
    write([Source("r", "h", [POSIX, STDIO])], out)
    recs = parse(out.getvalue())
    assert [(r["module"], r["rank"], r["path"], r["mount"], r["fs"]) for r in recs] == [
        ("POSIX", 0, "/data/a\tb.rec", "/data", "nfs4"), ("STDIO", 0, "/logs/out.txt", "/", "ext4")]
    assert recs[0]["counters"] == POSIX["counters"] and recs[0]["fcounters"] == POSIX["fcounters"]
    with pytest.raises(ValueError, match="not a darshan-parser counter line"):
        parse("POSIX\t0\t1\tPOSIX_OPENS\t2\n")


def test_objects_are_posix_records_named_by_url() -> None:
    req = {"object": "s3://b/k", "op": "GET", "status": 200, "bytes": 10, "start_ns": T0 + 10**9,
           "end_ns": T0 + 2 * 10**9, "range_start": -1}
    out = io.StringIO()
    write([Source("r", "h", [], [req])], out)
    (rec,) = parse(out.getvalue())
    assert rec["path"] == "s3://b/k" and rec["mount"] == "UNKNOWN" and rec["fs"] == "UNKNOWN"
    assert rec["counters"]["POSIX_READS"] == 1 and rec["fcounters"]["POSIX_F_READ_START_TIMESTAMP"] == 1.0


def test_a_module_nobody_used_has_no_section_and_the_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    assert write_file([Source("r", "h", [STDIO])], str(target)) == 1
    text = target.read_text()
    assert "# POSIX module data" not in text and "# STDIO module data" in text


def test_mount_of_takes_the_longest_prefix_on_a_path_boundary() -> None:
    table = [("/data/fast", "xfs"), ("/data", "nfs4"), ("/", "ext4")]
    assert darshan._mount_of("/data/fast/x", table) == ("/data/fast", "xfs")
    assert darshan._mount_of("/data/faster/x", table) == ("/data", "nfs4")
    assert darshan._mount_of("/data", table) == ("/data", "nfs4")
    assert darshan._mount_of("relative", table) == ("UNKNOWN", "UNKNOWN")
