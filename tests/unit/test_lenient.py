"""tb_iotrace.store.xplane.lenient: a capture whose strings are not UTF-8 still parses (U+FFFD
for each bad byte), in nested messages too; any other corruption is still DecodeError."""
from __future__ import annotations

import pytest
from google.protobuf.message import DecodeError

from tb_iotrace.store.xplane._proto import XSpace
from tb_iotrace.store.xplane.lenient import parse_lenient, valid_utf8


def space_bytes() -> bytes:
    sp = XSpace()
    sp.hostnames.append("hostAAAA")
    pl = sp.planes.add(id=7, name="/host:CPU")
    ln = pl.lines.add(id=3, name="lineBBBB", timestamp_ns=123)
    ln.events.add(metadata_id=1, offset_ps=5, duration_ps=9)
    pl.event_metadata[1].name = "evCCCC"
    return sp.SerializeToString()


def spoil(data: bytes, good: bytes, bad: bytes) -> bytes:
    assert len(good) == len(bad) and data.count(good) == 1
    return data.replace(good, bad)


def test_valid_data_parses_unchanged() -> None:
    data = space_bytes()
    assert valid_utf8(XSpace, data) == data
    assert parse_lenient(XSpace(), data) == XSpace.FromString(data)


def test_bad_bytes_in_nested_strings_become_replacement_characters() -> None:
    data = space_bytes()
    data = spoil(data, b"AAAA", b"A\xffA\xfe")           # XSpace.hostnames
    data = spoil(data, b"BBBB", b"BB\xc3B")            # XLine.name (in an XPlane)
    data = spoil(data, b"CCCC", b"\x80CCC")              # XEventMetadata.name (in a map entry)
    with pytest.raises(DecodeError):
        XSpace.FromString(data)                          # protobuf alone refuses the whole space
    sp = parse_lenient(XSpace(), data)
    assert sp.hostnames[0] == "host" + "A\ufffdA\ufffd"
    pl = sp.planes[0]
    assert (pl.id, pl.name) == (7, "/host:CPU")
    assert pl.lines[0].name == "lineBB\ufffdB" and pl.lines[0].timestamp_ns == 123
    assert pl.lines[0].events[0].duration_ps == 9        # the other fields as they were
    assert pl.event_metadata[1].name == "ev\ufffdCCC"


@pytest.mark.parametrize("data", [
    b"\x0a\x05abc",                      # a field longer than the message
    b"\x00\x01",                         # field number 0
    b"\x0b",                             # wire type 3 (groups)
    b"\x0a",                             # a length that never comes
])
def test_other_corruption_is_still_a_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        parse_lenient(XSpace(), data)
