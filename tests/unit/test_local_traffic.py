"""tb_iotrace.recording.local_traffic: the job's own peers (MASTER_ADDR:MASTER_PORT, a tcp://
init_method, TF_CONFIG's cluster) and the windows around torch.distributed's group calls make
connections local: a client connection in a capture is no endpoint then, and is one otherwise."""
from __future__ import annotations

import json
import socket
import threading
import types
from collections.abc import Iterator

import pytest

from tb_iotrace.recording import api, local_traffic
from tb_iotrace.recording.ffi import native


@pytest.fixture()
def server() -> Iterator[int]:
    """A server on 127.0.0.1 that answers each connection's 4 bytes with 4 bytes."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(10)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                return
            with c:
                if c.recv(4):
                    c.sendall(b"pong")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    srv.close()
    t.join(10)


def _talk(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"ping")
        assert s.recv(4) == b"pong"


def _endpoints(fn) -> list[str]:   # type: ignore[no-untyped-def]
    """The ports of the endpoints a capture of fn() lists (a name this process resolved for
    127.0.0.1 may name them: the port tells them apart)."""
    api.enable()
    with api.capture() as cap:
        fn()
    paths = [f.to_dict()["path"] for f in cap.files]
    return sorted(p.rsplit(":", 1)[1] for p in paths if p.startswith("tcp://"))


def test_tf_config_cluster_addresses() -> None:
    raw = json.dumps({"cluster": {"worker": ["w0.example:2222", "[::1]:2223"], "ps": ["ps0:2224"],
                                  "chief": {"0": "c:2225"}}, "task": {"type": "worker", "index": 0}})
    assert local_traffic._tf_cluster(raw) == [("w0.example", 2222), ("::1", 2223), ("ps0", 2224), ("c", 2225)]
    assert local_traffic._tf_cluster("not json") == []
    assert local_traffic._tf_cluster(json.dumps({"cluster": {"worker": ["no-port"]}})) == []


def test_master_port_is_local(server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _endpoints(lambda: _talk(server)) == [str(server)]
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(server))
    local_traffic.register_env_peers()
    assert _endpoints(lambda: _talk(server)) == []


def test_tf_config_peer_is_local(server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": [f"localhost:{server}"]}}))
    monkeypatch.delenv("MASTER_PORT", raising=False)
    local_traffic.register_env_peers()
    assert _endpoints(lambda: _talk(server)) == []


def test_group_call_window_any_thread(server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrapped group call's connections are local, made on another thread too; after it, a
    connection to another server is an endpoint again; a tcp:// init_method is a local peer."""
    monkeypatch.delenv("MASTER_PORT", raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)

    def new_group() -> str:
        t = threading.Thread(target=_talk, args=(server,))
        t.start()
        t.join(10)
        return "group"

    def init_process_group(backend: str, init_method: str | None = None) -> None:
        return None

    dist = types.ModuleType("fake_dist")
    dist.new_group = new_group                            # type: ignore[attr-defined]
    dist.init_process_group = init_process_group          # type: ignore[attr-defined]
    wrapped = local_traffic._group_wrapper(dist.new_group, False)
    assert _endpoints(lambda: wrapped() == "group" or None) == []
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen(1)
    port = other.getsockname()[1]
    try:
        eps = _endpoints(lambda: socket.create_connection(("127.0.0.1", port), timeout=10).close())
        assert eps == [str(port)]
        init = local_traffic._group_wrapper(dist.init_process_group, True)
        init("gloo", init_method=f"tcp://127.0.0.1:{port}")
        assert _endpoints(lambda: socket.create_connection(("127.0.0.1", port), timeout=10).close()) == []
    finally:
        other.close()


def test_mark_existing(server: int) -> None:
    api.enable()
    s = socket.create_connection(("127.0.0.1", server), timeout=10)
    try:
        lib = native()[1]
        assert not lib.tbio_fd_is_local(s.fileno())
        assert local_traffic.mark_existing() >= 1
        assert lib.tbio_fd_is_local(s.fileno())

        def talk() -> None:
            s.sendall(b"ping")
            assert s.recv(4) == b"pong"

        assert _endpoints(talk) == []
    finally:
        s.close()


def test_tcp_store_is_local() -> None:
    """A TCPStore the job builds itself (master and client in this process) is no endpoint, and
    is still the class torch names."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch without torch.distributed")
    api.enable()
    from torch._C._distributed_c10d import TCPStore as Original

    assert getattr(dist.TCPStore, "_tbio_wrapper", False)
    stores = []

    def build() -> None:
        stores.append(dist.TCPStore("127.0.0.1", 0, 1, True, use_libuv=False))
        stores[0].set("k", "v")
        assert stores[0].get("k") == b"v"

    assert _endpoints(build) == []
    assert isinstance(stores[0], Original) and stores[0].port > 0
    del torch
