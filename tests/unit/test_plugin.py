"""tb_iotrace.plugin.plugin, the TensorBoard plugin's HTTP handlers: the routes it offers,
``is_active``, and that every route answers a bad or hostile query (a missing or unknown
run/host, odd bytes, numbers that are not numbers, huge or NaN numbers, reversed windows)
with a JSON 4xx saying what is wrong, never a 500 or a traceback; gzip as negotiated."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
from werkzeug.test import Client
from werkzeug.wrappers import Response

from plugin_client import make_client
from tb_iotrace.plugin import IoTracePlugin

DATA = Path(__file__).resolve().parents[1] / "data"
DATA_ROUTES = ("/capture", "/timeline", "/files", "/histograms", "/bandwidth", "/steps", "/hosts",
               "/findings", "/checkpoints", "/event", "/objects")
Get = Callable[..., tuple[int, Any]]


@pytest.fixture()
def logdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run ``r`` with host ``h``: the small JAX capture with I/O (copied, read-only data)."""
    monkeypatch.setenv("TB_IOTRACE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TBIO_PLUGIN_PREFETCH", "0")
    d = tmp_path / "logdir" / "plugins" / "profile" / "r"
    d.mkdir(parents=True)
    shutil.copyfile(DATA / "jax_io.xplane.pb", d / "h.xplane.pb")
    return tmp_path / "logdir"


@pytest.fixture()
def get(logdir: Path) -> Get:
    return make_client(logdir)[1]


def _raw(logdir: Path, route: str, query: str, **headers: Any) -> Any:
    """A request with a query string sent as is (bytes a browser could send)."""
    app = IoTracePlugin(type("Ctx", (), {"logdir": str(logdir)})()).get_plugin_apps()[route]
    environ = {"REMOTE_ADDR": headers.pop("remote_addr", "10.0.0.1")}
    return Client(app, Response).get(f"/data/plugin/iotrace{route}?{query}", headers=headers,
                                     environ_base=environ)


def _error(code: int, body: Any, want: int, *words: str) -> None:
    assert code == want, (code, body)
    assert isinstance(body, dict) and set(body) == {"error"}, body
    for w in words:
        assert w in body["error"], (w, body)


def test_routes_list() -> None:
    apps = IoTracePlugin(type("Ctx", (), {"logdir": ""})()).get_plugin_apps()
    assert set(apps) == {"/index.js", "/static/*", "/runs", "/windows", *DATA_ROUTES}
    assert all(callable(a) for a in apps.values())


@pytest.mark.parametrize("route", DATA_ROUTES)
def test_missing_run_then_missing_host_is_400(get: Get, route: str) -> None:
    _error(*get(route, lane="io.t0", index="0"), 400, "missing run")
    _error(*get(route, run="r", lane="io.t0", index="0"), 400, "missing host")


@pytest.mark.parametrize("route", DATA_ROUTES)
def test_unknown_run_or_host_is_404_naming_it(get: Get, route: str) -> None:
    _error(*get(route, run="nope", host="h", lane="io.t0", index="0"), 404, "nope")
    _error(*get(route, run="r", host="nope", lane="io.t0", index="0"), 404, "nope")
    _error(*get(route, run="nope", host="__all__", lane="io.t0", index="0"), 404, "nope")


def test_windows_takes_a_run_only(get: Get) -> None:
    _error(*get("/windows"), 400, "missing run")
    _error(*get("/windows", run="nope"), 404, "nope")
    code, body = get("/windows", run="r", host="no-such-host")
    assert code == 200 and [w["run"] for w in body["windows"]] == ["r"]


@pytest.mark.parametrize("query,want", [
    ("run=%ff%fe&host=h", 404), ("run=r&host=%ff", 404), ("run=%00&host=h", 400), ("run=r&host=%00", 400),
    ("run=..&host=h", 400), ("run=r&host=..%2f..%2fetc", 400), ("run=r&host=h&start=%ff", 400),
    ("run=r&host=h&width=%00", 400), ("run=r&host=h&bins=%ff", 400)])
def test_odd_bytes_are_a_json_4xx(logdir: Path, query: str, want: int) -> None:
    route = "/bandwidth" if "bins" in query else "/timeline"
    resp = _raw(logdir, route, query)
    assert resp.status_code == want and resp.content_type == "application/json", resp.get_data()[:200]
    assert set(json.loads(resp.get_data())) == {"error"}


@pytest.mark.parametrize("route", ["/timeline", "/bandwidth"])
@pytest.mark.parametrize("params,word", [
    ({"start": "abc"}, "'start' must be a number"), ({"end": "NaN"}, "'end' must be a number"),
    ({"start": "0x10"}, "'start' must be a number"), ({"start": "inf"}, "finite"),
    ({"end": "-inf"}, "finite"), ({"start": "1e400"}, "finite"), ({"start": "-1" + "0" * 500}, "finite")])
def test_bad_window_numbers_are_400(get: Get, route: str, params: dict[str, str], word: str) -> None:
    _error(*get(route, run="r", host="h", **params), 400, word)


@pytest.mark.parametrize("route,params,word", [
    ("/timeline", {"width": "1e3"}, "'width' must be a number"), ("/timeline", {"width": "nan"}, "'width'"),
    ("/bandwidth", {"bins": "1.5"}, "'bins' must be a number"), ("/bandwidth", {"bins": "9" * 5000}, "'bins'"),
    ("/timeline", {"enc": "xml"}, "'enc' must be json or bin")])
