"""XPlane message classes built at import time, without protoc and without TensorFlow.

``xplane.proto`` beside this file is the documented schema. Generated ``*_pb2.py`` modules
made by a recent protoc refuse to load on older protobuf runtimes, so instead the same schema
is restated below as a small table, turned into a ``FileDescriptorProto``, added to a
*private* ``DescriptorPool`` and turned into message classes. This works on every protobuf
runtime from 4.21 to 7.x (upb, C++ or pure Python backends).

The private pool matters: TensorFlow registers ``tensorflow.profiler.XSpace`` in the default
pool, and registering a second, different file with the same message names there fails. Our
classes share the full names (so serialized bytes are identical to TensorFlow's) but live in
their own pool, so both can be imported in one process. Messages of the two families are
not interchangeable as Python objects; go through bytes (``SerializeToString`` /
``ParseFromString``) to move between them.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "tensorflow.profiler"
FILE_NAME = "tb_iotrace/store/xplane/xplane.proto"

# (message, [(field, number, type, label, oneof)], reserved ranges [start, end), ).
# type: a scalar type name, a message name of this file, or "map<int64,Message>".
# label: "" (singular) or "repeated". oneof: "" or the oneof's name.
SCHEMA: tuple[tuple[str, tuple[tuple[str, int, str, str, str], ...], tuple[tuple[int, int], ...]], ...] = (
    ("XSpace", (
        ("planes", 1, "XPlane", "repeated", ""),
        ("errors", 2, "string", "repeated", ""),
        ("warnings", 3, "string", "repeated", ""),
        ("hostnames", 4, "string", "repeated", ""),
    ), ()),
    ("XPlane", (
        ("id", 1, "int64", "", ""),
        ("name", 2, "string", "", ""),
        ("lines", 3, "XLine", "repeated", ""),
        ("event_metadata", 4, "map<int64,XEventMetadata>", "repeated", ""),
        ("stat_metadata", 5, "map<int64,XStatMetadata>", "repeated", ""),
        ("stats", 6, "XStat", "repeated", ""),
    ), ()),
    ("XLine", (
        ("id", 1, "int64", "", ""),
        ("display_id", 10, "int64", "", ""),
        ("name", 2, "string", "", ""),
        ("display_name", 11, "string", "", ""),
        ("timestamp_ns", 3, "int64", "", ""),
        ("duration_ps", 9, "int64", "", ""),
        ("events", 4, "XEvent", "repeated", ""),
    ), ((5, 6), (6, 7), (7, 8), (8, 9))),
    ("XEvent", (
        ("metadata_id", 1, "int64", "", ""),
        ("offset_ps", 2, "int64", "", "data"),
        ("num_occurrences", 5, "int64", "", "data"),
        ("duration_ps", 3, "int64", "", ""),
        ("stats", 4, "XStat", "repeated", ""),
    ), ()),
    ("XStat", (
        ("metadata_id", 1, "int64", "", ""),
        ("double_value", 2, "double", "", "value"),
        ("uint64_value", 3, "uint64", "", "value"),
        ("int64_value", 4, "int64", "", "value"),
        ("str_value", 5, "string", "", "value"),
        ("bytes_value", 6, "bytes", "", "value"),
        ("ref_value", 7, "uint64", "", "value"),
    ), ()),
    ("XEventMetadata", (
        ("id", 1, "int64", "", ""),
        ("name", 2, "string", "", ""),
        ("display_name", 4, "string", "", ""),
        ("metadata", 3, "bytes", "", ""),
        ("stats", 5, "XStat", "repeated", ""),
        ("child_id", 6, "int64", "repeated", ""),
    ), ()),
    ("XStatMetadata", (
        ("id", 1, "int64", "", ""),
        ("name", 2, "string", "", ""),
        ("description", 3, "string", "", ""),
    ), ()),
)

_FDP = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "int64": _FDP.TYPE_INT64,
    "uint64": _FDP.TYPE_UINT64,
    "double": _FDP.TYPE_DOUBLE,
    "string": _FDP.TYPE_STRING,
    "bytes": _FDP.TYPE_BYTES,
}


def _map_entry_name(field_name: str) -> str:
    # protoc's rule: "event_metadata" -> "EventMetadataEntry".
    return "".join(part.capitalize() for part in field_name.split("_")) + "Entry"


def _set_type(field: descriptor_pb2.FieldDescriptorProto, type_name: str, scope: str) -> None:
    if type_name in _SCALARS:
        field.type = _SCALARS[type_name]
    else:
        field.type = _FDP.TYPE_MESSAGE
        field.type_name = f".{PACKAGE}.{scope}{type_name}"


def build_file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto of xplane.proto, built from ``SCHEMA``."""
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.name = FILE_NAME
    fdp.package = PACKAGE
    fdp.syntax = "proto3"
    fdp.options.cc_enable_arenas = True
    for msg_name, fields, reserved in SCHEMA:
        msg = fdp.message_type.add()
        msg.name = msg_name
        oneofs: list[str] = []
        for fname, number, ftype, label, oneof in fields:
            field = msg.field.add()
            field.name = fname
            field.number = number
            field.json_name = fname.split("_")[0] + "".join(p.capitalize() for p in fname.split("_")[1:])
            field.label = _FDP.LABEL_REPEATED if label == "repeated" else _FDP.LABEL_OPTIONAL
            if ftype.startswith("map<"):
                key_type, value_type = ftype[4:-1].split(",")
                entry = msg.nested_type.add()
                entry.name = _map_entry_name(fname)
                entry.options.map_entry = True
                key = entry.field.add()
                key.name, key.number, key.json_name = "key", 1, "key"
                key.label = _FDP.LABEL_OPTIONAL
                _set_type(key, key_type, "")
                value = entry.field.add()
                value.name, value.number, value.json_name = "value", 2, "value"
                value.label = _FDP.LABEL_OPTIONAL
                _set_type(value, value_type, "")
                field.type = _FDP.TYPE_MESSAGE
                field.type_name = f".{PACKAGE}.{msg_name}.{entry.name}"
            else:
                _set_type(field, ftype, "")
            if oneof:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    msg.oneof_decl.add().name = oneof
                field.oneof_index = oneofs.index(oneof)
        for start, end in reserved:
            rr = msg.reserved_range.add()
            rr.start, rr.end = start, end
    return fdp


POOL = descriptor_pool.DescriptorPool()
# AddSerializedFile is what generated modules use; it exists on every runtime we support.
POOL.AddSerializedFile(build_file_descriptor_proto().SerializeToString())
FILE_DESCRIPTOR = POOL.FindFileByName(FILE_NAME)


def _message_class(full_name: str):
    desc = POOL.FindMessageTypeByName(f"{PACKAGE}.{full_name}")
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is not None:  # protobuf >= 4.22
        return get_class(desc)
    return message_factory.MessageFactory(POOL).GetPrototype(desc)  # protobuf 4.21


XSpace = _message_class("XSpace")
XPlane = _message_class("XPlane")
XLine = _message_class("XLine")
XEvent = _message_class("XEvent")
XStat = _message_class("XStat")
XEventMetadata = _message_class("XEventMetadata")
XStatMetadata = _message_class("XStatMetadata")

__all__ = [
    "FILE_DESCRIPTOR",
    "POOL",
    "SCHEMA",
    "XEvent",
    "XEventMetadata",
    "XLine",
    "XPlane",
    "XSpace",
    "XStat",
    "XStatMetadata",
    "build_file_descriptor_proto",
]
