"""Kineto traces read in batches: tb_iotrace.store.kineto_json's msgspec split and
tb_iotrace.store.kineto_columns' columns give what the standard library's json and the dict per
event gave: the same header, the same columns, the same XSpace byte for byte, the same errors,
on the real traces in tests/data and on crafted odd ones; a truncated file is one clear line.

The dict path (``to_xspace(read_trace(path))``) reads the file with ``json.loads`` as before;
``read_xspace(path)`` reads it with msgspec, a batch of events at a time.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.store import kineto_json, kineto_stream
from tb_iotrace.store.kineto import KinetoTraceError, read_trace
from tb_iotrace.store.kineto_columns import Collector
from tb_iotrace.store.kineto_json import Event, open_trace, read_header
from tb_iotrace.store.kineto_xspace import read_xspace, to_xspace
from tb_iotrace.base.limits import MAX_TRACE_ENV

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = ["h200_tuned.pt.trace.json.gz", "kineto_gpu_synthetic.pt.trace.json", "torch_loader.pt.trace.json.gz"]
BASE = 1_790_857_026_000_000_000


def outcome(convert: Any) -> tuple[str, Any]:
    """("space", its bytes) or ("error", the message) of ``convert()``."""
    try:
        return "space", convert().SerializeToString(deterministic=True)
    except KinetoTraceError as exc:
        return "error", str(exc)


def both(path: Path) -> tuple[tuple[str, Any], tuple[str, Any]]:
    old = outcome(lambda: to_xspace(read_trace(path), str(path)))
    new = outcome(lambda: read_xspace(path))
    return old, new


def columns(c: Collector) -> dict[str, Any]:
    """Everything a collector kept, as plain values (arguments as (key, kind, value) per event)."""
    def line(ln: Any) -> list[tuple[Any, ...]]:
        return [(s, d, c.names[n], c.args_of(at, sh)) for s, d, n, at, sh
                in zip(ln.start, ln.dur, ln.name, ln.arg_at, ln.shape)]

    io = c.io
    return {"host": {k: line(v) for k, v in c.host.items()},
            "device": {dev: {s: line(v) for s, v in lines.items()} for dev, lines in c.device.items()},
            "io": [list(io.start), list(io.dur), io.pid, io.tid, io.op, io.path,
                   {k: list(v) for k, v in io.ints.items()}, io.overflow],
            "thread_names": c.thread_names, "lo": c.lo, "hi": c.hi, "complete": c.complete, "seen": c.seen}


@pytest.mark.parametrize("name", REAL)
def test_real_traces_same_header_columns_and_space(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = DATA / name
    trace = read_trace(path)
    events = trace.pop("traceEvents")
    assert read_header(path) == trace
    split = open_trace(path)
    assert split.header == trace and split.count == len(events)
    old, new = Collector(trace.get("baseTimeNanoseconds", 0)), Collector(trace.get("baseTimeNanoseconds", 0))
    old.add_events(events)
    batches = list(split.batches())
    assert all(type(e) is Event for b in batches for e in b)      # msgspec's structs, not json's dicts
    for b in batches:
        new.add_events(b)
    assert new.complete > 0 and columns(new) == columns(old)
    o, n = both(path)
    assert o[0] == "space" and n == o
    monkeypatch.setattr(kineto_json, "BATCH", 7)                 # many batches: the same space
    assert outcome(lambda: read_xspace(path)) == o


def write(tmp_path: Path, text: str | bytes, name: str = "w.1.pt.trace.json") -> Path:
    path = tmp_path / name
    body = text.encode("utf-8") if isinstance(text, str) else text
    path.write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
    return path


def doc(events: list[str], record: bool = True, extra: str = "") -> str:
    rec = {"format": "tb_iotrace.kineto/1", "base_time_ns": BASE, "notes": [],
           "processes": [{"pid": 1, "role": "main", "start_ns": BASE, "end_ns": BASE + 10**9,
                          "threads": [[1, 99, "python"]], "counters": [], "dropped": 0, "num_events": 1}]}
    tail = f', "tb_iotrace": {json.dumps(rec)}' if record else ""
    return '{"baseTimeNanoseconds": %d, "traceEvents": [%s]%s%s}' % (BASE, ",\n".join(events), extra, tail)


OP = '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.5, "dur": 2.25, "args": {"External id": 3}}'
IO = ('{"ph": "X", "cat": "tb_iotrace.io", "name": "pread64", "pid": 1, "tid": 1, "ts": 11.0, "dur": 1.0, '
      '"args": {"fd": 5, "path": "/data/a.bin", "offset": 0, "bytes_requested": 4096, "bytes": 4096}}')
ODD = {
    "unicode and escapes": [
        '{"ph": "X", "cat": "cpu_op", "name": "aten::\\u00e9t\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\n\\t\\/", "pid": 1, "tid": 1,'
        ' "ts": 1.0, "dur": 1.0, "args": {"Input type": ["float", "\\u4e2d"], "s\\u00e9": "\\u0000x", "é": "ü"}}',
        '{"ph": "X", "cat": "tb_iotrace.io", "name": "read", "pid": 1, "tid": 1, "ts": 2.0, "dur": 1.0,'
        ' "args": {"fd": 3, "path": "/data/\\u00e9\\ud83d\\ude00 \\"x\\".bin", "bytes_requested": 8, "bytes": 8}}',
        '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main \\u2603"}}', OP, IO],
    "missing and odd fields": [
        '{"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1, "dur": 1.0}',
        '{"ph": "X", "cat": "cpu_op", "name": "no dur, no args", "pid": 1, "tid": 1, "ts": 3}',
        '{"ph": "X", "cat": "cpu_op", "name": "null args", "pid": 1, "tid": 1, "ts": 4.0, "args": null}',
        '{"ph": "X", "cat": "cpu_op", "name": "list args", "pid": 1, "tid": 1, "ts": 5.0, "args": [1, 2]}',
        '{"ph": "X", "cat": "cpu_op", "name": "null values", "pid": 1, "tid": 1, "ts": 5.5, "args": {"a": null, "b": true, "c": {"d": [1, null]}}}',
        '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 6.0, "dur": 1.5, "args": {"device": 0}}',
        '{"ph": "X", "cat": "kernel", "name": "no stream", "pid": 0, "ts": 6.0}',
        '{"ph": "X", "cat": "cpu_op", "name": 17, "pid": 1, "tid": 1, "ts": 7.0}',
        '{"cat": "cpu_op", "name": "no ph", "pid": 1, "tid": 1, "ts": 7.0}',
        '{"ph": "X", "cat": "cpu_op", "name": "no tid", "pid": 1, "ts": 7.0}',
        '{"ph": "X", "cat": "cpu_op", "name": "dup", "pid": 1, "tid": 1, "ts": 8.0, "ts": 9.0, "args": {"k": 1, "k": "two"}}',
        '{"ph": "X", "cat": "tb_iotrace.io", "name": "open", "pid": 1, "tid": 1, "ts": 9.0, "args": {"fd": "5", "path": 7, "errno": 2}}',
        '{"ph": "i", "name": "instant", "pid": 1, "tid": 1, "ts": 9.0}', OP],
    "not objects in the list": ["1", '"text"', "null", "[]", "true", OP, IO],
    "huge numbers": [
        '{"ph": "X", "cat": "cpu_op", "name": "big args", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1e20,'
        ' "args": {"i": 123456789012345678901234567890, "top": 9223372036854775807, "over": 9223372036854775808,'
        ' "low": -9223372036854775808, "under": -9223372036854775809, "f": 5e-324, "g": 1.7976931348623157e308, "h": 0.1}}',
        '{"ph": "X", "cat": "cpu_op", "name": "far", "pid": 1, "tid": 1, "ts": 1e300}',
        '{"ph": "X", "cat": "cpu_op", "name": "inf", "pid": 1, "tid": 1, "ts": 1e400}',
        '{"ph": "X", "cat": "cpu_op", "name": "big pid", "pid": 123456789012345678901, "tid": 1, "ts": 2.0}',
        '{"ph": "X", "cat": "cpu_op", "name": "int ts", "pid": 1, "tid": 1, "ts": 1000000000000, "dur": 3}', OP, IO],
    "NaN and Infinity (json reads them, msgspec does not)": [
        '{"ph": "X", "cat": "cpu_op", "name": "nan", "pid": 1, "tid": 1, "ts": NaN, "args": {"x": Infinity}}',
        '{"ph": "X", "cat": "cpu_op", "name": "inf arg", "pid": 1, "tid": 1, "ts": 2.0, "args": {"x": -Infinity, "y": NaN}}', OP],
    "a lone surrogate": ['{"ph": "X", "cat": "cpu_op", "name": "bad \\ud800", "pid": 1, "tid": 1, "ts": 1.0}', OP],
    "an I/O offset past int64": [IO.replace('"offset": 0', '"offset": 18446744073709551616'), OP],
}


@pytest.mark.parametrize("case", sorted(ODD))
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("batch", [kineto_json.BATCH, 2])
def test_odd_traces_same_outcome(case: str, gz: bool, batch: int, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kineto_json, "BATCH", batch)
    path = write(tmp_path, doc(ODD[case]), "w.1.pt.trace.json" + (".gz" if gz else ""))
    old, new = both(path)
    assert new == old, case
    assert old[0] == "space" or "\n" not in old[1]


def test_odd_traces_without_record_and_metadata_keys(tmp_path: Path) -> None:
    text = doc(ODD["unicode and escapes"] + ODD["huge numbers"], record=False,
               extra=', "deviceProperties": [{"id": 0, "name": "GPU \\u00e9"}], "trace_id": "x\\ty", '
                     '"host_name": "h\\u00e9", "schemaVersion": 1, "big": 123456789012345678901234567890')
    path = write(tmp_path, text)
    header = read_trace(path)
    header.pop("traceEvents")
    assert read_header(path) == header and header["host_name"] == "hé"
    old, new = both(path)
    assert old[0] == "space" and new == old


def test_events_in_a_batch_msgspec_rejects_are_read_by_json(tmp_path: Path) -> None:
    """Only the batch holding 1e400 falls back to json's dicts; the others stay structs."""
    events = [OP] * 5 + ['{"ph": "X", "name": "inf", "pid": 1, "tid": 1, "ts": 1e400}'] + [OP] * 5
    kinds = []
    old = kineto_json.BATCH
    kineto_json.BATCH = 4       # (a stream is cut into batches as it is read)
    try:
        split = open_trace(write(tmp_path, doc(events)))
        kinds = [{type(e).__name__ for e in b} for b in split.batches()]
    finally:
        kineto_json.BATCH = old
    assert kinds == [{"Event"}, {"dict"}, {"Event"}]


