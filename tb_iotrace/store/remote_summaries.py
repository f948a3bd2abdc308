"""The summary and job facts of a capture just uploaded to a URL logdir, kept in the bucket
beside it (its run's ``plugins/iotrace/summaries/``, as :mod:`tb_iotrace.store.summaries` keeps
them beside a local capture), so that a TensorBoard on that URL finds them in its mirror of the
logdir and reads them instead of fetching and decoding the capture.

A remote capture's summary is of the object's version: its identity is the one a reader gives
a capture it has listed but not fetched (``["remote", url, version, size]``,
:func:`tb_iotrace.store.summaries.identity`), which the writer learns by asking the store for
the object once it is uploaded (:func:`remote_identity`). A capture whose object is no longer
the one uploaded (another size) gets nothing. Profile captures and whole-run records in a run's
``plugins/`` tree and PyTorch traces (in their folder's ``plugins/iotrace/summaries/``) have
such a place (:func:`tb_iotrace.store.summaries.beside_url`); a record's identity is of its JSON
and of each table uploaded beside it (:func:`uploaded_identity`), as a reader's mirror lists them.
"""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Mapping

from tb_iotrace.store import jobfacts, remote, summaries
from tb_iotrace.store.remote_calls import call

__all__ = ["keep_remote", "remote_identity", "uploaded_identity"]


def remote_identity(url: str, size: int) -> summaries.Identity | None:
    """The identity a reader of the URL logdir gives the object at ``url`` before fetching it
    (its URL, version and size as the store lists them); None when it is not the ``size``
    bytes uploaded."""
    fs, rpath = remote.filesystem(url)
    try:
        fs.invalidate_cache(rpath)
    except Exception:  # noqa: BLE001 - a client without a listing cache
        pass
    try:
        info = call(fs, "info", rpath)
    except Exception as exc:  # noqa: BLE001 - one line, as every remote failure
        raise remote.failure(url, exc) from None
    if int(info.get("size") or 0) != int(size):
        return None
    return [summaries.remote_ident({"url": url, "version": remote.version_of(info), "size": size})]


def uploaded_identity(url: str, local: str) -> summaries.Identity | None:
    """The identity a reader gives the capture uploaded to ``url`` from ``local``: its object's
    version, and of a whole-run record also those of the tables uploaded beside it (the reader
    lists them in the same order); None when any object is not the bytes uploaded."""
    got = remote_identity(url, os.path.getsize(local))
    if got is None:
        return None
    for table, table_url in zip(summaries.companions(local), summaries.companions(url)):
        if os.path.exists(table):
            one = remote_identity(table_url, os.path.getsize(table))
            if one is None:
                return None
            got += one
    return got


def _put(url: str, doc: dict[str, Any], limit: int) -> bool:
    data = json.dumps(doc, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()
    if len(data) > limit:
        return False
    fd, tmp = tempfile.mkstemp(prefix="tb_iotrace-summary-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        remote.upload_file(tmp, url)
    finally:
        os.unlink(tmp)
    return True


def keep_remote(url: str, ident: summaries.Identity, row: Mapping[str, Any] | None,
                facts: Mapping[str, Any] | None) -> list[str]:
    """Upload the summary ``row`` (a host row) and the job ``facts`` of the capture at ``url``,
    of its version ``ident`` (:func:`remote_identity`), beside it; what was kept ("summary",
    "facts"). Nothing for an object with no such place or invalid ones; RemoteError from the
    store."""
    place = summaries.beside_url(url)
    if place is None:
        return []
    folder, name = place
    kept = []
    stored = summaries.row_of(row) if row is not None else None
    if stored is not None and _put(remote.join(folder, summaries.doc_name(name, "")),
                                   summaries.make_doc(name, "", [ident], stored), summaries.MAX_BYTES):
        kept.append("summary")
    if facts is not None and not jobfacts.check(dict(facts)) and \
            _put(remote.join(folder, summaries.doc_name(name, "", jobfacts.SUFFIX)),
                 jobfacts.make_doc(name, "", [ident], facts), jobfacts.MAX_BYTES):
        kept.append("facts")
    return kept
