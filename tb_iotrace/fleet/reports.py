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
    # the job verdict per run (tb_iotrace.analysis.job_verdict), in SQL: steps matched by number
    # across the run's hosts (the numbers every host has); per step the slowest host's input
    # wait is the job's; the straggler is the host with the most input wait over those steps
    Report("input-stragglers", "Runs whose slowest rank's input sets the step time (steps matched by number across "
                               "ranks)", """
WITH s AS (SELECT run, host, step_num, duration_ps, input_wait_ps, COALESCE(collective_wait_ps, 0) AS coll_ps
           FROM steps WHERE step_num IS NOT NULL),
     per AS (SELECT run, step_num, COUNT(DISTINCT host) AS ranks, MAX(duration_ps) AS step_ps,
                    MAX(input_wait_ps) AS wait_ps FROM s GROUP BY run, step_num),
     top AS (SELECT run, MAX(ranks) AS ranks FROM per GROUP BY run),
     matched AS (SELECT per.* FROM per JOIN top ON per.run = top.run AND per.ranks = top.ranks WHERE top.ranks >= 2),
     hw AS (SELECT s.run, s.host, SUM(s.input_wait_ps) AS wait_ps, SUM(s.coll_ps) AS coll_ps,
                   SUM(s.duration_ps) AS time_ps
            FROM s JOIN matched m ON s.run = m.run AND s.step_num = m.step_num GROUP BY s.run, s.host),
     slow AS (SELECT run, MAX(wait_ps) AS wait_ps FROM hw GROUP BY run),
     named AS (SELECT hw.run, MIN(hw.host) AS host FROM hw JOIN slow ON hw.run = slow.run AND hw.wait_ps = slow.wait_ps
               GROUP BY hw.run),
     others AS (SELECT hw.run, COUNT(*) AS n, SUM(hw.wait_ps) AS wait_ps, SUM(hw.coll_ps) AS coll_ps,
                       SUM(hw.time_ps) AS time_ps
                FROM hw JOIN named ON hw.run = named.run AND hw.host <> named.host GROUP BY hw.run),
     job AS (SELECT run, MAX(ranks) AS ranks, COUNT(*) AS steps, SUM(step_ps) AS step_ps, SUM(wait_ps) AS wait_ps
             FROM matched GROUP BY run)
SELECT job.run, job.ranks, job.steps,
       ROUND(CAST(job.step_ps AS DOUBLE) / job.steps / 1e9, 2) AS step_ms,
       ROUND(100 * CAST(job.wait_ps AS DOUBLE) / NULLIF(job.step_ps, 0), 1) AS job_input_wait_pct,
       named.host AS slowest_host,
       ROUND(100 * CAST(hw.wait_ps AS DOUBLE) / NULLIF(hw.time_ps, 0), 1) AS slowest_input_wait_pct,
       ROUND(100 * CAST(others.wait_ps AS DOUBLE) / NULLIF(others.time_ps, 0), 1) AS others_input_wait_pct,
       ROUND(100 * CAST(others.coll_ps AS DOUBLE) / NULLIF(others.time_ps, 0), 1) AS others_collective_pct
FROM job JOIN named ON job.run = named.run
     JOIN hw ON hw.run = named.run AND hw.host = named.host
     JOIN others ON others.run = job.run
ORDER BY job_input_wait_pct DESC NULLS LAST, job.run
LIMIT {limit}"""),
)


def sql_of(report: Report, limit: int) -> str:
    return report.sql.strip().format(limit=int(limit))
