"""One decoder of the I/O events (tb_iotrace.model.io_events): the tab's I/O table
(model.tab.of_xplane) and the analysis's trace (analysis.slim_xspace) hold the same calls, and both
equal the protobuf reader's (read_io_data), on every capture of tests/data (TensorFlow, JAX,
with and without I/O), a TensorFlow capture with I/O merged in, a PyTorch trace converted to
a capture, and a hand-made format /1 capture."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tb_iotrace.analysis.slim_xspace import read_slim_xspace
from tb_iotrace.model.tab.of_xplane import decode_xplane
from tb_iotrace.plugin.synthetic import make_logdir
from tb_iotrace.store.kineto_xspace import read_xspace
from tb_iotrace.store.xplane import HOST_PLANE, IO_STAT, XSpace, load_xspace, read_io_data
from tb_iotrace.store.xplane.io_fields import ABSENT, STAT_ABSENT, STAT_DEFAULTS
from tb_iotrace.store.xplane.schema import EVENT_STATS

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(p.name for p in DATA.glob("*.xplane.pb"))
BASE_NS = 1_700_000_000_000_000_000

# format /1 calls: (call, path, offset, requested, returned, fd, errno, start offset ns, duration ns)
V1_CALLS = [
    ("open", "/data/a.bin", -1, 0, 3, -1, 0, 1_000, 5_000),
    ("pread64", "/data/a.bin", 0, 4096, 4096, 3, 0, 10_000, 2_500),
    ("pread64", "/data/a.bin", 4096, 8192, 4096, 3, 0, 20_000, 2_500),   # short read
    ("pread64", "/data/b.bin", 0, 4096, -1, 4, 5, 30_000, 1_999),         # failed (EIO)
    ("close", "", -1, 0, 0, 3, 0, 40_000, 100),
]


def write_v1(path: Path) -> None:
    """A capture whose I/O line is written as format /1 did: the metadata name is the call,
    path (a ref), offset, fd, errno and bytes_returned are stats of the event, and
    bytes_requested where it differs from bytes_returned; absent ones are left out."""
    sp = XSpace()
    plane = sp.planes.add(id=2, name=HOST_PLANE)
    sids = {name: 100 + k for k, name in enumerate(EVENT_STATS)}
    for name, sid in sids.items():
        plane.stat_metadata[sid].id, plane.stat_metadata[sid].name = sid, name
    refs: dict[str, int] = {}
    calls: dict[str, int] = {}
    line = plane.lines.add(id=5, name="I/O (tid 100)", timestamp_ns=500)   # the file clock: ns since the profile start
    for op, fpath, off, req, ret, fd, err, t, dur in V1_CALLS:
        mid = calls.setdefault(op, 10 + len(calls))
        plane.event_metadata[mid].id, plane.event_metadata[mid].name = mid, op
        ev = line.events.add(metadata_id=mid, offset_ps=t * 1000, duration_ps=dur * 1000)
        if fpath:
            ref = refs.setdefault(fpath, 200 + len(refs))
            plane.stat_metadata[ref].id, plane.stat_metadata[ref].name = ref, fpath
            ev.stats.add(metadata_id=sids["path"], ref_value=ref)
        values = {"offset": off, "bytes_requested": req, "bytes_returned": ret, "fd": fd, "errno": err}
        for name, value in values.items():
            left_out = value == STAT_ABSENT[name] or (name == "bytes_requested" and req == ret)
            if not left_out:
                ev.stats.add(metadata_id=sids[name], int64_value=value)
    record = {"format": "tb_iotrace.io/1", "lines": [{"name": line.name, "tid": 100, "t0_ns": BASE_NS + 1_000}],
              "threads": [[100, 77, "python"]], "dropped": 0, "counters": []}
    plane.stat_metadata[1].id, plane.stat_metadata[1].name = 1, IO_STAT
    plane.stats.add(metadata_id=1, bytes_value=json.dumps(record).encode())
    path.write_bytes(sp.SerializeToString())


def capture(name: str, tmp_path: Path) -> Path:
    if name == "tf_with_io":
        return make_logdir(tmp_path, DATA / "gpu_multi_worker.xplane.pb", n_events=2_000, seed=3)
    if name == "torch_converted":
        out = tmp_path / "torch.xplane.pb"
        out.write_bytes(read_xspace(DATA / "torch_loader.pt.trace.json.gz").SerializeToString())
        return out
    if name == "format_1":
        out = tmp_path / "v1.xplane.pb"
        write_v1(out)
        return out
    return DATA / name


def tab_calls(path: Path) -> dict[str, np.ndarray] | None:
    io = decode_xplane(str(path), "h").io
    if io is None:
        return None
    ops = np.array(list(io.ops) + [""], dtype=object)
    paths = np.array(list(io.paths) + [""], dtype=object)
    return {"op": ops[io.op], "path": paths[io.path], "offset": io.offset, "requested": io.requested,
            "returned": io.returned, "fd": io.fd, "errno": io.errno, "tid": io.tid, "start": io.start, "end": io.end}


VALUES = ("op", "path", "offset", "requested", "returned", "fd", "errno", "tid")


@pytest.mark.parametrize("name", CAPTURES + ["tf_with_io", "torch_converted", "format_1"])
def test_tab_and_analysis_decode_the_same_calls(name, tmp_path) -> None:
    path = capture(name, tmp_path)
    tab = tab_calls(path)
    _, trace = read_slim_xspace(path)
    reference = read_io_data(load_xspace(path))
    if reference is None or not len(reference):
        assert tab is None and (trace is None or not len(trace)), name
        return
    assert tab is not None and trace is not None
    assert len(tab["op"]) == len(trace) == len(reference)
    for col in VALUES:
        got = getattr(trace, col if col != "tid" else "tid")
        assert np.array_equal(tab[col], got), col
        assert np.array_equal(got, getattr(reference, col)), col
    assert np.array_equal(trace.start_ns, reference.start_ns) and np.array_equal(trace.end_ns, reference.end_ns)
    # the tab's clock is the file's, the analysis's the epoch: one offset per thread, and the
    # same durations but for the tab rounding start and end each down to the ns
    for tid in np.unique(trace.tid).tolist():
        rows = trace.tid == tid
        assert len(np.unique(trace.start_ns[rows] - tab["start"][rows])) == 1
    gap = (tab["end"] - tab["start"]) - (trace.end_ns - trace.start_ns)
    assert gap.min() >= 0 and gap.max() <= 1
    assert not any((getattr(trace, c) == ABSENT).any() for c in ("requested", "returned"))


def test_format_1_reads_back_as_written(tmp_path) -> None:
    path = capture("format_1", tmp_path)
    _, trace = read_slim_xspace(path)
    assert trace is not None
    want = list(zip(*V1_CALLS))
    for k, col in enumerate(("op", "path", "offset", "requested", "returned", "fd", "errno")):
        assert getattr(trace, col).tolist() == list(want[k]), col
    assert (trace.start_ns - BASE_NS).tolist() == list(want[7])
    assert (trace.end_ns - trace.start_ns).tolist() == list(want[8])
    tab = tab_calls(path)
    assert tab is not None and tab["requested"].tolist() == list(want[3])


def test_one_absent_convention() -> None:
    """The columnar decoder's defaults are the convention's, in EVENT_STATS order, and the
    byte counts' marker is out of reach of any count a call returns."""
    assert STAT_DEFAULTS == tuple(STAT_ABSENT[name] for name in EVENT_STATS)
    assert STAT_ABSENT["bytes_requested"] == STAT_ABSENT["bytes_returned"] == ABSENT == np.iinfo(np.int64).min
