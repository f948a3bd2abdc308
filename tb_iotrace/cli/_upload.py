"""Uploading the whole-run records of ``tb-iotrace run --logdir URL``.

The processes of the run write their records into a local staging folder as for a local logdir
(so a write is still temp-then-rename, and the readers' checks hold); this uploader sends every
record file that changed to the same path under the URL after each periodic flush and once more
when the command has ended: the tables (``.npz``) first, the JSON that readers open first last.
Each object is replaced whole by its upload, so a job killed between flushes leaves its last
flush in the bucket. Storage problems are one line on stderr (the first of a streak, and the
outcome at the end); they never change the job's exit code. When the last upload fails the
staging folder is kept and named, so nothing is lost; when it succeeds the records, whole now,
go to a summary child (:func:`tb_iotrace.recording.landing.landed_uploaded`), which keeps their
summaries and job facts in the bucket beside them, and the folder is removed.
"""
from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path

from tb_iotrace.base.redact import redact_url
from tb_iotrace.store import remote, staging
from tb_iotrace.store.runrecord import RECORD_SUFFIX, record_dir
from tb_iotrace.base.safenames import printable


class RecordUploader:
    def __init__(self, url: str, interval: float) -> None:
        self.url = remote.trim(url)
        self.interval = interval
        remote.filesystem(url)       # RemoteError now when the scheme's client is missing
        self.staging = staging.new("run")    # (the oldest kept ones of failed runs pruned)
        self._sent: dict[Path, tuple[int, int]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.failing: str | None = None
        self.ok = False
        try:
            remote.check_writable(url)
        except remote.RemoteError as exc:
            self._say(f"cannot write to the logdir: {exc}; the command runs, its records are kept in "
                      f"{self.staging} and uploaded when the storage answers")
            self.failing = str(exc)

    @property
    def uploaded_records(self) -> int:
        return sum(1 for p in self._sent if p.name.endswith(RECORD_SUFFIX))

    def _say(self, text: str) -> None:
        print(f"tb-iotrace run: {printable(text)}", file=sys.stderr, flush=True)

    def start(self) -> None:
        if self.interval > 0:
            self._thread = threading.Thread(target=self._loop, name="tb-iotrace-upload", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sync()

    def sync(self, quiet: bool = False) -> bool:
        """Upload what changed since the last upload; False (said once per streak) on failure."""
        with self._lock:
            d = record_dir(self.staging)
            changed = []
            try:
                files = [p for p in d.iterdir() if p.is_file() and not p.name.startswith(".")]
            except OSError:
                files = []
            for p in files:
                try:
                    st = p.stat()
                except OSError:
                    continue
                sig = (st.st_mtime_ns, st.st_size)
                if self._sent.get(p) != sig:
                    changed.append((p, sig))
            if not changed:
                return self.failing is None
            changed.sort(key=lambda t: (t[0].name.endswith(RECORD_SUFFIX), t[0].name))
            try:
                for p, sig in changed:
                    remote.upload_file(p, remote.join(self.url, p.relative_to(self.staging).as_posix()))
                    self._sent[p] = sig
            except (remote.RemoteError, OSError) as exc:
                if self.failing is None and not quiet:
                    self._say(f"upload failed, retrying at the next flush: {exc}")
                self.failing = str(exc)
                return False
            if self.failing is not None:
                self.failing = None
            return True

    def finish(self) -> None:
        """The last upload, after the command ended; the staging folder goes when it worked."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.failing = None
        if self.sync(quiet=True):
            self.ok = True
            self._land()
            shutil.rmtree(self.staging, ignore_errors=True)
        else:
            self._say(f"the records were not uploaded to {redact_url(self.url)} ({self.failing}); they are kept in "
                      f"{self.staging}")

    def _land(self) -> None:
        """The records as uploaded last (with their tables) to the summary child; never raises."""
        from tb_iotrace.recording import landing

        d = record_dir(self.staging)
        try:
            jsons = [(p, remote.join(self.url, p.relative_to(self.staging).as_posix())) for p in sorted(self._sent)
                     if p.parent == d and p.name.endswith(RECORD_SUFFIX) and p.is_file()]
            landing.landed_uploaded(landing.keep_for_landing(jsons))
        except (OSError, ValueError) as exc:
            self._say(f"the records' summaries were not made ({exc}); the tab makes them when it opens the logdir")

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
