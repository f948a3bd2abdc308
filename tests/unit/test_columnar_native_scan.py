"""tb_iotrace.model.columnar.native_scan: the native scanner (native/codec/xdecode.c) over a
file's bytes: a message's fields as the NumPy walk finds them, event metadata with the last
entry of a key winning as protobuf reads a map, a line's events as protobuf reads them, and
its errors as one line."""
from __future__ import annotations

import numpy as np
import pytest

from tb_iotrace.model.columnar.native_scan import NativeScan
from tb_iotrace.model.columnar.walk import field_spans
from tb_iotrace.store.codecs import codec
from tb_iotrace.store.xplane import wire
from tb_iotrace.store.xplane._proto import XEventMetadata, XLine, XPlane

def scan(data: bytes) -> NativeScan:
    built = codec()
    assert built is not None, "tb_iotrace._codec is not built (native/build_codec.py)"
    ffi, lib = built
    return NativeScan(ffi, lib, data)


def test_fields_as_the_numpy_walk_finds_them() -> None:
    p = XPlane(id=-2, name="/host:CPU")
    p.lines.add(id=1, name="python")
    p.event_metadata[5].name = "read"
    data = p.SerializeToString()
    ns = scan(data)
    try:
        got = ns.fields(0, len(data))
    finally:
        ns.close()
    want = np.array(list(field_spans(data, 0, len(data))), np.int64).T
    assert got.shape == want.shape and (got == want).all()


def test_event_metadata_last_entry_of_a_key_wins() -> None:
    def entry(key: int, name: str) -> bytes:
        md = XEventMetadata(id=key, name=name).SerializeToString()
        body = wire.tag(1, 0) + wire.varint_bytes(key) + wire.tag(2, wire.WT_LEN) + wire.varint_bytes(len(md)) + md
        return wire.tag(4, wire.WT_LEN) + wire.varint_bytes(len(body)) + body

    data = XPlane(id=1).SerializeToString() + entry(9, "old") + entry(3, "b") + entry(9, "new")
    assert dict(XPlane.FromString(data).event_metadata)[9].name == "new"       # protobuf's reading
    ns = scan(data)
    try:
        (ids, names, labels), (keys, starts, ends) = ns.event_metadata(data, ns.fields(0, len(data)))
    finally:
        ns.close()
    assert ids.tolist() == [3, 9] and names == ["b", "new"] and labels is None
    assert keys.tolist() == [3, 9] and (ends > starts).all()


def test_a_lines_events_as_protobuf_reads_them() -> None:
    ln = XLine(id=1, name="io")
    for k in range(6):
        ev = ln.events.add(metadata_id=k + 1, offset_ps=k * 1000, duration_ps=k + 7)
        ev.stats.add(metadata_id=4, int64_value=-k)
    head = len(XLine(id=1, name="io").SerializeToString())
    data = ln.SerializeToString()
    ns = scan(data)
    try:
        n, stop = ns.count(head, len(data))
        assert (n, stop) == (6, len(data))
        out = {"pos": np.zeros(n, np.int64), "len": np.zeros(n, np.int32), "mid": np.zeros(n, np.int64),
               "off": np.zeros(n, np.int64), "dur": np.zeros(n, np.int64)}
        col = np.full(n, 99, np.int64)
        ns.events(head, len(data), n, 0, out, (np.array([4]), np.array([0])), [col])
    finally:
        ns.close()
    assert out["mid"].tolist() == [e.metadata_id for e in ln.events]
    assert out["off"].tolist() == [e.offset_ps for e in ln.events]
    assert out["dur"].tolist() == [e.duration_ps for e in ln.events]
    assert col.tolist() == [0, -1, -2, -3, -4, -5]
    for e, p, m in zip(ln.events, out["pos"].tolist(), out["len"].tolist()):
        assert data[p:p + m] == e.SerializeToString()


@pytest.mark.parametrize("data,why", [(b"\x00\x01", "plane: field number 0"),
                                      (b"\x12\x05ab", "plane: a field runs past the end of its message"),
                                      (b"\x0b", "plane: unsupported wire type")])
def test_errors_are_one_line(data: bytes, why: str) -> None:
    ns = scan(data)
    try:
        with pytest.raises(ValueError, match=f"^{why}$"):
            ns.fields(0, len(data))
    finally:
        ns.close()
