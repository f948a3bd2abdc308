"""``/findings``: the analysis' findings for every host of the view (computed by
:mod:`..findings_runner`)."""
from __future__ import annotations

from typing import Any

from tb_iotrace.plugin.findings_runner import findings_for, findings_for_all
from tb_iotrace.plugin.request_view import View
from tb_iotrace.store import summaries


def findings_impl(view: View, before: dict[str, tuple[str, summaries.Identity | None]] | None = None) -> dict[str, Any]:
    """Findings from tb_iotrace.analysis, per host of the view:
    ``{"findings": [{"id", "severity", "title", "statement", "evidence", "files", "ops",
    "suggestion", "impact", "host"?}], "verdicts": [{"host", **verdict}], "message", "notes",
    "pending", "hosts", "job_verdict"}`` (the job verdict across the hosts as ranks when there are
    two or more and none is pending, else null: tb_iotrace.analysis.job_verdict; the verdict of each host that has one: tb_iotrace.analysis.verdict;
    findings ordered by impact). For several hosts the
    answer comes within ``FINDINGS_ALL_WAIT_S``: ``pending`` counts the hosts (of ``hosts``)
    still being analysed (in one background child for all of them); asking again adds them
    (the tab asks again until none is pending). ``before``: host -> (its file, the file's
    identity taken before the view was made, :func:`identities`): each host's job facts are then
    kept beside its file (tb_iotrace.analysis.job_facts) for ``/hosts``' job verdict after a
    restart."""
    multi = len(view.parts) > 1
    before = before or {}
    try:
        got_all = findings_for_all([p.capture.path for p in view.parts]) if multi else {}
    except Exception as exc:  # a finding failure never breaks the tab
        got_all = {p.capture.path: {"findings": [], "message": f"Findings could not be computed: {exc}"}
                   for p in view.parts}
    findings: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    notes: list[str] = []
    messages: list[str] = []
    pending = 0
    for part in view.parts:
        if multi:
            got = got_all.get(part.capture.path)
            if got is None:
                pending += 1
                continue
        else:
            try:
                got = findings_for(part.capture.path)
            except Exception as exc:  # a finding failure never breaks the tab
                got = {"findings": [], "message": f"Findings could not be computed: {exc}"}
        for f in got["findings"]:
            findings.append(dict(f, host=part.host) if multi else f)
        if got.get("verdict"):
            verdicts.append(dict(got["verdict"], host=part.host))
        notes += got.get("notes", [])
        if got.get("message"):
            messages.append(got["message"])
    if pending:
        notes.insert(0, f"Findings of {len(view.parts) - pending} of {len(view.parts)} hosts so far: the other "
                        f"{pending} are still being analysed.")
    if findings:
        message = ""
    elif pending:
        message = f"Findings are being computed for {pending} hosts."
    else:
        message = messages[0] if messages else "No findings for this capture."
    if multi and not pending:      # one rank's saves finish long after the others' (a run-level finding)
        from tb_iotrace.plugin.endpoints.checkpoints import run_straggler

        late = run_straggler([(p, got_all[p.capture.path]) for p in view.parts])
        if late is not None:
            findings.append(late)
            message = ""
    job = None
    if multi and not pending:      # the hosts as the ranks of one job: which rank's input holds the others
        from tb_iotrace.plugin.endpoints.job_tables import keep_facts, run_job_verdict

        answered = [(p.host, got_all[p.capture.path]) for p in view.parts if got_all.get(p.capture.path) is not None]
        job, found, told = run_job_verdict(answered)
        if before:
            keep_facts([(h, before[h][0], before[h][1], got) for h, got in answered if h in before])
        findings += found
        verdicts = [dict(told.get(v["host"], v), host=v["host"]) for v in verdicts]
    if multi:    # the hosts' findings together, by what they cost
        findings.sort(key=lambda f: -((f.get("impact") or {}).get("step_share") or 0.0))
    return {"findings": findings, "verdicts": verdicts, "message": message, "notes": notes, "pending": pending,
            "hosts": len(view.parts), "job_verdict": job}


def identities(files: list[tuple[str, str]]) -> dict[str, tuple[str, summaries.Identity | None]]:
    """host -> (its file, the file's identity now: taken before the view is made of them)."""
    out: dict[str, tuple[str, summaries.Identity | None]] = {}
    for host, path in files:
        try:
            out[host] = (path, summaries.identity(path))
        except Exception:  # noqa: BLE001 - the facts are a shortcut: never a failed answer
            out[host] = (path, None)
    return out