@pytest.mark.parametrize("text, reason", [
    (doc([OP, IO])[:-40], "truncated: its JSON ends after"),
    (doc([OP, IO])[: doc([OP, IO]).index(OP) + len(OP)], "truncated"),
    (doc([OP, IO])[:-40] + '"\\ud800"', "JSONDecodeError"),   # a lone surrogate: json reads it, says where
    ('{"traceEvents": [' + OP, "truncated"),
    (doc([OP, IO]).rsplit("]", 1)[0] + "}", "JSONDecodeError"),   # the list not closed, the text ends with }
    ('{"traceEvents": {"ph": "X"}}', "no top-level 'traceEvents' list"),
    ('[{"traceEvents": []}]', "no top-level 'traceEvents' list"),
    ('{"traceEvents": [' + "[" * 5000 + "]" * 5000 + "]}", "nests deeper"),
    (doc([OP.replace('"External id": 3', '"External id": ' + "7" * 5000)]), "digits"),
    (doc([OP], extra=', "x": ' + "7" * 5000), "digits"),
    ("", "JSONDecodeError"),
    ("\ufeff{}", "not a Kineto trace"),   # json and msgspec both read past a BOM
])
def test_broken_traces_one_clear_line(text: str, reason: str, tmp_path: Path) -> None:
    path = write(tmp_path, text)
    with pytest.raises(KinetoTraceError) as got:
        read_xspace(path)
    msg = str(got.value)
    assert msg.startswith(f"{path}: ") and reason in msg and "\n" not in msg, msg


