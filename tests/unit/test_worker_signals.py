"""tb_iotrace.recording.autostart.worker_signals: after torch's worker signal set-up, SIGTERM
is the run's handler again when it was before (and the run is told); a handler that was not the
run's is left to torch."""
from __future__ import annotations

import signal

from tb_iotrace.recording.autostart.worker_signals import wrap


def test_sigterm_is_the_runs_again_only_when_it_was():
    def ours(signum, frame):  # the run's handler
        pass

    def torchs(*args, **kwargs):          # stands for torch's C set-up: replaces SIGTERM
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return "set"

    kept: list[int] = []
    before = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, ours)
        wrapped = wrap(torchs, ours, lambda: kept.append(1))
        assert wrapped.__wrapped__ is torchs
        assert wrapped() == "set" and signal.getsignal(signal.SIGTERM) is ours and kept == [1]
        signal.signal(signal.SIGTERM, signal.SIG_IGN)         # not the run's before: torch's stays
        assert wrapped() == "set" and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and kept == [1]
    finally:
        signal.signal(signal.SIGTERM, before)
