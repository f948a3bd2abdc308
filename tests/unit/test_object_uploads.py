"""Uploads (PUT request bodies) are counted as bytes written to the object: a local HTTP server
on 127.0.0.1 that reads every body and answers 200 with no body; the bytes recorded must be
exactly the bytes the client sent, for urllib3 (requests) and aiohttp."""
from __future__ import annotations

import asyncio
import http.server
import threading
from typing import Iterator

import pytest

import tb_iotrace
from tb_iotrace.model.object_counters import object_records

requests = pytest.importorskip("requests")
aiohttp = pytest.importorskip("aiohttp")


class _Sink(http.server.BaseHTTPRequestHandler):
    got: list[int] = []

    def do_PUT(self) -> None:  # noqa: N802 (http.server's name)
        n = int(self.headers.get("Content-Length", 0))
        _Sink.got.append(len(self.rfile.read(n)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        n = int(self.headers.get("Content-Length", 0))
        _Sink.got.append(len(self.rfile.read(n)))
        answer = b"<x>" + b"r" * 300 + b"</x>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def sink() -> Iterator[str]:
    _Sink.got = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def test_put_bodies_are_bytes_written(sink: str) -> None:
    async def put(n: int) -> int:
        async with aiohttp.ClientSession() as s:
            async with s.put(f"{sink}/c.bin", data=b"c" * n) as resp:
                await resp.read()
                return resp.status

    with tb_iotrace.capture() as cap:
        assert requests.put(f"{sink}/a.bin", data=b"a" * 70_001, timeout=10).status_code == 200
        assert requests.put(f"{sink}/a.bin", data="é" * 10, timeout=10).status_code == 200   # 20 bytes
        assert requests.put(f"{sink}/b.bin", data=b"", timeout=10).status_code == 200
        assert asyncio.run(put(12_345)) == 200
    assert sorted(_Sink.got) == [0, 20, 12_345, 70_001]
    got = sorted((r["object"].rsplit("/", 1)[1], r["op"], r["bytes"]) for r in cap.objects)
    assert got == [("a.bin", "PUT", 20), ("a.bin", "PUT", 70_001), ("b.bin", "PUT", 0), ("c.bin", "PUT", 12_345)]
    recs = {r["object"].rsplit("/", 1)[1]: r["counters"] for r in object_records(list(cap.objects))}
    assert recs["a.bin"]["OBJ_BYTES_WRITTEN"] == 70_021 and recs["a.bin"]["OBJ_PUTS"] == 2
    assert recs["c.bin"]["OBJ_BYTES_WRITTEN"] == 12_345
    assert all(c["OBJ_BYTES_READ"] == 0 for c in recs.values())


def test_multipart_parts_count_their_bodies_only(sink: str) -> None:
    """A multipart upload's parts are bytes written; its create/complete requests (POSTs whose
    bodies and answers are XML about the upload) move no object bytes."""
    s3 = {"x-amz-content-sha256": "UNSIGNED-PAYLOAD"}       # what makes a request S3's
    with tb_iotrace.capture() as cap:
        assert requests.post(f"{sink}/bkt/obj?uploads", headers=s3, timeout=10).status_code == 200
        for n in (5_000, 777):
            assert requests.put(f"{sink}/bkt/obj?partNumber=1&uploadId=U", data=b"p" * n,
                                headers=s3, timeout=10).status_code == 200
        assert requests.post(f"{sink}/bkt/obj?uploadId=U", data=b"<done/>" * 20, headers=s3,
                             timeout=10).status_code == 200
    assert sorted(_Sink.got) == [0, 140, 777, 5_000]
    got = [(r["op"], r["bytes"]) for r in sorted(cap.objects, key=lambda r: r["start_ns"])]
    assert got == [("MPU", 0), ("MPU", 5_000), ("MPU", 777), ("MPU", 0)]
    [rec] = object_records(list(cap.objects))
    assert rec["counters"]["OBJ_BYTES_WRITTEN"] == 5_777 and rec["counters"]["OBJ_PUTS"] == 4