def test_truncated_gzip_and_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = gzip.compress(doc([OP] * 1000).encode())
    path = write(tmp_path, body[: len(body) // 2], "w.1.pt.trace.json")
    with pytest.raises(KinetoTraceError, match="not a readable Kineto trace .*gzip"):
        read_xspace(path)
    path = write(tmp_path, doc([OP] * 20000), "w.2.pt.trace.json.gz")
    monkeypatch.setenv(MAX_TRACE_ENV, "1M")
    with pytest.raises(KinetoTraceError, match=f"over the limit of {1 << 20}.*{MAX_TRACE_ENV}"):
        read_xspace(path)
    with pytest.raises(KinetoTraceError, match="over the limit"):
        read_header(path)


PEAK = r"""
import json, sys
def hwm():
    d = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    return int(d["VmHWM"].split()[0]) * 1024
from tb_iotrace.store.kineto_xspace import read_xspace
import tb_iotrace.store.kineto_json, numpy
before = hwm()
space = read_xspace(sys.argv[1])
print(json.dumps({"grew": hwm() - before, "planes": len(space.planes)}))
"""


@pytest.mark.slow
def test_conversion_peak_within_three_times_the_file(tmp_path: Path) -> None:
    """A 100,000-event trace (~20 MB): the conversion's own peak (the child's VmHWM over what its
    imports took) stays within 3x the file; reading it with a dict per event took ~7x."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from kineto_memory import write_trace
    finally:
        sys.path.pop(0)
    path = tmp_path / "w.1.pt.trace.json"
    write_trace(path, 100_000, 20_000)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", PEAK, str(path)], check=True, capture_output=True, text=True,
                         env=env, timeout=300)
    got = json.loads(out.stdout)
    size = path.stat().st_size
    assert got["planes"] >= 3 and got["grew"] <= 3 * size, (got, size)


@pytest.mark.parametrize("bad", [b"\xff", b"\x80", b"\xed\xa0\x80", b"\xc3"])
def test_text_not_utf8_same_outcome(bad: bytes, tmp_path: Path) -> None:
    """Bytes that are not UTF-8 (json names the position in the file), and an encoded surrogate
    (json lets it pass): the same outcome as json's."""
    text = doc([OP.replace("aten::mm", "aten::mm\x00"), IO]).encode().replace(b"\x00", bad)
    old, new = both(write(tmp_path, text))
    assert new == old


# the child's own peak: VmHWM (ru_maxrss is the same figure, but Linux carries it over from the
# parent at fork and exec: a test process that grew would hide the child's growth)
_PEAK = r"""
import sys
from tb_iotrace.store.kineto_xspace import read_xspace
from tb_iotrace.store.kineto_json import read_header

def hwm():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))

before = hwm()
read_header(sys.argv[1])
space = read_xspace(sys.argv[1])
print(len(space.planes), (hwm() - before) // 1024)
"""


def _bomb(path: Path, events: list[str], mib: int, where: str) -> Path:
    """A gzip whose JSON is ``mib`` MiB of whitespace around a real document's events."""
    import zlib

    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    head, tail = doc(events).split("[", 1)
    head = head + "["
    parts = {"before": (b"", head.encode() + tail.encode()),
             "between": ((head + events[0] + ",").encode(), (",".join(events[1:]) + tail[tail.index("]"):]).encode()
                         if len(events) > 1 else tail[tail.index("]"):].encode())}[where]
    with open(path, "wb") as out:
        out.write(gz.compress(parts[0]))
        block = b" \n" * (1 << 19)
        for _ in range(mib):
            out.write(gz.compress(block))
        out.write(gz.compress(parts[1]))
        out.write(gz.flush())
    return path


@pytest.mark.parametrize("where", ["before", "between"])
def test_a_gzip_bomb_of_whitespace_is_read_in_little_memory(tmp_path: Path, where: str) -> None:
    """384 MiB of whitespace (a 400 KB file) inside a real trace: read, with the same result as
    the trace without it, in a few MiB more than the interpreter had (it was the whole text:
    the expanded 384 MiB and more)."""
    events = [OP, IO, OP]
    path = _bomb(tmp_path / f"bomb.{where}.pt.trace.json.gz", events, 384, where)
    assert path.stat().st_size < 4 << 20
    plain = write(tmp_path, doc(events), "plain.pt.trace.json.gz")
    assert outcome(lambda: read_xspace(path)) == outcome(lambda: read_xspace(plain))
    r = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, MAX_TRACE_ENV: "1G"})
    assert r.returncode == 0, r.stderr
    planes, grew_mib = map(int, r.stdout.split())
    assert planes >= 1
    assert grew_mib < 48, f"reading the bomb took {grew_mib} MiB more"
    # over the limit: the same one-line refusal as before, still in little memory
    r = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, MAX_TRACE_ENV: "64M"})
    assert r.returncode != 0 and "over the limit" in r.stderr, r.stderr



