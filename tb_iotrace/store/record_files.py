"""Where a whole-run record's files lie and how they are named, without NumPy: ``tb-iotrace run``'s
parent process names them before and after the job, and importing :mod:`tb_iotrace.store.runrecord`
(which reads and writes them) there would cost a NumPy import on the job's critical path."""
from __future__ import annotations

import os
from pathlib import Path

TABLE_SUFFIX = ".files.npz"
RECORD_RUN = "iotrace"  # the folder under plugins/, and the run name it gets at a logdir's top
RECORD_DIR = os.path.join("plugins", RECORD_RUN)
RECORD_SUFFIX = ".json"


def record_dir(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / RECORD_DIR


def find_records(directory: str | os.PathLike[str]) -> list[Path]:
    """Record files directly in ``directory`` (a ``plugins/iotrace`` folder), sorted."""
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir()
                  if p.name.endswith(RECORD_SUFFIX) and not p.name.startswith(".") and p.is_file())
