"""Which kind of source a file is: the one rule the report, the exports, the fleet and the I/O tab
share (:func:`tb_iotrace.model.open_source.open_source` and the tab's logdir index ask it; nothing
above the model tells kinds apart by itself).

The kinds, by the name a :class:`tb_iotrace.model.sources.Source` gives them:

- :data:`CAPTURE` (``"xplane"``): a profile capture ``<host>.xplane.pb`` of TensorFlow, JAX, or
  one converted from elsewhere (a Darshan log by ``tb-iotrace import-darshan``);
- :data:`RECORD` (``"record"``): a whole-run record of ``tb-iotrace run``
  (``<host>.<pid>[.execN].json``, its trace and file table beside it);
- :data:`KINETO` (``"kineto"``): a PyTorch (Kineto) trace ``<worker>.<ts>.pt.trace.json[.gz]``;
- :data:`DARSHAN` (``"darshan"``): a binary Darshan log (``*.darshan``, or told by its header);
  no reader opens it as a source: ``tb-iotrace import-darshan`` converts it to a capture first.

Object-storage requests are no kind of file: every kind carries its own
(:meth:`tb_iotrace.model.sources.Source.objects`).

Two questions, two functions:

- :func:`listed_kind`: the kind of a file a logdir scan (:func:`tb_iotrace.store.logdir.scan`)
  listed, by its name alone: the scan lists only these names and has read a record's head
  already, so nothing is opened (the tab asks it per request);
- :func:`kind_of`: the kind of any file a user named, by its name where the name is specific
  (``.pt.trace.json[.gz]``, ``.xplane.pb``, ``.darshan``) and else by its first bytes (``.json`` is any JSON:
  a record starts with ``{``; a capture is a protobuf whose first field is its planes).
  A file of no known kind, or one that cannot be read, raises :class:`SourceError` (one line
  naming the file).
"""
from __future__ import annotations

import os
import struct

from tb_iotrace.store.logdir import is_kineto_name
from tb_iotrace.store.runrecord import RECORD_SUFFIX
from tb_iotrace.store.xplane.schema import XPLANE_SUFFIX

CAPTURE = "xplane"
RECORD = "record"
KINETO = "kineto"
DARSHAN = "darshan"
KINDS = (CAPTURE, RECORD, KINETO, DARSHAN)

# A Darshan log's header starts with its format version (8 bytes, "3.41\0...") and the magic
# number, an int64 in the writer's byte order (darshan-log-format.h: DARSHAN_MAGIC_NR).
DARSHAN_MAGIC = 6567223
DARSHAN_SUFFIX = ".darshan"
HEAD_BYTES = 256        # what :func:`kind_of` reads of a file whose name does not say its kind

UNKNOWN_FORMAT = ("unknown format (expected a logdir, a run directory, "
                  "a .xplane.pb capture or a tb_iotrace run record .json)")


class SourceError(Exception):
    """A source that cannot be read: one line naming the file."""


def kind_by_name(path: str | os.PathLike[str]) -> str | None:
    """The kind a file's name says: :data:`KINETO` for ``*.pt.trace.json[.gz]`` (not hidden),
    :data:`CAPTURE` for ``*.xplane.pb``, :data:`RECORD` for any other ``*.json``,
    :data:`DARSHAN` for ``*.darshan``; None else."""
    name = os.path.basename(os.fspath(path))
    if is_kineto_name(name):
        return KINETO
    if name.endswith(XPLANE_SUFFIX):
        return CAPTURE
    if name.endswith(RECORD_SUFFIX):
        return RECORD
    if name.endswith(DARSHAN_SUFFIX):
        return DARSHAN
    return None


def listed_kind(path: str | os.PathLike[str]) -> str:
    """The kind of a file the logdir scan listed, by its name (a capture unless the name says a
    trace or a record; nothing is read)."""
    kind = kind_by_name(path)
    return kind if kind in (RECORD, KINETO) else CAPTURE


# What may follow the length of an XSpace's first plane: an XPlane field's tag (id, name, lines,
# event and stat metadata, stats) or, after an empty plane, the XSpace's next field.
_PLANE_NEXT = frozenset((0x08, 0x0a, 0x12, 0x1a, 0x22, 0x2a, 0x32))


def _is_xspace_head(head: bytes) -> bool:
    """An XSpace's first bytes: field 1 (planes), length-delimited, then a plane's field tag (a
    text starting with a blank line begins with the same byte, 0x0a, and is none)."""
    if head[:1] != b"\x0a":
        return False
    for i in range(1, min(len(head), 11)):   # the plane's length, a varint of up to 10 bytes
        if not head[i] & 0x80:
            return i + 1 == len(head) or head[i + 1] in _PLANE_NEXT
    return False


def kind_by_head(head: bytes) -> str | None:
    """The kind a file's first bytes say (None when they say none)."""
    if head.lstrip().startswith(b"{"):
        return RECORD
    if _is_xspace_head(head):
        return CAPTURE
    if len(head) >= 16 and head[:1].isdigit():
        if DARSHAN_MAGIC in (struct.unpack("<q", head[8:16])[0], struct.unpack(">q", head[8:16])[0]):
            return DARSHAN
    return None


def kind_of(path: str | os.PathLike[str]) -> str:
    """The kind of the file ``path`` (see the module docstring); SourceError when it has none
    or cannot be read."""
    by_name = kind_by_name(path)
    if by_name in (KINETO, CAPTURE, DARSHAN):
        return by_name
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError as exc:
        raise SourceError(f"{os.fspath(path)}: cannot read: {exc.strerror or exc}") from None
    kind = kind_by_head(head)
    if kind is None:
        raise SourceError(f"{os.fspath(path)}: {UNKNOWN_FORMAT}")
    return kind


__all__ = ["CAPTURE", "DARSHAN", "DARSHAN_MAGIC", "DARSHAN_SUFFIX", "KINDS", "KINETO", "RECORD", "SourceError", "UNKNOWN_FORMAT",
           "kind_by_head", "kind_by_name", "kind_of", "listed_kind"]
