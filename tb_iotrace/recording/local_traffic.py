"""A job's own TCP traffic is local, not storage: torch.distributed's store and gloo's pairs,
TensorFlow's cluster.

The shim traces a process's client TCP connections as storage endpoints (``tcp://HOST:PORT``,
docs/capture.md). The connections a job makes between its own processes are clients too; this
module tells the shim which are the job's own (native API in ``native/tbio.h``):

- the peers the job names: ``MASTER_ADDR:MASTER_PORT`` (torch.distributed's ``env://`` store,
  torchrun's agent store), an ``init_method="tcp://HOST:PORT"``, and every address of
  ``TF_CONFIG``'s cluster (TensorFlow's workers, parameter servers, chief);
- every connection any thread makes while ``torch.distributed.init_process_group`` or
  ``new_group`` runs (the store's client, gloo's mesh of pairs, an eager NCCL bootstrap), or
  while a ``torch.distributed.TCPStore`` is built (torchrun's agent store, a job's own store:
  the name is a subclass of it), whose address is a local peer after;
- when tb_iotrace is enabled in a process whose process group exists already (a profiler
  handler made after ``init_process_group``, ``tb-iotrace attach``), its sockets open then:
  they were made before the shim could see who made them.

Nothing here runs on a traced call: the native side keeps a count and a fixed table.
"""
from __future__ import annotations

import functools
import json
import os
import socket
import sys
import threading
from typing import Any

from tb_iotrace.recording.ffi import native
from tb_iotrace.recording.forklock import ForkSafeLock
from tb_iotrace.recording.importhook import call_after_import

__all__ = ["install", "mark_existing", "mark_group_sockets", "register_peer", "register_env_peers", "local_window"]

RESOLVE_WAIT_S = 2.0      # at most how long enable() waits for a cluster host's name to resolve
_GROUP_CALLS = ("init_process_group", "new_group", "new_subgroups", "new_subgroups_by_enumeration")
_lock = ForkSafeLock()     # a forked child gets it back free, whoever held it
_registered: set[tuple[str, int]] = set()
_hooked = False


