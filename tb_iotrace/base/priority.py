"""The lowest CPU priority for tb_iotrace's own background children (the tab's findings, the
summaries of landed captures): they never compete with a training job."""
from __future__ import annotations

import os


def lowest_priority() -> None:
    """nice 19; with autogroup scheduling a nice value counts only inside the session, so the
    process's own session group gets 19 too. Best effort: nothing raises."""
    try:
        with open("/proc/self/autogroup", "w") as fh:
            fh.write("19")
    except OSError:
        pass
    try:
        os.nice(19)
    except OSError:
        pass
