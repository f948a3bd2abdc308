"""The Python side of a tf.data iterator's ``next()`` on the profile's timeline: a TraceMe
``tb_iotrace::next`` around ``OwnedIterator.__next__`` (what an eager training loop calls, ``for
x in ds`` or ``next(it)``), so that the input wait is what the loop waits, the iterator's Python
around the ``IteratorGetNext`` op included, not the op alone (:mod:`tb_iotrace.model.stepwait`).

The TraceMe is made only while a profiler session records (``traceme_enabled``); otherwise the
wrapper costs one call, one check and one count (:mod:`.loop_activity`) per element. A
``tf.function`` (Keras' ``fit``) iterates in its graph, without this Python, and is unchanged.
Never fails the job: a TensorFlow whose iterator class or TraceMe binding differs is left as it
is.
"""
from __future__ import annotations

import logging
from typing import Any

from tb_iotrace.recording.loop_activity import COUNTS, TF

NEXT_EVENT = "tb_iotrace::next"      # tb_iotrace.model.stepwait names it an input wait
log = logging.getLogger("tb_iotrace")

__all__ = ["NEXT_EVENT", "wrap_iterators"]


def _wrap(real: Any, enabled: Any, traceme: Any) -> Any:
    def __next__(self: Any) -> Any:
        COUNTS[TF] += 1              # TensorFlow's loop runs (tb_iotrace.recording.window_choice)
        if not enabled():
            return real(self)
        tm = traceme(NEXT_EVENT)
        try:
            return real(self)
        finally:
            tm.Stop()
    __next__.__wrapped__ = real  # type: ignore[attr-defined]
    __next__.__tbio_wrapper__ = True  # type: ignore[attr-defined]
    return __next__


def wrap_iterators() -> None:
    """Wrap ``tf.data``'s eager iterator's ``__next__`` (once; after TensorFlow's import)."""
    try:
        from tensorflow.python.data.ops import iterator_ops  # type: ignore[import-not-found]
        from tensorflow.python.profiler.internal import _pywrap_traceme  # type: ignore[import-not-found]

        cls = iterator_ops.OwnedIterator
        real = cls.__dict__.get("__next__")
        if real is None or getattr(real, "__tbio_wrapper__", False):
            return
        cls.__next__ = _wrap(real, _pywrap_traceme.traceme_enabled, _pywrap_traceme.TraceMe)
    except Exception as exc:  # noqa: BLE001 - the job runs on without the spans
        log.debug("tb_iotrace: tf.data iterator waits not traced: %s", exc)
