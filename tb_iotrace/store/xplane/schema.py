"""The I/O data's names in an XSpace: the ``tb_iotrace.io`` plane stat and its format, the
I/O lines' prefix, the event stats, the thread line ids TensorFlow gives, event kinds, and
the file names of a capture and of xprof's caches beside it. Written by :mod:`.encode`, read
by :mod:`tb_iotrace.store.xplane.read_io`, :mod:`tb_iotrace.model.columnar` and every surface."""
from __future__ import annotations

from typing import Any

XPLANE_SUFFIX = ".xplane.pb"
FORMAT = "tb_iotrace.io/2"
# Records this reader understands: /1 wrote bytes_requested on every event, /2 only where it
# differs from bytes_returned; reading "absent" as "== bytes_returned" is right for both.
READ_FORMATS = ("tb_iotrace.io/1", FORMAT)
IO_STAT = "tb_iotrace.io"
LINE_PREFIX = "I/O "
DEFAULT_MAX_EVENTS = 1_000_000

STAT_PATH = "path"
STAT_OFFSET = "offset"
STAT_REQUESTED = "bytes_requested"
STAT_RETURNED = "bytes_returned"
STAT_FD = "fd"
STAT_ERRNO = "errno"
EVENT_STATS = (STAT_PATH, STAT_OFFSET, STAT_REQUESTED, STAT_RETURNED, STAT_FD, STAT_ERRNO)

# xprof's streaming trace viewer caches, next to <host>.xplane.pb (names from
# xprof/convert/profiler_plugin_c_api.so: ".SSTABLE", ".metadata.SSTABLE", ".trie.SSTABLE").
CACHE_SUFFIXES = (".SSTABLE", ".metadata.SSTABLE", ".trie.SSTABLE")

_M64 = (1 << 64) - 1
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995


def thread_line_id(pthread_id: int) -> int:
    """The host-plane line id TF (2.21, libstdc++) gives a thread: ``std::hash<std::thread::id>``
    = ``_Hash_bytes(&pthread_self(), 8, 0xc70f6907)``, as a signed int64."""

    def shift_mix(v: int) -> int:
        return v ^ (v >> 47)

    h = (0xC70F6907 ^ (8 * _MUL)) & _M64
    h ^= (shift_mix((int(pthread_id) & _M64) * _MUL & _M64) * _MUL) & _M64
    h = (h * _MUL) & _M64
    h = shift_mix((shift_mix(h) * _MUL) & _M64)
    return h - (1 << 64) if h >> 63 else h


def kind_name(op: str, path: str, fd: int) -> str:
    """XEventMetadata name of an event kind: ``"pread64 /data/x.bin (fd 5)"``, ``"open
    /data/x.bin"``, ``"close (fd 5)"``, ``"sync"``. TensorFlow merges event metadata by
    name, so it must differ per (call, path, fd); the metadata's display_name is the call."""
    name = op
    if path:
        name += " " + path
    if fd != -1:
        name += f" (fd {fd})"
    return name


def event_kinds(info: dict[str, Any]) -> dict[str, tuple[str, str, int, int, int]]:
    """{XEventMetadata name: (call, path, fd, bytes_requested, bytes_returned)} of a
    ``tb_iotrace.io`` record: what an event of that kind has unless its own stats say
    otherwise. Empty for format /1, whose metadata names are the calls and whose events
    carry path, fd and both byte counts."""
    return {str(k): parse_kind(v) for k, v in (info.get("event_kinds") or {}).items()}


def parse_kind(v: Any) -> tuple[str, str, int, int, int]:
    """One ``event_kinds`` entry as (call, path, fd, bytes_requested, bytes_returned)."""
    return str(v[0]), str(v[1]), int(v[2]), int(v[3]), int(v[4])
