"""tf.data maps whose work is Python: ``tf.py_function`` / ``tf.numpy_function`` (kernels
``EagerPyFunc``, ``PyFunc``, ``PyFuncStateless``). Their Python holds the GIL, so
``num_parallel_calls`` runs them on more threads but one at a time: the verdict predicts no
gain from a parallel map for the part of the wait they fill, and names what can help
(docs/diagnosis.md).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from tb_iotrace.model.named_spans import named_intervals
from tb_iotrace.model.stepwait import covered

PY_FUNC = re.compile(r"(^|[:/])(EagerPyFunc|PyFunc|PyFuncStateless)(\b|$)")

GIL_CHANGE = ("the map's function is a tf.py_function (or numpy_function): its Python holds the GIL, so "
              "map(..., num_parallel_calls=tf.data.AUTOTUNE) runs it on more threads but one at a time (no gain "
              "predicted from that); do its work in TF ops (tf.io.decode_*, tf.image, tf.strings), then a parallel "
              "map and prefetch(tf.data.AUTOTUNE), or preprocess offline (store the decoded samples)")
GIL_MODEL = ("a py_function's Python runs one call at a time whatever num_parallel_calls; work moved out of it "
             "(TF ops, offline) removes at most the decode part of the wait: step time falls by at most "
             "input_wait_share ({s:.0f}%) x that part ({part:.0f}%)")


def py_function_time(space: Any, window: tuple[np.ndarray, np.ndarray]) -> int:
    """Time (the capture's unit, ps) inside the disjoint intervals ``window`` during which a
    py_function kernel ran on any host thread."""
    if not len(window[0]):
        return 0
    iv = named_intervals(space, lambda name: PY_FUNC.search(name) is not None)
    return int(covered(iv, window[0], window[1]).sum())


__all__ = ["GIL_CHANGE", "GIL_MODEL", "PY_FUNC", "py_function_time"]