def test_bad_counts_and_encodings_are_400(get: Get, route: str, params: dict[str, str], word: str) -> None:
    _error(*get(route, run="r", host="h", **params), 400, word)


@pytest.mark.parametrize("route,key,raw,want", [
    ("/timeline", "width", "99999999999999999999", 8192), ("/timeline", "width", "-5", 1),
    ("/timeline", "width", "0", 1), ("/bandwidth", "bins", "99999999999999999999", 4096),
    ("/bandwidth", "bins", "-1", 1)])
def test_huge_or_negative_counts_are_clamped(get: Get, route: str, key: str, raw: str, want: int) -> None:
    code, body = get(route, run="r", host="h", **{key: raw})
    assert code == 200 and body[key] == want, body


@pytest.mark.parametrize("route,unit", [("/timeline", "ns_per_px"), ("/bandwidth", "bin_ns")])
@pytest.mark.parametrize("start,end", [("10", "5"), ("-100", "-200"), ("1e18", "1e18"), ("1.7e18", "1.6e18")])
def test_reversed_or_empty_window_answers_a_non_empty_one(get: Get, route: str, unit: str, start: str,
                                                          end: str) -> None:
    """end <= start: the answer is the 1 ns window from start, never a zero-wide one (whose
    bins and pixels are 0 ns: bandwidth divides by it, the timeline's ``q`` is 0)."""
    code, body = get(route, run="r", host="h", start=start, end=end)
    assert code == 200, body
    assert body["start"] == float(start) and body["end"] > body["start"], body
    assert body[unit] > 0, body


@pytest.mark.parametrize("route", ["/timeline", "/bandwidth"])
def test_window_wider_than_the_capture_by_far(get: Get, route: str) -> None:
    """A finite window around the whole capture: a 200, or a 400 that names start/end,
    never an internal message."""
    code, body = get(route, run="r", host="h", start="-1e300", end="1e300")
    assert code == 200 or (code == 400 and ("start" in body["error"] or "end" in body["error"])), body


def test_event_parameters(get: Get) -> None:
    q = {"run": "r", "host": "h"}
    _error(*get("/event", **q, index="0"), 400, "missing lane")
    _error(*get("/event", **q, lane="io.t2084"), 400, "missing index")
    _error(*get("/event", **q, lane="no-lane", index="0"), 404, "no-lane")
    for bad in ("nan", "inf", "1.5", "abc"):
        _error(*get("/event", **q, lane="io.t2084", index=bad), 400, "'index' must be a number")
    for out in ("-1", str(-10**30), str(10**30)):
        _error(*get("/event", **q, lane="io.t2084", index=out), 404, f"no event {out}")
    code, ev = get("/event", **q, lane="io.t2084", index="0")
    assert code == 200 and ev["index"] == 0 and ev["call"] == "open64"


def test_event_with_an_empty_index_is_400(get: Get) -> None:
    """``index=`` (present, empty) must read as a missing index, not reach the endpoint as None."""
    _error(*get("/event", run="r", host="h", lane="io.t2084", index=""), 400, "missing index")


def test_answers_gzip_as_negotiated(logdir: Path) -> None:
    plain = _raw(logdir, "/files", "run=r&host=h")
    assert plain.headers.get("Content-Encoding") is None
    zipped = _raw(logdir, "/files", "run=r&host=h", **{"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(zipped.get_data())) == json.loads(plain.get_data())


@pytest.mark.parametrize("route", ["/timeline", "/files", "/capture", "/steps"])
def test_local_no_gzip_opt_in(logdir: Path, monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    """TBIO_PLUGIN_LOCAL_NO_GZIP=1: a loopback peer gets every answer uncompressed (a remote
    one still gzipped), whether the answer is a dict or an encoded ``Body``."""
    monkeypatch.setenv("TBIO_PLUGIN_LOCAL_NO_GZIP", "1")
    local = _raw(logdir, route, "run=r&host=h", remote_addr="127.0.0.1", **{"Accept-Encoding": "gzip"})
    assert local.status_code == 200 and local.headers.get("Content-Encoding") is None, local.headers
    assert json.loads(local.get_data())
    remote = _raw(logdir, route, "run=r&host=h", remote_addr="10.1.2.3", **{"Accept-Encoding": "gzip"})
    assert remote.headers["Content-Encoding"] == "gzip"


def test_is_active(logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert make_client(empty)[0].is_active() is False
    plugin, _ = make_client(logdir)
    prefetched: list[int] = []
    monkeypatch.setattr(plugin.index, "prefetch_latest", lambda: prefetched.append(1))
    assert plugin.is_active() is True and prefetched == [1]

    def broken() -> bool:
        raise OSError("storage gone")

    monkeypatch.setattr(plugin.index, "is_active", broken)
    with caplog.at_level("ERROR", logger="tb_iotrace.plugin"):
        assert plugin.is_active() is False
    assert "is_active failed" in caplog.text and prefetched == [1]


@pytest.mark.parametrize("spec", ["", "a,b"])
def test_no_usable_logdir_says_so(spec: str) -> None:
    plugin, get = make_client(spec)
    assert plugin.is_active() is False
    code, body = get("/runs")
    assert code == 200 and body["runs"] == [] and "without a --logdir" in body["message"]
