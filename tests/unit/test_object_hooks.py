"""Object requests noted from the HTTP funnels (tb_iotrace.recording.object_hooks) while a
capture records, against a plain HTTP server on 127.0.0.1: urllib3, requests and aiohttp, with
their bytes, ranges, statuses and errors; nothing is wrapped or noted outside a capture; a
forked child starts with nothing; a capture's XPlane record carries the requests."""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Iterator

import pytest

import tb_iotrace
from tb_iotrace.base import objreqs
from tb_iotrace.recording import object_hooks

urllib3 = pytest.importorskip("urllib3")
requests = pytest.importorskip("requests")
aiohttp = pytest.importorskip("aiohttp")
sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from slow_proxy import FileServer  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    (root / "a.bin").write_bytes(b"a" * 100_000)
    (root / "b.bin").write_bytes(b"b" * 5_000)
    srv = FileServer(str(root))
    try:
        yield srv
    finally:
        srv.stop()


def _originals() -> tuple:
    import aiohttp.client
    import urllib3.connectionpool
    import urllib3.response

    return (urllib3.connectionpool.HTTPConnectionPool.__dict__["urlopen"],
            urllib3.response.HTTPResponse.__dict__["release_conn"],
            aiohttp.client.ClientSession.__dict__["_request"])


def _dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_requests_noted_while_capturing_only(server: FileServer) -> None:
    import asyncio

    before = _originals()
    requests.get(f"{server.endpoint}/b.bin", timeout=10)          # not recording: not noted
    with tb_iotrace.capture() as cap:
        assert _originals() != before
        r = requests.get(f"{server.endpoint}/a.bin?sig=SECRETQ", timeout=10)
        assert len(r.content) == 100_000
        pool = urllib3.PoolManager()
        assert len(pool.request("GET", f"{server.endpoint}/b.bin").data) == 5_000
        assert requests.get(f"{server.endpoint}/nope.bin", timeout=10).status_code == 404
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{_dead_port()}/x", timeout=10)

        async def fetch() -> int:
            async with aiohttp.ClientSession() as s:
                async with s.get(f"{server.endpoint}/a.bin") as resp:
                    return len(await resp.read())

        assert asyncio.run(fetch()) == 100_000
    assert _originals() == before                                 # put back
    requests.get(f"{server.endpoint}/b.bin", timeout=10)
    got = [(r["client"], r["object"].rsplit("/", 1)[1], r["op"], r["status"], r["bytes"], r["error"], r["complete"])
           for r in cap.objects]
    assert got == [("urllib3", "a.bin", "GET", 200, 100_000, "", True),
                   ("urllib3", "b.bin", "GET", 200, 5_000, "", True),
                   ("urllib3", "nope.bin", "GET", 404, got[2][4], "", True),
                   ("urllib3", "x", "GET", 0, 0, got[3][5], False),
                   ("aiohttp", "a.bin", "GET", 200, 100_000, "", True)]
    assert got[3][5]                                             # the exception's class name
    for r in cap.objects:
        assert r["object"].startswith("http://127.0.0.1:") and "?" not in r["object"] and "SECRETQ" not in str(r)
        assert r["pid"] == os.getpid() and r["start_ns"] <= r["end_ns"]
        if r["status"]:
            assert r["start_ns"] < r["ttfb_ns"] <= r["end_ns"]
    assert objreqs.between(0, 2**63) == []                       # freed when the last capture ended


def test_range_header_and_xplane_record(server: FileServer) -> None:
    from tb_iotrace.store.objcolumns import checked, rows
    from tb_iotrace.store.xplane import io_space_bytes, parse_xspace, read_io_data

    with tb_iotrace.capture() as cap:
        r = requests.get(f"{server.endpoint}/a.bin", headers={"Range": "bytes=10-19"}, timeout=10)
    assert r.status_code in (200, 206)       # http.server ignores Range: the whole file comes
    [req] = cap.objects
    assert (req["range_start"], req["range_end"]) == (10, 19) and req["bytes"] == len(r.content)
    space = parse_xspace(bytes(io_space_bytes(cap.to_iotrace(), "/host:tb_iotrace")))
    assert rows(checked(read_io_data(space).objects)) == cap.objects


def test_idle_process_has_no_wrapper_and_a_fork_starts_empty(server: FileServer) -> None:
    before = _originals()
    with tb_iotrace.capture():
        requests.get(f"{server.endpoint}/b.bin", timeout=10)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:       # the child: no recording of its own, nothing of the parent's
            ok = not object_hooks.active() and objreqs.between(0, 2**63) == [] and _originals() == before
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
        os.close(w)
        assert os.read(r, 1) == b"1"
        os.close(r)
        os.waitpid(pid, 0)
    assert not object_hooks.active()


def test_whole_run_record_carries_objects(server: FileServer, tmp_path: Path) -> None:
    """``tb-iotrace run``: the process's record holds its requests, a forked child's its own;
    the report names them."""
    import json
    import subprocess

    script = tmp_path / "job.py"
    script.write_text("import multiprocessing as mp, requests, sys\n"
                      "def child(url):\n"
                      "    requests.get(url + '/b.bin', timeout=10).content\n"
                      "if __name__ == '__main__':\n"
                      "    for name in ('a.bin', 'b.bin', 'a.bin'):\n"
                      "        requests.get(sys.argv[1] + '/' + name + '?token=SECRETSIG', timeout=10).content\n"
                      "    p = mp.get_context('fork').Process(target=child, args=(sys.argv[1],))\n"
                      "    p.start(); p.join()\n")
    logdir = tmp_path / "logs"
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "run", "--logdir", str(logdir), "--quiet", "--",
                        sys.executable, str(script), server.endpoint], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", "--json", str(logdir)], capture_output=True,
                         text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    hosts = json.loads(rep.stdout)["runs"][0]["hosts"]
    [host] = [h for h in hosts if h["process"]["exit"]["how"] == "exit"]
    [forked] = [h for h in hosts if h is not host]      # a forked child records its own requests
    assert forked["process"]["ppid"] == host["process"]["pid"]
    assert [(o["object"].rsplit("/", 1)[1], o["counters"]["OBJ_BYTES_READ"]) for o in forked["objects"]["objects"]] \
        == [("b.bin", 5_000)]
    objs = {o["object"].rsplit("/", 1)[1]: o["counters"] for o in host["objects"]["objects"]}
    assert objs["a.bin"]["OBJ_GETS"] == 2 and objs["a.bin"]["OBJ_BYTES_READ"] == 200_000
    assert objs["a.bin"]["OBJ_REFETCHED_BYTES"] == 100_000 and objs["b.bin"]["OBJ_BYTES_READ"] == 5_000
    assert "SECRETSIG" not in rep.stdout
    assert not any(b"SECRETSIG" in p.read_bytes() for p in logdir.rglob("*") if p.is_file())
