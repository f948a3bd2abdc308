"""Who took a profile window and when, beside a TensorFlow or JAX capture: ``tb-iotrace run
--profile-every`` and ``tb-iotrace attach`` write ``tb_iotrace.origin.json`` into the session
folder they published (a PyTorch window keeps the same facts in its trace's ``tb_iotrace``
record, ``window_origin``). The job's own windows have none."""
from __future__ import annotations

import json
import os
from typing import Any

from tb_iotrace.base.atomic import atomic_write

ORIGIN_FILE = "tb_iotrace.origin.json"

__all__ = ["ORIGIN_FILE", "read_origin", "write_origin"]


def write_origin(published: list[str], origin: dict[str, Any]) -> None:
    """Beside each local capture in ``published`` (paths or URLs: URLs are skipped)."""
    body = json.dumps(origin, separators=(",", ":")).encode()
    for folder in sorted({os.path.dirname(p) for p in published if "://" not in p and p.endswith(".xplane.pb")}):
        try:
            atomic_write(os.path.join(folder, ORIGIN_FILE), lambda fh: fh.write(body))
        except OSError:
            pass      # the window stays; only who took it is not said


def read_origin(capture_path: str) -> dict[str, Any] | None:
    """The origin beside a capture file, None when there is none (or it is unreadable)."""
    try:
        with open(os.path.join(os.path.dirname(capture_path), ORIGIN_FILE), "rb") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
