"""Protobuf parsing that survives invalid UTF-8 in ``string`` fields.

proto3 ``string`` fields must hold UTF-8, and protobuf refuses a whole message when one of
them does not (``DecodeError``). A capture is input from elsewhere (a profiler's plugin, a
hand-made or damaged file): one event name of stray bytes must not make the whole capture
unreadable, and above all must not fail a request with an exception no route expects.
:func:`parse_lenient` parses as protobuf does and, only when that fails,
rewrites every string field that is not UTF-8 (as ``bytes.decode("utf-8", "replace")`` reads
it: U+FFFD for each bad byte) and parses again; a message broken in another way still
raises ``DecodeError``.
"""
from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from tb_iotrace.store.xplane.wire import read_varint, varint_bytes

_STRING = FieldDescriptor.TYPE_STRING
_MESSAGE = FieldDescriptor.TYPE_MESSAGE
MAX_DEPTH = 32   # the XPlane schema nests 4 deep (XPlane > map entry > XEventMetadata > XStat)


def _fix(data: bytes | memoryview, desc, out: bytearray, depth: int) -> None:
    """Append ``data`` (a message of type ``desc``) to ``out`` with its string fields, and
    those of the messages inside it, made valid UTF-8. ValueError when the wire format is
    broken."""
    if depth > MAX_DEPTH:
        raise ValueError("messages nested too deep")
    mv = memoryview(data)
    pos, end = 0, len(mv)
    by_number = desc.fields_by_number
    while pos < end:
        at = pos
        key, pos = read_varint(mv, pos, end)
        number, wt = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wt == 0:
            _, pos = read_varint(mv, pos, end)
        elif wt == 1:
            pos += 8
        elif wt == 5:
            pos += 4
        elif wt == 2:
            n, p = read_varint(mv, pos, end)
            if p + n > end:
                raise ValueError(f"field {number} runs past the end of its message")
            fd = by_number.get(number)
            if fd is not None and fd.type in (_STRING, _MESSAGE):
                value = mv[p:p + n]
                if fd.type == _STRING:
                    try:
                        str(value, "utf-8")
                        fixed = bytes(value)
                    except UnicodeDecodeError:
                        fixed = str(value, "utf-8", "replace").encode("utf-8")
                else:
                    inner = bytearray()
                    _fix(value, fd.message_type, inner, depth + 1)
                    fixed = bytes(inner)
                out += mv[at:pos]           # the tag
                out += varint_bytes(len(fixed))
                out += fixed
                pos = p + n
                continue
            pos = p + n
        else:
            raise ValueError(f"unsupported wire type {wt}")
        if pos > end:
            raise ValueError(f"field {number} runs past the end of its message")
        out += mv[at:pos]




def valid_utf8(msg_type, data: bytes | memoryview) -> bytes:
    """``data`` (a serialized ``msg_type``) with every string field valid UTF-8 (DecodeError
    when the wire format itself is broken)."""
    out = bytearray()
    try:
        _fix(data, msg_type.DESCRIPTOR, out, 0)
    except (ValueError, IndexError) as exc:
        raise DecodeError(f"corrupt message: {exc}") from None
    return bytes(out)


def parse_lenient(msg: Message, data: bytes | memoryview) -> Message:
    """``msg.ParseFromString(data)``, reading strings that are not UTF-8 with U+FFFD for the
    bad bytes instead of failing; returns ``msg``. DecodeError for any other corruption."""
    try:
        msg.ParseFromString(data)
        return msg
    except DecodeError:
        pass
    msg.Clear()
    msg.ParseFromString(valid_utf8(type(msg), data))
    return msg


__all__ = ["parse_lenient", "valid_utf8"]
