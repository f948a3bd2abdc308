"""tb_iotrace.plugin.synthetic: the synthetic trace is what it says (``n_events`` calls inside
the span, one thread's calls never overlapping, writes only to the checkpoint, the hostile name
where asked and only there, a failed call returning -1) and its Darshan counters agree with its
calls; ``make_logdir`` writes a capture at the run/host path that reads back with those calls."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.model.tab.load import load_any
from tb_iotrace.plugin.synthetic import HOSTILE_NAME, SIZE_BINS, make_logdir, synthetic_trace

DATA = Path(__file__).resolve().parents[1] / "data"
CKPT = "/ckpt/model.ckpt-1.data"
MOVES = ("pread64", "read", "write")


def test_counts_span_and_ops() -> None:
    t = synthetic_trace(3000, 1_000_000, 50_000_000, n_threads=3, n_files=8, seed=1, base_ns=10**18)
    assert len(t.op) == len(t.path) == len(t.start_ns) == len(t.end_ns) == len(t.tid) == 3000
    assert set(t.op) <= {"open64", "close", "pread64", "read", "write"}
    assert t.start_ns.min() >= 10**18 + 1_000_000 and t.end_ns.max() <= 10**18 + 50_000_000
    assert (t.end_ns > t.start_ns).all()
    assert set(t.tid) <= {4000, 4001, 4002} and sorted(t.threads) == [4000, 4001, 4002]
    assert [t.threads[k].comm for k in (4000, 4001)] == ["python", "tf_data_worker"]
    assert t.dropped == 0


def test_one_threads_calls_never_overlap() -> None:
    """The module's rule ("keep calls sequential (no overlap on one thread)"), also where the
    span is dense enough that two calls of a thread draw the same start."""
    t = synthetic_trace(5000, 0, 2_000_000, n_threads=2, seed=3)
    for tid in np.unique(t.tid):
        m = t.tid == tid
        s, e = t.start_ns[m], t.end_ns[m]
        order = np.argsort(s, kind="stable")
        assert (e[order][:-1] <= s[order][1:]).all()


def test_names_writes_and_the_hostile_file() -> None:
    t = synthetic_trace(4000, 0, 10**9, n_files=4, seed=2)
    paths = set(t.path)
    assert set(t.path[t.op == "write"]) == {CKPT}
    assert CKPT not in set(t.path[t.op != "write"])
    assert paths - {CKPT} <= {HOSTILE_NAME} | {f"/data/train-{i:05d}-of-00004.tfrecord" for i in (0, 2, 3)}
    assert HOSTILE_NAME in paths and "/data/train-00001-of-00004.tfrecord" not in paths
    plain = synthetic_trace(4000, 0, 10**9, n_files=4, seed=2, hostile=False)
    assert HOSTILE_NAME not in set(plain.path) and "/data/train-00001-of-00004.tfrecord" in set(plain.path)
    one = synthetic_trace(500, 0, 10**9, n_files=1)
    assert HOSTILE_NAME not in set(one.path)


def test_sizes_returns_and_failures() -> None:
    t = synthetic_trace(20_000, 0, 10**9, seed=4)
    moves = np.isin(t.op.astype(str), MOVES)
    reads = moves & (t.op != "write")
    assert (t.requested[~moves] == 0).all() and (t.offset[~moves] == -1).all()
    assert (t.returned[moves] == t.requested[moves]).all()
    sizes = t.requested[reads]
    assert (sizes >= 64).all() and (sizes <= 1 << 20).all() and ((sizes & (sizes - 1)) == 0).all()
    w = t.requested[t.op == "write"]
    assert (w >= 4096).all() and (w < 1 << 20).all()
    failed = t.errno != 0
    assert failed.any() and set(t.op[failed]) == {"open64"} and set(t.errno[failed]) == {2}
    assert (t.returned[failed] == -1).all()
    assert (t.fd[t.op == "open64"] == -1).all() and (t.fd[t.op != "open64"] == 3 + (t.tid[t.op != "open64"] - 4000)).all()


def test_the_same_seed_gives_the_same_trace() -> None:
    a, b = (synthetic_trace(800, 0, 10**8, seed=9) for _ in range(2))
    c = synthetic_trace(800, 0, 10**8, seed=10)
    assert list(a.path) == list(b.path) and (a.start_ns == b.start_ns).all()
    assert list(a.path) != list(c.path)


def test_counters_agree_with_the_calls() -> None:
    t = synthetic_trace(6000, 0, 10**9, n_files=5, seed=5)
    posix = {c["path"]: c for c in t.counters if c["module"] == "POSIX"}
    assert set(posix) == set(t.path)
    for path, rec in posix.items():
        m = t.path == path
        ops, ret = t.op[m], t.returned[m]
        rd = (ops == "pread64") | (ops == "read")
        c = rec["counters"]
        assert c["POSIX_OPENS"] == (ops == "open64").sum() and c["POSIX_READS"] == rd.sum()
        assert c["POSIX_WRITES"] == (ops == "write").sum()
        assert c["POSIX_BYTES_READ"] == ret[rd].sum()
        assert c["POSIX_BYTES_WRITTEN"] == ret[ops == "write"].sum()
        assert sum(c[f"POSIX_SIZE_READ_{n}"] for _, n in SIZE_BINS) == c["POSIX_READS"]
        assert sum(c[f"POSIX_SIZE_WRITE_{n}"] for _, n in SIZE_BINS) == c["POSIX_WRITES"]
        dur = (t.end_ns - t.start_ns)[m] / 1e9
        assert rec["fcounters"]["POSIX_F_READ_TIME"] == pytest.approx(dur[rd].sum())
    stdio = [c for c in t.counters if c["module"] == "STDIO"]
    assert len(stdio) == 1 and stdio[0]["path"] == "/data/train-00000-of-00005.tfrecord"
    assert synthetic_trace(100, 0, 10**8, with_counters=False).counters == []


def test_size_bins_put_each_size_in_its_darshan_bin() -> None:
    t = synthetic_trace(8000, 0, 10**9, n_files=2, seed=6)
    rec = next(c for c in t.counters if c["module"] == "POSIX" and c["path"] == CKPT)["counters"]
    w = t.returned[t.op == "write"]
    assert rec["POSIX_SIZE_WRITE_1K_10K"] == ((w > 1024) & (w <= 10240)).sum()
    assert rec["POSIX_SIZE_WRITE_100K_1M"] == ((w > 102400) & (w <= 1048576)).sum()
    assert rec["POSIX_SIZE_WRITE_0_100"] == 0 and rec["POSIX_SIZE_WRITE_1G_PLUS"] == 0


def test_make_logdir_writes_the_capture_where_it_says(tmp_path: Path) -> None:
    src = DATA / "jax_io.xplane.pb"
    before = src.read_bytes()
    out = make_logdir(tmp_path, src, run="r1", host="w7", n_events=400, seed=3)
    assert out == tmp_path / "plugins" / "profile" / "r1" / "w7.xplane.pb"
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644
    assert src.read_bytes() == before                      # the source is only read
    cap = load_any(str(out), "w7")
    assert cap.io is not None and len(cap.io) == 400
    assert HOSTILE_NAME in set(cap.io.paths) and CKPT in set(cap.io.paths)
    assert HOSTILE_NAME in set(cap.counters.paths)
    again = make_logdir(tmp_path, src, run="r1", host="w7", n_events=50, seed=3)  # replaced, not merged twice
    assert len(load_any(str(again), "w7").io) == 50
