"""Ready reports over the fleet tables (``tb-iotrace fleet report``): plain SQL that DuckDB
and Spark run alike (no engine-only functions; ratios as DOUBLE over NULLIF(..., 0))."""
from __future__ import annotations

from dataclasses import dataclass

SMALL_READ_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M")   # under 1 MiB, as Drishti


@dataclass(frozen=True)
class Report:
    name: str
    title: str
    sql: str        # {limit} is filled in


_SMALL = " + ".join(f"COALESCE(POSIX_SIZE_READ_{b}, 0)" for b in SMALL_READ_BINS)
_BYTES_READ = "COALESCE(POSIX_BYTES_READ, STDIO_BYTES_READ, 0)"
_READ_TIME = "COALESCE(POSIX_F_READ_TIME, STDIO_F_READ_TIME, 0)"

REPORTS = (
    Report("input-wait", "Jobs by input wait (the steps' time spent waiting for input, all hosts)", """
SELECT run,
       COUNT(*) AS hosts,
       ROUND(100 * CAST(SUM(input_wait_ns) AS DOUBLE) / NULLIF(SUM(span_ns), 0), 1) AS input_wait_pct,
       ROUND(CAST(SUM(input_wait_ns) AS DOUBLE) / 1e9, 3) AS input_wait_s,
       ROUND(CAST(SUM(span_ns) AS DOUBLE) / 1e9, 3) AS steps_s,
       SUM(bytes_read) AS bytes_read
FROM hosts
WHERE span_ns > 0
GROUP BY run
ORDER BY input_wait_pct DESC NULLS LAST, input_wait_s DESC, run
LIMIT {limit}"""),
    Report("small-reads", "Files read in small requests (under 1 MiB) across jobs", f"""
SELECT path,
       COUNT(DISTINCT run) AS jobs,
       COUNT(*) AS hosts,
       SUM(POSIX_READS) AS reads,
       SUM({_SMALL}) AS small_reads,
       ROUND(100 * CAST(SUM({_SMALL}) AS DOUBLE) / NULLIF(SUM(POSIX_READS), 0), 1) AS small_pct,
       SUM(POSIX_BYTES_READ) AS bytes_read,
       ROUND(CAST(SUM(POSIX_BYTES_READ) AS DOUBLE) / NULLIF(SUM(POSIX_READS), 0), 1) AS avg_read_bytes
FROM files
WHERE module = 'POSIX' AND NOT code AND POSIX_READS > 0
GROUP BY path
HAVING 2 * SUM({_SMALL}) >= SUM(POSIX_READS)
ORDER BY jobs DESC, small_reads DESC, path
LIMIT {{limit}}"""),
    Report("slow-fs", "Slowest file systems (read bandwidth of the files on them, all jobs)", f"""
SELECT COALESCE(fs_type, 'unknown') AS fs_type,
       COALESCE(mount_point, '?') AS mount_point,
       COUNT(DISTINCT run) AS jobs,
       COUNT(*) AS files,
       SUM({_BYTES_READ}) AS bytes_read,
       ROUND(SUM({_READ_TIME}), 6) AS read_time_s,
       ROUND(CAST(SUM({_BYTES_READ}) AS DOUBLE) / 1048576 / NULLIF(SUM({_READ_TIME}), 0), 1) AS read_mib_s
FROM files
WHERE NOT code
GROUP BY COALESCE(fs_type, 'unknown'), COALESCE(mount_point, '?')
HAVING SUM({_BYTES_READ}) > 0
ORDER BY read_mib_s NULLS LAST, fs_type, mount_point
LIMIT {{limit}}"""),
)


def sql_of(report: Report, limit: int) -> str:
    return report.sql.strip().format(limit=int(limit))
