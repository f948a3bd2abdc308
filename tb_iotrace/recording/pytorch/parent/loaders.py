"""Which DataLoaders a ``torch.profiler`` window iterated, and with which settings: what the
findings need to name PyTorch's knobs (``num_workers``, ``prefetch_factor``,
``persistent_workers``, ``pin_memory``) with their values.

``DataLoader.__iter__`` (a class attribute, called once per epoch) is wrapped: it notes the
loader and its iterator, and, inside a window, when each epoch's iterator was made and which
workers it started (a non-persistent loader starts new ones every epoch). So is the worker
iterator's ``_shutdown_workers`` (once per iterator: a non-persistent loader's at the end of
each epoch, inside the ``__next__`` that ends it), to time stopping the workers. Nothing runs
per batch: a loader counts as iterated in the window when an epoch began in it, or its iterator
from before the window yielded batches (or ended) during it.
"""
from __future__ import annotations

import multiprocessing
import threading
import time
import weakref
from typing import Any

__all__ = ["install", "window_started", "window_stopped"]

# Reentrant: an old iterator's __del__ (its _shutdown_workers) may run from a garbage
# collection triggered while this thread holds the lock.
_lock = threading.RLock()
_installed = False
_window_on = False
_next_id = 0


class _Loader:
    """What is known of one DataLoader (held weakly: the loader's life is the user's)."""

    def __init__(self, ident: int) -> None:
        self.ident = ident
        self.iterator: weakref.ref[Any] | None = None
        self.iter_class: str | None = None
        self.yielded_at_start: int | None = None      # the iterator's count when the window began
        self.iter_at_start: weakref.ref[Any] | None = None
        self.epochs: list[dict[str, Any]] = []        # epochs begun inside the window
        self.pids: list[int] = []                     # workers seen serving it in the window
        self.stops: list[dict[str, Any]] = []         # worker shutdowns inside the window
        self.settings: dict[str, Any] = {}            # the loader's, when the window saw it


_loaders: "weakref.WeakKeyDictionary[Any, _Loader]" = weakref.WeakKeyDictionary()
_of_iterator: "weakref.WeakKeyDictionary[Any, _Loader]" = weakref.WeakKeyDictionary()
# the loaders the open window saw, held strongly (not the loaders themselves): one that is gone
# when the window stops (its loop ended before a window stopped at exit) is still named
_seen: dict[int, _Loader] = {}


def _yielded(it: Any) -> int:
    return int(getattr(it, "_num_yielded", 0) or 0)


def _worker_pids(it: Any) -> list[int]:
    return [int(w.pid) for w in getattr(it, "_workers", None) or [] if getattr(w, "pid", None)]


def _state(loader: Any) -> _Loader:
    global _next_id
    st = _loaders.get(loader)
    if st is None:
        _next_id += 1
        st = _loaders[loader] = _Loader(_next_id)
    return st


def _wrap(real: Any) -> Any:
    def __iter__(self: Any) -> Any:
        start = time.time_ns()
        it = real(self)
        end = time.time_ns()
        try:
            with _lock:
                st = _state(self)
                prev = st.iterator() if st.iterator is not None else None
                st.iterator = weakref.ref(it)
                _of_iterator[it] = st
                st.iter_class = type(it).__name__
                if _window_on:
                    st.settings = _settings(self)
                    _seen[st.ident] = st
                    new = it is not prev
                    pids = _worker_pids(it)
                    st.epochs.append({"start_ns": start, "end_ns": end, "new_iterator": new,
                                      "workers_started": pids if new else []})
                    st.pids.extend(p for p in pids if p not in st.pids)
        except Exception:   # never into the training loop
            pass
        return it
    __iter__.__wrapped__ = real  # type: ignore[attr-defined]
    __iter__.__tbio_wrapper__ = True  # type: ignore[attr-defined]
    return __iter__


def _wrap_shutdown(real: Any) -> Any:
    def _shutdown_workers(self: Any) -> Any:
        if not _window_on or getattr(self, "_shutdown", True):   # nothing to stop, or not timed
            return real(self)
        pids = _worker_pids(self)
        start = time.time_ns()
        try:
            return real(self)
        finally:
            end = time.time_ns()
            try:
                with _lock:
                    st = _of_iterator.get(self)
                    if st is not None and _window_on and pids:
                        st.stops.append({"start_ns": start, "end_ns": end, "workers": pids})
            except Exception:
                pass
    _shutdown_workers.__wrapped__ = real  # type: ignore[attr-defined]
    _shutdown_workers.__tbio_wrapper__ = True  # type: ignore[attr-defined]
    return _shutdown_workers


# The names of torch this module wraps: (module, class, attribute) and what is lost without it. A
# torch release that renames one turns that hook off; the traces' notes say so (off()).
ITER_HOOK = ("torch.utils.data.dataloader", "DataLoader", "__iter__")
SHUTDOWN_HOOK = ("torch.utils.data.dataloader", "_MultiProcessingDataLoaderIter", "_shutdown_workers")
_off: list[str] = []


