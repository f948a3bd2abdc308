"""The I/O tab's backend: routes on real captures (the shared GPU capture with synthetic I/O
merged in, a capture made by real TensorFlow with tb_iotrace enabled), validation, errors,
caching, memory."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections import OrderedDict
from pathlib import Path
from types import SimpleNamespace

import pytest
from werkzeug.test import Client
from werkzeug.wrappers import Response

from tb_iotrace.plugin import IoTracePlugin
from tb_iotrace.store import logdir as logdir_mod
from tb_iotrace.plugin import cache as cache_mod
from tb_iotrace.plugin import plugin as plugin_mod
from tb_iotrace.plugin.plugin import static_file
from tb_iotrace.plugin.synthetic import HOSTILE_NAME, make_logdir
from plugin_client import make_client

ROOT = Path(__file__).resolve().parents[2]
RUN = "2024_01_01_00_00_00"
PY = sys.executable

# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def logdir(gpu_capture, jax_captures, tmp_path_factory) -> Path:
    """Run RUN: GPU capture + 20k synthetic calls on host worker0, a second host worker1;
    run 'plain': the GPU capture without I/O; run 'broken': a corrupt file; runs 'jax_io' and
    'jax_plain': JAX captures made with and without tb_iotrace (host 'vm')."""
    d = tmp_path_factory.mktemp("logdir")
    make_logdir(d, gpu_capture, run=RUN, host="worker0", n_events=20_000)
    make_logdir(d, gpu_capture, run=RUN, host="worker1", n_events=5_000, seed=1)
    plain = d / "plugins" / "profile" / "plain"
    plain.mkdir(parents=True)
    shutil.copyfile(gpu_capture, plain / "gpu.xplane.pb")
    broken = d / "train" / "plugins" / "profile" / "broken"
    broken.mkdir(parents=True)
    (broken / "host.xplane.pb").write_bytes(gpu_capture.read_bytes()[:100_000] + b"\xff" * 64)
    for run, src in zip(("jax_io", "jax_plain"), jax_captures):
        (d / "plugins" / "profile" / run).mkdir(parents=True)
        shutil.copyfile(src, d / "plugins" / "profile" / run / "vm.xplane.pb")
    return d


@pytest.fixture(scope="module")
def client(logdir):
    return make_client(logdir)


TF_SCRIPT = textwrap.dedent("""
    import os, sys
    import tb_iotrace
    tb_iotrace.enable()
    import tensorflow as tf
    logdir, data = sys.argv[1], sys.argv[2]
    with open(data, "wb") as f:
        f.write(os.urandom(200_000))
    tf.profiler.experimental.start(logdir)
    for step in range(3):
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
            with tf.profiler.experimental.Trace("read_region"):
                with open(data, "rb") as f:
                    while f.read(16384):
                        pass
    tf.profiler.experimental.stop()
