"""The one rule for which recorded paths are tb_iotrace's own files, never the job's I/O.

A process that tb_iotrace records also runs tb_iotrace: its profile windows (profiled into a
staging folder, then published under the log dir's ``plugins/profile/``), its whole-run records
(``plugins/iotrace/``), the PyTorch windows' spool and control folders, its summaries and
remote cache. Their reads and writes are the recorder's, not the training job's: the findings,
the checkpoint saves and the report's data files leave them out, as they leave out code loading
(:mod:`tb_iotrace.base.codepaths` counts them with it).

A path is tb_iotrace's own when it lies
- under a log dir's ``plugins/iotrace/`` (records) or ``plugins/profile/`` (profile windows: a
  profiler's output, tb_iotrace's or the job's own profiler's, is not training I/O);
- under tb_iotrace's cache (``.../tb_iotrace/staging/``, ``remote/``, ``summaries/``, and the
  staging folders ``window-*`` it profiles into);
- in its temporary folders (``tb_iotrace-torch-*``: the PyTorch windows' spool and control).
"""
from __future__ import annotations

import re

OWN_PARTS = ("/plugins/iotrace/", "/plugins/profile/", "/tb_iotrace/staging/", "/tb_iotrace/remote/",
             "/tb_iotrace/summaries/")
_OWN = re.compile(r"/(tb_iotrace-torch-[^/]*|staging/window-[^/]*)(/|$)")


def is_own_path(path: str) -> bool:
    """Whether ``path`` is one of tb_iotrace's own files or folders (the module docstring)."""
    if not path:
        return False
    return any(p in path for p in OWN_PARTS) or _OWN.search(path) is not None


__all__ = ["OWN_PARTS", "is_own_path"]
