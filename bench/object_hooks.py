"""What recording object requests costs a request: GETs of a 64 KiB file from a local HTTP
server (127.0.0.1) through requests, without a capture and inside one, interleaved in blocks in
one run (so the machine's load hits both alike; the server is in this process, so the traced
block also traces its file reads), and the recording's own work per request
(naming, noting, finishing: no network) timed alone. Idle there is nothing to measure: no
wrapper is installed outside a recording (tests/unit/test_object_hooks.py checks the methods
are the originals).

    python bench/object_hooks.py [--rounds 10] [--per-round 40]
"""
from __future__ import annotations

import argparse
import functools
import http.server
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=40)
    args = ap.parse_args()
    import requests

    import tb_iotrace
    from tb_iotrace.base import objreqs
    from tb_iotrace.base.objnames import classify, parse_range

    root = tempfile.mkdtemp(prefix="objects-bench-")
    Path(root, "o.bin").write_bytes(b"x" * (64 << 10))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(
        type("Q", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None}), directory=root))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/o.bin"
    s = requests.Session()
    s.get(url).content

    def block() -> float:
        t = time.perf_counter()
        for _ in range(args.per_round):
            s.get(url).content
        return (time.perf_counter() - t) / args.per_round

    plain, traced = [], []
    for _ in range(args.rounds):
        plain.append(block())
        with tb_iotrace.capture() as cap:      # the block timed inside: not the capture's start and stop
            traced.append(block())
        assert len(cap.objects) == args.per_round
    n = 20_000
    t = time.perf_counter()
    with tb_iotrace.capture():
        for _ in range(n):
            nm = classify("GET", url + "?X-Amz-Signature=abc", {"Range": "bytes=0-65535"})
            r = objreqs.start(nm.service, nm.name, nm.bucket, nm.key, nm.op, parse_range("bytes=0-65535"), "urllib3")
            objreqs.answered(r, 200)
            objreqs.finish(r, 65536)
    own = (time.perf_counter() - t) / n
    httpd.shutdown()
    p, q = statistics.median(plain), statistics.median(traced)
    print(f"load {os.getloadavg()[0]:.1f}; {args.rounds} rounds x {args.per_round} GETs of 64 KiB from 127.0.0.1")
    print(f"GET untraced {p * 1e6:.0f} us, traced {q * 1e6:.0f} us (median per request): ratio {q / p:.3f}")
    print(f"the recording's own work per request: {own * 1e6:.1f} us")


if __name__ == "__main__":
    main()