def _addresses(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return sorted({str(info[4][0]).split("%")[0] for info in infos})


def _add(host: str, port: int) -> None:
    _, lib = native()
    for addr in _addresses(host, port):
        if (addr, port) not in _registered:
            _registered.add((addr, port))
            lib.tbio_local_peer(addr.encode(), port)


def register_peer(host: str, port: int, wait_s: float = RESOLVE_WAIT_S) -> None:
    """Connections to ``host:port`` (a name is resolved, in a thread waited on at most
    ``wait_s``: a slow resolver delays nothing but its own entry) are local."""
    if not host or not 0 < port < 65536:
        return
    t = threading.Thread(target=_add, args=(host, port), name="tbio-local-peer", daemon=True)
    t.start()
    t.join(wait_s)


def _split_hostport(text: str) -> tuple[str, int] | None:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _tf_cluster(raw: str) -> list[tuple[str, int]]:
    try:
        cluster = json.loads(raw).get("cluster") or {}
    except (ValueError, AttributeError):
        return []
    out = []
    for addrs in cluster.values() if isinstance(cluster, dict) else ():
        items = addrs.values() if isinstance(addrs, dict) else addrs if isinstance(addrs, list) else ()
        for a in items:
            hp = _split_hostport(a) if isinstance(a, str) else None
            if hp:
                out.append(hp)
    return out


def register_env_peers() -> None:
    """``MASTER_ADDR:MASTER_PORT`` and ``TF_CONFIG``'s cluster, as the environment says now."""
    peers: list[tuple[str, int]] = []
    port = os.environ.get("MASTER_PORT", "")
    if port.isdigit():
        peers.append((os.environ.get("MASTER_ADDR") or "127.0.0.1", int(port)))
    raw = os.environ.get("TF_CONFIG")
    if raw:
        peers.extend(_tf_cluster(raw))
    for host, p in peers:
        register_peer(host, p)


class local_window:
    """Connections any thread makes inside are local (the shim's count; nested windows add)."""

    def __enter__(self) -> "local_window":
        native()[1].tbio_local_begin()
        return self

    def __exit__(self, *exc: Any) -> None:
        native()[1].tbio_local_end()


def mark_existing() -> int:
    """Mark this process's open sockets local: what the caller knows to be the job's own (they
    were made before the shim saw their connect). How many were marked."""
    _, lib = native()
    n = 0
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    for name in fds:
        try:
            fd = int(name)
            if os.readlink(f"/proc/self/fd/{name}").startswith("socket:") and lib.tbio_fd_set_local(fd) == 0:
                n += 1
        except (ValueError, OSError):
            continue
    return n


def _dist_initialized() -> bool:
    dist = sys.modules.get("torch.distributed")
    try:
        return bool(dist is not None and dist.is_available() and dist.is_initialized())
    except Exception:
        return False


def _init_method_peer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    method = kwargs.get("init_method", args[1] if len(args) > 1 else None)
    if isinstance(method, str) and method.startswith("tcp://"):
        hp = _split_hostport(method[len("tcp://"):].split("?")[0].split("/")[0])
        if hp:
            register_peer(*hp)


def _group_wrapper(orig: Any, init: bool) -> Any:
    @functools.wraps(orig)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            register_env_peers()     # the launcher may set them after tb_iotrace was enabled
            if init:
                _init_method_peer(args, kwargs)
        except Exception:
            pass
        with local_window():
            return orig(*args, **kwargs)

    call._tbio_wrapper = True        # type: ignore[attr-defined]
    return call


def _store_class(orig: type) -> type:
    """``TCPStore`` built inside a window (its client connects there, the master's too), and its
    address a local peer after (a reconnect, a port 0 the store chose)."""

    class TCPStore(orig):  # type: ignore[misc, valid-type]
        _tbio_wrapper = True

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            with local_window():
                super().__init__(*args, **kwargs)
            try:
                register_peer(str(self.host), int(self.port))
            except Exception:
                pass

    TCPStore.__module__, TCPStore.__qualname__, TCPStore.__doc__ = orig.__module__, orig.__qualname__, orig.__doc__
    return TCPStore


def _hook_torch_distributed() -> None:
    dist = sys.modules.get("torch.distributed")
    store = getattr(dist, "TCPStore", None) if dist is not None else None
    if isinstance(store, type) and not getattr(store, "_tbio_wrapper", False):
        try:
            dist.TCPStore = _store_class(store)     # type: ignore[union-attr]
        except TypeError:      # a class that cannot be subclassed: the group calls' windows remain
            pass
    for modname in ("torch.distributed.distributed_c10d", "torch.distributed"):
        mod = sys.modules.get(modname)
        for name in _GROUP_CALLS:
            orig = getattr(mod, name, None) if mod is not None else None
            if orig is None or getattr(orig, "_tbio_wrapper", False):
                continue
            c10d = sys.modules.get("torch.distributed.distributed_c10d")
            done = getattr(c10d, name, None) if c10d is not None and mod is not c10d else None
            # torch.distributed re-exports distributed_c10d's function: the same wrapper in both
            setattr(mod, name, done if getattr(done, "__wrapped__", None) is orig
                    else _group_wrapper(orig, name == "init_process_group"))


def mark_group_sockets() -> None:
    """The environment's peers, and when torch.distributed's process group exists already, the
    sockets open now (its store's and pairs'): what ``tb-iotrace attach`` does (no wrappers)."""
    try:
        register_env_peers()
        if _dist_initialized():
            mark_existing()
    except Exception:
        pass


def install() -> None:
    """At enable: the environment's peers, the process group's sockets when it exists already,
    and the torch.distributed calls wrapped (now, or when it is imported)."""
    global _hooked
    with _lock:
        mark_group_sockets()
        if not _hooked:                  # enable() again after a disable(): one import hook
            _hooked = True
            call_after_import("torch.distributed", _hook_torch_distributed)