""")


@pytest.fixture(scope="module")
def tf_logdir(tmp_path_factory) -> Path:
    pytest.importorskip("tensorflow")
    d = tmp_path_factory.mktemp("tflogdir")
    script = d / "capture.py"
    script.write_text(TF_SCRIPT)
    data = d / "data.bin"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([PY, str(script), str(d / "logs"), str(data)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return d


# --------------------------------------------------------------------------- import / activity


def test_import_without_tensorflow_or_native():
    code = textwrap.dedent("""
        import sys, types
        import tb_iotrace.plugin as p
        plugin = p.IoTracePlugin(types.SimpleNamespace(logdir="/nonexistent"))
        plugin.get_plugin_apps(); plugin.frontend_metadata(); plugin.is_active()
        bad = [m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow.")
               or m == "tb_iotrace._native" or m == "keras"]
        print(",".join(bad))
    """)
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""


def test_frontend_metadata_and_entry_point():
    plugin = IoTracePlugin(SimpleNamespace(logdir=""))
    md = plugin.frontend_metadata()
    assert md.tab_name == "I/O" and md.es_module_path == "/index.js"
    from importlib.metadata import entry_points
    eps = [ep for ep in entry_points(group="tensorboard_plugins") if ep.name == "iotrace"]
    assert eps and eps[0].value == "tb_iotrace.plugin:IoTracePlugin"


def test_is_active_cheap_and_cached(tmp_path, monkeypatch):
    plugin = IoTracePlugin(SimpleNamespace(logdir=str(tmp_path)))
    assert plugin.is_active() is False
    # a deep, wide tree without profiles: the scan stops at its budget
    for i in range(300):
        (tmp_path / f"d{i}" / "a" / "b").mkdir(parents=True)
    calls = []
    real_scan = logdir_mod.scan
    monkeypatch.setattr(logdir_mod, "scan", lambda *a, **k: calls.append(k) or real_scan(*a, **k))
    plugin = IoTracePlugin(SimpleNamespace(logdir=str(tmp_path)))
    t = time.perf_counter()
    assert plugin.is_active() is False
    assert time.perf_counter() - t < 2.0
    assert calls[0]["max_dirs"] == cache_mod.ACTIVE_MAX_DIRS
    plugin.is_active()
    plugin.is_active()
    assert len(calls) == 1  # cached
    runs, truncated = real_scan(str(tmp_path), max_dirs=50)
    assert runs == [] and truncated


def test_is_active_with_profile(logdir):
    plugin = IoTracePlugin(SimpleNamespace(logdir=str(logdir)))
    assert plugin.is_active() is True
    assert IoTracePlugin(SimpleNamespace(logdir="nosuch://bucket/x")).is_active() is False


# --------------------------------------------------------------------------- runs


def test_runs_and_hosts(client):
    _, get = client
    code, body = get("/runs")
    assert code == 200
    runs = {r["run"]: r["hosts"] for r in body["runs"]}
    assert runs[RUN] == ["worker0", "worker1"]
    assert runs["plain"] == ["gpu"]
    assert runs["train/broken"] == ["host"]
    assert body["message"] == ""


def test_empty_logdir_says_what_to_do(tmp_path):
    _, get = make_client(tmp_path)
    code, body = get("/runs")
    assert code == 200 and body["runs"] == []
    assert "tb_iotrace.enable()" in body["message"]


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("run,host", [
    ("..", "worker0"), ("../..", "x"), (RUN + "/..", "worker0"), ("/etc", "passwd"),
    (RUN, "../../../../etc/passwd"), (RUN, "/etc/passwd"), (RUN, "a/b"), ("a\\..\\b", "h"),
    ("%2e%2e", "worker0"), ("%2e%2e/%2e%2e", "x"), (RUN, "%2e%2e"), ("nope", "worker0"),
    (RUN, "nope"), ("\x00", "x"), ("", "worker0"),
])
def test_names_that_escape_are_refused(client, run, host):
    _, get = client
    for route in ("/capture", "/timeline", "/files", "/event"):
        code, body = get(route, run=run, host=host, lane="io.t4000", index=0)
        assert code in (400, 404), (route, run, host, code)
        assert set(body) == {"error"}
        assert "root:" not in json.dumps(body)


def test_url_encoded_dots_are_refused_over_http(client):
    plugin, _ = client
    app = plugin.get_plugin_apps()["/capture"]
    for raw in ("run=%2e%2e&host=worker0", "run=%2E%2E%2F%2E%2E&host=x", f"run={RUN}&host=%2e%2e%2fx",
                "run=%252e%252e&host=x"):
        resp = Client(app, Response).get("/data/plugin/iotrace/capture?" + raw)
        assert resp.status_code in (400, 404), raw


def test_symlinks_out_of_the_logdir_are_not_served(gpu_capture, tmp_path):
    outside = tmp_path / "outside"
    make_logdir(outside, gpu_capture, run="secret", host="h", n_events=100)
    ld = tmp_path / "logdir"
    prof = ld / "plugins" / "profile"
    prof.mkdir(parents=True)
    # a session dir that is a symlink, and a file symlink inside a real session dir
    os.symlink(outside / "plugins" / "profile" / "secret", prof / "linked_run")
    (prof / "real").mkdir()
    os.symlink(outside / "plugins" / "profile" / "secret" / "h.xplane.pb", prof / "real" / "h.xplane.pb")
    # a whole tb run dir that is a symlink
    os.symlink(outside, ld / "linked_tb_run")
    plugin, get = make_client(ld)
    code, body = get("/runs")
    assert body["runs"] == []
    assert plugin.is_active() is False
    for run, host in (("linked_run", "h"), ("real", "h"), ("linked_tb_run/secret", "h")):
        code, body = get("/capture", run=run, host=host)
        assert code == 404, (run, code)
        assert "lanes" not in body


def test_static_files_are_confined():
    assert static_file("main.js") is not None
    assert static_file("app.js")[1] == "text/javascript"
    assert static_file("timeline/coords.js") is not None
    for bad in ("../plugin.py", "../../pyproject.toml", "/etc/passwd", "timeline/../../x", ".hidden",
                "timeline//coords.js", "%2e%2e/plugin.py"):
        assert static_file(bad) is None, bad


def test_static_routes(client):
    _, get = client
    code, body = get("/index.js")
    assert code == 200 and b"export const { render }" in body
    assert body == Path(plugin_mod.BUNDLE_PATH).read_bytes()  # the build output, one request
    code, body = get("/static/timeline/timeline.js")
    assert code == 200 and b"class Timeline" in body
    code, _ = get("/static/../plugin.py")
    assert code == 404


# --------------------------------------------------------------------------- errors


def test_unbuilt_bundle_is_a_clear_404(tmp_path, monkeypatch, caplog):
    """A source tree where tools/bundle_frontend.mjs never ran: /index.js says how to build
    the tab instead of serving nothing, and the plugin's other routes keep working."""
    monkeypatch.setattr(plugin_mod, "BUNDLE_PATH", str(tmp_path / "bundle" / "index.js"))
    _, get = make_client(tmp_path)
    with caplog.at_level("ERROR", logger="tb_iotrace.plugin"):
        code, body = get("/index.js")
    assert code == 404
    assert b"node tools/bundle_frontend.mjs" in body
    assert "not built" in caplog.text
    code, runs = get("/runs")
    assert code == 200 and runs["runs"] == []


def test_corrupt_capture_gives_error_and_others_still_load(client):
    _, get = client
    code, body = get("/capture", run="train/broken", host="host")
    assert code == 422
    assert "cannot read this capture" in body["error"] and body["file"] == "host.xplane.pb"
    code, body = get("/capture", run=RUN, host="worker0")
    assert code == 200 and body["lanes"]
    code, body = get("/capture", run="train/broken", host="host")  # cached error, same answer
    assert code == 422


