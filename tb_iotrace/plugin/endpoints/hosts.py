"""``/hosts``: one row per host of a view, so that a slow worker stands out in "All hosts"
(the rows are :func:`tb_iotrace.analysis.capture_row.capture_row`'s, as in ``tb-iotrace report``), each kept
on disk per version of its capture (:mod:`tb_iotrace.store.summaries`): after a TensorBoard restart
the table is read from the summaries, and only captures without a valid one are decoded."""
from __future__ import annotations

import logging
import os
import threading
from typing import Any

from tb_iotrace.store import summaries
from tb_iotrace.base.memory import one_trim
from tb_iotrace.store.xplane import XPlaneError
from tb_iotrace.plugin import summary_pool
from tb_iotrace.plugin.cache import LogdirIndex, load_any
from tb_iotrace.analysis.capture_row import capture_row
from tb_iotrace.plugin.request_view import View, unreadable_json
from tb_iotrace.plugin.endpoints.job_tables import stored_job_verdict

log = logging.getLogger("tb_iotrace.plugin")


def hosts_impl(view: View) -> dict[str, Any]:
    """The rows of a view's hosts (:func:`capture_row`); ``unreadable``: the run's hosts whose
    file cannot be read, each with the reason (left out of the rows)."""
    return {"hosts": [capture_row(p.host, p.capture) for p in view.parts], "unreadable": unreadable_json(view)}


class RowMemo:
    """The rows this process has read or computed, per capture path with the identity they are
    of (a repeated "All hosts" request stats each capture, and reads no summary file again);
    at most :attr:`KEPT` paths, the oldest dropped first."""

    KEPT = 65536

    def __init__(self) -> None:
        self._rows: dict[str, tuple[summaries.Identity, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def get(self, path: str, ident: summaries.Identity) -> dict[str, Any] | None:
        with self._lock:
            got = self._rows.get(path)
        return got[1] if got is not None and got[0] == ident else None

    def put(self, path: str, ident: summaries.Identity, row: dict[str, Any]) -> None:
        with self._lock:
            self._rows.pop(path, None)
            self._rows[path] = (ident, row)
            while len(self._rows) > self.KEPT:
                del self._rows[next(iter(self._rows))]


def _identity(path: str) -> summaries.Identity | None:
    try:
        return summaries.identity(path)
    except Exception:  # noqa: BLE001 - a summary is only ever a shortcut: never a failed answer
        log.warning("cannot stat %s", path, exc_info=True)
        return None


def _stored(path: str, ident: summaries.Identity) -> dict[str, Any] | None:
    try:
        return summaries.load(path, ident=ident)
    except Exception:  # noqa: BLE001 - as above
        log.warning("cannot read the summary of %s", path, exc_info=True)
        return None


def _keep(path: str, row: dict[str, Any], before: summaries.Identity) -> None:
    try:
        summaries.save(path, row, before=before)
    except Exception:  # noqa: BLE001 - as above
        log.warning("cannot keep the summary of %s", path, exc_info=True)


def _bytes(items: list[tuple[str, str]]) -> int:
    total = 0
    for _, path in items:
        try:
            total += os.path.getsize(path)
        except OSError:
            pass
    return total


def _known(files: list[tuple[str, str]], memo: RowMemo) -> list[tuple[summaries.Identity | None, dict[str, Any] | None]]:
    """Per file of ``files``: its identity, read once for the whole request (the stored
    summary, the job facts and a row kept are all of it), and its row from ``memo`` or its
    stored summary (None when it has neither)."""
    out: list[tuple[summaries.Identity | None, dict[str, Any] | None]] = []
    for _, path in files:
        before = _identity(path)
        out.append((before, None if before is None else memo.get(path, before) or _stored(path, before)))
    return out


def _made_in_children(index: LogdirIndex, files: list[tuple[str, str]],
                      known: list[tuple[summaries.Identity | None, dict[str, Any] | None]]) -> dict[str, dict[str, Any]]:
    """The rows of the captures of ``files`` with a known identity but no row (``known``, of
    :func:`_known`), made in child processes (:mod:`tb_iotrace.plugin.summary_pool`) when there
    are at least :data:`~tb_iotrace.plugin.summary_pool.MIN_CAPTURES` of them, the logdir is
    local, its captures are loaded the default way and more than one core is there; path -> row
    without ``host``. What a child did not answer with a row is left to the caller."""
    if index.url is not None or index.loader is not load_any or summary_pool.jobs() < 2:
        return {}
    todo = [(host, path) for (host, path), (before, got) in zip(files, known) if before is not None and got is None]
    if len(todo) < summary_pool.MIN_CAPTURES or _bytes(todo) < summary_pool.MIN_BYTES:
        return {}
    got = summary_pool.rows_in_children(todo)
    return {p: {k: v for k, v in r.items() if k != "host"} for p, r in got.items() if isinstance(r, dict)}


def hosts_cached(index: LogdirIndex, files: list[tuple[str, str]], memo: RowMemo | None = None) -> dict[str, Any]:
    """:func:`hosts_impl`'s answer for ``files`` ((host, path) of one run, in order) without
    building the view: each host's row from ``memo`` or its stored summary, else from its
    capture (loaded through ``index``'s cache) and then stored. Of several hosts, those that
    cannot be read are left out and listed; XPlaneError when none can (or the one asked for
    alone cannot). Of several hosts, ``job_verdict``: the job verdict across them as ranks from
    their stored job facts (tb_iotrace.plugin.endpoints.job_tables; null while any host has
    none: the findings bring it), ``job_notes``: damaged facts ignored. Each file's identity is
    read once per call."""
    rows: list[dict[str, Any]] = []
    idents: list[tuple[str, str, summaries.Identity | None]] = []
    unreadable: list[dict[str, str]] = []
    memo = memo if memo is not None else RowMemo()
    known = _known(files, memo)
    made = _made_in_children(index, files, known)
    with one_trim():
        for (host, path), (before, got) in zip(files, known):
            if got is None and path in made:
                got = made[path]
            if got is not None:
                memo.put(path, before, got)   # type: ignore[arg-type]
                rows.append({"host": host, **got})
                idents.append((host, path, before))
                continue
            try:
                row = capture_row(host, index.capture(path, host))
            except XPlaneError as exc:
                if len(files) == 1 or len(unreadable) + 1 == len(files):
                    raise
                unreadable.append({"host": host, "file": os.path.basename(exc.path),
                                   "error": f"cannot read this capture: {exc.reason}"})
                continue
            if before is not None:
                _keep(path, row, before)
                memo.put(path, before, {k: v for k, v in row.items() if k != "host"})
            rows.append(row)
            idents.append((host, path, before))
    job = stored_job_verdict(idents)
    return {"hosts": rows, "unreadable": unreadable, "job_verdict": job.verdict, "job_notes": job.notes}