@pytest.mark.parametrize("chunk", [kineto_stream.CHUNK, 4096, 7])
def test_the_stream_splits_real_and_deep_traces_at_any_chunk_edge(chunk: int, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The real traces, and events nested deeper than the one-match pattern follows, are split
    by the stream itself (not read whole), whatever the chunk edges cut, with the whole read's
    header, events and XSpace."""
    monkeypatch.setattr(kineto_stream, "CHUNK", chunk)
    deep = ('{"ph": "X", "name": "deep", "pid": 1, "tid": 1, "ts": 12, "dur": 1, '
            '"args": {"a": {"b": {"c": {"d": [1, {"e": "}]{[\\"x"}]}}}, "s": "a\\\\"}}')
    paths = [DATA / n for n in REAL] + [write(tmp_path, doc([OP, deep, IO, deep]), "d.1.pt.trace.json.gz")]
    for path in paths:
        if chunk == 7 and path.stat().st_size > 200_000:
            continue                                   # (7-byte chunks: the small ones)
        with open(path, "rb") as fh:
            top, bodies, count = kineto_stream.split(fh, 1 << 30, "the trace", kineto_json.BATCH)
        whole = kineto_json._open_whole(str(path), False)
        assert count == whole.count
        assert {k: json.loads(v) for k, v in top.items()} == whole.header
        assert [e for b in bodies for e in json.loads(b)] == list(whole.batches())[0] if whole._events is not None \
            else [e for b in bodies for e in json.loads(b)] == [json.loads(bytes(s)) for s in whole._slices]
        old, new = both(path)
        assert new == old