def _lookup(hook: tuple[str, str, str]) -> tuple[Any, Any] | None:
    """(class, its attribute) of ``hook``, None when this torch has no such name."""
    import importlib

    try:
        owner = getattr(importlib.import_module(hook[0]), hook[1])
    except (ImportError, AttributeError):
        return None
    real = getattr(owner, hook[2], None) if isinstance(owner, type) else None
    return (owner, real) if callable(real) else None


def missing(hook: tuple[str, str, str]) -> str:
    """The note for a hook whose name this torch lacks."""
    return f"{hook[0]}.{hook[1]}.{hook[2]} is missing in this torch"


def install() -> None:
    """Wrap ``DataLoader.__iter__`` and the worker iterator's ``_shutdown_workers`` (idempotent);
    a name this torch lacks turns its hook off (:func:`off`), the rest still work."""
    global _installed
    with _lock:
        if _installed:
            return
        for hook, wrap, what, lost in (
                (ITER_HOOK, _wrap, "DataLoader settings", "the findings cannot name the loaders' settings"),
                (SHUTDOWN_HOOK, _wrap_shutdown, "worker shutdown",
                 "the time spent stopping DataLoader workers is not measured")):
            got = _lookup(hook)
            if got is None:
                _off.append(f"the {what} hook is off ({missing(hook)}): {lost}")
            elif not getattr(got[1], "__tbio_wrapper__", False):
                setattr(got[0], hook[2], wrap(got[1]))
        _installed = True


def off() -> list[str]:
    """Why each hook of this module that is off is off (empty when all are on)."""
    return list(_off)


def window_started() -> None:
    global _window_on
    with _lock:
        _window_on = True
        _seen.clear()
        for loader, st in list(_loaders.items()):
            it = st.iterator() if st.iterator is not None else None
            st.epochs, st.pids, st.stops = [], [], []
            st.iter_at_start = st.iterator if it is not None else None
            st.yielded_at_start = _yielded(it) if it is not None else None
            if it is not None:
                st.pids = _worker_pids(it)
                st.settings = _settings(loader)
                _seen[st.ident] = st


def _start_method(loader: Any) -> str:
    ctx = getattr(loader, "multiprocessing_context", None)
    if ctx is not None:
        try:
            return str(ctx.get_start_method())
        except Exception:
            return str(ctx)
    return str(multiprocessing.get_start_method(allow_none=True) or "fork")


def _settings(loader: Any) -> dict[str, Any]:
    def get(name: str) -> Any:
        v = getattr(loader, name, None)
        return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)

    return {"num_workers": get("num_workers"), "prefetch_factor": get("prefetch_factor"),
            "persistent_workers": get("persistent_workers"), "pin_memory": get("pin_memory"),
            "pin_memory_device": get("pin_memory_device"), "batch_size": get("batch_size"),
            "drop_last": get("drop_last"), "timeout": get("timeout"), "in_order": get("in_order"),
            "start_method": _start_method(loader) if (get("num_workers") or 0) > 0 else None,
            "dataset": type(getattr(loader, "dataset", None)).__name__}


def window_stopped() -> list[dict[str, Any]]:
    """The DataLoaders iterated in the window now ending, as JSON-ready dicts: their settings,
    ``iterator`` (the iterator class: ``_SingleProcessDataLoaderIter`` /
    ``_MultiProcessingDataLoaderIter``), ``worker_pids`` (workers that served them in the
    window) and ``epochs`` (epochs begun in the window: ``start_ns``/``end_ns`` of the
    ``__iter__`` call, CLOCK_REALTIME; ``new_iterator``; ``workers_started``, pids) and
    ``worker_stops`` (workers stopped in the window: ``start_ns``/``end_ns``, ``workers``). A
    loader the window saw that is gone by now (the job's loop ended before the window, stopped
    at exit) is named with its settings as the window saw them."""
    global _window_on
    out = []
    with _lock:
        _window_on = False
        live = list(_loaders.items())
        alive = {st.ident for _, st in live}
        gone = [(None, st) for ident, st in _seen.items() if ident not in alive]
        _seen.clear()
        for loader, st in live + gone:
            it = st.iterator() if st.iterator is not None else None
            old = st.iter_at_start() if st.iter_at_start is not None else None
            advanced = st.iter_at_start is not None and (
                old is None or old is not it or _yielded(old) != st.yielded_at_start)
            if not (st.epochs or advanced or st.stops):
                continue
            if it is not None:
                st.pids.extend(p for p in _worker_pids(it) if p not in st.pids)
            d = {"id": st.ident, **(_settings(loader) if loader is not None else st.settings),
                 "iterator": st.iter_class,
                 "worker_pids": sorted(st.pids), "epochs": list(st.epochs), "worker_stops": list(st.stops)}
            out.append(d)
            st.epochs, st.pids, st.stops, st.iter_at_start, st.yielded_at_start = [], [], [], None, None
    return sorted(out, key=lambda d: d["id"])
