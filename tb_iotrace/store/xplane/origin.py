"""Which framework made a capture, as the capture itself tells, and why one holds no I/O.

JAX writes a ``/host:metadata`` plane whose stats name ``jax_version`` and ``jaxlib_version``
(jaxlib 0.10; older releases write the plane without them). A PyTorch (Kineto) trace converted by
:mod:`tb_iotrace.store.kineto_xspace` has that plane with ``framework`` = ``PyTorch``. TensorFlow writes no such plane;
its host events carry names no JAX capture has (eager execution, tf.function, tf.data). Only
plane stats and event *metadata* names are read, never the events: the planes may be full
protobuf ``XPlane``s or the plugin's line-less copies.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tb_iotrace.base.frameworks import JAXLIB_GATED, jaxlib_hookable, jaxlib_support, release

__all__ = ["Origin", "capture_origin", "missing_io_reason"]

METADATA_PLANE = "/host:metadata"
# Host event names only TensorFlow's runtime writes.
TF_EVENT_PREFIXES = ("EagerExecute", "EagerLocalExecute", "EagerKernelExecute", "__inference_", "__forward_",
                     "Iterator::", "ExecutorState::", "FunctionRun", "IteratorGetNext", "tf.")
# Host event names of JAX / PJRT that a capture without version stats may still carry.
JAX_EVENT_PREFIXES = ("PjitFunction", "PjRtCpuClient::", "PjRtCApiClient::", "PjRtStreamExecutorClient::",
                      "jax.", "pjit")
HOW_TO_ENABLE = ("Call tb_iotrace.enable() in the process that profiles (before or after importing the "
                 "framework), or run it under `tb-iotrace run -- python train.py`.")


@dataclass(frozen=True)
class Origin:
    framework: str           # "JAX", "TensorFlow", "PyTorch" or "" (the capture does not say)
    version: str = ""        # the framework's version when the capture records it
    jaxlib: str = ""         # JAX: jaxlib's version when recorded


def _stat_strings(plane: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for st in plane.stats:
        md = plane.stat_metadata.get(st.metadata_id)
        if md is None:
            continue
        kind = st.WhichOneof("value")
        if kind == "str_value":
            out[md.name] = st.str_value
        elif kind == "ref_value":
            ref = plane.stat_metadata.get(st.ref_value)
            out[md.name] = ref.name if ref is not None else ""
    return out


def _has_event_prefix(plane: Any, prefixes: tuple[str, ...]) -> bool:
    return any(md.name.startswith(prefixes) for md in plane.event_metadata.values())


def capture_origin(planes: Iterable[Any]) -> Origin:
    """The framework that made a capture (``XSpace.planes``, or XPlane copies without lines)."""
    planes = list(planes)
    host = [p for p in planes if p.name == "/host:CPU"]
    if any(_has_event_prefix(p, TF_EVENT_PREFIXES) for p in host):
        return Origin("TensorFlow")
    for p in planes:
        if p.name == METADATA_PLANE:
            st = _stat_strings(p)
            if st.get("framework") == "PyTorch":
                return Origin("PyTorch")
            if st.get("jax_version") or st.get("jaxlib_version"):
                return Origin("JAX", st.get("jax_version", ""), st.get("jaxlib_version", ""))
    if any(_has_event_prefix(p, JAX_EVENT_PREFIXES) for p in host):
        return Origin("JAX")
    return Origin("")


def _gated_out(jaxlib: str) -> bool:
    """A jaxlib newer than the releases tb_iotrace hooked by version number, before it read
    the library's table check: such a capture may lack I/O for that reason alone."""
    return release(jaxlib)[:3] > JAXLIB_GATED[1]


def missing_io_reason(planes: Iterable[Any]) -> str:
    """Why a capture without tb_iotrace's I/O record has none, from what the capture tells."""
    o = capture_origin(planes)
    head = "This capture has no I/O data: "
    made = f"JAX {o.version or '?'} (jaxlib {o.jaxlib})"
    if o.framework == "JAX" and o.jaxlib and jaxlib_hookable(o.jaxlib) is False:
        return (head + f"it was made by {made}, a version tb_iotrace does not hook: it has no plugin "
                f"profiler (tb_iotrace hooks {jaxlib_support()}).")
    if o.framework == "JAX" and o.jaxlib and _gated_out(o.jaxlib):
        lo, hi = (".".join(map(str, v)) for v in JAXLIB_GATED)
        return (head + f"{made} made it without tb_iotrace's I/O plane: tb_iotrace was not attached in "
                "that process (not enabled, or TBIO_JAX=0), or the jaxlib was not hooked: tb_iotrace "
                f"releases that chose by version number hooked jaxlib {lo} to {hi} only (the job's log then "
                f"said \"jaxlib {o.jaxlib} is not a version tb_iotrace knows how to hook\"); this one reads "
                f"the loaded jaxlib's table check and hooks {jaxlib_support()}. Capture again with it. "
                + HOW_TO_ENABLE)
    if o.framework == "JAX" and o.jaxlib:
        return (head + f"{made[:-1]}, a version tb_iotrace hooks) made it in a process where tb_iotrace "
                "was not enabled (or TBIO_JAX=0 turned its JAX hook off; or the job's log says "
                "\"tb_iotrace cannot hook jaxlib\": its table check was one no table of tb_iotrace "
                "passes). " + HOW_TO_ENABLE)
    if o.framework == "JAX":
        return (head + "JAX made it, in a release that does not record its version: either tb_iotrace was "
                f"not enabled in that process, or that jaxlib is not one tb_iotrace hooks ({jaxlib_support()}). "
                + HOW_TO_ENABLE)
    if o.framework == "PyTorch":
        return (head + "PyTorch wrote this trace without tb_iotrace's I/O (torch.profiler's own "
                "tensorboard_trace_handler?). Profile with on_trace_ready=tb_iotrace.torch.trace_handler(dir) "
                "instead.")
    if o.framework == "TensorFlow":
        return (head + "TensorFlow made it in a process where tb_iotrace was not enabled (or TBIO_TENSORFLOW=0 "
                "turned its TensorFlow hook off). " + HOW_TO_ENABLE)
    return (head + "the capture does not say which framework made it: either tb_iotrace was not enabled in "
            "that process, or the framework is one tb_iotrace does not hook (it hooks TensorFlow, PyTorch "
            f"through tb_iotrace.torch.trace_handler, and JAX: {jaxlib_support()}). " + HOW_TO_ENABLE)
