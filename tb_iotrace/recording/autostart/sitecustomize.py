"""Put first on PYTHONPATH by ``tb-iotrace run``: every Python process started under it
enables tb_iotrace and records the whole run (see :mod:`tb_iotrace.recording.autostart`), then the
``sitecustomize`` that would have run without us (if any) runs as usual."""
import os
import sys


def _tb_iotrace_start() -> None:
    if not os.environ.get("TB_IOTRACE_RUN_DIR"):
        return
    try:
        from tb_iotrace.recording.autostart import start
    except Exception as exc:  # another interpreter, without tb_iotrace installed
        if os.environ.get("TB_IOTRACE_VERBOSE"):
            sys.stderr.write(f"tb-iotrace: not tracing {sys.executable}: {exc}\n")
        return
    try:
        start()
    except Exception as exc:
        sys.stderr.write(f"tb-iotrace: capture not started in pid {os.getpid()}: {exc}\n")


def _tb_iotrace_chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    me = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        __import__("sitecustomize")
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
        if me is not None:
            sys.modules["sitecustomize"] = me
    finally:
        sys.path[:] = saved


_tb_iotrace_start()
_tb_iotrace_chain()
