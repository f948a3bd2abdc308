"""The TensorBoard plugin: thin HTTP handlers over the pure endpoints in :mod:`tb_iotrace.plugin.endpoints`.

Routes (under ``/data/plugin/iotrace``; every data route takes ``run`` and ``host``, where
``host`` may be ``__all__`` for every host of the run on one clock):

==================  ========================================================================
``/index.js``       the tab's code in one file (``frontend-build/index.js``, built from
                    ``plugin_frontend/`` by ``tools/bundle_frontend.mjs``; asking for it starts
                    decoding the capture the tab shows first); ``/static/*`` the sources in
                    ``plugin_frontend/``, one module a file
``/runs``           ``{runs: [{run, hosts, kind}], message}`` (kind: ``profile``,
                    ``record`` for the whole-run records of ``tb-iotrace run``, or ``kineto``
                    for a folder of PyTorch traces, one host per trace file)
``/capture``        what the tab shows first: extent, lanes, steps, I/O counts, messages (``io_by``), and
                    ``run_series``: each whole-run record's time series on the view's clock
``/timeline``       level-of-detail items for ``start``, ``end`` (ns), ``width`` (px),
                    ``io_by`` (thread|file), optional ``lanes`` (comma-separated keys);
                    ``enc=bin``: a binary answer without lane descriptions (:mod:`.packed`,
                    what the tab asks for)
``/files``          per-file Darshan counters (POSIX and STDIO rows)
``/objects``        object-storage requests per host: totals and per-object counters
``/histograms``     access sizes read/write, access pattern, calls per op (``path`` optional)
``/bandwidth``      read/write bytes/s in ``bins`` over ``start``..``end``
``/steps``          per-step I/O (or equal time windows when there are no step markers); object
                    requests and bytes per step where the view has requests
``/hosts``          per host: bytes, read time, I/O calls, input wait (the "All hosts" table)
``/findings``       findings with evidence (tb_iotrace.analysis in a child process,
                    captures up to 1 GiB)
``/checkpoints``    checkpoint saves and loads per host on the view's clock and, across hosts,
                    one table per save with every rank's bandwidth and finish time
                    (computed with the findings)
``/event``          one event's details: ``lane``, ``index``
``/windows``        the profile windows of ``run``'s job in time order, with their input wait
                    and I/O (takes ``run`` only; :mod:`tb_iotrace.plugin.endpoints.windows`)
==================  ========================================================================

Status codes: 400 for malformed parameters (including names that try to leave the
logdir), 404 for unknown runs/hosts/lanes/events, 422 with ``{"error"}`` for a capture that
cannot be read (corrupt, truncated): the other runs keep working.

Nothing slow or fallible is imported at module level: no TensorFlow, no native module.
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
import mimetypes
import os
from typing import Any, Callable

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from tb_iotrace.base.memory import trim_memory
from tb_iotrace.store.logdir import BadName
from tb_iotrace.store.xplane import XPlaneError
from tb_iotrace.plugin.cache import LogdirIndex
from tb_iotrace.plugin import packed
from tb_iotrace.plugin.endpoints import (bandwidth, capture, checkpoints, event, files, findings, histograms, hosts, objects,
                                         steps, timeline, windows)
from tb_iotrace.plugin.request_view import NotFound, View

log = logging.getLogger("tb_iotrace.plugin")

PLUGIN_NAME = "iotrace"
ALL_HOSTS = "__all__"
# Browsers may reuse the frontend files this long (a reinstall shows up after it at worst).
STATIC_MAX_AGE_S = 300
STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
# a build output (setup.py's build_frontend, `node tools/bundle_frontend.mjs`), not in git
BUNDLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "frontend-build", "index.js")
BUNDLE_MISSING = ("tb_iotrace: the I/O tab's code is not built (tb_iotrace/plugin/frontend-build/index.js): "
                  "run `node tools/bundle_frontend.mjs` in the source tree, or reinstall the package")
_STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html",
                 ".svg": "image/svg+xml", ".png": "image/png", ".json": "application/json",
                 ".woff2": "font/woff2"}


class HttpError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


_LOOPBACK = ("127.", "::1", "::ffff:127.")


class _Uncompressed:
    """The request as http_util.Respond sees it, minus Accept-Encoding: for a browser on
    the same machine gzip costs both sides CPU (~5 ms per 250 KB timeline answer) and
    saves nothing. Opt-in (``TBIO_PLUGIN_LOCAL_NO_GZIP=1``): a loopback peer is also what
    TensorBoard sees behind an ``ssh -L`` tunnel or a local reverse proxy, where the
    browser is remote and gzip matters."""

    def __init__(self, request):
        self.environ = request.environ
        self.method = request.method
        self.headers = {k: v for k, v in request.headers.items() if k.lower() != "accept-encoding"}


def _local_no_gzip(request) -> bool:
    return ((request.remote_addr or "").startswith(_LOOPBACK)
            and os.environ.get("TBIO_PLUGIN_LOCAL_NO_GZIP") == "1")


def _json(request, payload: Any, code: int = 200):
    if isinstance(payload, Body):
        return payload.respond(request)
    body = json.dumps(payload, separators=(",", ":"), allow_nan=False)
    if _local_no_gzip(request):
        request = _Uncompressed(request)
    return http_util.Respond(request, body, "application/json", code=code)


class Body:
    """An answer already encoded (JSON or :mod:`.packed`), sent as is, gzipped when the
    browser accepts it. Memoized answers are kept encoded (and their gzip once made): an
    "All hosts" /files answer is 1.5 MB of JSON, ~60 ms to write and ~40 ms to gzip again
    per request."""

    GZIP_LEVEL = 1  # binary columns compress about as well at 1 as at 3, twice as fast

    def __init__(self, data: bytes, content_type: str):
        self.data = data
        self.content_type = content_type
        self._gz: bytes | None = None
        self._lock = threading.Lock()

    @classmethod
    def json(cls, payload: Any) -> "Body":
        return cls(json.dumps(payload, separators=(",", ":"), allow_nan=False).encode(), "application/json")

    def gzipped(self) -> bytes:
        with self._lock:
            if self._gz is None:
                self._gz = gzip.compress(self.data, compresslevel=self.GZIP_LEVEL, mtime=0)
            return self._gz

    def respond(self, request):
        if _local_no_gzip(request):
            # (TensorBoard's Respond gzips an answer itself when the request accepts it)
            return http_util.Respond(_Uncompressed(request), self.data, self.content_type)
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            return http_util.Respond(request, self.gzipped(), self.content_type, content_encoding="gzip")
        return http_util.Respond(request, self.data, self.content_type)


def _num(args, name: str, default=None, kind=float):
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise HttpError(400, f"parameter {name!r} must be a number") from None
    if kind is float and value != value:  # NaN
        raise HttpError(400, f"parameter {name!r} must be a number")
    return value


def static_file(name: str) -> tuple[bytes, str] | None:
    """Bytes and content type of a frontend file, or None. Only plain names made of
    ``[A-Za-z0-9_.-]`` segments below the static directory are served."""
    parts = name.split("/")
    for p in parts:
        if not p or p.startswith(".") or not all(c.isalnum() or c in "_.-" for c in p):
            return None
    root = os.path.realpath(STATIC_DIR)
    path = os.path.realpath(os.path.join(root, *parts))
    if not path.startswith(root + os.sep) or not os.path.isfile(path):
        return None
    ext = os.path.splitext(path)[1]
    ctype = _STATIC_TYPES.get(ext) or mimetypes.guess_type(path)[0] or "application/octet-stream"
    with open(path, "rb") as fh:
        return fh.read(), ctype


def bundle_file() -> bytes | None:
    """The tab's bundle (what ``/index.js`` serves), or None when it was never built."""
    try:
        with open(BUNDLE_PATH, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


class IoTracePlugin(base_plugin.TBPlugin):
    """The "I/O" tab."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context):
        logdir = getattr(context, "logdir", None) or ""
        if "," in logdir and not os.path.isdir(logdir):
            logdir = ""  # multi-logdir specs: not supported (a URL is: see LogdirIndex)
        self.index = LogdirIndex(logdir)
        self.host_rows = hosts.RowMemo()   # the "All hosts" rows read or computed (see _hosts)

    # -- TBPlugin
    def is_active(self) -> bool:
        try:
            active = self.index.is_active()
        except Exception:  # never break TensorBoard's plugin listing
            log.exception("is_active failed")
            return False
        if active:
            self.index.prefetch_latest()
        return active

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="I/O")

    def get_plugin_apps(self) -> dict[str, Callable]:
        return {
            "/index.js": self._serve_index,
            "/static/*": self._serve_static,
            "/runs": self._route(self._runs),
            "/capture": self._route(self._capture),
            "/timeline": self._route(self._timeline),
            "/files": self._route(self._files),
            "/histograms": self._route(self._histograms),
            "/bandwidth": self._route(self._bandwidth),
            "/steps": self._route(self._steps),
            "/hosts": self._route(self._hosts),
            "/findings": self._route(self._findings),
            "/checkpoints": self._route(self._checkpoints),
            "/event": self._route(self._event),
            "/windows": self._route(self._windows),
            "/objects": self._route(self._objects),
        }

    # -- static
    @wrappers.Request.application
    def _serve_index(self, request):
        # The tab is being opened: decode the capture it shows first meanwhile.
        try:
            self.index.warm_default()
        except Exception:  # never break serving the frontend
            log.exception("warm_default failed")
        body = bundle_file()
        if body is None:
            log.error("%s", BUNDLE_MISSING)
            return http_util.Respond(request, BUNDLE_MISSING, "text/plain", code=404)
        return http_util.Respond(request, body, "text/javascript", expires=STATIC_MAX_AGE_S)

    @wrappers.Request.application
    def _serve_static(self, request):
        prefix = f"/data/plugin/{PLUGIN_NAME}/static/"
        path = request.path
        at = path.find(prefix)
        got = static_file(path[at + len(prefix):]) if at >= 0 else None
        if got is None:
            return http_util.Respond(request, "not found", "text/plain", code=404)
        return http_util.Respond(request, got[0], got[1], expires=STATIC_MAX_AGE_S)

    # -- data routes
    def _route(self, handler):
        @wrappers.Request.application
        def app(request):
            try:
                payload = handler(request.args)
                resp = _json(request, payload)
                del payload
                # TensorBoard answers each request on a new thread, and glibc gives each
                # its own malloc arena: hand the freed temporaries back at once, or the
                # process keeps growing by the size of a response's working set.
                trim_memory()
                return resp
            except HttpError as exc:
                return _json(request, {"error": exc.message}, code=exc.code)
            except BadName as exc:
                return _json(request, {"error": str(exc)}, code=400)
            except (KeyError, NotFound) as exc:
                msg = exc.args[0] if exc.args else "not found"
                return _json(request, {"error": str(msg)}, code=404)
            except XPlaneError as exc:
                return _json(request, {"error": f"cannot read this capture: {exc.reason}",
                                       "file": os.path.basename(exc.path)}, code=422)
            except ValueError as exc:
                return _json(request, {"error": str(exc)}, code=400)
        return app

    def _view(self, args) -> View:
        return self.index.view(*self._files_of(args))

    def _files_of(self, args) -> tuple[str, list[tuple[str, str]]]:
        """The run and the (host, path) pairs a request names (one host, or every host)."""
        run = args.get("run", "")
        host = args.get("host", "")
        if not run:
            raise HttpError(400, "missing run")
        if not host:
            raise HttpError(400, "missing host")
        if host == ALL_HOSTS:
            info, _ = self.index.find(run)
            files = sorted(info.hosts.items())
        else:
            _, path = self.index.find(run, host)
            files = [(host, path)]
        return run, files

    def _runs(self, args) -> dict[str, Any]:
        runs = self.index.runs(refresh=args.get("refresh") == "1")
        out = [{"run": r.run, "hosts": sorted(r.hosts), "kind": r.kind} for r in runs]
        if not self.index.logdir:
            msg = "TensorBoard was started without a --logdir the I/O tab can read (one folder or URL)."
        elif self.index.remote_error:
            msg = self.index.remote_error
        elif not out:
            msg = ("No profile found in the logdir. Capture one with tb_iotrace enabled: "
                   "`import tb_iotrace; tb_iotrace.enable()` then tf.profiler.experimental.start(logdir) "
                   "... stop(), or Keras TensorBoard(profile_batch=...); or record a whole run with "
                   "`tb-iotrace run --logdir <logdir> -- python train.py`; for PyTorch, profile with "
                   "on_trace_ready=tb_iotrace.torch.trace_handler(<logdir>/<run>). Captures are read from "
                   "<logdir>/[<run>/]plugins/profile/<session>/<host>.xplane.pb, whole-run records "
                   "from <logdir>/[<dir>/]plugins/iotrace/<host>.<pid>.json, PyTorch traces from "
                   "<logdir>/[<run>/]<worker>.<ts>.pt.trace.json[.gz].")
        else:
            msg = ""
        return {"runs": out, "message": msg, "truncated": self.index.truncated}

    def _capture(self, args):
        view, io_by = self._view(args), args.get("io_by", "thread")
        return view.memo(("capture", io_by), lambda: Body.json(capture.capture_impl(view, io_by)))

    def _timeline(self, args):
        view = self._view(args)
        lanes = args.get("lanes")
        enc = args.get("enc", "json")
        if enc not in ("json", "bin"):
            raise HttpError(400, "parameter 'enc' must be json or bin")
        impl = timeline.timeline_packed if enc == "bin" else timeline.timeline_impl
        got = impl(view, _num(args, "start"), _num(args, "end"), _num(args, "width", 1000, int),
                   args.get("io_by", "thread"), lanes.split(",") if lanes else None)
        return Body(got, packed.CONTENT_TYPE) if enc == "bin" else got

    def _files(self, args):
        view = self._view(args)
        return view.memo(("files",), lambda: Body.json(files.files_impl(view)))

    def _histograms(self, args):
        view, path = self._view(args), args.get("path") or None
        return view.memo(("histograms", path), lambda: Body.json(histograms.histograms_impl(view, path)))

    def _bandwidth(self, args):
        view = self._view(args)
        start, end, bins = _num(args, "start"), _num(args, "end"), _num(args, "bins", 200, int)
        return view.memo(("bandwidth", start, end, bins),
                         lambda: Body.json(bandwidth.bandwidth_impl(view, start, end, bins)))

    def _steps(self, args):
        view = self._view(args)
        return view.memo(("steps",), lambda: Body.json(steps.steps_impl(view)))

    def _hosts(self, args):
        # from the captures' stored summaries: no view is built (no capture decoded) when
        # every host has one (tb_iotrace.store.summaries)
        return Body.json(hosts.hosts_cached(self.index, self._files_of(args)[1], self.host_rows))

    def _findings(self, args):
        run, files = self._files_of(args)
        before = findings.identities(files) if len(files) > 1 else {}    # the job facts kept are of these
        return findings.findings_impl(self.index.view(run, files), before)

    def _objects(self, args):
        view = self._view(args)
        return view.memo(("objects",), lambda: Body.json(objects.objects_impl(view)))

    def _checkpoints(self, args):
        return checkpoints.checkpoints_impl(self._view(args))

    def _event(self, args):
        lane = args.get("lane")
        if not lane:
            raise HttpError(400, "missing lane")
        return event.event_impl(self._view(args), lane, _num(args, "index", None, int) if
                                  args.get("index") else _missing("index"))


    def _windows(self, args):
        run = args.get("run", "")
        if not run:
            raise HttpError(400, "missing run")
        return windows.windows_impl(self.index, run)


def _missing(name: str):
    raise HttpError(400, f"missing {name}")


__all__ = ["ALL_HOSTS", "BUNDLE_PATH", "Body", "IoTracePlugin", "PLUGIN_NAME", "bundle_file", "static_file"]
