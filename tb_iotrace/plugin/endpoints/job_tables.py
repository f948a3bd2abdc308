"""The job verdict of the "All hosts" view: the view's hosts as the ranks of one job
(tb_iotrace.analysis.job_verdict), from each host's findings answer (its verdict, steps,
bytes and files read, rank), so that the tab and ``tb-iotrace report`` say the same; each
host's job facts kept per version of its file (tb_iotrace.analysis.job_facts), from which
``/hosts`` gives the job verdict after a restart without decoding any capture."""
from __future__ import annotations

import threading
from typing import Any

from tb_iotrace.analysis import job_facts
from tb_iotrace.analysis.capture_findings import job_doc
from tb_iotrace.analysis.job_verdict import annotate
from tb_iotrace.store import summaries

KEPT = 65536        # files whose facts this process wrote (not written again for the same version)
_kept: dict[str, summaries.Identity] = {}
_kept_lock = threading.Lock()


def run_job_verdict(done: list[tuple[str, dict[str, Any]]]) -> tuple[dict[str, Any] | None, list[dict[str, Any]],
                                                                      dict[str, dict[str, Any]]]:
    """(the job verdict or None, its findings each with its ``host``, host -> that host's
    verdict as the job verdict leaves it) of the (host, findings answer) pairs of a view."""
    run: dict[str, Any] = {"hosts": [job_doc(h, got) for h, got in done]}
    annotate(run)
    jv = run.get("job_verdict")
    if jv is None:
        return None, [], {}
    found = [dict(f, host=d["host"]) for d in run["hosts"] for f in d["findings"]]
    verdicts = {d["host"]: d["verdict"] for d in run["hosts"] if isinstance(d.get("verdict"), dict)}
    return jv, found, verdicts


def keep_facts(answers: list[tuple[str, str, summaries.Identity | None, dict[str, Any]]]) -> None:
    """Keep the job facts of each (host, file, its identity taken before its findings were
    asked for, findings answer) whose answer is the analysis' (one that says why there is none,
    a failure, a capture too large, is not kept: no stored job verdict for that run), once per
    version of the file."""
    for host, path, before, got in answers:
        if before is None or not isinstance(got.get("steps"), list):
            continue
        with _kept_lock:
            if _kept.get(path) == before:
                continue
        job_facts.keep(path, "", job_doc(host, got), before)
        with _kept_lock:
            _kept.pop(path, None)
            _kept[path] = before
            while len(_kept) > KEPT:
                del _kept[next(iter(_kept))]


def stored_job_verdict(items: list[tuple[str, str, summaries.Identity | None]]) -> job_facts.Stored:
    """The job verdict of the (host, file, identity) of a run from their stored job facts
    (tb_iotrace.analysis.job_facts.stored_verdict); none for fewer than two hosts. A file whose
    facts are damaged or stale is forgotten as written: the next findings answer writes them."""
    if len(items) < 2:
        return job_facts.Stored()
    got = job_facts.stored_verdict([(h, p, "", ident) for h, p, ident in items])
    with _kept_lock:          # written again when the findings next answer for them
        for path in got.redo:
            _kept.pop(path, None)
    return got
