"""A host's files in the report's text: the verdict at the top, what was not tracked, code
loading in one line, the module totals, the busiest files, the POSIX read sizes and read
pattern (all from :func:`tb_iotrace.analysis.file_totals.files_view`), and the bandwidth over
the whole run."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tb_iotrace.analysis.file_totals import files_view, moved, untracked_note
from tb_iotrace.base.safenames import printable, quoted
from tb_iotrace.base.sizes import human_bytes
from tb_iotrace.store.timeseries import TimeSeries, sparkline


def code_line(summary: Mapping[str, Any], shown: bool) -> str:
    """The one line the report gives code loading."""
    return (f"Code loading (Python imports, shared libraries, interpreter, framework config): "
            f"{summary['files']} files, {human_bytes(summary['bytes_read'])} read, "
            f"{summary['time_s']:.4f} s in calls" + ("" if shown else "; left out below (--all-files shows them)"))


BOUND_WORDS = {"input": "INPUT-BOUND", "partly input": "PARTLY INPUT-BOUND", "not input": "NOT INPUT-BOUND",
               "unknown": "NO VERDICT"}
WAIT_PARTS = (("file_io", "file I/O"), ("object_io", "object I/O"), ("decode", "decode"), ("starved", "starved"),
              ("copy", "copy"), ("other", "other"))
SHOWN_WHEN_SOME = ("object_io",)     # a part most captures never have: named only when it is there


def render_verdict(v: Mapping[str, Any]) -> str:
    """The verdict's lines at the top of a host's report (tb_iotrace.analysis.verdict)."""
    share = v.get("input_wait_share")
    head = f"Verdict: {BOUND_WORDS.get(str(v.get('bound')), str(v.get('bound')).upper())}"
    if isinstance(v.get("waits_for"), dict):       # another rank's input sets the step (job verdict)
        head = f"Verdict: WAITS FOR {str(v['waits_for'].get('label', 'another rank')).upper()}'S INPUT (job verdict)"
    if share is not None:
        per = v.get("input_wait_ms_per_step")
        head += (f": the step waits for input {100 * share:.1f}% of its time"
                 + (f" ({per:.2f} ms per step over {v.get('steps')} steps)" if per is not None else
                    f" ({v.get('basis')})"))
    lines = [head]
    b = v.get("wait_breakdown") or {}
    if share:
        parts = [f"{name} {100 * b[k]:.0f}%" for k, name in WAIT_PARTS
                 if b.get(k) is not None and (b[k] or k not in SHOWN_WHEN_SOME)]
        if v.get("unmeasured") and (v.get("unmeasured_share") or 0) > 0:
            parts.append(f"{' or '.join(v['unmeasured'])} (not measured) {100 * v['unmeasured_share']:.0f}%")
        lines.append("  the wait: " + ", ".join(parts))
        if v.get("reason"):
            lines.append(f"  not measured: {v['reason']}")
    if v.get("collective_wait_share") is not None and v.get("collectives"):
        lines.append(f"  collective wait: {100 * v['collective_wait_share']:.1f}% of step time "
                     f"({v.get('collective_wait_ms_per_step') or 0:.2f} ms per step in all-reduce/all-gather/...)")
    if v.get("advice"):
        lines.append(f"  advice: {v['advice']}")
    return "\n".join(lines)


def render_files(files: Sequence[Mapping[str, Any]], *, title: str = "", dropped: int = 0, top: int = 10,
                 empty: str = "", untracked: Mapping[str, Any] | None = None, all_files: bool = False,
                 verdict: Mapping[str, Any] | None = None) -> str:
    """The report a user reads first, as text (``empty``: what to say when there are no files).
    Files marked ``"code": true`` (tb_iotrace.base.codepaths) are one line and left out of the
    tables unless ``all_files``."""
    lines: list[str] = []
    if title:
        title = printable(title)
        lines += [title, "=" * len(title)]
    if verdict:
        lines += [render_verdict(verdict), ""]
    note = untracked_note(untracked)
    if note:
        lines.append(f"NOT TRACKED: {note}")
    view = files_view(files, all_files, top)
    if view.code["files"]:
        lines.append(code_line(view.code, all_files))
    if not view.shown:
        lines.append(printable(empty) if empty else ("No data file I/O was recorded." if view.code["files"] else
                               "No file I/O was recorded (nothing traced, or every path was excluded)."))
        return "\n".join(lines) + "\n"
    lines.append(f"{'module':<7} {'files':>6} {'read':>11} {'written':>11} {'reads':>9} {'writes':>9} "
                 f"{'opens':>7} {'read s':>9} {'write s':>9} {'meta s':>9} {'read MiB/s':>11}")
    for t in view.totals:
        lines.append(f"{t.module:<7} {t.files:>6} {human_bytes(t.bytes_read):>11} "
                     f"{human_bytes(t.bytes_written):>11} {t.reads:>9} {t.writes:>9} {t.opens:>7} "
                     f"{t.read_time:>9.4f} {t.write_time:>9.4f} {t.meta_time:>9.4f} {t.read_bw:>11.1f}")
    if dropped:
        lines.append(f"(trace cap reached: {dropped} calls not in the trace; counters are exact)")
    lines += ["", f"Busiest files (top {top} by bytes moved)"]
    for f in view.busiest:
        m = f["module"]
        c = f["counters"]
        lines.append(f"  {human_bytes(moved(f)):>11}  {m:<5} reads={c.get(f'{m}_READS', 0):<7} "
                     f"writes={c.get(f'{m}_WRITES', 0):<7} {quoted(f['path'])}")
    hist = view.read_sizes
    if any(hist.values()):
        lines += ["", "POSIX read sizes"]
        peak = max(hist.values())
        for b, n in hist.items():
            if n:
                lines.append(f"  {b:>9}  {n:>9}  {'#' * max(1, round(40 * n / peak))}")
    pat = view.pattern
    if pat["READS"]:
        lines += ["", f"POSIX read pattern: {pat['READS']} reads, "
                      f"{100 * pat['SEQ_READS'] / pat['READS']:.0f}% sequential, "
                      f"{100 * pat['CONSEC_READS'] / pat['READS']:.0f}% consecutive"]
    return "\n".join(lines) + "\n"


def render_timeseries(ts: Mapping[str, Any], width: int = 64) -> str:
    """Text lines: the read and write bandwidth over the window, one sparkline each."""
    series = TimeSeries.from_dict(ts)
    if not len(series):
        return ""
    secs = series.bin_ns / 1e9
    span = len(series) * secs
    lines = [f"I/O over the whole run: {span:.1f} s in {len(series)} bins of {_duration(secs)} "
             f"(one character: max of {max(1, -(-len(series) // width))} bins)"]
    for name, arr in (("read", series.bytes_read), ("write", series.bytes_written)):
        if not any(arr):
            continue
        peak = max(arr) / secs
        busiest = max(range(len(arr)), key=arr.__getitem__)
        lines.append(f"  {name:<5} |{sparkline(arr, width)}| peak {human_bytes(peak)}/s "
                     f"at +{busiest * secs:.1f} s, total {human_bytes(sum(arr))}")
    lines.append(f"  calls |{sparkline(series.calls, width)}| {sum(series.calls)} calls, "
                 f"{sum(series.io_time_s):.3f} s in I/O")
    return "\n".join(lines) + "\n"


def _duration(s: float) -> str:
    if s >= 60:
        return f"{s / 60:.1f} min"
    if s >= 1:
        return f"{s:.2f} s"
    return f"{s * 1e3:.1f} ms"
