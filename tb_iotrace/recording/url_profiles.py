"""Profiles the job starts itself with a URL log dir, staged locally and uploaded whole:
``tf.profiler.experimental.start("s3://...")`` / ``stop()`` (and ``Profile``, Keras's
``TensorBoard(profile_batch=...)`` on TensorFlow, which call them), ``jax.profiler.start_trace(URL)``
/ ``stop_trace()`` (and ``jax.profiler.trace``, Keras on JAX).

Once the framework is imported, its start and stop functions are wrapped wherever its modules
hold them. A start whose log dir is a URL with an fsspec client installed
(:func:`tb_iotrace.store.remote.is_url`) profiles into a local staging folder instead, and the stop
publishes the window there whole (:class:`tb_iotrace.recording.window_writer.WindowWriter`: each file uploaded once the
framework has written it, with the I/O plane merged in), so no reader ever sees a half-merged
``.xplane.pb`` and the framework's own filesystem (no ``s3://`` in TensorFlow or jaxlib) is
never asked to write it. A URL whose client is not installed, and every local log dir, go to
the framework unchanged. ``TBIO_URL_PROFILES=0`` turns this off. A profile into a local log dir,
once stopped, has the captures it wrote summarized in the background (:mod:`.landing`).
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
import time
from typing import Any, Callable

from tb_iotrace.store import remote, staging
from tb_iotrace.recording.forklock import ForkSafeLock
from tb_iotrace.recording import landing
from tb_iotrace.recording.window_writer import WindowWriter

__all__ = ["wrap_jax", "wrap_tensorflow"]

_lock = ForkSafeLock()     # a forked child gets it back free, whoever held it
_open: dict[str, WindowWriter] = {}    # framework -> the URL window being profiled
_local: dict[str, tuple[str, int]] = {}    # framework -> (local log dir, wall ns) of the profile running


def _enabled() -> bool:
    return os.environ.get("TBIO_URL_PROFILES", "1") != "0"


def _redirect(framework: str, logdir: Any) -> tuple[Any, WindowWriter | None]:
    """The folder the framework should profile into and the window's writer: a staging folder
    for a URL log dir this process can write, else ``logdir`` unchanged and None."""
    if not _enabled() or not isinstance(logdir, str) or not remote.is_url(logdir):
        return logdir, None
    try:
        writer = WindowWriter(logdir, framework)
    except remote.RemoteError:
        return logdir, None      # no client for it here: the framework's own filesystem decides
    return str(writer.open_staging()), writer


def _started(framework: str, writer: WindowWriter | None, logdir: Any, since_ns: int) -> None:
    with _lock:
        if writer is not None:
            _open[framework] = writer
        elif isinstance(logdir, (str, os.PathLike)) and not _in_staging(os.fspath(logdir)):
            _local[framework] = (os.fspath(logdir), since_ns)   # its captures summarized once it stops


def _in_staging(logdir: str) -> bool:
    """A window of tb_iotrace's own writer (published, and summarized, by it)."""
    # abspath, not realpath: a profile's start makes no lstat of each folder, which the shim
    # would record as the job's own I/O (tb_iotrace makes its staging folders by these names)
    try:
        return os.path.abspath(logdir).startswith(os.path.abspath(staging.where()) + os.sep)
    except OSError:
        return False


def _finish(framework: str, publish: bool) -> None:
    with _lock:
        writer = _open.pop(framework, None)
        local = _local.pop(framework, None)
    if writer is not None:
        writer.close_staging(publish)
    if local is not None and publish:
        landing.landed_profile(*local)


def _replace(prefix: str, real: Callable[..., Any], wrapper: Callable[..., Any]) -> None:
    """Put ``wrapper`` wherever a module of ``prefix`` holds ``real`` (``__dict__``, not
    getattr: TensorFlow's lazily loaded API modules import on attribute access)."""
    wrapper.__tbio_url__ = True  # type: ignore[attr-defined]
    for name, mod in list(sys.modules.items()):
        if name == prefix or name.startswith(prefix + "."):
            d = getattr(mod, "__dict__", {})
            for attr, value in list(d.items()):
                if value is real:
                    setattr(mod, attr, wrapper)


def _first_parameter(fn: Callable[..., Any]) -> str:
    """The name of ``fn``'s first parameter (its log dir), "logdir" when it cannot be read."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return "logdir"
    return params[0].name if params and params[0].kind in (params[0].POSITIONAL_ONLY,
                                                            params[0].POSITIONAL_OR_KEYWORD) else "logdir"


def _start_wrapper(framework: str, real_start: Callable[..., Any]) -> Callable[..., Any]:
    """The profiler's start, its log dir redirected to a staging folder when it is a URL."""
    name = _first_parameter(real_start)    # TensorFlow's "logdir", JAX's "log_dir"

    @functools.wraps(real_start)
    def start(*args: Any, **kwargs: Any) -> Any:
        if args:
            logdir, args = args[0], args[1:]
        elif name in kwargs:
            logdir = kwargs.pop(name)
        else:
            return real_start(*args, **kwargs)      # no log dir given: the framework says so
        target, writer = _redirect(framework, logdir)
        since_ns = time.time_ns() - 1_000_000_000    # (file times of a coarse clock)
        try:
            got = real_start(target, *args, **kwargs)
        except BaseException:
            if writer is not None:
                writer.close_staging(publish=False)
            raise
        _started(framework, writer, target, since_ns)
        return got

    return start


def _stop_wrapper(framework: str, real_stop: Callable[..., Any], saves: Callable[..., bool]) -> Callable[..., Any]:
    """The profiler's stop, then the staged window published (when ``saves(*args)`` says the
    stop wrote it) or dropped."""
    @functools.wraps(real_stop)
    def stop(*args: Any, **kwargs: Any) -> Any:
        published = False
        try:
            got = real_stop(*args, **kwargs)
            published = saves(*args, **kwargs)
            return got
        finally:
            _finish(framework, publish=published)

    return stop


def wrap_tensorflow() -> None:
    """Wrap ``tf.profiler.experimental.start``/``stop`` (idempotent; a TensorFlow without them
    is left as it is)."""
    try:
        from tensorflow.python.profiler import profiler_v2
    except Exception:
        return
    real_start, real_stop = profiler_v2.__dict__.get("start"), profiler_v2.__dict__.get("stop")
    if real_start is None or real_stop is None or getattr(real_start, "__tbio_url__", False):
        return
    _replace("tensorflow", real_start, _start_wrapper("tensorflow", real_start))
    _replace("tensorflow", real_stop, _stop_wrapper("tensorflow", real_stop, lambda save=True: bool(save)))


def wrap_jax() -> None:
    """Wrap ``jax.profiler.start_trace``/``stop_trace`` (idempotent)."""
    try:
        from jax._src import profiler as jax_profiler  # type: ignore[import-not-found]
    except Exception:
        return
    real_start, real_stop = jax_profiler.__dict__.get("start_trace"), jax_profiler.__dict__.get("stop_trace")
    if real_start is None or real_stop is None or getattr(real_start, "__tbio_url__", False):
        return
    _replace("jax", real_start, _start_wrapper("jax", real_start))
    _replace("jax", real_stop, _stop_wrapper("jax", real_stop, lambda: True))
