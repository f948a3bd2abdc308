"""tb_iotrace.fleet.reports: sql_of fills only an integer limit (text is refused), and each
ready report, run by DuckDB over tiny hand-made tables, keeps and drops the rows its title
promises: input wait per run without zero-span hosts, small-read files by the half rule,
file systems by read bandwidth (code and STDIO fallbacks), and the straggler rank over the
steps every rank has."""
from __future__ import annotations

from typing import Any

import duckdb
import pytest

from tb_iotrace.fleet.reports import REPORTS, SMALL_READ_BINS, Report, sql_of


BY_NAME = {r.name: r for r in REPORTS}


def run(con: Any, name: str, limit: int = 100) -> list[dict[str, Any]]:
    cur = con.execute(sql_of(BY_NAME[name], limit))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def test_sql_of_fills_an_integer_limit_only() -> None:
    for r in REPORTS:
        sql = sql_of(r, 7)
        assert sql.rstrip().endswith("LIMIT 7") and "{" not in sql and "}" not in sql
        assert sql.count("LIMIT") == 1
    assert sql_of(REPORTS[0], 3.9).endswith("LIMIT 3")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        sql_of(REPORTS[0], "1; DROP TABLE hosts")  # type: ignore[arg-type]
    assert sql_of(Report("x", "t", "  SELECT 1 LIMIT {limit}\n"), 2) == "SELECT 1 LIMIT 2"
    assert len({r.name for r in REPORTS}) == len(REPORTS)


def test_input_wait_sums_hosts_per_run_and_leaves_out_zero_spans() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE hosts (run VARCHAR, host VARCHAR, input_wait_ns BIGINT, span_ns BIGINT, "
                "bytes_read BIGINT)")
    con.execute("INSERT INTO hosts VALUES ('a', 'h0', 1e9, 4e9, 10), ('a', 'h1', 3e9, 4e9, 5), "
                "('a', 'h2', 9e9, 0, 100), ('b', 'h0', 1e9, 10e9, 1), ('c', 'h0', 5e9, 0, 1)")
    got = run(con, "input-wait")
    assert [r["run"] for r in got] == ["a", "b"]                          # c: no span at all
    assert got[0] == {"run": "a", "hosts": 2, "input_wait_pct": 50.0, "input_wait_s": 4.0,
                      "steps_s": 8.0, "bytes_read": 15}
    assert got[1]["input_wait_pct"] == 10.0
    assert [r["run"] for r in run(con, "input-wait", 1)] == ["a"]


def _files(con: Any) -> None:
    bins = ", ".join(f"POSIX_SIZE_READ_{b} BIGINT" for b in SMALL_READ_BINS)
    con.execute(f"CREATE TABLE files (run VARCHAR, host VARCHAR, module VARCHAR, path VARCHAR, code BOOLEAN, "
                f"fs_type VARCHAR, mount_point VARCHAR, POSIX_READS BIGINT, POSIX_BYTES_READ BIGINT, "
                f"STDIO_BYTES_READ BIGINT, POSIX_F_READ_TIME DOUBLE, STDIO_F_READ_TIME DOUBLE, {bins}, "
                f"POSIX_SIZE_READ_1M_4M BIGINT)")


def _file(con: Any, run: str, path: str, reads: int, small: int, big: int, *, module: str = "POSIX",
          code: bool = False, fs: str | None = "ext4", mp: str | None = "/", nbytes: int | None = -1,
          t: float | None = 1.0, stdio: tuple[int | None, float | None] = (None, None)) -> None:
    con.execute("INSERT INTO files VALUES (?, 'h', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, NULL, ?)",
                [run, module, path, code, fs, mp, reads, reads * 10 if nbytes == -1 else nbytes,
                 stdio[0], t, stdio[1], small, big])