def test_capture_without_io_says_so(client):
    _, get = client
    code, body = get("/capture", run="plain", host="gpu")
    assert code == 200
    assert body["io"]["has_io"] is False
    # the capture says TensorFlow made it: so tb_iotrace was not enabled in that process
    assert any("TensorFlow made it" in m and "tb_iotrace was not enabled" in m for m in body["messages"])
    assert {ln["group"] for ln in body["lanes"]} == {"host", "device"}
    code, files = get("/files", run="plain", host="gpu")
    assert files["rows"] == 0 and "TensorFlow made it" in files["message"]


def test_jax_capture_without_io_says_why(client):
    """A JAX capture names its jax/jaxlib versions: 0.10.2 is hooked, so tb_iotrace was not
    enabled in that process (not: a framework tb_iotrace does not hook)."""
    _, get = client
    code, body = get("/capture", run="jax_plain", host="vm")
    assert code == 200 and body["io"]["has_io"] is False
    assert any("JAX 0.10.2 (jaxlib 0.10.2, a version tb_iotrace hooks)" in m and "not enabled" in m
               for m in body["messages"]), body["messages"]
    code, files = get("/files", run="jax_plain", host="vm")
    assert files["rows"] == 0 and "JAX 0.10.2" in files["message"]
    code, f = get("/findings", run="jax_plain", host="vm")
    assert code == 200 and f["findings"] == [] and "JAX 0.10.2" in f["message"]


def test_jax_capture_with_io(client):
    """The tab reads a JAX capture as it reads TensorFlow's: I/O lanes beside JAX's host threads,
    steps from StepTraceAnnotation, the files table with each file's bytes."""
    _, get = client
    code, body = get("/capture", run="jax_io", host="vm")
    assert code == 200 and body["io"]["has_io"] is True and body["messages"] == []
    assert body["io"]["files"] == 5
    io_lanes = [ln for ln in body["lanes"] if ln["group"] == "io"]
    host_keys = {ln["key"] for ln in body["lanes"] if ln["group"] == "host"}
    assert len(io_lanes) == 2 and all(ln.get("host_lane") in host_keys for ln in io_lanes), io_lanes
    assert len(body["steps"]) == 4
    code, files = get("/files", run="jax_io", host="vm")
    read = dict(zip(files["path"], files["columns"]["traced_bytes"]))
    assert read == {**{f"/tmp/tbio_jax_data/part{i}.npy": 16384 for i in range(4)},
                    "/tmp/tbio_jax_data/side.bin": 16384}


@pytest.mark.parametrize("params", [{"start": "abc"}, {"width": "x"}, {"start": "nan"}])
def test_bad_numbers_are_400(client, params):
    _, get = client
    code, body = get("/timeline", run=RUN, host="worker0", **params)
    assert code == 400 and "error" in body


# --------------------------------------------------------------------------- capture + timeline


def test_capture_summary(client):
    _, get = client
    code, cap = get("/capture", run=RUN, host="worker0")
    assert code == 200
    groups = {}
    for ln in cap["lanes"]:
        groups.setdefault(ln["group"], []).append(ln)
    assert len(groups["io"]) == 4
    assert any(ln["tf_data"] for ln in groups["host"])
    assert any("Stream #" in ln["name"] for ln in groups["device"])
    assert any(ln["name"].endswith("TensorFlow Ops") for ln in groups["device"])
    assert cap["io"]["events"] == 20_000 and cap["io"]["has_io"]
    assert cap["steps"] and cap["steps_source"].endswith("Steps")
    lo, hi = cap["extent"]
    assert 0 < lo < hi


def expand(body):
    """Per-item lane/row/index and absolute start/dur (ns) from the compact /timeline
    answer (the same decoding as plugin_frontend/timeline/tracks.js decodeTimeline)."""
    it = body["items"]
    seg = body["segments"]
    lane, row, index, start = [], [], [], []
    i = 0
    for ln, r, k, first in zip(seg["lane"], seg["row"], seg["length"], seg["first"]):
        sq = 0
        ev = first
        for j in range(i, i + k):
            sq = it["start"][j] if j == i else sq + it["start"][j]
            lane.append(ln)
            row.append(r)
            index.append(ev)
            ev += it["count"][j]
            start.append(body["start"] + sq * body["q"])
        i += k
    it["lane"], it["row"], it["index"], it["start"] = lane, row, index, start
    it["dur"] = [d * body["q"] for d in it["dur"]]
    return body


def _timeline(get, **kw):
    code, body = get("/timeline", run=RUN, host="worker0", **kw)
    assert code == 200, body
    return expand(body)


def test_timeline_lod_bounds_items_and_keeps_counts(client):
    _, get = client
    full = _timeline(get, width=400)
    it = full["items"]
    n = len(it["start"])
    assert n > 0
    assert all(len(v) == n for v in it.values())
    lanes = full["lanes"]
    per_row: dict = {}
    for lane, row in zip(it["lane"], it["row"]):
        per_row[(lane, row)] = per_row.get((lane, row), 0) + 1
    assert max(per_row.values()) <= 2 * 400 + 2
    io_lanes = [i for i, ln in enumerate(lanes) if ln["group"] == "io"]
    counts = sum(c for c, ln in zip(it["count"], it["lane"]) if ln in io_lanes)
    assert counts == 20_000  # every I/O call is in exactly one item
    assert any(c > 1 for c in it["count"])  # merged at this resolution
    drawn_groups = {lanes[i]["group"] for i in it["lane"]}
    assert drawn_groups == {"host", "device", "io"}
    assert any("Stream #" in lanes[i]["name"] for i in it["lane"])


