"""The job verdict of the "All hosts" view: the view's hosts as the ranks of one job
(tb_iotrace.analysis.job_verdict), from each host's findings answer (its verdict, steps,
bytes and files read, rank), so that the tab and ``tb-iotrace report`` say the same."""
from __future__ import annotations

from typing import Any

from tb_iotrace.analysis.job_verdict import annotate


def _doc(host: str, got: dict[str, Any]) -> dict[str, Any]:
    rank = got.get("rank")
    read = got.get("read") or {}
    return {"host": host, "process": {"rank": rank, "role": "main"} if isinstance(rank, int) else None,
            "verdict": dict(got["verdict"]) if isinstance(got.get("verdict"), dict) else None,
            "steps": list(got.get("steps") or []), "has_step_markers": True, "findings": [], "files": [],
            "summary": {"bytes_read": int(read.get("bytes_read") or 0), "files": int(read.get("files") or 0)}}


def run_job_verdict(done: list[tuple[str, dict[str, Any]]]) -> tuple[dict[str, Any] | None, list[dict[str, Any]],
                                                                      dict[str, dict[str, Any]]]:
    """(the job verdict or None, its findings each with its ``host``, host -> that host's
    verdict as the job verdict leaves it) of the (host, findings answer) pairs of a view."""
    run: dict[str, Any] = {"hosts": [_doc(h, got) for h, got in done]}
    annotate(run)
    jv = run.get("job_verdict")
    if jv is None:
        return None, [], {}
    found = [dict(f, host=d["host"]) for d in run["hosts"] for f in d["findings"]]
    verdicts = {d["host"]: d["verdict"] for d in run["hosts"] if isinstance(d.get("verdict"), dict)}
    return jv, found, verdicts
