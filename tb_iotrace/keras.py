"""Profile windows every N steps or seconds in a Keras job, each with its I/O, as
``tf.estimator.ProfilerHook(save_steps=N)`` / ``save_secs`` did::

    import tb_iotrace, tb_iotrace.keras
    tb_iotrace.enable()
    model.fit(ds, callbacks=[tb_iotrace.keras.ProfileEvery("gs://bucket/logs", every_steps=500, steps=5)])

Keras 3 on the TensorFlow or the JAX backend. Each window is one profile run
(``<log_dir>/plugins/profile/<session>/<host>.xplane.pb``) carrying the I/O of its steps and a
step marker per batch (Keras's own ``Profiled batch``, which the report and the I/O tab count
as steps). ``log_dir`` may be a URL (``s3://``, ``gs://``: ``pip install tb_iotrace[cloud]``):
each window is profiled locally and uploaded whole (:mod:`tb_iotrace.recording.window_writer`).

Importing this module imports Keras (and so the backend it runs on); ``import tb_iotrace``
does not import it.
"""
from __future__ import annotations

import logging
import time
from typing import Any

import keras

from tb_iotrace.recording import api
from tb_iotrace.recording.window_writer import WindowWriter

__all__ = ["ProfileEvery"]
log = logging.getLogger("tb_iotrace")


def _whole_at_least_1(n: object) -> bool:
    """A count of batches: a whole number, at least 1 (2.5 is refused, not truncated)."""
    if isinstance(n, bool):
        return False
    try:
        return float(n) == int(n) and int(n) >= 1   # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return False


class ProfileEvery(keras.callbacks.Callback):
    """Take a profile window of ``steps`` training batches every ``every_steps`` batches or every
    ``every_secs`` seconds (exactly one of the two), into ``log_dir`` (a folder or a URL).

    With ``every_steps=N`` the windows start at batches N, 2N, 3N, ... of the whole fit
    (counted across epochs, from 1); with ``every_secs=S`` the first starts S seconds after the
    fit began and the next S seconds after the previous one started. So the first steps, where
    Keras traces and compiles, are never profiled. A window still open when the fit ends is
    closed there. Enables tb_iotrace (``tb_iotrace.enable()``) if it is not.

    ``windows`` counts the windows published; ``published`` lists their files (URLs or paths).
    A profiler or storage failure is one warning and the fit goes on; a URL whose client is
    not installed raises :class:`tb_iotrace.store.remote.RemoteError` here."""

    def __init__(self, log_dir: str, every_steps: int | None = None, every_secs: float | None = None,
                 steps: int = 1) -> None:
        super().__init__()
        if (every_steps is None) == (every_secs is None):
            raise ValueError("ProfileEvery takes exactly one of every_steps and every_secs")
        if every_steps is not None and not _whole_at_least_1(every_steps):
            raise ValueError(f"every_steps must be a positive integer, not {every_steps!r}")
        if every_secs is not None and not float(every_secs) > 0:
            raise ValueError(f"every_secs must be > 0, not {every_secs!r}")
        if not _whole_at_least_1(steps):
            raise ValueError(f"steps must be a positive integer, not {steps!r}")
        if every_steps is not None and int(steps) > int(every_steps):
            raise ValueError(f"steps ({steps}) must not exceed every_steps ({every_steps}): windows would overlap")
        self.every_steps = int(every_steps) if every_steps is not None else None
        self.every_secs = float(every_secs) if every_secs is not None else None
        self.steps = int(steps)
        self.writer = WindowWriter(log_dir, _backend())
        self._step = 0                    # batches trained in this fit so far
        self._next_at = 0.0               # every_secs: when the next window is due (monotonic)
        self._in_window = 0               # batches of the open window done
        self._marker: Any = None          # the open batch's step marker
        api.enable()

    @property
    def windows(self) -> int:
        return self.writer.windows

    @property
    def published(self) -> list[str]:
        return list(self.writer.published)

    def _due(self) -> bool:
        if self.every_steps is not None:
            return self._step % self.every_steps == 0
        return time.monotonic() >= self._next_at

    def on_train_begin(self, logs: Any = None) -> None:
        self._step, self._in_window = 0, 0
        if self.every_secs is not None:
            self._next_at = time.monotonic() + self.every_secs

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._step += 1
        if not self.writer.active and self._due():
            if self.every_secs is not None:
                self._next_at = time.monotonic() + self.every_secs
            if not self.writer.start():
                return
            self._in_window = 0
        if self.writer.active:
            self._marker = _step_marker(self.writer.active, self._step)

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if not self.writer.active:
            return
        self._end_marker()
        self._in_window += 1
        if self._in_window >= self.steps:
            self.writer.stop()

    def on_train_end(self, logs: Any = None) -> None:
        self._end_marker()
        if self.writer.active:
            self.writer.stop()

    def _end_marker(self) -> None:
        if self._marker is not None:
            try:
                self._marker.__exit__(None, None, None)
            finally:
                self._marker = None


def _backend() -> str | None:
    got = keras.backend.backend()
    if got not in ("tensorflow", "jax"):
        raise ValueError(f"ProfileEvery profiles the TensorFlow and JAX backends, not Keras's {got!r} backend "
                         "(for PyTorch use torch.profiler.schedule with tb_iotrace.torch.trace_handler)")
    return str(got)


def _step_marker(framework: str, step: int) -> Any:
    """Keras's own marker of a profiled batch (what its TensorBoard callback writes), entered."""
    if framework == "jax":
        import jax  # type: ignore[import-not-found]

        marker: Any = jax.profiler.TraceAnnotation(f"Profiled batch {step}")
    else:
        import tensorflow as tf  # type: ignore[import-not-found]

        marker = tf.profiler.experimental.Trace("Profiled batch", step_num=step)
    marker.__enter__()
    return marker
