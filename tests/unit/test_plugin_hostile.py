"""Hostile or damaged files in a logdir: every route answers (200, or a JSON 4xx
saying what is wrong with which file), never a 500, and an unreadable file is decoded once
per version, not once per request."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from plugin_client import make_client

ROUTES = ("/capture", "/files", "/timeline", "/histograms", "/bandwidth", "/steps", "/hosts", "/windows")


def _profile(logdir: Path, run: str, host: str, body: bytes) -> Path:
    d = logdir / "plugins" / "profile" / run
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{host}.xplane.pb").write_bytes(body)
    return d / f"{host}.xplane.pb"


def _counting(plugin) -> list[str]:
    """Every path the plugin's loader decodes, in order."""
    calls: list[str] = []
    inner = plugin.index.loader

    def loader(path, host):
        calls.append(path)
        return inner(path, host)

    plugin.index.loader = loader
    return calls


@pytest.mark.parametrize("native", ["1", "0"])
def test_invalid_utf8_event_name(jax_captures, tmp_path, monkeypatch, native):
    """An event name of stray bytes (a capture without I/O): its routes answered 500 with
    HTML, decoding the file again per request. Now the name reads with U+FFFD for the bad
    bytes, and the capture shows like any other."""
    import tb_iotrace.model.columnar as columnar

    monkeypatch.setattr(columnar, "USE_NATIVE", native == "1")
    body = jax_captures[1].read_bytes()
    assert body.count(b"Codegen") == 1
    _profile(tmp_path, "r", "h", body.replace(b"Codegen", b"Code\xff\xfen"))
    plugin, get = make_client(tmp_path)
    calls = _counting(plugin)
    for _ in range(2):
        for route in ROUTES:
            code, answer = get(route, run="r", host="h")
            assert code == 200, (route, code, answer)
    code, cap = get("/capture", run="r", host="h")
    path = str(tmp_path / "plugins" / "profile" / "r" / "h.xplane.pb")
    assert "Code\ufffd\ufffdn" in plugin.index.capture(path, "h").names
    for lane in [ln["key"] for ln in cap["lanes"]][:3]:
        code, answer = get("/event", run="r", host="h", lane=lane, index=0)
        assert code in (200, 404), (lane, code, answer)
    assert len(calls) == 1, calls


def test_io_record_nested_too_deep(jax_captures, tmp_path):
    """The capture's tb_iotrace.io record (JSON in a plane stat) nested 100,000 deep: the
    reader's RecursionError was no error it expected (a 500). Now the record is not ours: the
    capture reads as one without I/O."""
    from tb_iotrace.store.xplane import load_xspace
    from tb_iotrace.store.xplane.schema import IO_STAT

    space = load_xspace(jax_captures[0])
    hits = 0
    for plane in space.planes:
        for stat in plane.stats:
            if plane.stat_metadata[stat.metadata_id].name == IO_STAT:
                stat.bytes_value = b"[" * 100_000 + b"]" * 100_000
                hits += 1
    assert hits == 1
    _profile(tmp_path, "r", "h", space.SerializeToString())
    _, get = make_client(tmp_path)
    for route in ROUTES:
        code, body = get(route, run="r", host="h")
        assert code == 200, (route, code, body)
    code, body = get("/capture", run="r", host="h")
    assert body["io"]["has_io"] is False


def test_all_hosts_with_one_unreadable_host(jax_captures, tmp_path):
    """One corrupt host made the whole "All hosts" view 422. Now the others are shown, and the
    bad one is named with its reason (in /capture's messages and both answers' ``unreadable``);
    a view with no readable host stays a 422."""
    good = jax_captures[0].read_bytes()
    _profile(tmp_path, "r", "a", good)
    _profile(tmp_path, "r", "b", good[:5000] + b"\xff" * 64)
    _profile(tmp_path, "r", "c", good)
    _profile(tmp_path, "bad", "x", b"\xff" * 64)
    _profile(tmp_path, "bad", "y", b"")
    _, get = make_client(tmp_path)
    for _ in range(2):  # and again, from the cache
        code, cap = get("/capture", run="r", host="__all__")
        assert code == 200, cap
        assert cap["hosts"] == ["a", "c"]
        assert [(u["host"], u["file"]) for u in cap["unreadable"]] == [("b", "b.xplane.pb")]
        assert "corrupt" in cap["unreadable"][0]["error"]
        assert any("Host b is left out" in m for m in cap["messages"]), cap["messages"]
        for route in ROUTES:
            code, body = get(route, run="r", host="__all__")
            assert code == 200, (route, code, body)
        code, hosts = get("/hosts", run="r", host="__all__")
        assert [h["host"] for h in hosts["hosts"]] == ["a", "c"] and hosts["unreadable"][0]["host"] == "b"
    code, body = get("/capture", run="r", host="b")
    assert code == 422 and body["file"] == "b.xplane.pb"
    code, body = get("/capture", run="bad", host="__all__")
    assert code == 422 and "cannot read this capture" in body["error"]
    # the bad host repaired: it joins the view
    _profile(tmp_path, "r", "b", good)
    code, cap = get("/capture", run="r", host="__all__")
    assert code == 200 and cap["hosts"] == ["a", "b", "c"] and cap["unreadable"] == []


