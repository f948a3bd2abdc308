"""``torch_zero_touch.py``'s PyTorch jobs in a process that imports TensorFlow too, as DLIO's
PyTorch workloads do (DLIO imports TensorFlow for every workload): the training loop is
PyTorch's, TensorFlow only sits in ``sys.modules``.

    torch_beside_tf.py ORDER WORK MODE SECONDS [FILES]

ORDER ``tf-first``: TensorFlow is imported before torch (DLIO's order); ``torch-first``: after.
The other arguments are ``torch_zero_touch.py``'s.
"""
from __future__ import annotations

import sys

order = sys.argv.pop(1)
if order == "tf-first":
    import tensorflow  # noqa: F401  (imported, never used: the loop is PyTorch's)
    import torch_zero_touch
else:
    import torch_zero_touch
    import tensorflow  # noqa: F401

if __name__ == "__main__":
    torch_zero_touch.main()
