"""tb_iotrace: Darshan-style POSIX/STDIO I/O profiling for TensorFlow.

    import tb_iotrace
    tb_iotrace.enable()
    with tb_iotrace.capture() as cap:
        ...
    cap.files, cap.events, cap.dropped, cap.to_dict()

Importing this package loads nothing native: the shim is attached by the
first ``enable()``/``capture()``, and the TensorBoard plugin
(``tb_iotrace.plugin``) never loads it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["enable", "disable", "is_enabled", "capture", "Capture", "set_filters", "set_trace_cap",
           "set_max_files", "NativeError"]

if TYPE_CHECKING:  # pragma: no cover
    from tb_iotrace.recording.api import Capture, NativeError, capture, disable, enable, is_enabled, set_filters, set_max_files, set_trace_cap


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tb_iotrace.recording import api

        return getattr(api, name)
    raise AttributeError(f"module 'tb_iotrace' has no attribute {name!r}")