def test_small_reads_keeps_files_half_read_in_small_requests() -> None:
    con = duckdb.connect()
    _files(con)
    _file(con, "r1", "/d/small", 10, 10, 0)
    _file(con, "r2", "/d/small", 10, 6, 4)
    _file(con, "r1", "/d/half", 10, 5, 5)            # exactly half: kept
    _file(con, "r1", "/d/big", 10, 4, 6)             # under half: left out
    _file(con, "r1", "/lib/code.so", 10, 10, 0, code=True)
    _file(con, "r1", "/d/stdio", 10, 10, 0, module="STDIO")
    _file(con, "r1", "/d/none", 0, 0, 0)
    got = run(con, "small-reads")
    assert [r["path"] for r in got] == ["/d/small", "/d/half"]       # most jobs first
    assert (got[0]["jobs"], got[0]["reads"], got[0]["small_reads"], got[0]["small_pct"]) == (2, 20, 16, 80.0)
    assert got[1]["avg_read_bytes"] == 10.0


def test_slow_fs_ranks_file_systems_by_read_bandwidth() -> None:
    con = duckdb.connect()
    _files(con)
    mib = 1 << 20
    _file(con, "r1", "/fast/a", 1, 0, 1, fs="tmpfs", mp="/fast", nbytes=100 * mib, t=1.0)
    _file(con, "r1", "/slow/a", 1, 0, 1, fs="nfs", mp="/slow", nbytes=2 * mib, t=1.0)
    _file(con, "r2", "/slow/b", 1, 0, 1, fs="nfs", mp="/slow", nbytes=2 * mib, t=3.0)
    _file(con, "r1", "/lib/x.so", 1, 0, 1, fs="nfs", mp="/slow", nbytes=100 * mib, t=0.001, code=True)
    _file(con, "r1", "/s/f", 0, 0, 0, module="STDIO", fs=None, mp=None, nbytes=None, t=None,
          stdio=(10 * mib, 2.0))                                    # STDIO counters when POSIX has none
    _file(con, "r1", "/empty/z", 0, 0, 0, fs="xfs", mp="/empty", nbytes=0, t=0.0)
    got = run(con, "slow-fs")
    assert [(r["fs_type"], r["mount_point"]) for r in got] == [("nfs", "/slow"), ("unknown", "?"), ("tmpfs", "/fast")]
    assert (got[0]["jobs"], got[0]["files"], got[0]["bytes_read"], got[0]["read_mib_s"]) == (2, 2, 4 * mib, 1.0)
    assert got[1]["read_mib_s"] == 5.0 and got[2]["read_mib_s"] == 100.0


def test_input_stragglers_names_the_slowest_rank_over_matched_steps() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE steps (run VARCHAR, host VARCHAR, step_num BIGINT, duration_ps BIGINT, "
                "input_wait_ps BIGINT, collective_wait_ps BIGINT)")
    ms = 10 ** 9   # ps
    rows = [("j", "r0", 1, 100 * ms, 10 * ms, 50 * ms), ("j", "r0", 2, 100 * ms, 10 * ms, 50 * ms),
            ("j", "r1", 1, 100 * ms, 60 * ms, 0), ("j", "r1", 2, 100 * ms, 40 * ms, None),
            ("j", "r0", 3, 100 * ms, 99 * ms, 0),                      # step 3: one rank only, not matched
            ("j", "r0", None, 100 * ms, 99 * ms, 0),                   # no number: never matched
            ("solo", "r0", 1, 100 * ms, 90 * ms, 0),                   # one rank: no straggler
            ("tie", "b", 1, 10 * ms, 2 * ms, 0), ("tie", "a", 1, 10 * ms, 2 * ms, 0)]
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)", rows)
    got = {r["run"]: r for r in run(con, "input-stragglers")}
    assert set(got) == {"j", "tie"}
    j = got["j"]
    assert (j["ranks"], j["steps"], j["step_ms"], j["slowest_host"]) == (2, 2, 100.0, "r1")
    assert j["job_input_wait_pct"] == 50.0            # per step the slowest rank's wait: 60 + 40 of 200
    assert j["slowest_input_wait_pct"] == 50.0 and j["others_input_wait_pct"] == 10.0
    assert j["others_collective_pct"] == 50.0
    assert got["tie"]["slowest_host"] == "a"          # a tie names the first host
    assert list(got) == ["j", "tie"]                  # most input wait first (50% over 20%)
