"""PyTorch profiler traces with I/O: a drop-in for ``torch.profiler.tensorboard_trace_handler``.

    import torch, tb_iotrace.torch
    with torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=2),
                                on_trace_ready=tb_iotrace.torch.trace_handler("./log")) as prof:
        for batch in loader:
            ...
            prof.step()

writes the Kineto trace PyTorch's handler writes (``<worker>.<ns>.pt.trace.json[.gz]``) with
the profiled window's file I/O added: one track per process and thread that did I/O
(DataLoader workers started with ``fork`` included), each call an event with its file, offset
and bytes, on Kineto's clock, and the window's Darshan counters under the ``tb_iotrace`` key
(see :mod:`tb_iotrace.store.kineto`). Perfetto and HTA open it as before.
"""
from __future__ import annotations

import logging

from tb_iotrace.recording import api
from tb_iotrace.recording import pytorch as torch_capture

__all__ = ["TraceHandler", "trace_handler"]

TraceHandler = torch_capture.TraceHandler
log = logging.getLogger("tb_iotrace")


def trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False, *,
                  start_wait_s: float = torch_capture.START_WAIT_S,
                  wait_s: float = torch_capture.WAIT_S) -> TraceHandler:
    """``on_trace_ready`` for ``torch.profiler.profile``: enables tb_iotrace, hooks the
    profiler's window and the DataLoader workers' fork, and returns the handler. Call it
    before the DataLoader's workers start (they inherit the hook at fork). When tb_iotrace
    cannot be enabled, the handler still writes PyTorch's trace, with the reason under
    ``tb_iotrace.notes``. ``start_wait_s``/``wait_s``: at most how long a window's start waits
    for the workers to begin recording, and the handler for their records (a worker the
    machine does not run; what it misses is counted and said in the trace).

    ``dir_name`` may be a URL (``s3://bucket/dir``, ``gs://...``; ``pip install tb_iotrace[cloud]``):
    each trace is written locally and uploaded whole; one that cannot be uploaded is kept in a
    local folder named in a warning, and the training goes on."""
    handler = torch_capture.TraceHandler(dir_name, worker_name=worker_name, use_gzip=use_gzip,
                                         wait_s=wait_s, start_wait_s=start_wait_s)
    try:
        api.enable()
        torch_capture.install()
    except Exception as exc:   # the profile goes on, written as PyTorch's handler would
        handler.unavailable = f"I/O capture unavailable: {exc}"
        log.warning("tb_iotrace: %s; the trace is written without I/O", handler.unavailable)
    return handler
