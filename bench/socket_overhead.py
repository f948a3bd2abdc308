#!/usr/bin/env python3
"""Per-call overhead of tb_iotrace on a socket recv, untraced, idle and traced, side by side.

    python bench/socket_overhead.py            # 15 rounds x 200,000 calls
    python bench/socket_overhead.py --quick    # smoke run (seconds)

bench/loop.c's ``tb_recv_peek_loop`` (built into a temporary shared library, called through its
own PLT/GOT slot: the slot the shim patches) calls ``recv(fd, buf, 64, MSG_PEEK)`` on a client
TCP connection to a server on 127.0.0.1 in this process, whose answer is waiting: a syscall that
neither waits nor consumes, the socket's counterpart of a cached pread. In one process, round by
round (order rotated each round), it times:

  untraced  hooks not installed (after tb_iotrace.disable())
  idle      hooks installed (tb_iotrace.enable()), no capture active
  traced    inside tb_iotrace.capture(): the endpoint's counters + a trace row per call

and prints the median ns/op of each mode and the median of the per-round paired differences
(CPU time of the thread: blind to time spent preempted on a busy machine). Every traced round
checks that the capture counted exactly one read and one trace row per call on the endpoint
``tcp://127.0.0.1:PORT`` (a check that fails exits 1)."""
from __future__ import annotations

import argparse
import ctypes
import socket
import statistics
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import tb_iotrace  # noqa: E402
from pread_overhead import CLOCK_THREAD_CPUTIME_ID, BenchError, build_loop, pin_cpu  # noqa: E402

SIZE = 64


def serve(lsock: socket.socket, stop: threading.Event) -> None:
    conn, _ = lsock.accept()
    with conn:
        conn.sendall(b"s" * 4096)
        stop.wait(600)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.calls = 3, 20_000
    cpu = pin_cpu(None)
    with tempfile.TemporaryDirectory(prefix="tbio-sockbench-") as tmp:
        lib = build_loop(Path(tmp))
        lib.tb_recv_peek_loop.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int]
        lib.tb_recv_peek_loop.restype = ctypes.c_int64
        lsock = socket.create_server(("127.0.0.1", 0))
        stop = threading.Event()
        t = threading.Thread(target=serve, args=(lsock, stop), daemon=True)
        t.start()
        tb_iotrace.enable()              # the connect below is seen: a client's endpoint
        cli = socket.create_connection(lsock.getsockname())
        port = lsock.getsockname()[1]
        fd = cli.fileno()
        while len(cli.recv(4096, socket.MSG_PEEK)) < SIZE:
            pass

        def loop() -> float:
            ns = lib.tb_recv_peek_loop(fd, args.calls, SIZE, CLOCK_THREAD_CPUTIME_ID)
            if ns < 0:
                raise BenchError("a recv in the loop did not return the bytes asked for")
            return ns / args.calls

        def untraced() -> float:
            tb_iotrace.disable()
            try:
                return loop()
            finally:
                tb_iotrace.enable()

        def traced() -> float:
            with tb_iotrace.capture() as cap:
                v = loop()
            name = f"tcp://127.0.0.1:{port}"
            recs = [f for f in cap.files if f.path == name]
            rows = sum(1 for p in cap.events.path if p == name)
            if len(recs) != 1 or recs[0].counters["POSIX_READS"] != args.calls or rows != args.calls:
                raise BenchError(f"the traced round did not count {args.calls} recv calls on {name}: "
                                 f"{[r.counters.get('POSIX_READS') for r in recs]} reads, {rows} rows")
            return v

        modes = {"untraced": untraced, "idle": loop, "traced": traced}
        got: dict[str, list[float]] = {k: [] for k in modes}
        loop()                             # warm-up
        for r in range(args.rounds):
            order = list(modes)[r % 3:] + list(modes)[:r % 3]
            for k in order:
                got[k].append(modes[k]())
        stop.set()
        cli.close()
        t.join(10)
        lsock.close()
    med = {k: statistics.median(v) for k, v in got.items()}
    paired = {k: statistics.median([a - b for a, b in zip(got[k], got["untraced"])]) for k in ("idle", "traced")}
    print(f"recv(MSG_PEEK) of {SIZE} B, {args.rounds} rounds x {args.calls} calls, CPU time, pinned to cpu {cpu}")
    print(f"  {'mode':<9} {'ns/op':>8} {'paired +ns/op':>14} {'ratio':>6}")
    for k in modes:
        add = "" if k == "untraced" else f"{paired[k]:>+14.1f}"
        print(f"  {k:<9} {med[k]:>8.1f} {add:>14} {med[k] / med['untraced']:>6.3f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"socket_overhead: {exc}", file=sys.stderr)
        sys.exit(1)
