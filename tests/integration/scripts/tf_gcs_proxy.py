"""TensorFlow's own gs:// reader (its C++ filesystem on libcurl) reading an object from
gcp-storage-emulator on 127.0.0.1, inside a tb_iotrace capture (tests/integration/test_sockets_windows.py).

TensorFlow 2.21 has no endpoint override for gs://: its URLs (https://www.googleapis.com/...,
https://storage.googleapis.com/...) are compiled in. Its libcurl honours ``https_proxy`` and
``CURL_CA_BUNDLE``, so a CONNECT proxy here, with a certificate for those two names signed by a CA
made for the run, ends TLS and relays the plain HTTP to the emulator; ``GOOGLE_AUTH_TOKEN_FOR_TESTING``
and ``NO_GCE_CHECK`` keep TensorFlow from asking the GCE metadata server. The proxy runs TLS over
memory BIOs and counts every raw byte of each tunnel, in and out: the ground truth for TensorFlow's
endpoint, which is the proxy (``tcp://127.0.0.1:PORT``).

    tf_gcs_proxy.py WORK    -> WORK/result.json
"""
import datetime
import faulthandler
import json
import os
import select
import socket
import ssl
import sys
import threading
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

work = sys.argv[1]
# a run that hangs (once in a stress run: killed at the test's 300 s with nothing said) leaves
# every thread's stack on stderr first, for the test's message
faulthandler.dump_traceback_later(240, exit=False)


def name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

now = datetime.datetime.now(datetime.timezone.utc)
ca_key = ec.generate_private_key(ec.SECP256R1())
ca = (x509.CertificateBuilder().subject_name(name("tbio test CA")).issuer_name(name("tbio test CA"))
      .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
      .not_valid_after(now + datetime.timedelta(days=1))
      .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
key = ec.generate_private_key(ec.SECP256R1())
leaf = (x509.CertificateBuilder().subject_name(name("www.googleapis.com")).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(2).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("www.googleapis.com"),
                                                    x509.DNSName("storage.googleapis.com")]), critical=False)
        .sign(ca_key, hashes.SHA256()))
ca_pem, cert_pem, key_pem = (os.path.join(work, n) for n in ("ca.pem", "leaf.pem", "key.pem"))
open(ca_pem, "wb").write(ca.public_bytes(serialization.Encoding.PEM))
open(cert_pem, "wb").write(leaf.public_bytes(serialization.Encoding.PEM))
open(key_pem, "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))

from gcp_storage_emulator.server import create_server
emu = create_server("127.0.0.1", 0, in_memory=True, default_bucket="bkt")
emu.start()
eport = emu._api._httpd.server_address[1]
DATA = os.urandom(300_000)
req = urllib.request.Request(f"http://127.0.0.1:{eport}/upload/storage/v1/b/bkt/o?uploadType=media&name=data.bin",
                             data=DATA, method="POST", headers={"Content-Type": "application/octet-stream"})
urllib.request.urlopen(req, timeout=60).read()
print("uploaded", file=sys.stderr, flush=True)

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert_pem, key_pem)
lsock = socket.create_server(("127.0.0.1", 0))
pport = lsock.getsockname()[1]
totals = {"in": 0, "out": 0, "conns": 0}
lock = threading.Lock()
threads = []

def handle(c):
    """One tunnel: CONNECT, then TLS over memory BIOs, so every raw byte is counted here."""
    n_in = n_out = 0
    head = b""
    while b"\r\n\r\n" not in head:
        d = c.recv(1)
        if not d:
            return
        head += d
    n_in += len(head)
    ok = b"HTTP/1.1 200 Connection established\r\n\r\n"
    c.sendall(ok)
    n_out += len(ok)
    inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, outg, server_side=True)
    up = socket.create_connection(("127.0.0.1", eport))
    open_ = True
    c.settimeout(30)

    def flush():
        nonlocal n_out
        d = outg.read()
        if d:
            c.sendall(d)
            n_out += len(d)

    def feed():
        nonlocal n_in, open_
        d = c.recv(65536)
        n_in += len(d)
        if d:
            inc.write(d)
        else:
            inc.write_eof()
            open_ = False

    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            flush()
            feed()
            if not open_:
                return
    def relay_up():
        """Everything decrypted so far, to the emulator."""
        while True:
            try:
                d = obj.read(65536)
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            if not d:
                break
            up.sendall(d)
        flush()

    # the client's request may have come in the same read as its handshake's end: relay it now,
    # not after the next bytes on the socket (there are none until it gets an answer: the run
    # hung so under load, once in a stress run and 2 of 3 runs beside it)
    flush()
    relay_up()
    while open_:
        r, _, _ = select.select([c, up], [], [], 30)
        if not r:
            break
        if c in r:
            feed()
            relay_up()
        if up in r:
            d = up.recv(65536)
            if not d:
                break
            obj.write(d)
            flush()
    # the server answered and closed: close the TLS session (close_notify) and count what the
    # client still sends (its own close_notify) until it closes, for at most 2 s
    try:
        obj.unwrap()
    except ssl.SSLError:
        pass
    flush()
    c.settimeout(2)
    while open_:
        try:
            feed()
        except OSError:
            break
    up.close()
    c.close()
    with lock:
        totals["in"] += n_in
        totals["out"] += n_out
        totals["conns"] += 1


def accept():
    lsock.settimeout(0.5)
    while not stop.is_set():
        try:
            c, _ = lsock.accept()
        except OSError:
            continue
        th = threading.Thread(target=handle, args=(c,), daemon=True)
        th.start()
        threads.append(th)


stop = threading.Event()
threading.Thread(target=accept, daemon=True).start()

os.environ.update({"https_proxy": f"http://127.0.0.1:{pport}", "HTTPS_PROXY": f"http://127.0.0.1:{pport}",
                   "CURL_CA_BUNDLE": ca_pem, "GOOGLE_AUTH_TOKEN_FOR_TESTING": "not-a-token", "NO_GCE_CHECK": "True",
                   "no_proxy": "", "NO_PROXY": ""})
import tb_iotrace
tb_iotrace.enable()
import tensorflow as tf
print("tensorflow imported", file=sys.stderr, flush=True)
with tb_iotrace.capture() as cap:
    with tf.io.gfile.GFile("gs://bkt/data.bin", "rb") as f:
        got = f.read()
print("read", file=sys.stderr, flush=True)
for th in threads:
    th.join(30)
stop.set()
eps = [{"endpoint": f.path, "connections": f.counters["POSIX_OPENS"], "bytes_in": f.counters["POSIX_BYTES_READ"],
        "bytes_out": f.counters["POSIX_BYTES_WRITTEN"]} for f in cap.files if f.path.startswith("tcp://")]
json.dump({"read_ok": got == DATA, "size": len(got), "proxy_port": pport, "proxy": totals, "endpoints": eps},
          open(os.path.join(work, "result.json"), "w"))
emu.stop()
