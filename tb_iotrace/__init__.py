"""tb_iotrace: Darshan-style POSIX/STDIO I/O profiling for TensorFlow.

    import tb_iotrace
    tb_iotrace.enable()
    with tb_iotrace.capture() as rec:     # a tb_iotrace.Recording
        ...
    rec.files, rec.events, rec.dropped, rec.to_dict()

Importing this package loads nothing native: the shim is attached by the
first ``enable()``/``capture()``, and the TensorBoard plugin
(``tb_iotrace.plugin``) never loads it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["enable", "disable", "is_enabled", "capture", "Recording", "set_filters", "set_trace_cap",
           "set_max_files", "NativeError"]
# Earlier releases named Recording "Capture" (a capture is a profile file now); the old name stays
# importable for code that used it.
OLD_NAMES = {"Capture": "Recording"}

if TYPE_CHECKING:  # pragma: no cover
    from tb_iotrace.recording.api import NativeError, Recording, capture, disable, enable, is_enabled, set_filters, set_max_files, set_trace_cap
    Capture = Recording


def __getattr__(name: str) -> Any:
    if name in __all__ or name in OLD_NAMES:
        from tb_iotrace.recording import api

        return getattr(api, OLD_NAMES.get(name, name))
    raise AttributeError(f"module 'tb_iotrace' has no attribute {name!r}")
