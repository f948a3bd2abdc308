"""What the tab's findings show of one capture file (a profile capture or a whole-run record),
as the plugin's findings child answers it (tb_iotrace.plugin.findings_worker), and the host
document the job verdict reads of that answer (:func:`job_doc`): below the plugin, so that the
process that writes a capture can keep its job facts (tb_iotrace.analysis.landed) as the tab
would."""
from __future__ import annotations

import os
from typing import Any

__all__ = ["capture_rank", "findings_of", "job_doc"]


def findings_of(path: str) -> dict[str, Any]:
    """What /findings shows for one capture: ``{findings, notes, message, verdict}``, and what
    /checkpoints shows: ``checkpoints`` (its saves and loads), ``training`` (the time their
    findings' shares are of) and ``rank`` (a whole-run record's, a PyTorch trace's, else None);
    ``steps`` and ``read``, what the job verdict across the view's ranks needs
    (tb_iotrace.analysis.job_verdict). Shaped from the host result's analysed part
    (:func:`tb_iotrace.analysis.host_result.analysed_part`), as ``report`` shows it; a capture is
    read column-wise (:mod:`tb_iotrace.analysis.slim_xspace`)."""
    from tb_iotrace.analysis.host_result import analysed_part
    from tb_iotrace.analysis.slim_xspace import read_slim_xspace
    from tb_iotrace.model.open_source import open_source

    (src,) = open_source(path)
    src.use_reader(read_slim_xspace)
    a = analysed_part(src)
    if a.error is not None:
        raise a.error
    if not a.ran:
        return {"findings": [], "message": src.no_io_reason() or "No I/O record in this capture."}
    process = src.process() or {}
    rank = process.get("rank") if isinstance(process.get("rank"), int) else None
    notes = list(a.notes)
    if src.partial():
        missing = src.trace_missing()
        notes.insert(0, "This record is partial (the process did not finish writing it): findings come "
                        + (f"from its counters up to the last periodic flush ({missing})." if missing
                           else "from its counters and calls up to the last periodic flush."))
    if rank is None and (a.checkpoints or (a.verdict and a.verdict.get("collectives"))) and src.has_timeline:
        rank = capture_rank(src.space())     # a rank of a distributed job: its job verdict needs it
    return {"findings": a.findings, "notes": notes, "verdict": a.verdict,
            "message": "No findings for this capture." if not a.findings else "",
            "checkpoints": a.checkpoints or [], "training": a.training, "rank": rank,
            "steps": [{k: s.get(k) for k in ("step_num", "start_ps", "end_ps", "duration_ps", "input_wait_ps",
                                             "collective_wait_ps")} for s in a.steps],
            "read": a.data_read()}


def capture_rank(space: Any) -> int | None:
    """The rank of a PyTorch trace converted to a capture (its record's, tb_iotrace.store.
    kineto_xspace; ``space``: the capture's XSpace or its path), None for other captures."""
    from tb_iotrace.store.kineto_xspace import KINETO_KEY
    from tb_iotrace.store.xplane import load_xspace, read_io_info

    if isinstance(space, (str, os.PathLike)):
        space = load_xspace(space)
    got = ((read_io_info(space) or {}).get(KINETO_KEY) or {}).get("rank")
    return got if isinstance(got, int) and not isinstance(got, bool) else None


def job_doc(host: str, got: dict[str, Any]) -> dict[str, Any]:
    """The host document the job verdict (tb_iotrace.analysis.job_verdict) reads, made of one
    capture's :func:`findings_of` answer (its job facts are those of this document)."""
    rank = got.get("rank")
    read = got.get("read") or {}
    dirs = read.get("dirs")
    return {"host": host, "process": {"rank": rank, "role": "main"} if isinstance(rank, int) else None,
            "verdict": dict(got["verdict"]) if isinstance(got.get("verdict"), dict) else None,
            "steps": list(got.get("steps") or []), "has_step_markers": True, "findings": [], "files": None,
            "summary": {"bytes_read": int(read.get("bytes_read") or 0), "files": int(read.get("files") or 0)},
            "data_dirs": dict(dirs) if isinstance(dirs, dict) else {}}
