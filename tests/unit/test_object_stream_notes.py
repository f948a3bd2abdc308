"""The notes of tb_iotrace.recording.object_streams without the clients: URLs found in pipe
commands, a pipe read to its end (complete) or closed early (not), a failing command (an
error), and a CRT-like stream of chunks counted with its range."""
from __future__ import annotations

import pytest

from tb_iotrace.base import objreqs
from tb_iotrace.recording import object_streams as os_


def test_url_in_commands() -> None:
    assert os_.url_in(["curl", "-s", "-L", "https://h.example:8443/a/b.tar?sig=x"]) == "https://h.example:8443/a/b.tar?sig=x"
    assert os_.url_in("aws s3 cp s3://bucket/shards/x-000.tar - | cat") == "s3://bucket/shards/x-000.tar"
    assert os_.url_in("gsutil cat 'gs://b/k.tar'") == "gs://b/k.tar"
    assert os_.url_in(["cat", "/data/local.tar"]) is None


class FakePipe:
    def __init__(self, args, mode="rb", chunks=(b"ab", b"cde"), fail=False):
        self.chunks, self.fail = list(chunks), fail

    def read(self, n=-1):
        if self.fail:
            raise OSError("exit 22")
        return self.chunks.pop(0) if self.chunks else b""

    def close(self):
        pass


def _pipe(**kw):
    cls = type("P", (FakePipe,), {})
    cls.__init__ = os_._pipe_init(lambda: True)(FakePipe.__init__)
    cls.read = os_._pipe_read(FakePipe.read)
    cls.close = os_._pipe_close(FakePipe.close)
    return cls(["curl", "-s", "http://127.0.0.1:9/s-1.tar"], mode="rb", **kw)


def _last() -> dict:
    return objreqs.between(0, 2**63 - 1)[-1]


def test_a_pipe_read_to_its_end_is_one_complete_get() -> None:
    p = _pipe()
    assert p.read(4096) + p.read(4096) + p.read(4096) == b"abcde"
    p.close()
    r = _last()
    assert (r["object"], r["op"], r["bytes"], r["complete"], r["client"]) == \
        ("http://127.0.0.1:9/s-1.tar", "GET", 5, True, "webdataset")
    assert r["start_ns"] <= r["ttfb_ns"] <= r["end_ns"]


def test_a_pipe_closed_early_is_not_complete_and_a_failing_one_is_an_error() -> None:
    p = _pipe()
    p.read(2)
    p.close()
    r = _last()
    assert r["bytes"] == 2 and not r["complete"] and r["error"] == ""
    q = _pipe(fail=True)
    with pytest.raises(OSError):
        q.read(10)
    r = _last()
    assert r["error"] == "OSError" and not r["complete"]


def test_a_crt_stream_is_counted_with_its_range() -> None:
    req = os_._start("s3://b/k", "GET", os_._range(100, 200), "s3torchconnector", 1)
    s = os_._CountedStream(iter([b"x" * 60, b"y" * 40]), req)
    assert sum(len(c) for c in s) == 100
    assert (req["bytes"], req["complete"], req["range_start"], req["range_end"]) == (100, True, 100, 199)
