"""The part of a TF loop's input wait spent in the iterator's own Python: inside
``tb_iotrace::next`` (tb_iotrace's TraceMe around ``OwnedIterator.__next__``,
:mod:`tb_iotrace.recording.tf_iterator`) with no ``IteratorGetNext`` op under it, i.e. packing
the element's tensors into its structure. A deeper prefetch cannot shorten it (the element is
ready); fewer, larger tensors per element or iterating inside a ``tf.function`` can.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tb_iotrace.model.named_spans import named_spans
from tb_iotrace.model.stepwait import covered, is_input_wait, merge

NEXT_EVENT = "tb_iotrace::next"
PY_CHANGE = ("the wait is the iterator's own Python packing each element's tensors (the element is ready: a "
             "deeper prefetch cannot help): fewer, larger tensors per element (stack the features into one tensor, "
             "or batch before building the dict), or iterate inside a tf.function (Keras fit, or the loop's body "
             "over the dataset in one @tf.function)")
PY_MODEL = ("the iterator's Python outside the IteratorGetNext op ({part:.0f}% of the wait) is the most such a "
            "change removes: step time falls by at most input_wait_share ({s:.0f}%) x that part")


def python_time(space: Any, window: tuple[np.ndarray, np.ndarray]) -> int:
    """Time (ps) inside ``window`` within a ``tb_iotrace::next`` span and no other input wait."""
    if not len(window[0]):
        return 0
    nxt, op = named_spans(space, [lambda k: k == NEXT_EVENT, lambda k: k != NEXT_EVENT and is_input_wait(k)])
    nxt_iv = merge(*nxt)
    inside = int(covered(nxt_iv, window[0], window[1]).sum())
    if not len(op[0]):
        return inside
    both = _intersect(nxt_iv, merge(*op))
    return max(0, inside - int(covered(both, window[0], window[1]).sum()))


def _intersect(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The intersection of two lists of disjoint sorted intervals."""
    out_s, out_e = [], []
    i = j = 0
    as_, ae, bs, be = a[0].tolist(), a[1].tolist(), b[0].tolist(), b[1].tolist()
    while i < len(as_) and j < len(bs):
        lo, hi = max(as_[i], bs[j]), min(ae[i], be[j])
        if lo < hi:
            out_s.append(lo)
            out_e.append(hi)
        if ae[i] < be[j]:
            i += 1
        else:
            j += 1
    return np.array(out_s, np.int64), np.array(out_e, np.int64)


__all__ = ["NEXT_EVENT", "PY_CHANGE", "PY_MODEL", "python_time"]
