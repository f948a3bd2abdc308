"""Keep the run's SIGTERM handler in PyTorch DataLoader workers.

A DataLoader worker calls ``torch._C._set_worker_signal_handlers()`` as it starts: a C handler
for SIGTERM that ``_exit(0)``s at once when the parent sent it (how the parent ends persistent
workers, and workers that outlive a join). It replaces the handler ``tb-iotrace run`` installed,
so the worker ended without its record: every byte it read was lost. After torch sets its
handlers, this puts the run's handler back for SIGTERM: the worker's record is written by the
run's thread, then the worker exits with status 0, as torch's handler ends it (the parent's
SIGCHLD check would call any other end a worker failure). Unlike torch's, this exits 0 whoever
sent the signal (Python's handlers do not see the sender). SIGBUS/SIGSEGV/SIGFPE stay torch's.

The wrap is installed once torch is imported (never imports torch itself)."""
from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import Any

MODULE = "torch.utils.data._utils.signal_handling"
NAME = "_set_worker_signal_handlers"


def wrap(real: Callable[..., Any], ours: Callable[[int, Any], None],
         on_kept: Callable[[], None]) -> Callable[..., Any]:
    """``real`` (torch's), then SIGTERM back to ``ours`` if ``ours`` was the Python handler
    (and ``on_kept()``)."""
    def set_worker_signal_handlers(*args: Any, **kwargs: Any) -> Any:
        had = signal.getsignal(signal.SIGTERM)
        result = real(*args, **kwargs)
        if had is ours:
            try:
                signal.signal(signal.SIGTERM, ours)   # main thread: torch's worker loop calls this there
            except (ValueError, OSError):
                return result
            on_kept()
        return result
    set_worker_signal_handlers.__wrapped__ = real  # type: ignore[attr-defined]
    return set_worker_signal_handlers


def install(ours: Callable[[int, Any], None], on_kept: Callable[[], None]) -> None:
    """Wrap torch's worker signal set-up once torch is imported (now if it is)."""
    from tb_iotrace.recording.importhook import call_after_import

    def patch() -> None:
        mod = sys.modules.get(MODULE)
        real = getattr(mod, NAME, None) if mod is not None else None
        if real is None or getattr(real, "__wrapped__", None) is not None:
            return
        setattr(mod, NAME, wrap(real, ours, on_kept))

    call_after_import("torch", patch)
