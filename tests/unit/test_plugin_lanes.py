"""The /timeline request path of a many-lane view: lanes described once per view,
not per request; only the asked lanes visited; the packed (binary) answer the tab asks for
equal to the JSON one; memoized answers encoded (and gzipped) once."""
from __future__ import annotations

import gzip
import json
import shutil
import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("tensorboard")

from werkzeug.test import Client  # noqa: E402
from werkzeug.wrappers import Response  # noqa: E402

from tb_iotrace.model.tab import columns as model_mod
from tb_iotrace.plugin import packed
from tb_iotrace.plugin import plugin as plugin_mod
from tb_iotrace.plugin.plugin import IoTracePlugin
from tb_iotrace.plugin.synthetic import make_logdir

DATA = Path(__file__).resolve().parents[1] / "data"
RUN = "2024_01_01_00_00_00"
FIXTURE = DATA / "packed_answer.bin"


@pytest.fixture(scope="module")
def logdir(gpu_capture, tmp_path_factory) -> Path:
    """Three hosts: the GPU capture with synthetic I/O (~41 lanes each)."""
    d = tmp_path_factory.mktemp("lanes")
    for i in range(3):
        make_logdir(d, gpu_capture, run=RUN, host=f"w{i}", n_events=3_000, seed=i, hostile=False)
    return d


def _client(logdir: Path):
    plugin = IoTracePlugin(SimpleNamespace(logdir=str(logdir)))
    apps = plugin.get_plugin_apps()

    def get(route: str, headers=None, **params):
        resp = Client(apps[route], Response).get(f"/data/plugin/iotrace{route}", query_string=params,
                                                   headers=headers or {})
        return resp

    return plugin, get


def _json(resp):
    return json.loads(resp.get_data())


def _packed(resp):
    assert resp.headers["Content-Type"] == packed.CONTENT_TYPE
    return packed.unpack(resp.get_data())


# ----------------------------------------------------------------------------- the format


