"""The summary and the job facts of captures tb_iotrace has just written, made by a child of
the process that wrote them (tb_iotrace.recording.landing starts it), so that the first "All
hosts" of the logdir, a TensorBoard restart, ``tb-iotrace report --hosts`` read ~1 KB per host
instead of decoding every capture:

    python -m tb_iotrace.analysis.landed [--facts] [--uploaded HOST LOCAL URL ...] HOST PATH [HOST PATH ...]

For each capture: its row of the per-host table, computed as the tab computes it
(:func:`tb_iotrace.analysis.capture_row.capture_row`), kept as its summary
(:mod:`tb_iotrace.store.summaries`: beside it in its run's ``plugins/iotrace/summaries/`` when it
is in a run's ``plugins/`` tree, else in the local cache), unless a valid one is there already;
with ``--facts``, its job facts too (:mod:`tb_iotrace.analysis.job_facts`, from its findings as
the tab's findings child makes them: of a capture without tb_iotrace's I/O record, facts that say
it has no steps, verdict or data read, as the tab's job verdict reads its answer), for a profile
capture, a whole-run record or a PyTorch trace (of the capture it is converted to, as the tab's
findings analyse it; kept under the trace's name and identity, as the tab keeps them). Each is kept
under the identity the capture had before it was read (a capture rewritten meanwhile gets none).
A profile capture or a PyTorch trace uploaded to a URL logdir (``--uploaded``: its host, a local
copy the child removes once read, its URL) gets both kept in the bucket
beside it, of the object's version
(:mod:`tb_iotrace.store.remote_summaries`). The child runs at the lowest CPU priority; a capture that cannot be summarized costs one line on
stderr and nothing else (the tab decodes it when it is opened, as before)."""
from __future__ import annotations

import os
import sys

from tb_iotrace.analysis import job_facts
from tb_iotrace.analysis.capture_findings import findings_of, job_doc
from tb_iotrace.analysis.capture_row import capture_row
from tb_iotrace.model.tab.load import load_any
from tb_iotrace.model.tab.of_kineto import converted
from tb_iotrace.base.priority import lowest_priority
from tb_iotrace.base.redact import redact_url, scrub
from tb_iotrace.store import jobfacts, summaries
from tb_iotrace.store.remote_summaries import keep_remote, uploaded_identity
from tb_iotrace.store.logdir import capture_host, profile_captures
from tb_iotrace.store.record_files import find_records, record_dir
from tb_iotrace.model.source_kinds import KINETO, listed_kind

__all__ = ["keep_landed", "main"]


def _analysed(path: str) -> str:
    """The file the tab's findings analyse for the capture ``path``: of a PyTorch trace, its
    converted capture (in this child's own folder, removed when it exits), else the capture."""
    return converted(path) if listed_kind(path) == KINETO else path


def keep_landed(host: str, path: str, facts: bool) -> list[str]:
    """Keep the summary (and with ``facts`` the job facts) of the capture ``path`` of ``host``;
    what was kept ("summary", "facts"). Raises what decoding it raises."""
    kept = []
    before = summaries.identity(path)
    if before is None or summaries.mode() == "off":
        return kept
    cap = None
    if summaries.load(path, ident=before) is None:
        cap = load_any(path, host)
        if summaries.save(path, capture_row(host, cap), before=before) is not None:
            kept.append("summary")
    del cap
    if facts and jobfacts.load(path, "", before).state != "ok":
        # the analysis' answer, or why this version has none (no I/O record: no steps, no
        # verdict, nothing read): the job verdict reads either as the tab's findings give it;
        job_facts.keep(path, "", job_doc(host, findings_of(_analysed(path))), before)
        if jobfacts.load(path, "", before).state == "ok":
            kept.append("facts")
    return kept


def keep_uploaded(host: str, local: str, url: str, facts: bool) -> list[str]:
    """Keep in the bucket, beside it, the summary (and with ``facts`` the job facts) of the
    profile capture, whole-run record or PyTorch trace uploaded to ``url`` from ``local`` (a copy
    this child owns, with a record's tables beside it, removed once read), under the identity a
    reader of the URL logdir gives it before fetching it (tb_iotrace.store.remote_summaries); what
    was kept. Raises what decoding or the store raise."""
    try:
        if summaries.mode() == "off" or summaries.beside_url(url) is None:
            return []
        ident = uploaded_identity(url, local)
        if ident is None:        # the object is no longer the one uploaded
            return []
        row = capture_row(host, load_any(local, host))
        doc = job_doc(host, findings_of(_analysed(local))) if facts else None
        return keep_remote(url, ident, row, job_facts.facts_of(doc) if doc is not None else None)
    finally:
        for f in [local] + summaries.companions(local):
            try:
                os.unlink(f)
            except OSError:
                pass
        try:
            os.rmdir(os.path.dirname(local))     # its folder of landed copies, once empty
        except OSError:
            pass


def main(argv: list[str]) -> int:
    lowest_priority()
    facts = bool(argv) and argv[0] == "--facts"
    args = argv[1:] if facts else argv
    items: list[tuple[str, str]] = []
    while args[:1] in (["--scan"], ["--records"]) and len(args) >= 3:
        try:       # a stopped profile's folder, or the records a run wrote: found here
            since = int(args[2])
            found = (profile_captures(args[1], since) if args[0] == "--scan" else
                     [p for p in find_records(record_dir(args[1])) if p.stat().st_mtime_ns >= since])
            items += [(capture_host(str(p)), os.path.abspath(p)) for p in found]
        except (ValueError, OSError):
            pass
        args = args[3:]
    uploaded: list[tuple[str, str, str]] = []
    while args[:1] == ["--uploaded"] and len(args) >= 4:   # (host, local copy, URL) of a capture uploaded
        uploaded.append((args[1], args[2], args[3]))
        args = args[4:]
    for host, local, url in uploaded:
        try:
            keep_uploaded(host, local, url, facts)
        except Exception as exc:  # noqa: BLE001 - as below
            why = scrub(str(exc), url)[:200]      # the message may quote the URL, credentials too
            sys.stderr.write(f"tb_iotrace: no summary kept for {redact_url(url)} ({type(exc).__name__}: {why})\n")
    items += list(zip(args[0::2], args[1::2]))
    for host, path in items:
        try:
            keep_landed(host, path, facts)
        except Exception as exc:  # noqa: BLE001 - one bad capture costs one line, never the others
            sys.stderr.write(f"tb_iotrace: no summary kept for {path} ({type(exc).__name__}: {str(exc)[:200]})\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
