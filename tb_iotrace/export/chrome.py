"""Chrome trace-event JSON (the format Perfetto UI and chrome://tracing open).

One document ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``:

- every ``/host:*`` and ``/device:*`` plane of a capture becomes a process (``pid``; name =
  plane name, prefixed with the run/host when several are exported), each of its lines a
  thread (``tid`` = the line's display id, else its id, 31 bits), each event a complete event
  (``"ph": "X"``);
- the I/O trace becomes one more process per source, ``"I/O <host>"``, one thread per OS
  thread (``tid`` = OS tid, named by the thread's comm), events named by call with
  ``args`` ``{"file", "offset", "bytes", "requested", "fd"[, "errno"]}`` (offset absent when
  the call has none);
- a source's object-storage requests become one more process, ``"Objects <host>"``, one thread
  per OS thread that made them, each request named ``"<op> <object>"`` with ``args``
  ``{"object", "op", "status", "bytes"[, "range", "first_byte_us", "error"]}``;
- one clock: ``ts``/``dur`` in microseconds since the earliest start of all exported sources
  (a capture's profile start, a record's process start); ``otherData.clock_origin_ns`` is that
  origin in CLOCK_REALTIME epoch ns.

Written as a stream, line by line (one event per line), in chunks, to a temporary name renamed
over OUT when complete; gzip when OUT ends in .gz.
"""
from __future__ import annotations

import gzip
import io
import json
from typing import Any, BinaryIO, TextIO

import numpy as np

from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.base.progress import Progress
from tb_iotrace.export._common import io_rows

PID_STRIDE = 1000
MAX_TID = 0x7FFFFFFF


def _count(src: Any) -> int:
    n = src.nevents()
    if src.has_timeline:
        from tb_iotrace.store.xplane.schema import LINE_PREFIX

        for p in src.space().planes:
            if p.name.startswith(("/host:", "/device:")):
                n += sum(len(ln.events) for ln in p.lines if not ln.name.startswith(LINE_PREFIX))
    return n


class _Writer:
    def __init__(self, fh: TextIO) -> None:
        self.fh = fh
        self.first = True
        self.names: dict[Any, str] = {}

    def name(self, s: Any) -> str:
        out = self.names.get(s)
        if out is None:
            if len(self.names) > 200_000:
                self.names.clear()
            out = self.names[s] = json.dumps(str(s))
        return out

    def write(self, lines: list[str]) -> None:
        if not lines:
            return
        sep = "\n" if self.first else ",\n"
        self.first = False
        self.fh.write(sep + ",\n".join(lines))

    def meta(self, pid: int, tid: int | None, key: str, value: str, sort: int | None = None) -> None:
        ev: dict[str, Any] = {"ph": "M", "pid": pid, "name": key, "args": {"name": value}}
        if tid is not None:
            ev["tid"] = tid
        out = [json.dumps(ev)]
        if sort is not None:
            out.append(json.dumps({"ph": "M", "pid": pid, "tid": tid or 0,
                                   "name": "thread_sort_index" if tid is not None else "process_sort_index",
                                   "args": {"sort_index": sort}}))
        self.write(out)


def _planes(w: _Writer, src: Any, base_pid: int, shift_us: float, label: str, prog: Progress) -> None:
    from tb_iotrace.store.xplane import columns
    from tb_iotrace.store.xplane.schema import LINE_PREFIX

    for pi, plane in enumerate(src.space().planes):
        if not plane.name.startswith(("/host:", "/device:")):
            continue
        pid = base_pid + 1 + pi
        w.meta(pid, None, "process_name", f"{label}{plane.name}", sort=pid)
        pc = columns(plane)
        for li in range(pc.num_lines):
            raw = plane.lines[li]
            if raw.name.startswith(LINE_PREFIX) or not raw.events:
                continue
            ln = pc.line(li)
            tid = int(ln.display_id or ln.id) & MAX_TID
            w.meta(pid, tid, "thread_name", ln.label)
            names = pc.event_display_names(ln)
            ts = ln.start_ps / 1e6 + shift_us
            dur = ln.duration_ps / 1e6
            for lo in range(0, len(ln), 100_000):
                hi = min(lo + 100_000, len(ln))
                w.write([f'{{"ph":"X","pid":{pid},"tid":{tid},"name":{w.name(n)},"ts":{t:.6f},"dur":{d:.6f}}}'
                         for n, t, d in zip(names[lo:hi].tolist(), ts[lo:hi].tolist(), dur[lo:hi].tolist())])
                prog.add(hi - lo)


def _steps(w: _Writer, src: Any, pid: int, shift_us: float, label: str) -> None:
    """A "Steps" track: one span per training step, named as the report and the I/O tab name it
    (``step <step_num>`` as TensorFlow recorded it, else ``step <position>``); its args carry the
    step's input wait (``input_wait_us``, ``input_wait_share``) by the one rule of
    :mod:`tb_iotrace.model.stepwait`, as the report and the tab give it."""
    from tb_iotrace.analysis.attribution import attribute

    try:
        att = attribute(src.space(), src.io_trace())
    except Exception:       # no host timeline to read steps from: no track
        return
    if att is None or not att.steps:
        return
    w.meta(pid, None, "process_name", f"{label}Steps", sort=pid)
    w.meta(pid, 0, "thread_name", "steps" if att.has_step_markers else "time windows (no step markers)")
    w.write([f'{{"ph":"X","pid":{pid},"tid":0,"name":{w.name(f"step {st.step_num if st.step_num is not None else st.index}")},'
             f'"ts":{st.start_ps / 1e6 + shift_us:.6f},"dur":{st.duration_ps / 1e6:.6f},'
             f'"args":{{"step_num":{json.dumps(st.step_num)},"index":{st.index},'
             f'"input_wait_us":{st.wait_ps / 1e6:.6f},"input_wait_share":{st.input_wait_share:.6f}}}}}'
             for st in att.steps])


