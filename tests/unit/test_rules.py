"""The finding rules (tb_iotrace.analysis.rules) on constructed traces: one registry of titles,
rules and order; small-reads and eof-zero-reads at their thresholds; what evaluate returns."""
from __future__ import annotations

from tb_iotrace.analysis import analyze
from tb_iotrace.analysis import rules
from tb_iotrace.analysis.checkpoints import phase_findings
from tb_iotrace.analysis.thresholds import Thresholds

from test_checkpoint_detection import MOUNTS, T0, make_trace

KiB = 1 << 10


def _reads(n_files: int, per_file: int, size: int, *, eof: bool = False) -> list[tuple]:
    """Each file: open, ``per_file`` reads of ``size`` bytes, [a 0-byte read at its end], close."""
    rows, t = [], T0
    for i in range(n_files):
        path = f"/data/f{i:03d}.bin"
        rows.append(("open", path, -1, 3, t, 10_000))
        t += 20_000
        for k in range(per_file):
            rows.append(("pread64", path, k * size, size, t, 50_000))
            t += 60_000
        if eof:
            rows.append(("pread64", path, per_file * size, 0, t, 5_000))
            t += 10_000
        rows.append(("close", path, -1, 0, t, 5_000))
        t += 10_000
    return rows


def _ids(rows: list[tuple], th: Thresholds | None = None) -> dict[str, dict]:
    a = analyze(None, trace=make_trace(rows), mountinfo=MOUNTS, thresholds=th)
    assert a is not None
    return {f["id"]: f for f in a.findings}


def test_one_registry_of_titles_rules_and_order() -> None:
    assert set(rules.TITLES) == set(rules.RULES) == set(rules.ORDER)
    assert len(rules.ORDER) == len(set(rules.ORDER))
    assert set(phase_findings.TITLES) <= set(rules.ORDER)        # the checkpoint findings are rules too


def test_small_reads_below_the_size_threshold_only() -> None:
    got = _ids(_reads(4, 32, 4 * KiB))
    ev = got["small-reads"]["evidence"]
    assert ev["reads"] == ev["small_reads"] == 128 and ev["median_small_read_bytes"] == 4 * KiB
    assert ev["small_read_bytes_threshold"] == 64 * KiB
    assert "small-reads" not in _ids(_reads(4, 32, 1 << 20))
    # the threshold is strict: reads of exactly its size are not small
    assert "small-reads" not in _ids(_reads(4, 32, 4 * KiB), Thresholds(small_read_bytes=4 * KiB))
    # and too few small reads make no finding
    assert "small-reads" not in _ids(_reads(2, 16, 4 * KiB))


def test_eof_zero_reads_are_the_readers_end_of_file_probe() -> None:
    got = _ids(_reads(10, 1, 64 * KiB, eof=True))
    ev = got["eof-zero-reads"]["evidence"]
    assert (ev["zero_length_reads"], ev["files_read"], ev["read_calls"]) == (10, 10, 20)
    assert ev["zero_reads_per_file"] == 1.0 and ev["zero_read_share"] == 0.5
    assert got["eof-zero-reads"]["severity"] in ("info", "warning", "critical")
    assert "eof-zero-reads" not in _ids(_reads(4, 1, 64 * KiB, eof=True))       # under 8 calls


def test_evaluate_returns_findings_without_their_rows_by_impact() -> None:
    # four files read in small pieces, then read again whole with ten more
    again = [(op, p, o, r, s + 10**10, d) for op, p, o, r, s, d in _reads(10, 1, 64 * KiB, eof=True)]
    a = analyze(None, trace=make_trace(_reads(4, 32, 4 * KiB) + again), mountinfo=MOUNTS)
    assert a is not None and {"small-reads", "redundant-reads"} <= set(a.ids)
    shares = [f["impact"]["step_share"] or 0.0 for f in a.findings]
    assert shares == sorted(shares, reverse=True)
    for f in a.findings:
        assert rules.ROWS not in f and f["title"] == rules.TITLES[f["id"]]
        assert {"id", "severity", "statement", "evidence", "files", "ops", "suggestion", "impact"} <= set(f)
