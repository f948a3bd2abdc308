"""Sockets through every format: the bytes a job exchanged with a server on 127.0.0.1 are on
its endpoint, exactly what the server counted, in a PyTorch trace_handler window (Kineto JSON)
and in a whole-run record of ``tb-iotrace run``; the report lists the endpoint (text and
``"endpoints"`` in --json) and the model gives the socket calls as intervals per thread."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tb_iotrace.model.endpoints import source_endpoints, source_socket_intervals
from tb_iotrace.model.open_source import open_source

PY = sys.executable
SCRIPTS = Path(__file__).parent / "scripts"
FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "fixtures"


def _report(path: Path) -> dict:
    r = subprocess.run([PY, "-m", "tb_iotrace", "report", str(path), "--json"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def _endpoints_of_port(doc: dict, port: int) -> list[dict]:
    return [e for run in doc["runs"] for h in run["hosts"] for e in h.get("endpoints", [])
            if e["endpoint"].endswith(f":{port}")]


@pytest.mark.torch
def test_trace_handler_window(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    p = subprocess.run([PY, str(SCRIPTS / "torch_sockets.py"), str(tmp_path)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads((tmp_path / "result.json").read_text())
    inside = res["inside"]
    assert inside["connections"] == 8        # 4 active steps x batches of 2, one GET each
    doc = _report(tmp_path / "log")
    eps = _endpoints_of_port(doc, inside["port"])
    assert [e["endpoint"] for e in eps] == [f"tcp://localhost:{inside['port']}"]
    (e,) = eps
    assert e["bytes_in"] == inside["sent"] and e["bytes_out"] == inside["received"]
    assert e["connections"] == inside["connections"]
    # each GET waits 30 ms on the server: the steps wait on storage, and the verdict says so
    (v,) = [h["verdict"] for run in doc["runs"] for h in run["hosts"] if h.get("verdict")]
    b = v["wait_breakdown"]
    assert v["bound"] == "input" and b["file_io"] == 0.0
    assert b["object_io"] > 0.5 and b["object_io"] > b["decode"], b
    (ib,) = [f for run in doc["runs"] for h in run["hosts"] for f in h["findings"] if f.get("id") == "input-bound"]
    assert ib["evidence"]["network_io_during_wait_s"] > 0.5 * ib["evidence"]["input_wait_s"]
    assert "Storage over the network (socket calls) covered" in ib["statement"]
    txt = subprocess.run([PY, "-m", "tb_iotrace", "report", str(tmp_path / "log")], capture_output=True,
                         text=True, timeout=300)
    assert txt.returncode == 0 and "Storage endpoints" in txt.stdout and f"localhost:{inside['port']}" in txt.stdout
    srcs = [s for s in open_source(str(tmp_path / "log")) if source_endpoints(s)]
    assert srcs and any(source_socket_intervals(s) for s in srcs)


@pytest.mark.tf
def test_tensorflow_window(tmp_path: Path) -> None:
    """A TF profile window's capture (XPlane I/O lines in the .xplane.pb) holds the endpoint."""
    pytest.importorskip("tensorflow")
    p = subprocess.run([PY, str(SCRIPTS / "tf_sockets.py"), str(tmp_path)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    truth = json.loads((tmp_path / "result.json").read_text())
    doc = _report(tmp_path / "logs")
    eps = _endpoints_of_port(doc, truth["port"])
    assert [e["endpoint"] for e in eps] == [f"tcp://localhost:{truth['port']}"]
    assert eps[0]["bytes_in"] == truth["sent"] and eps[0]["bytes_out"] == truth["received"]
    assert eps[0]["connections"] == truth["connections"] == 6


@pytest.mark.tf
def test_tensorflow_gcs_reader(tmp_path: Path) -> None:
    """TensorFlow's own gs:// reader (libcurl, C++) reading 300,000 bytes from gcp-storage-emulator
    through a TLS-ending proxy on 127.0.0.1: its endpoint (the proxy) holds every connection and
    the bytes the proxy counted on the wire, exactly but for TLS close alerts (24 bytes each: one
    side may close before reading the other's)."""
    pytest.importorskip("tensorflow")
    pytest.importorskip("gcp_storage_emulator")
    pytest.importorskip("cryptography")       # moto's dependency: the test CA and certificate
    try:
        p = subprocess.run([PY, str(SCRIPTS / "tf_gcs_proxy.py"), str(tmp_path)], capture_output=True, text=True,
                           timeout=300)
    except subprocess.TimeoutExpired as exc:     # the script's stacks at 240 s say where it hung
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else str(exc.stderr or "")
        pytest.fail(f"tf_gcs_proxy.py ran past 300 s:\n{err[-6000:]}")
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads((tmp_path / "result.json").read_text())
    assert res["read_ok"] and res["size"] == 300_000
    eps = [e for e in res["endpoints"] if e["endpoint"].endswith(f":{res['proxy_port']}")]
    assert len(eps) == 1, res["endpoints"]
    (e,), wire = eps, res["proxy"]
    assert e["connections"] == wire["conns"] >= 1
    alerts = 24 * wire["conns"]
    # what TensorFlow wrote, against what the proxy read: a close alert written as the proxy closed
    assert 0 <= e["bytes_out"] - wire["in"] <= alerts, (e, wire)
    # what the proxy wrote, against what TensorFlow read: a close alert left unread
    assert 0 <= wire["out"] - e["bytes_in"] <= alerts, (e, wire)
    assert e["bytes_in"] > 300_000                  # the object, inside TLS records


RUN_SCRIPT = textwrap.dedent(r'''
    import json, sys
    from counting_server import CountingServer
    import socket_clients
    with CountingServer() as srv:
        socket_clients.all_clients(srv.port)
        srv.wait_idle()
    json.dump({"port": srv.port, "received": srv.received, "sent": srv.sent, "connections": srv.connections},
              open(sys.argv[1], "w"))
''')


def test_run_record(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(RUN_SCRIPT)
    out = tmp_path / "truth.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ.get("PYTHONPATH", ""), str(FIXTURES)])}
    r = subprocess.run([PY, "-m", "tb_iotrace", "run", "--logdir", str(tmp_path / "logs"), "--", PY, str(script),
                        str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    truth = json.loads(out.read_text())
    doc = _report(tmp_path / "logs")
    eps = _endpoints_of_port(doc, truth["port"])
    assert f"tcp://localhost:{truth['port']}" in {e["endpoint"] for e in eps}
    assert sum(e["bytes_out"] for e in eps) == truth["received"]
    assert sum(e["bytes_in"] for e in eps) == truth["sent"]
    assert sum(e["connections"] for e in eps) == truth["connections"] == 3
    # the record's trace: the same bytes on its socket rows, on the main thread
    (src,) = [s for s in open_source(str(tmp_path / "logs")) if source_endpoints(s)]
    cols, _ = src.io_columns()
    rows = [i for i, p in enumerate(cols["path"]) if str(p).endswith(f":{truth['port']}")]
    reads = [i for i in rows if str(cols["op"][i]).startswith(("recv", "read"))]
    assert sum(max(0, int(cols["returned"][i])) for i in reads) == truth["sent"]
    assert source_socket_intervals(src)
    # the tab: the endpoint's rows on the file-access timeline, named by the endpoint
    from plugin_client import items_of, make_client

    _, get = make_client(tmp_path / "logs")
    host = Path(src.path).name[:-len(".json")]
    code, cap = get("/capture", run="iotrace", host=host)
    assert code == 200, cap
    code, tl = get("/timeline", run="iotrace", host=host, width=1200)
    assert code == 200, tl
    assert f"tcp://localhost:{truth['port']}" in tl["files"] and items_of(tl)
    code, files = get("/files", run="iotrace", host=host)
    assert code == 200 and f"tcp://localhost:{truth['port']}" in files["path"]
