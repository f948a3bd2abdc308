"""DataLoader fetch spans: in a worker, each fetched batch timed (``tb_iotrace::fetch`` spans in the trace), by wrapping torch's fetchers."""
from __future__ import annotations

import os
import threading
import time
from typing import Any

from tb_iotrace.recording.pytorch import state
from tb_iotrace.recording.pytorch.state import log
from tb_iotrace.recording.pytorch.record import end


def fetch_spans_unavailable() -> str | None:
    """Why DataLoader workers cannot time their fetches with this torch (None: they can)."""
    try:
        from torch.utils.data._utils import fetch
    except Exception as exc:   # noqa: BLE001 - any import failure means no spans
        return f"DataLoader fetch spans not recorded: torch.utils.data._utils.fetch not importable ({exc})"
    missing = [n for n in state.FETCHERS if not callable(getattr(getattr(fetch, n, None), "fetch", None))]
    if missing:
        import sys

        version = getattr(sys.modules.get("torch"), "__version__", "?")
        return (f"DataLoader fetch spans not recorded: torch {version} has no "
                + ", ".join(f"torch.utils.data._utils.fetch.{n}.fetch" for n in missing))
    return None


def samples(data: Any, index: Any) -> int:
    try:
        return len(data)
    except TypeError:
        try:
            return len(index)
        except TypeError:
            return 1


def wrap_fetch(real: Any, iterable: bool) -> Any:
    """``fetch`` timed while this worker records a window. ``samples``: the batch's index
    count (a map-style fetch returns all of them or raises); for an iterable dataset, the
    samples handed to ``collate_fn`` (its last batch may be short)."""
    def fetch(self: Any, possibly_batched_index: Any) -> Any:
        spans = state.spans
        if spans is None:
            return real(self, possibly_batched_index)
        got: list[int] = []
        collate = None
        if iterable and getattr(self, "auto_collation", False):
            collate = self.collate_fn

            def counting(data: Any) -> Any:
                got.append(samples(data, possibly_batched_index))
                return collate(data)
            self.collate_fn = counting
        start = time.time_ns()
        try:
            out = real(self, possibly_batched_index)
        finally:
            end = time.time_ns()
            if collate is not None:
                self.collate_fn = collate
        if state.spans is spans:
            if iterable:
                n = got[0] if got else 1
            else:
                n = samples(possibly_batched_index, None) if getattr(self, "auto_collation", False) else 1
            spans.append((start, end, threading.get_native_id(), n))
        return out
    fetch.__wrapped__ = real  # type: ignore[attr-defined]
    fetch.__tbio_wrapper__ = True  # type: ignore[attr-defined]
    return fetch


def time_fetches(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """In a DataLoader worker, before torch's worker loop: note the worker's id and wrap the
    fetchers (this process's classes only). Never fails the worker."""
    if state.fetch_note is not None or fetch_spans_unavailable() is not None:
        return
    try:
        wid = kwargs.get("worker_id", args[10] if len(args) > 10 else None)
        state.worker_id = int(wid) if isinstance(wid, int) else None
        from torch.utils.data._utils import fetch

        for name in state.FETCHERS:
            cls = getattr(fetch, name)
            if not getattr(cls.fetch, "__tbio_wrapper__", False):
                cls.fetch = wrap_fetch(cls.fetch, name == "_IterableDatasetFetcher")
    except Exception as exc:
        log.warning("tb_iotrace: DataLoader worker pid %d will not time its fetches: %s", os.getpid(), exc)


def note_fetch_spans() -> None:
    state.fetch_note = fetch_spans_unavailable()
    if state.fetch_note is not None:
        log.warning("tb_iotrace: %s", state.fetch_note)