def test_timeline_zoom_returns_only_the_window(client):
    _, get = client
    full = _timeline(get, width=800)
    lo, hi = full["extent"]
    t0 = lo + (hi - lo) * 0.40
    t1 = t0 + (hi - lo) * 0.002
    z = _timeline(get, width=800, start=t0, end=t1)
    it = z["items"]
    assert z["start"] == t0 and z["end"] == t1
    q = z["q"]
    assert all(s <= t1 + q and s + d >= t0 - q for s, d in zip(it["start"], it["dur"]))
    io = [i for i, ln in enumerate(z["lanes"]) if ln["group"] == "io"]
    singles = [k for k in range(len(it["start"])) if it["lane"][k] in io and it["count"][k] == 1]
    assert singles, "zoomed in, I/O calls are sent one by one"
    k = singles[0]
    assert z["names"][it["name"][k]] in ("pread64", "read", "write", "open64", "close")
    assert len(z["items"]["start"]) < len(full["items"]["start"]) * 5


def test_timeline_io_lanes_per_file_and_lane_filter(client):
    _, get = client
    z = _timeline(get, width=600, io_by="file")
    io = [ln for ln in z["lanes"] if ln["group"] == "io"]
    names = [ln["name"] for ln in io]
    assert HOSTILE_NAME in names
    assert "/ckpt/model.ckpt-1.data" in names
    only = io[0]["key"]
    f = _timeline(get, width=600, io_by="file", lanes=only)
    assert {f["lanes"][i]["key"] for i in f["items"]["lane"]} == {only}


def test_all_hosts_view(client):
    _, get = client
    code, cap = get("/capture", run=RUN, host="__all__")
    assert code == 200 and cap["hosts"] == ["worker0", "worker1"]
    keys = [ln["key"] for ln in cap["lanes"]]
    assert any(k.startswith("h0/") for k in keys) and any(k.startswith("h1/") for k in keys)
    assert cap["io"]["events"] == 25_000
    code, tl = get("/timeline", run=RUN, host="__all__", width=300)
    assert code == 200 and tl["items"]["start"]
    ev_lane = next(ln["key"] for ln in cap["lanes"] if ln["key"].startswith("h1/io."))
    code, ev = get("/event", run=RUN, host="__all__", lane=ev_lane, index=0)
    assert code == 200 and ev["host"] == "worker1"


# --------------------------------------------------------------------------- tables and charts


def test_files_table_posix_and_stdio(client):
    _, get = client
    code, f = get("/files", run=RUN, host="worker0")
    assert code == 200
    assert f["rows"] == len(f["path"]) == len(f["module"]) == len(f["values"])
    assert set(f["module"]) == {"POSIX", "STDIO"}
    assert HOSTILE_NAME in f["path"]
    i = f["path"].index("/ckpt/model.ckpt-1.data")
    assert f["columns"]["bytes_written"][i] > 0 and f["columns"]["writes"][i] > 0
    j = f["module"].index("STDIO")
    assert f["columns"]["bytes_read"][j] == 4096
    assert "POSIX_SIZE_READ_0_100" in f["counters"]
    for col in ("bandwidth", "seq_pct", "traced_calls", "read_time"):
        assert len(f["columns"][col]) == f["rows"]
    assert sum(f["columns"]["traced_calls"][k] for k in range(f["rows"]) if f["module"][k] == "POSIX") == 20_000


def test_histograms_from_counters(client):
    _, get = client
    code, h = get("/histograms", run=RUN, host="worker0")
    assert code == 200 and h["source"] == "counters"
    code, f = get("/files", run=RUN, host="worker0")
    reads = sum(f["columns"]["reads"][k] for k in range(f["rows"]) if f["module"][k] == "POSIX")
    assert sum(h["read"]) == reads
    assert h["pattern"]["reads"] == reads
    code, one = get("/histograms", run=RUN, host="worker0", path="/ckpt/model.ckpt-1.data")
    assert sum(one["read"]) == 0 and sum(one["write"]) > 0
    assert set(one["ops"]) == {"write"}


def test_bandwidth_adds_up(client):
    _, get = client
    code, bw = get("/bandwidth", run=RUN, host="worker0", bins=137)
    assert code == 200 and bw["bins"] == 137 and len(bw["read_bps"]) == 137
    secs = bw["bin_ns"] / 1e9
    assert sum(bw["read_bps"]) * secs == pytest.approx(bw["total_read"], rel=1e-6)
    assert sum(bw["write_bps"]) * secs == pytest.approx(bw["total_write"], rel=1e-6)
    code, f = get("/files", run=RUN, host="worker0")
    posix = [k for k in range(f["rows"]) if f["module"][k] == "POSIX"]
    assert bw["total_read"] == sum(f["columns"]["bytes_read"][k] for k in posix)
    lo, hi = bw["start"], bw["end"]
    code, half = get("/bandwidth", run=RUN, host="worker0", bins=50, start=lo, end=(lo + hi) / 2)
    assert 0 < half["total_read"] < bw["total_read"]