def test_pack_round_trip_narrowest_types_and_alignment():
    cols = {"a": np.array([0, -5, 100]), "b": np.array([-40_000, 3]), "c": np.array([1 << 40, -1]),
            "d": np.array([0.5, -2.25]), "e": np.zeros(0, dtype=np.int64), "f": np.array([127, -128, 1000])}
    body = packed.pack({"x": 1, "names": ["é", "b"]}, cols)
    fields, got = packed.unpack(body)
    assert fields == {"x": 1, "names": ["é", "b"]}
    assert {k: v.dtype.str for k, v in got.items()} == {"a": "|i1", "b": "<i4", "c": "<f8", "d": "<f8",
                                                        "e": "|i1", "f": "<i2"}
    for k, v in cols.items():
        assert got[k].tolist() == v.tolist()
    (n,) = struct.unpack_from("<I", body, 4)
    header = json.loads(body[8:8 + n])
    base = -(-(8 + n) // 8) * 8
    assert all((base + off) % 8 == 0 for _, _, _, off in header["columns"])
    assert len(body) % 8 == 0
    with pytest.raises(ValueError):
        packed.unpack(b"JSON" + body[4:])
    with pytest.raises(ValueError):
        packed.pack({"columns": 1}, {})


def test_packed_fixture_is_what_the_encoder_writes():
    """tests/data/packed_answer.bin is decoded by the frontend's test (tests/frontend/
    packed.test.mjs): it must be exactly what pack() writes for these fields and columns."""
    body = packed.pack({"title": "fixture", "q": 0.125},
                       {"items.small": np.array([1, -2, 3]), "items.mid": np.array([300, -300]),
                        "items.wide": np.array([70_000, -1]), "items.huge": np.array([1 << 40]),
                        "items.float": np.array([1.5]), "empty": np.zeros(0, dtype=np.int64)})
    assert FIXTURE.read_bytes() == body


# ----------------------------------------------------------------------------- /timeline


def test_lanes_are_described_once_per_view_not_per_request(logdir, monkeypatch):
    """The defect: every /timeline request described every lane of the view (~20 ms for the
    2,600 lanes of 64 hosts) although the tab asks for the few on screen."""
    calls = []
    orig = model_mod.Lane.describe

    def counting(self):
        calls.append(self.key)
        return orig(self)

    monkeypatch.setattr(model_mod.Lane, "describe", counting)
    _, get = _client(logdir)
    cap = _json(get("/capture", run=RUN, host="__all__"))
    n = len(cap["lanes"])
    assert n > 100 and len(calls) == n
    keys = [ln["key"] for ln in cap["lanes"]][:5]
    for enc in ("json", "bin", "bin"):
        resp = get("/timeline", run=RUN, host="__all__", width=800, lanes=",".join(keys), enc=enc)
        assert resp.status_code == 200
    assert len(calls) == n  # described once, for /capture; the timeline answers reuse them


def test_only_the_asked_lanes_are_visited(logdir, monkeypatch):
    from tb_iotrace.plugin import level_of_detail as lod
    visited = []
    orig = lod.window

    def spy(start, maxend, a, b, t0, t1):
        visited.append(id(start))
        return orig(start, maxend, a, b, t0, t1)

    monkeypatch.setattr(lod, "window", spy)
    _, get = _client(logdir)
    cap = _json(get("/capture", run=RUN, host="__all__"))
    io = [ln for ln in cap["lanes"] if ln["group"] == "io"][:2]
    fields, cols = _packed(get("/timeline", run=RUN, host="__all__", width=800, enc="bin",
                               lanes=",".join(ln["key"] for ln in io) + ",no/such/lane"))
    assert len(visited) == 2  # one row each, nothing else looked at
    assert fields["lane_count"] == len(cap["lanes"])
    idx = {ln["key"]: i for i, ln in enumerate(cap["lanes"])}
    assert sorted(set(cols["segments.lane"].tolist())) == sorted(idx[ln["key"]] for ln in io)


@pytest.mark.parametrize("host", ["w1", "__all__"])
@pytest.mark.parametrize("window", [None, "zoom"])
def test_packed_timeline_equals_the_json_answer(logdir, host, window):
    _, get = _client(logdir)
    cap = _json(get("/capture", run=RUN, host=host))
    q = {"run": RUN, "host": host, "width": 900}
    if window:  # inside the longest item of the home window: it starts left of the new one
        home = _json(get("/timeline", **q))
        it, seg = home["items"], home["segments"]
        k = int(np.argmax(it["dur"]))
        heads = np.cumsum([0] + seg["length"][:-1])
        head = int(heads[np.searchsorted(heads, k, side="right") - 1])
        t = home["start"] + sum(it["start"][head:k + 1]) * home["q"]
        dur = it["dur"][k] * home["q"]
        q.update(start=t + dur * 0.4, end=t + dur * 0.41)
    js = _json(get("/timeline", **q))
    fields, cols = _packed(get("/timeline", enc="bin", **q))
    assert js["lanes"] == cap["lanes"] and "lanes" not in fields
    for k in ("start", "end", "width", "ns_per_px", "q", "extent", "names", "files", "steps", "lane_count"):
        assert fields[k] == js[k], k
    for k in ("lane", "row", "length", "first"):
        assert cols[f"segments.{k}"].tolist() == js["segments"][k], k
    for k in ("dur", "name", "count", "bytes", "file", "err"):
        assert cols[f"items.{k}"].tolist() == js["items"][k], k
    # starts: the JSON answer's first item of a segment is absolute, the packed one's is
    # segments.start (and 0 in items.start)
    start = cols["items.start"].astype(np.int64).copy()
    heads = np.cumsum([0] + js["segments"]["length"][:-1]).astype(np.int64) if len(start) else []
    assert (start[heads] == 0).all()
    start[heads] = cols["segments.start"]
    assert start.tolist() == js["items"]["start"]
    assert len(start) > 0
    if window:
        assert min(cols["segments.start"].tolist()) < 0  # an event that began left of the window


def test_timeline_rejects_an_unknown_encoding(logdir):
    _, get = _client(logdir)
    resp = get("/timeline", run=RUN, host="w0", enc="xml")
    assert resp.status_code == 400 and "enc" in _json(resp)["error"]


# ----------------------------------------------------------------------------- encoded once


def test_memoized_answers_are_encoded_and_gzipped_once(logdir, monkeypatch):
    made = []
    orig = plugin_mod.gzip.compress

    def counting(data, *a, **kw):
        made.append(len(data))
        return orig(data, *a, **kw)

    monkeypatch.setattr(plugin_mod.gzip, "compress", counting)
    _, get = _client(logdir)
    gz = {"Accept-Encoding": "gzip"}
    bodies = []
    for _ in range(3):
        resp = get("/files", headers=gz, run=RUN, host="__all__")
        assert resp.status_code == 200 and resp.headers["Content-Encoding"] == "gzip"
        bodies.append(resp.get_data())
    assert len(made) == 1 and bodies[0] == bodies[1] == bodies[2]
    plain = get("/files", run=RUN, host="__all__")  # no gzip asked for: the JSON itself
    assert "Content-Encoding" not in plain.headers
    assert json.loads(gzip.decompress(bodies[0])) == json.loads(plain.get_data())
    assert len(made) == 1




# ----------------------------------------------------------------------------- one trim per view


def test_one_trim_defers_this_threads_trims_to_its_end(monkeypatch):
    import threading

    from tb_iotrace.base import memory as _memory

    class Libc:
        calls = 0

        def malloc_trim(self, pad):
            Libc.calls += 1

    monkeypatch.setattr(_memory, "_libc", Libc())
    with _memory.one_trim():
        _memory.trim_memory()
        with _memory.one_trim():
            _memory.trim_memory()
        assert Libc.calls == 0  # the inner block's end is not the end
        other = threading.Thread(target=_memory.trim_memory)  # another thread trims at once
        other.start()
        other.join()
        assert Libc.calls == 1
    assert Libc.calls == 2  # this thread's, once
    with _memory.one_trim():
        pass
    assert Libc.calls == 2  # nothing to give back: no trim
    _memory.trim_memory()
    assert Libc.calls == 3


def test_an_all_hosts_view_trims_once_not_per_capture(logdir, monkeypatch):
    from tb_iotrace.base import memory as _memory

    class Libc:
        calls = 0

        def malloc_trim(self, pad):
            Libc.calls += 1

    monkeypatch.setattr(_memory, "_libc", Libc())
    plugin, _ = _client(logdir)
    info, _ = plugin.index.find(RUN)
    plugin.index.view(RUN, sorted(info.hosts.items()))
    assert Libc.calls == 1  # three captures decoded


@pytest.mark.parametrize("io_by", ["thread", "file"])
def test_io_items_bytes_file_and_errno_match_their_events(logdir, io_by):
    """Each I/O item's bytes (summed over its events), file (only when all its events share
    it) and errno (its first event's), checked against the capture's I/O table, with many
    events merged per item (home window) and none (zoomed in)."""
    plugin, get = _client(logdir)
    info, _ = plugin.index.find(RUN)
    view = plugin.index.view(RUN, sorted(info.hosts.items()))
    table = view.lane_table(io_by)
    checked = merged = 0
    for width, frac in ((300, None), (2000, 0.001)):
        q = {"run": RUN, "host": "__all__", "width": width, "io_by": io_by}
        if frac:
            lo, hi = view.extent()
            q.update(start=lo + (hi - lo) * 0.5, end=lo + (hi - lo) * (0.5 + frac))
        tl = _json(get("/timeline", **q))
        it, seg = tl["items"], tl["segments"]
        k = 0
        for lane_i, length, first in zip(seg["lane"], seg["length"], seg["first"]):
            part, lane = table.lanes[lane_i]
            io = part.capture.io
            ev = first
            for j in range(k, k + length):
                n = it["count"][j]
                rows = np.arange(lane.src_base + ev, lane.src_base + ev + n) if lane.src is None else lane.src[ev:ev + n]
                if lane.group == "io":
                    moved = sum(int(max(io.returned[r], 0)) for r in rows if io.is_read[io.op[r]] or io.is_write[io.op[r]])
                    assert it["bytes"][j] == moved
                    paths = {int(io.path[r]) for r in rows}
                    want = io.paths[paths.pop()] if len(paths) == 1 and -1 not in paths else None
                    got = tl["files"][it["file"][j]] if it["file"][j] >= 0 else None
                    assert got == want
                    assert it["err"][j] == int(io.errno[rows[0]])
                    checked += 1
                    merged += n > 1
                ev += n
            k += length
    assert checked > 1000 and merged > 100