KILLED_SERVER = r"""
import os, signal, sys
from plugin_client import make_client
_, get = make_client(sys.argv[1])
code, runs = get("/runs")
run = runs["runs"][0]
code, _ = get("/capture", run=run["run"], host=run["hosts"][0])
assert code == 200, code
os.kill(os.getpid(), signal.SIGKILL)   # a crash: no exit handlers run
"""


def test_killed_server_leaves_no_converted_folder_behind(tmp_path):
    """A TensorBoard killed after converting a PyTorch trace left /tmp/tb_iotrace-kineto-*
    behind for good; the next one to convert now removes the folders of dead processes (and
    only those: a live process's folder stays)."""
    import subprocess
    import sys

    logdir, tmp = tmp_path / "logdir", tmp_path / "tmp"
    (logdir / "r").mkdir(parents=True)
    tmp.mkdir()
    data = Path(__file__).resolve().parents[1] / "data"
    shutil.copyfile(data / "torch_loader.pt.trace.json.gz", logdir / "r" / "w.1.pt.trace.json.gz")
    fixtures = Path(__file__).parent / "fixtures"
    env = dict(os.environ, TMPDIR=str(tmp), TBIO_PLUGIN_PREFETCH="0",
               PYTHONPATH=os.pathsep.join([str(fixtures), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, "-c", KILLED_SERVER, str(logdir)], env=env, capture_output=True, text=True)
    assert got.returncode == -9, got.stderr
    left = [p.name for p in tmp.iterdir() if p.name.startswith("tb_iotrace-kineto-")]
    assert len(left) == 1, left
    live = tmp / f"tb_iotrace-kineto-{os.getppid()}-live"   # a running process's folder
    live.mkdir()
    # the next server, on its first conversion
    got = subprocess.run([sys.executable, "-c", KILLED_SERVER, str(logdir)], env=env, capture_output=True, text=True)
    assert got.returncode == -9, got.stderr
    now = sorted(p.name for p in tmp.iterdir() if p.name.startswith("tb_iotrace-kineto-"))
    assert left[0] not in now and live.name in now and len(now) == 2, (left, now)


def test_invalid_utf8_event_name_in_the_cli(jax_captures, tmp_path, capsys):
    """The CLI's reader (protobuf on the whole file) refused the capture outright for one
    name of stray bytes; it reads it now as the tab does."""
    from tb_iotrace.cli import main

    body = jax_captures[0].read_bytes()
    name = b"ThreadpoolListener::Record"
    assert body.count(name) == 1
    path = _profile(tmp_path, "r", "h", body.replace(name, name[:-2] + b"\xff\xfe"))
    assert main(["report", str(path), "--json"]) == 0, capsys.readouterr().err
    assert '"bytes_read"' in capsys.readouterr().out


@pytest.mark.parametrize("error", [RecursionError("maximum recursion depth exceeded"), MemoryError(),
                                   LookupError("a decoder's own error")])
def test_any_decoding_failure_is_a_cached_422(jax_captures, tmp_path, error):
    """Whatever a decoder raises on a file's content is that file's 422, kept for its version:
    an error outside the few the cache knew (RecursionError, MemoryError...) was a 500 on every
    request, each decoding the file again."""
    _profile(tmp_path, "r", "h", jax_captures[1].read_bytes())
    plugin, get = make_client(tmp_path)
    calls = []

    def loader(path, host):
        calls.append(path)
        raise error

    plugin.index.loader = loader
    for _ in range(3):
        code, body = get("/capture", run="r", host="h")
        assert code == 422 and type(error).__name__ in body["error"], body
    assert len(calls) == 1