def _expected_host_row(path: Path) -> dict:
    """Ground truth for one host's /hosts row, computed apart from the plugin: bytes and
    read time from the capture's Darshan records (tb_iotrace.store.xplane); input wait by the one rule
    of tb_iotrace.model.stepwait, by hand: the union of the events named IteratorGetNext*,
    MultiDeviceIteratorGetNextFromShard or enumerate(DataLoader)#* at any depth on any host
    line, inside the steps (this capture has no host step markers: the first device plane's
    Steps line), against the steps' time. (Before this rule the tab summed each line's outermost
    IteratorGetNext-or-Iterator:: events against the capture's whole span.)"""
    import re

    from tb_iotrace.store.xplane import load_xspace, read_io_data

    space = load_xspace(path)
    rd = wr = rt = 0.0
    for f in read_io_data(space).counters:
        c, fc = f["counters"], f.get("fcounters") or {}
        m = f["module"]
        rd += c.get(f"{m}_BYTES_READ", 0)
        wr += c.get(f"{m}_BYTES_WRITTEN", 0)
        rt += fc.get(f"{m}_F_READ_TIME", 0.0)
    pat = re.compile(r"^(IteratorGetNext|MultiDeviceIteratorGetNextFromShard|enumerate\(DataLoader\)#)")
    waits: list[tuple[int, int]] = []
    steps: list[tuple[int, int]] = []
    for plane in space.planes:
        names = {k: md.name for k, md in plane.event_metadata.items()}
        for line in plane.lines:
            t0 = line.timestamp_ns * 1000
            if plane.name == "/host:CPU":
                waits += [(t0 + e.offset_ps, t0 + e.offset_ps + e.duration_ps) for e in line.events
                          if pat.search(names.get(e.metadata_id, ""))]
            elif plane.name.startswith("/device:") and line.name == "Steps" and not steps:
                steps = [(t0 + e.offset_ps, t0 + e.offset_ps + e.duration_ps) for e in line.events]
    merged: list[list[int]] = []
    for s0, e0 in sorted(waits):
        if merged and s0 <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e0)
        else:
            merged.append([s0, e0])
    assert steps, "the capture's device Steps line"
    wait = sum(max(0, min(e0, b) - max(s0, a)) for a, b in steps for s0, e0 in merged) / 1000  # ps -> ns
    span = sum(b - a for a, b in steps) / 1000
    return {"bytes_read": rd, "bytes_written": wr, "read_time_s": rt, "input_wait_ns": wait, "span_ns": span}


def test_hosts_table_per_host_against_the_captures(client, logdir):
    _, get = client
    code, h = get("/hosts", run=RUN, host="__all__")
    assert code == 200
    assert [r["host"] for r in h["hosts"]] == ["worker0", "worker1"]
    for row in h["hosts"]:
        want = _expected_host_row(logdir / "plugins" / "profile" / RUN / f"{row['host']}.xplane.pb")
        assert row["source"] == "counters"
        assert row["bytes_read"] == want["bytes_read"] > 0
        assert row["bytes_written"] == want["bytes_written"] > 0
        assert row["read_time_s"] == pytest.approx(want["read_time_s"], rel=1e-9)
        assert row["input_wait_ns"] == pytest.approx(want["input_wait_ns"], abs=2)
        assert row["span_ns"] == pytest.approx(want["span_ns"], abs=2) and row["wait_basis"] == "steps"
        assert row["input_wait_ns"] > 0
        assert 0 < row["input_wait_pct"] <= 100
    w0, w1 = h["hosts"]
    assert w0["io_calls"] == 20_000 and w1["io_calls"] == 5_000
    # one host: the same row as in the all-hosts answer
    code, one = get("/hosts", run=RUN, host="worker1")
    assert code == 200 and one["hosts"] == [w1]
    assert get("/hosts", run=RUN, host="nope")[0] == 404


def test_steps_with_and_without_markers(client):
    _, get = client
    code, s = get("/steps", run=RUN, host="worker0")
    assert code == 200 and s["has_steps"] and s["steps"]
    st = s["steps"][0]
    assert st["calls"] > 0 and st["bytes_read"] > 0 and 0 <= st["input_wait_pct"] <= 100


def test_steps_fallback_windows(gpu_capture, tmp_path):
    from tb_iotrace.plugin.endpoints import steps
    from tb_iotrace.plugin.request_view import make_view
    from tb_iotrace.model.tab.of_xplane import decode_xplane
    src = make_logdir(tmp_path, gpu_capture, n_events=1000)
    cap = decode_xplane(str(src), "h")
    cap.steps = []
    s = steps.steps_impl(make_view("r", [("h", cap)]), windows=10)
    assert not s["has_steps"] and "No step markers" in s["message"]
    assert len(s["steps"]) == 10 and sum(x["calls"] for x in s["steps"]) == 1000


@pytest.mark.slow
def test_findings_come_from_the_analysis(client, logdir):
    from tb_iotrace.analysis import analyze

    _, get = client
    code, f = get("/findings", run=RUN, host="worker0")
    assert code == 200
    path = next((logdir / "plugins" / "profile" / RUN).glob("worker0.xplane.pb"))
    expect = analyze(str(path))
    assert expect is not None and expect.ids          # the synthetic trace has small reads
    assert [x["id"] for x in f["findings"]] == [x["id"] for x in expect.to_dict()["findings"]]
    assert all(x["statement"] and x["suggestion"] for x in f["findings"])


@pytest.mark.slow
def test_findings_empty_state_without_io(client):
    _, get = client
    code, f = get("/findings", run="plain", host="gpu")
    assert code == 200 and f["findings"] == [] and "TensorFlow made it" in f["message"]