def _io(w: _Writer, src: Any, pid: int, origin_ns: int, label: str, prog: Progress) -> None:
    got = src.io_columns()
    if got is None:
        return
    cols, names = got
    w.meta(pid, None, "process_name", f"I/O {label}".rstrip(), sort=pid)
    for tid in np.unique(cols["tid"]).tolist():
        w.meta(pid, int(tid) & MAX_TID, "thread_name", f"I/O {names.get(int(tid), '')} (tid {tid})")
    for ch in io_rows(cols):
        ts = ((ch["start_ns"] - origin_ns) / 1e3).tolist()
        dur = ((ch["end_ns"] - ch["start_ns"]) / 1e3).tolist()
        out = []
        for i, (op, path, off, req, ret, fd, err, tid) in enumerate(zip(
                ch["op"].tolist(), ch["path"].tolist(), ch["offset"].tolist(), ch["requested"].tolist(),
                ch["returned"].tolist(), ch["fd"].tolist(), ch["errno"].tolist(), ch["tid"].tolist())):
            args = f'"file":{w.name(path)},'
            if off >= 0:
                args += f'"offset":{off},'
            args += f'"bytes":{ret},"requested":{req},"fd":{fd}'
            if err:
                args += f',"errno":{err}'
            out.append(f'{{"ph":"X","cat":"io","pid":{pid},"tid":{tid & MAX_TID},"name":{w.name(op)},'
                       f'"ts":{ts[i]:.6f},"dur":{dur[i]:.6f},"args":{{{args}}}}}')
        w.write(out)
        prog.add(len(out))


def _objects(w: _Writer, src: Any, pid: int, origin_ns: int, label: str, prog: Progress) -> None:
    reqs = src.objects()
    if not reqs:
        return
    w.meta(pid, None, "process_name", f"Objects {label}".rstrip(), sort=pid)
    for tid in sorted({int(r["tid"]) for r in reqs}):
        w.meta(pid, tid & MAX_TID, "thread_name", f"object requests (tid {tid})")
    out = []
    for r in reqs:
        args = {"object": r["object"], "op": r["op"], "status": r["status"], "bytes": r["bytes"]}
        if r["range_start"] >= 0:
            args["range"] = f"{r['range_start']}-{r['range_end'] if r['range_end'] >= 0 else ''}"
        if r["ttfb_ns"]:
            args["first_byte_us"] = round((r["ttfb_ns"] - r["start_ns"]) / 1e3, 3)
        if r["error"]:
            args["error"] = r["error"]
        out.append(f'{{"ph":"X","cat":"object","pid":{pid},"tid":{int(r["tid"]) & MAX_TID},'
                   f'"name":{w.name(r["op"] + " " + r["object"])},"ts":{(r["start_ns"] - origin_ns) / 1e3:.6f},'
                   f'"dur":{max(0, r["end_ns"] - r["start_ns"]) / 1e3:.6f},"args":{json.dumps(args)}}}')
    w.write(out)
    prog.add(len(out))


def export(sources: list[Any], out: str, progress: bool = True) -> int:
    """Write the sources as one trace; return the number of complete events written. The trace
    is written under a temporary name and renamed over ``out`` once complete: a failure half-way
    leaves the previous ``out`` as it was."""
    origins = [s.origin_ns() for s in sources]
    nonzero = [o for o in origins if o]
    origin = min(nonzero) if nonzero else 0
    total = sum(_count(s) for s in sources)
    prog = Progress("export chrome", total) if progress else Progress("", 0)
    try:
        atomic_write(out, lambda raw: _write(raw, sources, origins, origin, out.endswith(".gz"), prog))
    finally:
        prog.close()
    return prog.done


def _write(raw: BinaryIO, sources: list[Any], origins: list[int], origin: int, gz: bool, prog: Progress) -> None:
    fh: Any = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6) if gz else raw
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="\n", write_through=False)
    text.write('{"traceEvents":[')
    w = _Writer(text)
    several = len(sources) > 1
    for k, (src, o) in enumerate(zip(sources, origins)):
        label = f"{src.run}/{src.host} " if several else ""
        base = k * PID_STRIDE
        src_origin = o or origin
        if src.has_timeline:
            _planes(w, src, base, (src_origin - origin) / 1e3, label, prog)
            _steps(w, src, base + PID_STRIDE - 2, (src_origin - origin) / 1e3, label)
        _io(w, src, base + PID_STRIDE - 1, origin if origin else src_origin, label or f"{src.host}", prog)
        _objects(w, src, base + PID_STRIDE - 3, origin if origin else src_origin, label or f"{src.host}", prog)
    text.write("\n],\n")
    text.write(f'"displayTimeUnit":"ns","otherData":{{"clock_origin_ns":{origin},'
               f'"generator":"tb_iotrace"}}}}\n')
    text.flush()
    text.detach()           # the caller closes the file it gave
    if gz:
        fh.close()          # the gzip trailer; raw stays open
