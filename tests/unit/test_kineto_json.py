"""tb_iotrace.store.kineto_json: a trace is split into its header (as json reads it), its event
count and batches of Event structs (given once, BATCH at a time, plain or gzipped); odd elements
come back as json reads them; what read_trace refuses is refused with one line naming the file;
duplicate keys resolve as json (and read_trace) resolve them."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tb_iotrace.store import kineto_json
from tb_iotrace.store.kineto import KinetoTraceError, read_trace
from tb_iotrace.store.kineto_json import Event, open_trace, read_header


def events(n: int) -> list[dict[str, Any]]:
    return [{"ph": "X", "name": f"op{i}", "ts": i, "dur": 1.5, "pid": 1, "tid": 2, "args": {"i": i}, "x": 0}
            for i in range(n)]


def flat(tj: kineto_json.TraceJson) -> list[Any]:
    return [e for b in tj.batches() for e in b]


@pytest.mark.parametrize("gz", [False, True])
def test_header_count_and_batches(tmp_path: Path, gz: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kineto_json, "BATCH", 2)
    doc = {"schemaVersion": 1, "traceEvents": events(5), "tb_iotrace": {"format": "f", "n": [1, 2]}}
    body = json.dumps(doc).encode()
    p = tmp_path / ("t.pt.trace.json.gz" if gz else "t.pt.trace.json")
    p.write_bytes(gzip.compress(body) if gz else body)
    tj = open_trace(p)
    assert tj.header == {"schemaVersion": 1, "tb_iotrace": {"format": "f", "n": [1, 2]}} and tj.count == 5
    batches = list(tj.batches())
    assert [len(b) for b in batches] == [2, 2, 1]
    first = batches[0][0]
    assert isinstance(first, Event) and (first.name, first.ts, first.dur, first.args) == ("op0", 0, 1.5, {"i": 0})
    assert first.cat is None
    assert list(tj.batches()) == []                         # given once
    assert read_header(p) == tj.header


def test_elements_msgspec_rejects_come_back_as_json_reads_them(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [{"ph": "X", "name": "a"}, 5, "s", null, [1]]}')
    got = flat(open_trace(p))
    assert got == [{"ph": "X", "name": "a"}, 5, "s", None, [1]]


def test_empty_and_header_only(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": [], "a": 1}')
    tj = open_trace(p)
    assert (tj.count, flat(tj), tj.header) == (0, [], {"a": 1})
    assert open_trace(p, header_only=True).count == -1


@pytest.mark.parametrize("text, words", [
    ('[1, 2]', "no top-level 'traceEvents' list"),
    ('{"traceEvents": {"a": 1}}', "no top-level 'traceEvents' list"),
    ('{"other": []}', "no top-level 'traceEvents' list"),
    ('{"traceEvents": [{"ph": "X"}', "not a readable Kineto trace"),
    ('', "not a readable Kineto trace"),
    ('\xff\xfe{', "not a readable Kineto trace"),
])
def test_not_a_trace_is_one_line_naming_the_file(text: str, words: str, tmp_path: Path) -> None:
    p = tmp_path / "bad.pt.trace.json"
    p.write_bytes(text.encode("latin-1"))
    with pytest.raises(KinetoTraceError) as exc:
        flat(open_trace(p))
    msg = str(exc.value)
    assert words in msg and msg.startswith(str(p)) and "\n" not in msg


def test_missing_file_and_broken_gzip(tmp_path: Path) -> None:
    with pytest.raises(KinetoTraceError, match="not a readable Kineto trace"):
        open_trace(tmp_path / "gone.pt.trace.json")
    p = tmp_path / "t.pt.trace.json.gz"
    p.write_bytes(gzip.compress(b'{"traceEvents": []}')[:-6])
    with pytest.raises(KinetoTraceError) as exc:
        open_trace(p)
    assert str(exc.value).startswith(str(p))


@pytest.mark.parametrize("text", [
    '{"traceEvents": [{"name": "old"}], "a": 1, "traceEvents": [{"name": "new"}]}',
    '{"a": 1, "a": 2, "traceEvents": [{"name": "e", "name": "f"}]}',
])
def test_duplicate_keys_resolve_as_read_trace(text: str, tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(text)
    want = read_trace(p)
    tj = open_trace(p)
    got = [e if isinstance(e, dict) else {k: v for k in e.__struct_fields__ if (v := getattr(e, k)) is not None}
           for e in flat(tj)]
    assert tj.header == {k: v for k, v in want.items() if k != "traceEvents"}
    assert got == want["traceEvents"]
