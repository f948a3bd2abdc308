"""tb_iotrace.model.columnar.tokens: the token decoder of a run of events (varints only), in
chunks, against protobuf's reading; anything else is left to the scalar walk (None)."""
from __future__ import annotations

import numpy as np
import pytest

from tb_iotrace.model.columnar import tokens
from tb_iotrace.model.columnar.tokens import token_run
from tb_iotrace.store.xplane._proto import XLine


def make_line(n: int, *, text_stat: bool = False, first: int = 0) -> XLine:
    """Events ``first`` to ``n - 1``; event 0 has offset and duration 0, fields protobuf leaves
    out (not the layout tb_iotrace writes: the generic path decodes it)."""
    ln = XLine(id=1, name="io")
    for k in range(first, n):
        ev = ln.events.add(metadata_id=1 + k % 3, offset_ps=1000 * k + (1 << 33) * (k % 2), duration_ps=7 * k)
        if k % 4:                                           # some events without the stat: its default
            ev.stats.add(metadata_id=9, int64_value=(-1) ** k * k * 4099)
        ev.stats.add(metadata_id=8, uint64_value=k)          # a stat no column wants
        if text_stat and k == n // 2:
            ev.stats.add(metadata_id=11, str_value="name")
    ln.duration_ps = 5                                       # a line field after the run
    return ln


def run_of(ln: XLine) -> tuple[np.ndarray, int, int]:
    data = XLine(id=ln.id, name=ln.name).SerializeToString()
    head = len(data)
    full = ln.SerializeToString()
    assert full[:head] == data and full[head] == 0x22       # the events start right after the header
    tail = len(XLine(duration_ps=ln.duration_ps).SerializeToString())
    return np.frombuffer(full, np.uint8), head, len(full) - tail


def decoded(runs: list) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {"mid": [], "off": [], "dur": [], "col": []}
    for r in runs:
        out["mid"] += r.mid.tolist()
        out["off"] += r.off.tolist()
        out["dur"] += r.dur.tolist()
        out["col"] += r.cols[0].tolist() if r.cols else []
    return out


@pytest.mark.parametrize("chunk", [tokens.TOKEN_CHUNK, 64, 7])
@pytest.mark.parametrize("first", [0, 1])       # 1: every event in tb_iotrace's layout (the template path)
def test_a_run_decodes_as_protobuf_reads_it(monkeypatch: pytest.MonkeyPatch, chunk: int, first: int) -> None:
    monkeypatch.setattr(tokens, "TOKEN_CHUNK", chunk)
    ln = make_line(50, first=first)
    buf, start, end = run_of(ln)
    got = token_run(buf, start, end, (np.array([9]), np.array([0])), (-7,))
    assert got is not None
    stop, runs = got
    assert stop == end
    d = decoded(runs)
    assert d["mid"] == [e.metadata_id for e in ln.events]
    assert d["off"] == [e.offset_ps for e in ln.events]
    assert d["dur"] == [e.duration_ps for e in ln.events]
    assert d["col"] == [e.stats[0].int64_value if (k + first) % 4 else -7 for k, e in enumerate(ln.events)]


def test_the_run_stops_at_the_first_field_that_is_not_an_event() -> None:
    ln = make_line(5)
    full = np.frombuffer(ln.SerializeToString(), np.uint8)
    _, start, end = run_of(ln)
    got = token_run(full, start, len(full), None, ())
    assert got is not None and got[0] == end
    assert sum(len(r.mid) for r in got[1]) == 5


def test_a_run_with_anything_but_varints_is_left_to_the_scalar_walk() -> None:
    buf, start, end = run_of(make_line(20, text_stat=True))
    assert token_run(buf, start, end, None, ()) is None
