"""tb_iotrace.base.objreqs: the object-storage requests a process made, opened, answered and
finished once, kept for the windows that overlap them."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tb_iotrace.base import objreqs


@pytest.fixture(autouse=True)
def empty() -> Iterator[None]:
    objreqs._forget()              # noqa: SLF001
    yield
    objreqs._forget()              # noqa: SLF001


def get(key: str = "k", rng: tuple[int, int] | None = None) -> dict:
    req = objreqs.start("s3", f"s3://b/{key}", "b", key, "GET", rng, "urllib3")
    assert req is not None
    return req


def test_a_request_opens_with_every_column_and_no_answer() -> None:
    req = get(rng=(0, 99))
    assert set(objreqs.COLUMNS) <= set(req)
    assert (req["range_start"], req["range_end"], req["status"], req["bytes"]) == (0, 99, 0, 0)
    assert req["start_ns"] > 0 and req["ttfb_ns"] == req["end_ns"] == 0 and not req["complete"]
    assert (get()["range_start"], get()["range_end"]) == (-1, -1)          # no Range header


def test_answered_keeps_the_first_answer() -> None:
    req = get()
    objreqs.answered(req, 206)
    first = req["ttfb_ns"]
    objreqs.answered(req, 500)
    assert (req["status"], req["ttfb_ns"]) == (206, first)
    objreqs.answered(None, 200)                     # past the cap: nothing to note


def test_finish_once_and_never_fewer_bytes() -> None:
    req = get()
    req["bytes"] = 50                               # counted while the body streamed
    objreqs.finish(req, 10)
    assert req["bytes"] == 50 and req["complete"] and req["end_ns"] >= req["ttfb_ns"] > 0
    end = req["end_ns"]
    objreqs.finish(req, 999, error="Timeout")       # a second finish changes nothing
    assert (req["bytes"], req["end_ns"], req["error"], req["complete"]) == (50, end, "", True)


def test_a_failed_request_has_no_first_byte() -> None:
    req = get()
    objreqs.finish(req, 0, error="ConnectionError")
    assert req["error"] == "ConnectionError" and req["ttfb_ns"] == 0 and not req["complete"]
    assert req["end_ns"] > 0


def test_an_upload_keeps_the_body_it_sent() -> None:
    req = objreqs.start("s3", "s3://b/up", "b", "up", "PUT", None, "urllib3")
    assert req is not None
    req["bytes"], req["sent"] = 4096, True
    objreqs.finish(req, 0)                          # the answer's body is empty
    assert req["bytes"] == 4096


def test_between_overlap_and_open_requests_end_at_now() -> None:
    done = get("done")
    done["start_ns"], done["end_ns"] = 100, 200
    open_ = get("open")
    open_["start_ns"] = 150
    old = get("old")
    old["start_ns"], old["end_ns"] = 10, 99
    got = {r["key"]: r for r in objreqs.between(200, 300, now_ns=250)}
    assert set(got) == {"done", "open"}                     # touching the window's start counts
    assert got["open"]["end_ns"] == 250 and not got["open"]["complete"]
    assert open_["end_ns"] == 0                             # a copy: the open request stays open
    assert objreqs.between(251, 300, now_ns=250) == []


def test_requests_past_the_cap_are_counted_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objreqs, "MAX_REQUESTS", 2)
    got = [objreqs.start("gs", f"gs://b/{i}", "b", str(i), "GET", None, "aiohttp") for i in range(5)]
    assert got[2:] == [None, None, None] and objreqs.dropped() == 3
    assert [r["key"] for r in objreqs.between(0, 2**63 - 1)] == ["0", "1"]


def test_forget_before_drops_only_finished_old_requests() -> None:
    old, recent, still_open = get("old"), get("recent"), get("open")
    old["end_ns"], recent["end_ns"] = 100, 300
    still_open["start_ns"] = 50
    objreqs.forget_before(200)
    assert sorted(r["key"] for r in objreqs.between(0, 2**63 - 1)) == ["open", "recent"]