@pytest.mark.slow
def test_findings_run_in_one_child_per_capture(gpu_capture, tmp_path, monkeypatch):
    """The analysis runs in a child process (not in TensorBoard's), once per capture even
    when several requests ask at the same time; a failing child gives a message, not a 500."""
    from tb_iotrace.plugin import findings_runner, findings_worker

    path = make_logdir(tmp_path, gpu_capture, run="r", host="h", n_events=2_000)
    real = findings_worker.run_child
    pids = []

    def counting(p, timeout_s):
        out = real(p, timeout_s)
        pids.append(p)
        return out

    monkeypatch.setattr(findings_worker, "run_child", counting)
    monkeypatch.setattr(findings_runner, "_findings_cache", OrderedDict())
    _, get = make_client(tmp_path)
    got = []
    threads = [threading.Thread(target=lambda: got.append(get("/findings", run="r", host="h"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [c for c, _ in got] == [200, 200, 200] and pids == [str(path)]
    assert got[0][1] == got[1][1] == got[2][1] and got[0][1]["findings"]
    monkeypatch.setattr(findings_runner, "_findings_cache", OrderedDict())
    failures = []

    def failing(p, timeout_s):
        failures.append(p)
        raise RuntimeError("the analysis failed (boom)")

    monkeypatch.setattr(findings_worker, "run_child", failing)
    for _ in range(2):  # the failure is cached: no second child for the same capture
        code, f = get("/findings", run="r", host="h")
        assert code == 200 and f["findings"] == [] and "boom" in f["message"]
    assert failures == [str(path)] and findings_runner._findings_locks == {}


def _fake_captures(tmp_path, n: int) -> list[str]:
    out = []
    for i in range(n):
        p = tmp_path / f"c{i}.xplane.pb"
        p.write_bytes(b"x" * (100 + i))
        out.append(str(p))
    return out


def test_findings_children_have_a_global_limit(tmp_path, monkeypatch):
    """Switching between runs asks for one capture after another: at most FINDINGS_CHILDREN
    (1) children run at once in all, the others wait for the slot and still get their answer."""
    from tb_iotrace.plugin import findings_runner, findings_worker

    paths = _fake_captures(tmp_path, 4)
    lock, running, peak, done = threading.Lock(), [0], [0], []

    def slow_child(p, timeout_s):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.2)
        with lock:
            running[0] -= 1
        done.append(p)
        return {"findings": [], "message": f"analysed {p}"}

    monkeypatch.setattr(findings_worker, "run_child", slow_child)
    monkeypatch.setattr(findings_runner, "_findings_cache", OrderedDict())
    got: dict[str, dict] = {}
    threads = [threading.Thread(target=lambda p=p: got.update({p: findings_runner.findings_for(p)})) for p in paths]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == 1 and findings_runner.FINDINGS_CHILDREN == 1
    assert sorted(done) == sorted(paths) and all(got[p]["message"] == f"analysed {p}" for p in paths)


def test_findings_request_waiting_too_long_gets_busy_not_cached(tmp_path, monkeypatch):
    from tb_iotrace.plugin import findings_runner, findings_worker

    a, b = _fake_captures(tmp_path, 2)
    release = threading.Event()
    started = threading.Event()

    def child(p, timeout_s):
        if p == a:
            started.set()
            release.wait(10)
        return {"findings": [], "message": f"analysed {p}"}

    monkeypatch.setattr(findings_worker, "run_child", child)
    monkeypatch.setattr(findings_runner, "_findings_cache", OrderedDict())
    monkeypatch.setattr(findings_runner, "FINDINGS_WAIT_S", 0.2)
    t = threading.Thread(target=findings_runner.findings_for, args=(a,))
    t.start()
    assert started.wait(10)
    busy = findings_runner.findings_for(b)         # a's child holds the only slot
    assert busy["findings"] == [] and "other captures" in busy["message"]
    release.set()
    t.join()
    assert findings_runner.findings_for(b)["message"] == f"analysed {b}"   # asked again, computed
    assert findings_runner._findings_locks == {}


def test_findings_cache_drops_the_least_recently_used(tmp_path, monkeypatch):
    """A full cache drops its least recently used answer, not every answer."""
    from tb_iotrace.plugin import findings_runner, findings_worker

    n = 16
    monkeypatch.setattr(findings_runner, "FINDINGS_CACHED", n)
    paths = _fake_captures(tmp_path, n + 1)
    children: list[str] = []
    monkeypatch.setattr(findings_worker, "run_child",
                        lambda p, t: children.append(p) or {"findings": [], "message": p})
    monkeypatch.setattr(findings_runner, "_findings_cache", OrderedDict())
    for p in paths[:n]:
        findings_runner.findings_for(p)
    findings_runner.findings_for(paths[0])          # used again: now the most recent
    findings_runner.findings_for(paths[n])          # one more: drops paths[1], the least recent
    assert children == paths                        # paths[0] came from the cache
    findings_runner.findings_for(paths[0])
    findings_runner.findings_for(paths[2])
    assert children == paths
    findings_runner.findings_for(paths[1])
    assert children == paths + [paths[1]]


def test_findings_above_the_size_limit_point_to_the_cli(gpu_capture, tmp_path, monkeypatch):
    """A capture above FINDINGS_MAX_BYTES starts no child: the message names the CLI command."""
    from tb_iotrace.plugin import findings_runner, findings_worker

    path = make_logdir(tmp_path, gpu_capture, run="r", host="h", n_events=2_000)
    monkeypatch.setattr(findings_runner, "_findings_cache", OrderedDict())
    monkeypatch.setattr(findings_runner, "FINDINGS_MAX_BYTES", path.stat().st_size - 1)
    monkeypatch.setattr(findings_worker, "run_child", lambda p, t: pytest.fail("a child was started"))
    _, get = make_client(tmp_path)
    code, f = get("/findings", run="r", host="h")
    assert code == 200 and f["findings"] == []
    assert f"tb-iotrace report {path}" in f["message"] and "above the tab's findings limit" in f["message"]


# --------------------------------------------------------------------------- event details


def test_event_details_io_and_host(client):
    _, get = client
    code, ev = get("/event", run=RUN, host="worker0", lane="io.t4001", index=10)
    assert code == 200
    for k in ("call", "file", "offset", "bytes", "dur", "errno", "fd", "host_op", "step"):
        assert k in ev
    assert ev["dur"] > 0
    code, cap = get("/capture", run=RUN, host="worker0")
    host = next(ln for ln in cap["lanes"] if ln["group"] == "host")
    code, hev = get("/event", run=RUN, host="worker0", lane=host["key"], index=0)
    assert code == 200 and hev["name"] and isinstance(hev["stats"], dict)
    code, _ = get("/event", run=RUN, host="worker0", lane="io.t4001", index=10**9)
    assert code == 404
    code, _ = get("/event", run=RUN, host="worker0", lane="nolane", index=0)
    assert code == 404
    code, _ = get("/event", run=RUN, host="worker0", lane="io.t4001")
    assert code == 400


# --------------------------------------------------------------------------- cache


def test_cache_reloads_when_the_file_changes(gpu_capture, tmp_path):
    path = make_logdir(tmp_path, gpu_capture, run="r", host="h", n_events=300)
    plugin, get = make_client(tmp_path)
    code, a = get("/capture", run="r", host="h")
    assert a["io"]["events"] == 300
    cap1 = plugin.index.capture(str(path), "h")
    assert plugin.index.capture(str(path), "h") is cap1  # cached
    make_logdir(tmp_path, gpu_capture, run="r", host="h", n_events=500, seed=3)
    code, b = get("/capture", run="r", host="h")
    assert b["io"]["events"] == 500


@pytest.mark.parametrize("local_raw", [False, True])
def test_json_is_gzipped_unless_local_raw_is_asked_for(client, monkeypatch, local_raw):
    """Every client that accepts gzip gets the JSON compressed (a loopback peer may be an ssh
    tunnel to a remote browser); with TBIO_PLUGIN_LOCAL_NO_GZIP=1 a loopback peer gets it as
    is. Same content either way."""
    if local_raw:
        monkeypatch.setenv("TBIO_PLUGIN_LOCAL_NO_GZIP", "1")
    else:
        monkeypatch.delenv("TBIO_PLUGIN_LOCAL_NO_GZIP", raising=False)
    plugin, _ = client
    app = plugin.get_plugin_apps()["/timeline"]
    bodies = {}
    for addr in ("127.0.0.1", "::1", "10.1.2.3"):
        resp = Client(app, Response).get("/data/plugin/iotrace/timeline", query_string=dict(run=RUN, host="worker0"),
                                         headers={"Accept-Encoding": "gzip"}, environ_base={"REMOTE_ADDR": addr})
        assert resp.status_code == 200
        enc = resp.headers.get("Content-Encoding")
        assert enc == (None if local_raw and addr != "10.1.2.3" else "gzip")
        body = resp.get_data()
        bodies[addr] = json.loads(gzip.decompress(body) if enc == "gzip" else body)
    assert bodies["127.0.0.1"] == bodies["::1"] == bodies["10.1.2.3"]


def test_opening_the_tab_starts_decoding_what_it_shows_first(gpu_capture, tmp_path):
    """The frontend's entry module is the tab's first request: the server starts decoding
    the capture the tab shows first (last run by name, its first host) at once, and the
    tab's /capture then finds it loaded (decoded once)."""
    make_logdir(tmp_path, gpu_capture, run="a", host="h", n_events=100)
    make_logdir(tmp_path, gpu_capture, run="b", host="h2", n_events=100)
    first = make_logdir(tmp_path, gpu_capture, run="b", host="h1", n_events=200)
    plugin, get = make_client(tmp_path)
    loads = []
    real = plugin.index.loader
    plugin.index.loader = lambda path, host: loads.append((path, host)) or real(path, host)
    code, _ = get("/index.js")
    assert code == 200
    deadline = time.monotonic() + 60
    while not plugin.index._captures and time.monotonic() < deadline:
        time.sleep(0.02)
    assert loads == [(str(first), "h1")]
    code, cap = get("/capture", run="b", host="h1")
    assert code == 200 and cap["io"]["events"] == 200
    assert len(loads) == 1  # the tab's request reused the warm capture
    assert plugin.index.warm_default().join() is None and len(loads) == 1  # cached: no reload


# --------------------------------------------------------------------------- real TensorFlow


@pytest.mark.tf
def test_real_tf_capture(tf_logdir):
    _, get = make_client(tf_logdir / "logs")
    code, runs = get("/runs")
    assert len(runs["runs"]) == 1
    run = runs["runs"][0]["run"]
    host = runs["runs"][0]["hosts"][0]
    code, cap = get("/capture", run=run, host=host)
    assert code == 200 and cap["io"]["has_io"] and cap["io"]["events"] > 0
    io = [ln for ln in cap["lanes"] if ln["group"] == "io"]
    assert any(ln.get("host_lane") for ln in io), "the I/O thread is matched to its TF host line"
    code, f = get("/files", run=run, host=host)
    data = str(tf_logdir / "data.bin")
    assert data in f["path"]
    i = f["path"].index(data)
    assert f["columns"]["bytes_read"][i] == 3 * 200_000
    code, steps = get("/steps", run=run, host=host)
    assert steps["has_steps"] and "train" in steps["source"]
    assert [st["bytes_read"] for st in steps["steps"]] == [200_000] * 3
    lane, index = _tf_read(get, run, host, cap, io, data)
    code, ev = get("/event", run=run, host=host, lane=lane, index=index)
    assert ev["file"] == data and ev["call"] in ("read", "read64", "__read_chk") and ev["bytes"] > 0
    assert ev["host_op"] and ev["host_op"]["name"] == "read_region"


def _tf_read(get, run, host, cap, io_lanes, data):
    """(lane key, event index) of a read of ``data`` with bytes, on any I/O lane."""
    lo, hi = cap["extent"]
    for lane in io_lanes:
        code, tl = get("/timeline", run=run, host=host, width=8192, start=lo, end=hi, lanes=lane["key"])
        it = expand(tl)["items"]
        for k in range(len(it["start"])):
            if (tl["names"][it["name"][k]] == "read" and it["bytes"][k] > 0 and it["count"][k] == 1
                    and it["file"][k] >= 0 and tl["files"][it["file"][k]] == data):
                return lane["key"], it["index"][k]
    raise AssertionError("no read of the data file in any I/O lane")


# --------------------------------------------------------------------------- memory


MEM_SCRIPT = textwrap.dedent("""
    import json, os, sys, tracemalloc
    from tb_iotrace.model.tab.of_xplane import decode_xplane
    from tb_iotrace.plugin.endpoints import timeline, bandwidth as timeseries
    from tb_iotrace.plugin.request_view import make_view
    def rss():
        with open("/proc/self/status") as f:
            d = dict(l.split(":", 1) for l in f if ":" in l)
        return int(d["VmRSS"].split()[0]) * 1024, int(d["VmHWM"].split()[0]) * 1024
    path = sys.argv[1]
    base, _ = rss()
    tracemalloc.start()
    cap = decode_xplane(path, "h")
    view = make_view("r", [("h", cap)])
    timeline.timeline_impl(view, None, None, 1500)
    timeseries.bandwidth_impl(view, None, None, 500)
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    now, hwm = rss()
    print(json.dumps({"size": os.path.getsize(path), "peak": peak, "cur": cur, "rss_delta": now - base,
                      "hwm_delta": hwm - base}))
""")


@pytest.mark.parametrize("n_events", [0, 200_000])
@pytest.mark.slow
def test_memory_at_most_5x_file_size(gpu_capture, tmp_path, n_events):
    if n_events:
        path = make_logdir(tmp_path, gpu_capture, run="r", host="h", n_events=n_events, hostile=False)
    else:
        path = tmp_path / "gpu.xplane.pb"
        shutil.copyfile(gpu_capture, path)
    r = subprocess.run([PY, "-c", MEM_SCRIPT, str(path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    # Python + numpy allocations (tracemalloc) at their peak, and the process's resident
    # memory growth (includes protobuf's C arenas for the metadata and the mapped file).
    assert m["peak"] < 5 * m["size"], m
    assert m["rss_delta"] < 5 * m["size"] + 16 * 2**20, m
    assert m["hwm_delta"] < 5 * m["size"] + 16 * 2**20, m


# --------------------------------------------------------------------------- packaging


def test_frontend_ships_with_the_package():
    """plugin_frontend/ is reached as tb_iotrace/plugin/static (a link in the source tree,
    copied into wheels by the package-data glob) with its bundle built beside the package
    (tb_iotrace/plugin/frontend-build/index.js, ignored by git, in the package data), and every
    relative import resolves."""
    import re
    import tomllib

    static = ROOT / "tb_iotrace" / "plugin" / "static"
    assert static.is_symlink() and static.resolve() == (ROOT / "plugin_frontend").resolve()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = data["tool"]["setuptools"]["package-data"]["tb_iotrace"]
    assert "plugin/static/**/*" in package_data and "plugin/frontend-build/index.js" in package_data
    assert Path(plugin_mod.BUNDLE_PATH) == ROOT / "tb_iotrace" / "plugin" / "frontend-build" / "index.js"
    assert "/tb_iotrace/plugin/frontend-build/" in (ROOT / ".gitignore").read_text().split()  # a build output
    fresh = subprocess.run(["node", str(ROOT / "tools" / "bundle_frontend.mjs"), "--check"], capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr  # what TensorBoard serves is the sources as they are now
    js = sorted((ROOT / "plugin_frontend").rglob("*.js"))
    assert {p.name for p in js} >= {"main.js", "app.js", "coords.js", "tracks.js", "view.js", "timeline.js"}
    assert "index.js" not in {p.name for p in js}  # the bundle is a build output, not a source
    for path in js:
        text = path.read_text()
        assert "innerHTML" not in text.replace("never innerHTML", "")
        assert "http://" not in text and "https://" not in text  # no CDN
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("//", "*", "/*")))
        for spec in re.findall(r"""(?:from|import\()\s*["'](\.[^"']+)["']""", code):
            target = (path.parent / spec.replace("./static/", "./", 1)).resolve()
            assert target.exists(), f"{path.name}: {spec}"
