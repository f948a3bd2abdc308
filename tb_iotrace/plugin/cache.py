"""The plugin's view of a logdir: the scan (:mod:`tb_iotrace.store.logdir`) cached for a few
seconds, a cache of loaded captures, and a cache of the views built from them.

Loading: a capture is decoded when first asked for and kept while its size and mtime stay the
same, least recently used dropped first once the loaded captures hold more than the cache's
byte budget (``TBIO_PLUGIN_CACHE_BYTES``; by default a quarter of the machine's memory, at most
2 GiB), measured as :meth:`tb_iotrace.model.tab.columns.TabCapture.nbytes` (what the decoded capture holds, ~1.3x its
file). A budget in bytes, not in entries: an "All hosts" view of a 64-host run is 64 captures
asked for in turn, and an LRU of a few entries missed on every one of them.

Views: the :class:`tb_iotrace.plugin.request_view.View` of a request (one host, or every host of a run) is kept too,
with the answers memoized on it (:meth:`tb_iotrace.plugin.request_view.View.memo`), while each of its captures is the
one the cache holds: a changed file or an evicted capture drops the views built on it. Two moments start it early, on a background thread: when
TensorBoard lists its plugins (``prefetch_latest``: the newest run, unless
``TBIO_PLUGIN_PREFETCH=0``), and when the tab's entry module is served (``warm_default``:
the capture the tab shows first).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from typing import Callable

from tb_iotrace.store import logdir, remote
from tb_iotrace.base.memory import one_trim
from tb_iotrace.model.source_kinds import RECORD, listed_kind
from tb_iotrace.store.logdir import RunInfo
from tb_iotrace.store.xplane import XPlaneError
from tb_iotrace.model.tab.load import load_any
from tb_iotrace.model.tab.columns import TabCapture
from tb_iotrace.model.tab.of_record import cache_key, total_size
from tb_iotrace.plugin.request_view import View, make_view

log = logging.getLogger("tb_iotrace.plugin")

ACTIVE_MAX_DIRS = 2000  # directories visited by is_active
ACTIVE_TTL_S = 30.0
RUNS_TTL_S = 5.0
SYNC_WAIT_S = 3.0       # what a request waits for a URL logdir's sync before answering from the mirror
PREFETCH_MAX_BYTES = 256 << 20  # newest run only, up to this much xplane in total
CACHE_BYTES_ENV = "TBIO_PLUGIN_CACHE_BYTES"
CACHE_MAX_DEFAULT = 2 << 30
CACHE_MIN_DEFAULT = 256 << 20
ERROR_NBYTES = 1024     # what a cached decoding error counts against the budget
VIEWS_KEPT = 8          # views (with their memoized answers) kept, least recently used dropped


def cache_budget() -> int:
    """The capture cache's budget in bytes: ``TBIO_PLUGIN_CACHE_BYTES`` (an integer, with an
    optional K/M/G suffix), else a quarter of physical memory within [256 MiB, 2 GiB]."""
    raw = os.environ.get(CACHE_BYTES_ENV, "").strip()
    if raw:
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(raw[-1].upper(), 1)
        try:
            return max(0, int(float(raw[:-1] if mult > 1 else raw) * mult))
        except (ValueError, OverflowError):    # (inf, 1e400: no byte count either)
            raise ValueError(f"{CACHE_BYTES_ENV}={raw!r}: expected a byte count such as 2G or 536870912") from None
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = 4 * CACHE_MAX_DEFAULT
    return max(CACHE_MIN_DEFAULT, min(CACHE_MAX_DEFAULT, phys // 4))


def _nbytes(value: TabCapture | XPlaneError) -> int:
    if isinstance(value, Exception):
        return ERROR_NBYTES
    try:
        return int(value.nbytes())
    except Exception:  # a loader's stand-in without the method: count it as its file
        return int(getattr(value, "size", 0) or 0) + ERROR_NBYTES


def file_key(path: str) -> tuple[int, ...]:
    """What must stay the same for a loaded capture to stay valid: size and mtime of the
    file (of a record: of its JSON and of its trace)."""
    if listed_kind(path) == RECORD:
        return cache_key(path)
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _lazy(name: str) -> bool:
    """Files of a URL logdir fetched only when the tab opens them: all but the records' JSON
    (the scan reads its head to tell a record)."""
    return listed_kind(name) != RECORD


class LogdirIndex:
    """Cached view of a logdir's runs and a cache of loaded captures."""

    def __init__(self, logdir: str, max_bytes: int | None = None,
                 loader: Callable[[str, str], TabCapture] | None = None):
        # a URL logdir (s3://, gs://) is read through its local mirror (tb_iotrace.store.remote): each
        # scan first brings the mirror up to date (listing level by level, fetching only new or
        # changed captures); the scan, the decoders and the path checks then work on local files
        self.url: str | None = None
        self._remote_error: str | None = None
        self._sync_lock = threading.Lock()
        self._sync_thread: threading.Thread | None = None
        self._sync_started = 0.0
        self._sync_ended = -1e9
        if logdir and remote.is_url(logdir):
            self.url = remote.trim(logdir)
            logdir = str(remote.mirror_path(self.url))
        elif logdir:
            logdir = remote.local_path(logdir)
        self.logdir = logdir or ""
        self._lock = threading.Lock()
        self._runs: list[RunInfo] = []
        self._runs_at = -1e9
        self._truncated = False
        self._active: bool | None = None
        self._active_at = -1e9
        # path -> (file key, capture or its decoding error, bytes counted)
        self._captures: OrderedDict[str, tuple[tuple[int, ...], TabCapture | XPlaneError, int]] = OrderedDict()
        self._cached_bytes = 0
        self._loading: dict[str, threading.Lock] = {}
        self.max_bytes = cache_budget() if max_bytes is None else max_bytes
        self._views: OrderedDict[tuple[str, tuple[tuple[str, str], ...]], View] = OrderedDict()
        self.loader = loader or load_any
        self._prefetched = False
        self._warming = False

    # -- runs
    def sync(self) -> None:
        """Bring a URL logdir's mirror up to date; a remote failure is kept in
        :attr:`remote_error` (the tab says it) and the mirror keeps what it had."""
        if self.url is None:
            return
        with self._sync_lock:
            try:   # the records' JSON now (the scan reads their head), the rest when opened
                remote.fetch(self.url, logdir.is_read_name, lazy=_lazy)
                self._remote_error = None
            except remote.RemoteError as exc:
                self._remote_error = str(exc)
            except Exception as exc:   # noqa: BLE001 - a client's own failure: said, never raised
                self._remote_error = str(remote.failure(self.url, exc))
            finally:
                self._sync_ended = time.monotonic()

    def sync_soon(self, wait_s: float = SYNC_WAIT_S) -> None:
        """Start :meth:`sync` on a background thread (unless one runs) and wait for it at most
        ``wait_s``: TensorBoard's requests (``is_active`` for the plugin list of every tab,
        ``/runs``) answer from the mirror as it is when the storage is slow or hangs, never
        waiting on it (its calls are bounded too: ``tb_iotrace.store.remote_calls``)."""
        if self.url is None:
            return
        with self._lock:
            t = self._sync_thread
            if t is None or not t.is_alive():
                now = time.monotonic()
                # a sync that failed less than ``wait_s`` ago: the storage is not waited on again
                # now. A hung storage's sync ends (its calls time out) about when the request that
                # started it stops waiting, so the next request (the tab's ``/runs`` right after
                # the plugin list) found it ended and waited ``wait_s`` again on a new one
                failed_recently = self._remote_error is not None and now - self._sync_ended < wait_s
                t = threading.Thread(target=self.sync, name="tb_iotrace-sync", daemon=True)
                self._sync_thread, self._sync_started = t, now
                t.start()
                if failed_recently:
                    return
            started = self._sync_started
        # until ``wait_s`` after the sync began, not after this request came: TensorBoard's
        # plugin list (``is_active``) and the tab's ``/runs`` come one after the other, and each
        # waiting ``wait_s`` of its own made the tab wait twice on a hung storage
        t.join(max(0.0, started + wait_s - time.monotonic()))

    @property
    def remote_error(self) -> str | None:
        """What is wrong with a URL logdir's storage: the last sync's failure, or that the
        running sync has waited on the storage past :data:`SYNC_WAIT_S`."""
        t = self._sync_thread
        if t is not None and t.is_alive():
            waited = time.monotonic() - self._sync_started
            if waited >= SYNC_WAIT_S:
                return (f"{remote.redact_url(self.url or '')}: the storage has not answered for {waited:.0f} s "
                        f"(still trying); showing what was fetched before")
        return self._remote_error

    def is_active(self) -> bool:
        now = time.monotonic()
        with self._lock:
            if self._active is not None and now - self._active_at < ACTIVE_TTL_S:
                return self._active

        def scan() -> bool:
            found, _ = logdir.scan(self.logdir, max_dirs=ACTIVE_MAX_DIRS, stop_at_first=True, records=True,
                                   kineto=True)
            return bool(found)

        # a URL logdir whose mirror holds a run already: TensorBoard's plugin list does not wait
        # on the storage (the sync starts; the tab's /runs waits for it), so a slow or hung
        # storage costs the page one wait, not two; an empty mirror waits for the first sync
        found = self.url is not None and scan()
        self.sync_soon(0.0 if found else SYNC_WAIT_S)
        found = found or scan()
        with self._lock:
            self._active = bool(found)
            self._active_at = now
        return bool(found)

    def runs(self, refresh: bool = False) -> list[RunInfo]:
        now = time.monotonic()
        with self._lock:
            # refresh (asked for, or an unknown name looked up) at most once a second
            if now - self._runs_at < (1.0 if refresh else RUNS_TTL_S):
                return self._runs
        self.sync_soon()
        runs, truncated = logdir.scan(self.logdir, records=True, kineto=True)
        with self._lock:
            self._runs, self._runs_at, self._truncated = runs, now, truncated
            if runs:
                self._active, self._active_at = True, now
        return runs

    @property
    def truncated(self) -> bool:
        return self._truncated

    def find(self, run: str, host: str | None = None) -> tuple[RunInfo, str | None]:
        """The run (and host file) named by a request; KeyError when unknown."""
        logdir.check_name(run, "run", allow_slash=True)
        if host is not None:
            logdir.check_name(host, "host", allow_slash=False)
        for refresh in (False, True):
            for r in self.runs(refresh=refresh):
                if r.run == run:
                    if host is None:
                        return r, None
                    if host in r.hosts:
                        return r, r.hosts[host]
                    break
        raise KeyError(f"no {'host ' + repr(host) + ' in ' if host is not None else ''}run {run!r}")

    # -- prefetch
    def prefetch_latest(self, max_bytes: int = PREFETCH_MAX_BYTES) -> threading.Thread | None:
        """Load the newest run's captures on a background thread (once), so the tab opens
        warm: TensorBoard asks every plugin ``is_active()`` when its page loads, well
        before anyone clicks the tab. Skipped for captures above ``max_bytes`` in total
        and when TBIO_PLUGIN_PREFETCH=0."""
        if os.environ.get("TBIO_PLUGIN_PREFETCH", "1") == "0":
            return None
        with self._lock:
            if self._prefetched:
                return None
            self._prefetched = True

        def work():
            try:
                runs = self.runs()
                if not runs:
                    return
                newest = max(runs, key=lambda r: (r.mtime, r.run))
                files, total = [], 0
                for host, path in sorted(newest.hosts.items()):  # as many hosts as fit
                    total += total_size(path) if listed_kind(path) == RECORD else os.path.getsize(path)
                    if total > min(max_bytes, self.max_bytes):
                        break
                    files.append((host, path))
                for host, path in files:
                    try:
                        self.capture(path, host)
                    except Exception:  # reported when the tab asks for it
                        pass
            except Exception:
                pass

        t = threading.Thread(target=work, name="tb_iotrace-prefetch", daemon=True)
        t.start()
        return t

    def default_capture(self) -> tuple[str, str, str] | None:
        """(run, host, path) the tab shows first: the last run by name, its first host
        (the frontend's choice when nothing is picked yet)."""
        runs = self.runs()
        if not runs or not runs[-1].hosts:
            return None
        run = runs[-1]
        host = sorted(run.hosts)[0]
        return run.run, host, run.hosts[host]

    def warm_default(self) -> threading.Thread | None:
        """Start decoding the capture the tab shows first, on a background thread, when
        the tab's frontend is requested: the browser then spends its module loading and
        /runs round trip while the server decodes. No-op when it is cached or loading."""
        with self._lock:
            if self._warming:
                return None
            self._warming = True

        def work():
            try:
                got = self.default_capture()
                if got is not None:
                    self.capture(got[2], got[1])
            except Exception:  # reported when the tab asks for it
                pass
            finally:
                with self._lock:
                    self._warming = False

        t = threading.Thread(target=work, name="tb_iotrace-warm", daemon=True)
        t.start()
        return t

    # -- captures
    @property
    def cached_bytes(self) -> int:
        """What the cached captures count against the budget (see :meth:`tb_iotrace.model.tab.columns.TabCapture.nbytes`)."""
        with self._lock:
            return self._cached_bytes

    def capture(self, path: str, host: str) -> TabCapture:
        """The loaded capture for a file found by the scan (cached by size and mtime);
        raises XPlaneError for unreadable or corrupt files."""
        root_real = os.path.realpath(self.logdir)
        if not logdir.inside(root_real, path):
            raise KeyError("capture is outside the logdir")
        if self.url is not None:
            try:
                remote.materialize(path)
            except remote.RemoteError as exc:
                raise XPlaneError(path, str(exc)) from None
        try:
            key = file_key(path)
        except OSError as exc:
            raise XPlaneError(path, f"cannot read: {exc.strerror or exc}") from None
        with self._lock:
            hit = self._captures.get(path)
            if hit is not None and hit[0] == key:
                self._captures.move_to_end(path)
                if isinstance(hit[1], Exception):
                    raise hit[1]
                return hit[1]
            lock = self._loading.setdefault(path, threading.Lock())
        with lock:
            with self._lock:
                hit = self._captures.get(path)
                if hit is not None and hit[0] == key:
                    if isinstance(hit[1], Exception):
                        raise hit[1]
                    return hit[1]
                self._drop(path)
            try:
                value: TabCapture | XPlaneError = self.loader(path, host)
            except XPlaneError as exc:
                value = exc
            # TypeError/AttributeError: a field of the wrong type in a record's or an I/O
            # record's JSON; cached like any corrupt file, so it is not decoded again per request
            except (ValueError, IndexError, KeyError, OverflowError, TypeError, AttributeError) as exc:
                value = XPlaneError(path, f"cannot decode: {exc}")
            except Exception as exc:  # noqa: BLE001 - any other failure on a file's content
                # (RecursionError, MemoryError, a codec's own error...): the file is input from
                # anyone who can write to the logdir; it gets the same cached 422, never a 500
                # and never a decode per request. Logged, in case it is a bug of ours.
                log.warning("cannot decode %s", path, exc_info=True)
                value = XPlaneError(path, f"cannot decode ({type(exc).__name__}: {str(exc)[:300]})")
            size = _nbytes(value)
            with self._lock:
                self._drop(path)
                self._captures[path] = (key, value, size)
                self._cached_bytes += size
                # least recently used first; the one just loaded stays (it is being answered)
                while self._cached_bytes > self.max_bytes and len(self._captures) > 1:
                    self._drop(next(iter(self._captures)))
        if isinstance(value, Exception):
            raise value
        return value

    def _drop(self, path: str) -> None:
        """Forget a cached capture and the views built on it (holding ``_lock``)."""
        got = self._captures.pop(path, None)
        if got is None:
            return
        self._cached_bytes -= got[2]
        for k in [k for k, v in self._views.items() if any(p.capture is got[1] for p in v.parts)]:
            del self._views[k]

    def view(self, run: str, files: list[tuple[str, str]]) -> View:
        """The view of ``files`` ((host, path) pairs of one run, in order), built once and
        kept while each of its captures is the cached one (same file size and mtime, not
        evicted): answers memoized on it are then reused by later requests. Of several
        hosts, those that cannot be read are left out and listed (``View.unreadable``);
        XPlaneError only when none can."""
        caps: list[tuple[str, TabCapture]] = []
        paths: list[str] = []
        unreadable: list[tuple[str, str, str]] = []
        with one_trim():  # decoding several captures: give freed memory back once, at the end
            for host, path in files:
                try:
                    caps.append((host, self.capture(path, host)))
                    paths.append(path)
                except XPlaneError as exc:
                    # one bad host of several: the others are shown, the bad one named
                    if len(files) == 1:
                        raise
                    unreadable.append((host, os.path.basename(exc.path), exc.reason))
                    if len(unreadable) == len(files):
                        raise
        key = (run, tuple(files))
        with self._lock:
            got = self._views.get(key)
            if (got is not None and got.unreadable == unreadable and len(got.parts) == len(caps)
                    and all(p.capture is c for p, (_, c) in zip(got.parts, caps))):
                self._views.move_to_end(key)
                return got
        built = make_view(run, caps, unreadable)
        with self._lock:
            # kept only while every capture is still the cached one (an eviction meanwhile
            # must not leave a view holding a capture the budget no longer counts)
            if all(self._captures.get(path, (None, None))[1] is c for path, (_, c) in zip(paths, caps)):
                self._views[key] = built
                self._views.move_to_end(key)
                while len(self._views) > VIEWS_KEPT:
                    self._views.popitem(last=False)
        return built


__all__ = ["CACHE_BYTES_ENV", "LogdirIndex", "cache_budget", "file_key", "load_any"]
