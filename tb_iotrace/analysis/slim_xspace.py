"""A capture file read for the analysis as a slim XSpace and an IoTrace, without a protobuf object
per I/O event (:func:`read_slim_xspace`).

``load_xspace`` + ``read_io_data`` cost about 12x the file in memory and 10 s per million I/O
events (upb messages for every event, then a Python loop over them). The analysis needs the
I/O events only as columns, and of the rest only the host plane's TensorFlow events (steps,
input waits, tf.data iterators) and the plane stats (profile start, the ``tb_iotrace.io``
record). So the file is decoded column-wise (read, not mapped; numpy, :mod:`tb_iotrace.model.columnar`
does it for the I/O tab too) and only those small parts become protobuf messages:

- the I/O lines -> an :class:`IoTrace` with the same rows, order and values as ``read_io_data``
  (:func:`tb_iotrace.model.io_events.io_events`, the tab's decoder of the I/O events too);
- a slim ``XSpace``: every plane's metadata and stats, and the host plane's non-I/O lines
  (re-parsed from their bytes, stats included), so ``attribute`` and the host timeline code
  work on it unchanged. Of the device planes only the ``Steps`` line and the host-to-device copy
  lines are kept (the steps when the host has none; the verdict's copy share).
"""
from __future__ import annotations

import os

from tb_iotrace.model.stepwait import DEVICE_STEPS_LINE
from tb_iotrace.store.xplane import HOST_PLANE, IO_STAT, LINE_PREFIX, IoTrace, ThreadInfo, XLine, XPlane, XPlaneError, XSpace, read_io_info
from tb_iotrace.store.xplane.lenient import parse_lenient
from tb_iotrace.store.xplane.io_fields import STAT_DEFAULTS
from tb_iotrace.store.xplane.schema import EVENT_STATS
from tb_iotrace.store.xplane.read_io import checkpoint_calls
from tb_iotrace.store.xplane.wire import WT_LEN, tag, varint_bytes

_EVENT_TAG = tag(4, WT_LEN)          # XLine.events


def _has_io_record(meta: XPlane) -> bool:
    for st in meta.stats:
        md = meta.stat_metadata.get(st.metadata_id)
        if md is not None and md.name == IO_STAT:
            return True
    return False


def _io_trace(pd, info: dict) -> IoTrace:
    """The I/O lines of the decoded plane ``pd`` as read_io_data returns them (the model's one
    decoder of the I/O events: the lines the record lists, in its order; epoch times)."""
    # beside the columnar decoder, whose package imports tensorboard: not at module level
    from tb_iotrace.model.io_events import io_events

    ev = io_events([pd], info, recorded_only=True)
    if ev is None:
        return IoTrace.empty()
    start, end = ev.epoch_ns()
    calls = ev.calls
    return IoTrace(op=calls.op_text(), path=calls.path_text(), offset=calls.offset, requested=calls.requested,
                   returned=calls.returned, fd=calls.fd, errno=calls.errno, start_ns=start, end_ns=end,
                   tid=ev.tid)


def _slim_host(pd, data, path: str, keep=lambda name: not name.startswith(LINE_PREFIX)) -> XPlane:
    """The plane with its metadata and the lines ``keep`` keeps (the host plane: its non-I/O
    lines), events re-parsed from the file."""
    plane = XPlane()
    plane.CopyFrom(pd.meta)
    for ln in pd.lines:
        if not keep(ln.name):
            continue
        x: XLine = plane.lines.add()
        x.id, x.display_id, x.name, x.display_name = ln.id, ln.display_id, ln.name, ln.display_name
        x.timestamp_ns = ln.timestamp_ns
        pos = pd.file_pos[ln.first:ln.first + ln.count].tolist()
        size = pd.file_len[ln.first:ln.first + ln.count].tolist()
        if not pos:
            continue
        lo = min(pos)
        span = data(lo, max(p + n for p, n in zip(pos, size)))   # the line's events, one read
        events = XLine()
        try:
            parse_lenient(events, b"".join(_EVENT_TAG + varint_bytes(n) + span[p - lo:p - lo + n]
                                           for p, n in zip(pos, size)))
        except Exception as exc:  # DecodeError: the file changed since it was decoded
            raise XPlaneError(path, f"host events unreadable ({type(exc).__name__}); the file may have changed") from None
        x.MergeFrom(events)
    return plane


def _device_line_kept(name: str) -> bool:
    return name == DEVICE_STEPS_LINE or "MemcpyH2D" in name


def _reader(fh, path: str):
    """``read(a, b)``: the file's bytes [a, b), read with pread. Not a memory map: a writer
    truncating the file under a mapping makes the next touch of a page past its end a SIGBUS,
    which kills the process."""
    fd = fh.fileno()

    def read(a: int, b: int) -> bytes:
        got = os.pread(fd, b - a, a)
        if len(got) != b - a:
            raise XPlaneError(path, "the file changed while it was read (being rewritten?)")
        return got

    return read


def read_slim_xspace(path: str | os.PathLike) -> tuple[XSpace, IoTrace | None]:
    """(slim XSpace, I/O trace or None) of a capture file; see the module docstring.
    Raises :class:`tb_iotrace.store.xplane.XPlaneError` for a file that cannot be read."""
    # the columnar decoder; its package imports tensorboard (a dependency), hence not at module level
    from tb_iotrace.model.columnar import decode_xspace

    sd = decode_xspace(path, stats_for=lambda plane, meta, line: line.name.startswith(LINE_PREFIX)
                       and _has_io_record(meta), stat_names=EVENT_STATS, stat_defaults=STAT_DEFAULTS)
    space = XSpace()
    space.hostnames.extend(sd.hostnames)
    trace = None
    with open(path, "rb") as fh:
        data = _reader(fh, os.fspath(path))
        for pd in sd.planes:
            if pd.name == HOST_PLANE:
                space.planes.add().CopyFrom(_slim_host(pd, data, os.fspath(path)))
            elif pd.name.startswith("/device:"):
                # the steps when the host has none, and the host-to-device copies (the verdict's copy)
                space.planes.add().CopyFrom(_slim_host(pd, data, os.fspath(path), keep=_device_line_kept))
            else:
                space.planes.add().CopyFrom(pd.meta)
            pd.file_pos = pd.file_len = None
            if trace is None and _has_io_record(pd.meta):
                one = XSpace()
                one.planes.add().CopyFrom(pd.meta)
                info = read_io_info(one)
                if info is not None:
                    trace = _io_trace(pd, info)
                    trace.threads = {int(t): ThreadInfo(int(p), str(c)) for t, p, c in info.get("threads", [])}
                    trace.dropped = int(info.get("dropped", 0))
                    trace.counters = list(info.get("counters", []))
                    trace.mounts = str(info.get("mounts", ""))
                    trace.machine = dict(info["machine"]) if isinstance(info.get("machine"), dict) else None
                    trace.checkpoint_calls = checkpoint_calls(info)
                    trace.objects = info.get("objects") if isinstance(info.get("objects"), dict) else None
            pd.stats.clear()
            pd.metadata_id = pd.start_ps = pd.duration_ps = None
    return space, trace
