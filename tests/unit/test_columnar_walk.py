"""tb_iotrace.model.columnar.walk: the NumPy decoder's wire walking (a line's header, where each
event's bytes are) and its lock-step event decoding, against what protobuf itself reads."""
from __future__ import annotations

from array import array

import numpy as np
import pytest

from tb_iotrace.model.columnar.walk import check_events, decode_events, field_spans, fields, walk_events, walk_line
from tb_iotrace.store.xplane._proto import XLine


def line() -> XLine:
    ln = XLine(id=-5, display_id=1 << 40, name="python é", display_name="main", timestamp_ns=1_700_000_000)
    specs = [(1, 0, 10), (2, 1 << 35, 0), (300, 7, 1 << 50), (1, -3, 4)]   # (metadata id, offset, duration)
    for k, (mid, off, dur) in enumerate(specs):
        ev = ln.events.add(metadata_id=mid, offset_ps=off, duration_ps=dur)
        ev.stats.add(metadata_id=9, int64_value=-k - 1)                       # a stat the columns want
        ev.stats.add(metadata_id=8, uint64_value=1 << 62)                     # one they do not
        if k == 2:
            ev.stats.add(metadata_id=11, str_value="x" * 200)                 # a long field between
    ln.duration_ps = 99                                                        # a header field after the events
    return ln


def walk(data: bytes) -> tuple[dict, np.ndarray, np.ndarray]:
    starts, ends = array("q"), array("q")

    def on_events(head: dict, pos: int, end: int) -> int:
        return walk_events(data, pos, end, starts, ends)

    head = walk_line(data, np.frombuffer(data, np.uint8), 0, len(data), on_events)
    return head, np.array(starts, np.int64), np.array(ends, np.int64)


def test_header_and_event_ranges_as_protobuf_reads_them() -> None:
    ln = line()
    data = ln.SerializeToString()
    head, starts, ends = walk(data)
    assert head == {"id": -5, "display_id": 1 << 40, "name": ln.name, "display_name": "main",
                    "timestamp_ns": 1_700_000_000}
    assert len(starts) == 4
    for ev, s, e in zip(ln.events, starts.tolist(), ends.tolist()):
        assert data[s:e] == ev.SerializeToString()


def test_lock_step_decode_of_ids_offsets_durations_and_wanted_stats() -> None:
    ln = line()
    data = ln.SerializeToString()
    _, starts, ends = walk(data)
    buf = np.frombuffer(data, np.uint8)
    col = np.zeros(4, np.int64)
    mid, off, dur = decode_events(buf, starts, ends, (np.array([9]), np.array([0])), [col])
    assert mid.tolist() == [e.metadata_id for e in ln.events]
    assert off.tolist() == [e.offset_ps for e in ln.events]
    assert dur.tolist() == [e.duration_ps for e in ln.events]
    assert col.tolist() == [-1, -2, -3, -4]
    assert [x.tolist() for x in decode_events(buf, starts, ends, None, [])] == [mid.tolist(), off.tolist(), dur.tolist()]


def test_fields_and_their_spans() -> None:
    data = XLine(id=3, name="ab").SerializeToString()                       # 08 03 12 02 61 62
    assert list(field_spans(data, 0, len(data))) == [(1, 0, 0, 1, 2), (2, 2, 2, 4, 6)]
    assert list(fields(data, 0, len(data))) == [(1, 0, 1, 2), (2, 2, 4, 6)]


@pytest.mark.parametrize("data,why", [
    (b"\x00\x01", "field number 0"),
    (b"\x12\x05ab", "runs past the end"),
    (b"\x0b", "unsupported wire type 3"),
    (b"\x09\x01\x02", "runs past its end"),                                  # 8 bytes announced, 2 there
])
def test_damaged_fields_are_value_errors(data: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        list(field_spans(data, 0, len(data)))


def test_damaged_events_are_refused() -> None:
    data = line().SerializeToString()
    _, starts, ends = walk(data)
    buf = np.frombuffer(data, np.uint8)
    check_events(buf, starts, ends)                                          # whole: fine
    with pytest.raises(ValueError):
        check_events(buf, starts, ends - 1)                                  # each event one byte short
    with pytest.raises(ValueError, match="runs past"):
        walk(data[:-5])
    long = np.frombuffer(b"\x08" + b"\xff" * 10 + b"\x01", np.uint8)         # an 11-byte varint
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        decode_events(long, np.array([0]), np.array([len(long)]), None, [])
