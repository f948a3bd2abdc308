"""A ``tf.function`` call counted as TensorFlow's training loop running
(:mod:`tb_iotrace.recording.loop_activity`): Keras' ``fit`` calls its train step, a
``tf.function``, once per step (or per ``steps_per_execution``), as custom loops with a
``@tf.function`` step do. Installed by ``tb-iotrace run --profile-every`` once TensorFlow's
import has finished; costs one increment per call. Never fails the job: a TensorFlow whose
``Function`` class differs is left as it is (its tf.data iterators still count).
"""
from __future__ import annotations

import logging
from typing import Any

from tb_iotrace.recording.loop_activity import COUNTS, TF

log = logging.getLogger("tb_iotrace")

__all__ = ["install"]


def _wrap(real: Any) -> Any:
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        COUNTS[TF] += 1
        return real(self, *args, **kwargs)
    __call__.__wrapped__ = real  # type: ignore[attr-defined]
    __call__.__tbio_wrapper__ = True  # type: ignore[attr-defined]
    return __call__


def install() -> None:
    """Count ``tf.function`` calls (once; after TensorFlow's import)."""
    try:
        from tensorflow.python.eager.polymorphic_function import polymorphic_function  # type: ignore[import-not-found]

        cls = polymorphic_function.Function
        real = cls.__dict__.get("__call__")
        if real is None or getattr(real, "__tbio_wrapper__", False):
            return
        cls.__call__ = _wrap(real)
    except Exception as exc:  # noqa: BLE001 - the windows fall back on tf.data's calls
        log.debug("tb_iotrace: tf.function calls not counted: %s", exc)
