"""``/objects`` (tb_iotrace.plugin.endpoints.objects): each host's object requests as the report
gives them, the objects with most bytes first and at most TOP of them, malformed stored requests
named per host rather than failing the answer."""
from __future__ import annotations

from types import SimpleNamespace

from tb_iotrace.plugin.endpoints import objects
from tb_iotrace.plugin.endpoints.objects import objects_impl
from tb_iotrace.store.objcolumns import to_columns


def _req(obj: str, n: int, s: int) -> dict:
    return {"object": obj, "service": "s3", "bucket": "b", "key": obj[7:], "op": "GET", "range_start": -1,
            "range_end": -1, "status": 200, "error": "", "bytes": n, "start_ns": s, "ttfb_ns": s + 5,
            "end_ns": s + 10, "tid": 1, "pid": 1, "client": "urllib3", "complete": True}


def _view(**infos) -> SimpleNamespace:
    return SimpleNamespace(parts=[SimpleNamespace(host=h, capture=SimpleNamespace(io_info=info))
                                  for h, info in infos.items()])


def test_objects_per_host_most_bytes_first() -> None:
    reqs = [_req("s3://b/small", 10, 0), _req("s3://b/big", 1000, 20), _req("s3://b/big", 1000, 40)]
    got = objects_impl(_view(h0={"objects": to_columns(reqs, left_out=3)}, h1={}))
    assert got["errors"] == []
    [h] = got["hosts"]                       # a host without requests is left out
    assert h["host"] == "h0" and h["requests"] == 3 and h["bytes_read"] == 2010
    assert h["requests_left_out"] == 3
    assert [o["object"] for o in h["objects"]] == ["s3://b/big", "s3://b/small"]


def test_at_most_top_objects_the_rest_counted(monkeypatch) -> None:
    monkeypatch.setattr(objects, "TOP", 2)
    reqs = [_req(f"s3://b/k{i}", 100 + i, 10 * i) for i in range(5)]
    [h] = objects_impl(_view(h0={"objects": to_columns(reqs)}))["hosts"]
    assert [o["object"] for o in h["objects"]] == ["s3://b/k4", "s3://b/k3"]
    assert h["objects_left_out"] == 3


def test_malformed_requests_name_their_host() -> None:
    good = {"objects": to_columns([_req("s3://b/k", 5, 0)])}
    got = objects_impl(_view(bad={"objects": {"object": ["s3://b/k"], "bytes": "many"}}, good=good))
    assert [h["host"] for h in got["hosts"]] == ["good"]
    assert len(got["errors"]) == 1 and got["errors"][0].startswith("bad: ")
