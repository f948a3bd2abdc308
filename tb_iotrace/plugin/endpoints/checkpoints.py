"""``/checkpoints``: the checkpoint saves and loads of every host of the view on the view's
clock (the checkpoint lane under the steps), and the run's saves across its hosts (ranks):
one table per save with every rank's bytes, bandwidth and finish time, the straggler marked
(tb_iotrace.analysis.checkpoints.ranks; docs/checkpoints.md). Computed with the findings, in
their child process (:mod:`..findings_runner`), and cached with them."""
from __future__ import annotations

from typing import Any

from tb_iotrace.plugin.findings_runner import findings_for, findings_for_all
from tb_iotrace.plugin.request_view import View

PHASE_KEYS = ("kind", "bytes", "files", "io_time_s", "fsync_time_s", "blocking_ns", "background_ns", "path",
              "source", "fs_type", "mount_point")

__all__ = ["checkpoints_impl", "host_answers", "run_straggler"]


def host_answers(view: View) -> tuple[list[tuple[Any, dict[str, Any]]], int]:
    """(part, its analysis answer) of each host of the view whose answer is in, and how many
    are still pending (several hosts: analysed in the background, as /findings)."""
    if len(view.parts) > 1:
        try:
            got = findings_for_all([p.capture.path for p in view.parts])
        except Exception:  # a failure never breaks the tab
            got = {}
        done = [(p, got[p.capture.path]) for p in view.parts if got.get(p.capture.path) is not None]
        return done, len(view.parts) - len(done)
    out = []
    for p in view.parts:
        try:
            out.append((p, findings_for(p.capture.path)))
        except Exception:
            continue
    return out, 0


def _ranks() -> Any:
    """tb_iotrace.analysis.checkpoints.ranks, imported when asked for (the analysis package is
    heavy: TensorBoard's process imports it only when a tab shows checkpoints)."""
    from tb_iotrace.analysis.checkpoints import ranks

    return ranks


def _docs(done: list[tuple[Any, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The report-shaped host documents checkpoints.ranks reads."""
    return [{"host": p.host, "process": {"rank": got.get("rank")}, "checkpoints": got.get("checkpoints") or [],
             "training": got.get("training") or {}, "findings": []} for p, got in done]


def run_straggler(done: list[tuple[Any, dict[str, Any]]]) -> dict[str, Any] | None:
    """The checkpoint-straggler finding of the view's hosts (with its ``host``), or None."""
    docs = _docs(done)
    if not any(d["checkpoints"] for d in docs):
        return None
    cr = _ranks()
    got = cr.straggler_finding(cr.save_table(docs), docs)
    return dict(got[1], host=got[0]) if got is not None else None


def checkpoints_impl(view: View) -> dict[str, Any]:
    """``{"phases": [{"host", "rank", "kind", "start", "end", "finish" (view clock ns), "bytes",
    "files", "io_time_s", "fsync_time_s", "blocking_ns", "background_ns", "path", "source",
    "fs_type", "mount_point"}], "saves": [{"start", "end", "straggler", "lag_ns", "ranks":
    [{"host", "rank", "start", "finish", "bytes", "bandwidth_mib_s", "blocking_ns", "fs_type",
    "mount_point", "path"}]}], "straggler": finding | null, "pending", "hosts", "message"}``."""
    done, pending = host_answers(view)
    clock = {p.host: (int(p.capture.profile_start_ns or 0), int(p.offset)) for p, _ in done}

    def at(host: str, ns: int) -> int:
        start, off = clock[host]
        return int(ns) - start + off

    phases = []
    for p, got in done:
        for ph in got.get("checkpoints") or []:
            phases.append({"host": p.host, "rank": got.get("rank"), "start": at(p.host, ph["start_ns"]),
                           "end": at(p.host, ph["end_ns"]), "finish": at(p.host, ph.get("finish_ns", ph["end_ns"])),
                           **{k: ph.get(k) for k in PHASE_KEYS}})
    docs = _docs(done)
    saves = []
    for s in (_ranks().save_table(docs) if phases else []):
        ranks = [{"host": r["host"], "rank": r["rank"], "start": at(r["host"], r["start_ns"]),
                  "finish": at(r["host"], r["finish_ns"]), "bytes": r["bytes"],
                  "bandwidth_mib_s": r["bandwidth_mib_s"], "blocking_ns": r["blocking_ns"], "fs_type": r["fs_type"],
                  "mount_point": r["mount_point"], "path": r["path"]} for r in s["ranks"]]
        saves.append({"start": min(r["start"] for r in ranks), "end": max(at(r["host"], r["end_ns"]) for r in s["ranks"]),
                      "straggler": s["straggler"], "lag_ns": s["lag_ns"], "ranks": ranks})
    straggler = run_straggler(done)
    message = "" if phases else ("Checkpoints are being looked for." if pending else
                                 "No checkpoint saves or loads in this capture.")
    return {"phases": phases, "saves": saves, "straggler": straggler, "pending": pending, "hosts": len(view.parts),
            "message": message}
