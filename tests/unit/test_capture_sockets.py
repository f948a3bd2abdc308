"""Sockets in a capture: every byte a client exchanged with a server on 127.0.0.1 is on its
endpoint (tcp://HOST:PORT), exactly what the server counted, through a raw socket, urllib and
http.client; the server's own (accepted) side in the same process is never traced."""
from __future__ import annotations

import numpy as np

import tb_iotrace
from tb_iotrace.model.endpoints import endpoint_totals, socket_intervals

from counting_server import CountingServer
import socket_clients


def _of_port(eps, port):
    return [e for e in eps if e.name.endswith(f":{port}")]


def test_bytes_per_endpoint_exact() -> None:
    tb_iotrace.enable()
    with CountingServer() as srv:
        with tb_iotrace.capture() as cap:
            socket_clients.all_clients(srv.port)
        srv.wait_idle()
    eps = endpoint_totals([f.to_dict() for f in cap.files])
    mine = _of_port(eps, srv.port)
    names = {e.name for e in mine}
    # urllib asked for "localhost": that name; the others may be named by the address or by the
    # name this process resolved for it earlier
    assert f"tcp://localhost:{srv.port}" in names
    assert names <= {f"tcp://localhost:{srv.port}", f"tcp://127.0.0.1:{srv.port}"}
    assert srv.received > 5004 + 777           # the raw message, the POST body, the requests' heads
    assert sum(e.bytes_out for e in mine) == srv.received
    assert sum(e.bytes_in for e in mine) == srv.sent
    assert sum(e.connections for e in mine) == srv.connections == 3
    # nothing else: the server's accepted sockets (named by the clients' ports) are local
    assert eps == mine
    ev = cap.events
    paths = ev.path
    rows = np.array([str(p).endswith(f":{srv.port}") for p in paths], bool)
    assert rows.any()
    ops = set(ev.op[rows].tolist())
    assert {"connect", "recv"} <= ops and ops & {"send", "sendto", "sendmsg"}
    got = np.clip(ev.returned[rows], 0, None)
    reads = np.isin(ev.op[rows], ["recv", "recvfrom", "recvmsg", "read", "readv"])
    assert int(got[reads].sum()) == srv.sent
    # the model's intervals: the calls, on the thread that made them
    cols = {"start_ns": ev.start_ns, "end_ns": ev.end_ns, "path": paths, "tid": ev.tid, "fd": ev.fd,
            "errno": ev.errno}
    iv = socket_intervals(cols)
    assert set(iv) == set(np.unique(ev.tid[rows]).tolist())
    assert sum(len(s) for s, _ in iv.values()) == int(rows.sum())


def test_server_side_and_unix_sockets_are_local() -> None:
    """A server's accepted connection (its client another process, not captured) and a Unix
    socket pair carry bytes in the window, and none of them is an endpoint."""
    import os
    import socket
    import subprocess
    import sys

    fixtures = os.path.dirname(socket_clients.__file__)
    tb_iotrace.enable()
    with CountingServer() as srv:
        with tb_iotrace.capture() as cap:
            subprocess.run([sys.executable, "-c", f"import socket_clients; socket_clients.raw({srv.port})"],
                           cwd=fixtures, env={**os.environ, "PYTHONPATH": fixtures}, check=True, timeout=60)
            srv.wait_idle()
            assert srv.received == 5004 and srv.sent == 15000
            a, b = socket.socketpair()
            a.sendall(b"u" * 999)
            assert len(b.recv(999)) > 0
            a.close()
            b.close()
        srv.wait_idle()
    assert endpoint_totals([f.to_dict() for f in cap.files]) == []


def test_endpoints_survive_the_xplane_io_lines() -> None:
    """A capture's endpoints written as a profile's I/O plane (what a TensorFlow or JAX window
    carries) and read back: the same endpoints, the same counters, the same socket rows."""
    from tb_iotrace.store.xplane import io_space_bytes, parse_xspace, read_io_data

    tb_iotrace.enable()
    with CountingServer() as srv:
        with tb_iotrace.capture() as cap:
            socket_clients.with_urllib(srv.port, 54321)
            socket_clients.with_http_client(srv.port)
        srv.wait_idle()
    tr = read_io_data(parse_xspace(bytes(io_space_bytes(cap.to_iotrace(), "/host:CPU"))))
    assert tr is not None
    before = endpoint_totals([f.to_dict() for f in cap.files])
    after = endpoint_totals(list(tr.counters))
    assert [e.to_dict() for e in after] == [e.to_dict() for e in before]
    assert sum(e.bytes_in for e in after if e.name.endswith(f":{srv.port}")) == srv.sent
    rows = np.array([str(p).endswith(f":{srv.port}") for p in tr.path], bool)
    assert int(rows.sum()) == sum(1 for p in cap.events.path if str(p).endswith(f":{srv.port}"))


def test_an_excluded_endpoint_is_not_traced() -> None:
    """The path filters' exclude prefixes apply to endpoint names: one left out records nothing."""
    from tb_iotrace.recording.shim_settings import excludes, set_filters

    tb_iotrace.enable()
    before = excludes()
    with CountingServer() as srv:
        set_filters(exclude=[*before, f"tcp://127.0.0.1:{srv.port}", f"tcp://localhost:{srv.port}"])
        try:
            with tb_iotrace.capture() as cap:
                socket_clients.raw(srv.port)
                socket_clients.with_urllib(srv.port, 1000)
        finally:
            set_filters(exclude=before)
        srv.wait_idle()
    assert srv.sent > 15000
    assert endpoint_totals([f.to_dict() for f in cap.files]) == []


def test_a_polled_listening_socket_is_named_once(tmp_path) -> None:
    """A server's listening socket polled 200 times in a capture: named local on the first call
    and remembered (strace counts the shim's getpeername: at most one, not one per poll)."""
    import os
    import shutil
    import subprocess
    import sys
    import textwrap

    strace = shutil.which("strace") or "/usr/bin/strace"
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent('''
        import select, socket, tb_iotrace
        tb_iotrace.enable()
        srv = socket.create_server(("127.0.0.1", 0))
        p = select.poll()
        p.register(srv.fileno(), select.POLLIN)
        with tb_iotrace.capture() as cap:
            for _ in range(200):
                assert p.poll(0) == []
        assert not [f for f in cap.files if f.path.startswith("tcp://")]
        srv.close()     # (an unclosed socket's ResourceWarning would call getpeername itself)
        print("ok")
    '''))
    log = tmp_path / "strace.log"
    r = subprocess.run([strace, "-f", "-e", "trace=getpeername", "-o", str(log), sys.executable, str(script)],
                       capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    calls = [ln for ln in log.read_text().splitlines() if "getpeername(" in ln]
    assert len(calls) <= 1, calls
