"""Profile windows that tb_iotrace takes itself (``tb_iotrace.keras.ProfileEvery``,
``tb-iotrace run --profile-every``), on TensorFlow's or JAX's profiler.

Each window is profiled into a local staging folder of its own; once the framework has written
the capture there (with the I/O plane merged into it, :mod:`.window`), it is published whole:

- to a URL logdir (``s3://``, ``gs://``, ...: :mod:`tb_iotrace.store.remote`), each file uploaded
  whole (an object store replaces an object at once), so no reader ever sees a half-merged
  ``.xplane.pb``; the framework's own filesystem (which has no ``s3://`` and no emulator
  endpoint for ``gs://``) is never asked to write it;
- to a local logdir, each file copied under a hidden name beside its final place and renamed;
  then its summary and job facts are made in the background (:mod:`.landing`).

The framework names a window's session folder after the second it stopped; a window whose
session name is taken (an earlier window of this writer, or, at the destination, the same
capture file of another process on this host in the same second) gets ``_2``, ``_3``, ...
rather than overwrite it. A window that cannot be published stays in its staging folder (the
first such is one warning naming it) and the job goes on: nothing here raises into the
training loop after the writer is made.
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
from pathlib import Path
from collections.abc import Collection
from typing import Any

from tb_iotrace.base.redact import redact_url
from tb_iotrace.store import remote, staging
from tb_iotrace.recording import landing
from tb_iotrace.store.remote_calls import call
from tb_iotrace.base.atomic import atomic_write

log = logging.getLogger("tb_iotrace")

FRAMEWORKS = ("tensorflow", "jax")
PROFILE_DIR = ("plugins", "profile")


def pick_framework(imported: Collection[str], prefer: str | None = None) -> str | None:
    """The profiler to use given the frameworks ``imported``: ``prefer`` when it is among them;
    else JAX when Keras runs on it (``KERAS_BACKEND=jax``) or TensorFlow is not imported (Keras
    on JAX imports TensorFlow for its summaries); else TensorFlow; None without either."""
    if prefer in FRAMEWORKS and prefer in imported:
        return prefer
    has_tf, has_jax = "tensorflow" in imported, "jax" in imported
    if has_jax and (not has_tf or os.environ.get("KERAS_BACKEND", "").strip() == "jax"):
        return "jax"
    return "tensorflow" if has_tf else None


def loaded_framework(prefer: str | None = None) -> str | None:
    """:func:`pick_framework` among the frameworks in ``sys.modules`` (whose import may still
    be under way: callers on another thread than the importer's wait for it to finish)."""
    return pick_framework([f for f in FRAMEWORKS if f in sys.modules], prefer)


def _start_profiler(framework: str, logdir: str) -> None:
    if framework == "jax":
        import jax  # type: ignore[import-not-found]

        # without JAX's Python tracer (on by default): it traces every Python call, which
        # slowed a step of the tests' JAX loop tenfold inside a window; TensorFlow's is off
        options_type = getattr(jax.profiler, "ProfileOptions", None)
        if options_type is None:       # jax before 0.4.36
            jax.profiler.start_trace(logdir)
            return
        options = options_type()
        options.python_tracer_level = 0
        jax.profiler.start_trace(logdir, profiler_options=options)
    else:
        import tensorflow as tf  # type: ignore[import-not-found]

        tf.profiler.experimental.start(logdir)


def _stop_profiler(framework: str) -> None:
    if framework == "jax":
        import jax  # type: ignore[import-not-found]

        jax.profiler.stop_trace()
    else:
        import tensorflow as tf  # type: ignore[import-not-found]

        tf.profiler.experimental.stop()


def staging_root() -> Path:
    """Where windows are profiled before they are published (beside the remote cache)."""
    return staging.root()


class WindowWriter:
    """Takes profile windows one at a time and publishes each to ``log_dir`` (folder or URL).

    A URL whose scheme has no client installed raises :class:`tb_iotrace.store.remote.RemoteError`
    here (one line naming the extra); after that, a profiler or storage failure is a warning
    (once per kind) and the window is skipped or kept locally."""

    def __init__(self, log_dir: str, framework: str | None = None) -> None:
        if framework is not None and framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}, not {framework!r}")
        self.log_dir = log_dir
        self.is_url = remote.is_url(log_dir)
        if self.is_url:
            remote.filesystem(log_dir)     # RemoteError now when the client is missing
        else:
            self.log_dir = os.path.abspath(remote.local_path(log_dir))
        self.framework = framework
        self.lock = threading.Lock()
        self.staging: Path | None = None
        self.active: str | None = None      # the framework of the window being profiled
        self.published: list[str] = []      # every file published, in order (URLs or paths)
        self.windows = 0                    # windows published
        self._names: set[str] = set()
        self._warned: set[str] = set()

    def _warn(self, key: str, msg: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("tb_iotrace: %s", msg)

    def start(self, framework: str | None = None) -> bool:
        """Start a window on ``framework`` (default: the writer's, else :func:`loaded_framework`'s);
        False when none could start: no framework imported, a profiler already running, ..."""
        with self.lock:
            if self.active is not None:
                return False
            framework = framework or self.framework or loaded_framework()
            if framework is None:
                return False
            try:
                _start_profiler(framework, str(self.open_staging()))
            except Exception as exc:   # another profile running, no profiler in this build
                self._warn("start", f"could not start a {framework} profile window: {exc}")
                self._drop_staging()
                return False
            self.active = framework
            return True

    def stop(self) -> list[str]:
        """End the window and publish it; the files published (URLs or paths), [] when none."""
        with self.lock:
            if self.active is None:
                return []
            framework, self.active = self.active, None
            try:
                _stop_profiler(framework)
            except Exception as exc:
                self._warn("stop", f"could not stop the {framework} profile window: {exc}")
                self._drop_staging()
                return []
            return self._publish()

    def open_staging(self) -> Path:
        """A new staging folder for the next window (the framework profiles into it)."""
        self.staging = staging.new("window")   # (the oldest kept ones of failed windows pruned)
        return self.staging

    def close_staging(self, publish: bool) -> list[str]:
        """Publish the window the framework wrote into the staging folder (``publish``), or
        drop it; the files published."""
        with self.lock:
            if self.staging is None:
                return []
            if not publish:
                self._drop_staging()
                return []
            return self._publish()

    def _drop_staging(self) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None

    def _taken(self, session: str, files: list[str]) -> bool:
        """Whether ``session`` is a name this writer used, or holds one of ``files`` already
        (another process of the job on this host, whose window stopped in the same second)."""
        if session in self._names:
            return True
        if not self.is_url:
            return os.path.exists(os.path.join(self.log_dir, *PROFILE_DIR, session))
        try:
            fs, _ = remote.filesystem(self.log_dir)
            return any(call(fs, "exists", fs._strip_protocol(remote.join(self.log_dir, *PROFILE_DIR, session, f)))
                       for f in files)
        except Exception:   # the upload says what is wrong with the storage
            return False

    def _session_name(self, name: str, files: list[str]) -> str:
        got, n = name, 1
        while self._taken(got, files):
            n += 1
            got = f"{name}_{n}"
        self._names.add(got)
        return got

    def _publish(self) -> list[str]:
        staging = self.staging
        assert staging is not None
        prof = staging.joinpath(*PROFILE_DIR)
        sessions = sorted(p for p in prof.iterdir() if p.is_dir()) if prof.is_dir() else []
        files = [(s, f) for s in sessions for f in sorted(s.iterdir()) if f.is_file()]
        if not files:
            self._warn("empty", "a profile window wrote no capture")
            self._drop_staging()
            return []
        names = {s: self._session_name(s.name, [f.name for t, f in files if t == s]) for s in sessions}
        done: list[str] = []
        try:
            for s, f in files:
                rel = "/".join((*PROFILE_DIR, names[s], f.name))
                if self.is_url:
                    dest = remote.join(self.log_dir, rel)
                    remote.upload_file(f, dest)
                else:
                    dest = os.path.join(self.log_dir, *rel.split("/"))
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    atomic_write(dest, lambda out, src=f: _copy(src, out))
                done.append(dest)
        except (OSError, remote.RemoteError) as exc:
            self.published.extend(done)
            self._warn("publish", f"a profile window was not written to {redact_url(self.log_dir)} ({exc}); "
                                  f"it is kept in {staging}")
            self.staging = None
            return done
        self.published.extend(done)
        self.windows += 1
        if self.is_url:          # each capture whole in the bucket: its summary kept beside it there
            landing.landed_uploaded(landing.keep_for_landing([(f, d) for (_, f), d in zip(files, done)
                                                       if d.endswith(".xplane.pb")]))
        self._drop_staging()
        if not self.is_url:      # each file whole at its place: its summary made in the background
            landing.landed(d for d in done if d.endswith(".xplane.pb"))
        return done


def _copy(src: Path, out: Any) -> None:
    with open(src, "rb") as fh:
        shutil.copyfileobj(fh, out, 1 << 20)
