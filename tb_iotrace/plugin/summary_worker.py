"""A child of :mod:`tb_iotrace.plugin.summary_pool`: the host row of each capture it is given
(``HOST PATH`` pairs), computed as the tab's "All hosts" does and kept as the capture's summary,
one JSON line per capture on stdout: ``{"path", "row"}`` or ``{"path", "error"}``.

    python -m tb_iotrace.plugin.summary_worker HOST PATH [HOST PATH ...]
"""
from __future__ import annotations

import json
import sys
from typing import Any

from tb_iotrace.store import summaries
from tb_iotrace.store.xplane import XPlaneError
from tb_iotrace.analysis.capture_row import capture_row
from tb_iotrace.model.tab.load import load_any


def row_line(host: str, path: str) -> dict[str, Any]:
    """The answer for one capture (its summary kept when it could be computed)."""
    try:
        before = summaries.identity(path)
        row = capture_row(host, load_any(path, host))
    except XPlaneError as exc:
        return {"path": path, "error": f"cannot read this capture: {exc.reason}"}
    except Exception as exc:  # noqa: BLE001 - one bad capture does not cost the others their row
        return {"path": path, "error": f"cannot decode ({type(exc).__name__}: {str(exc)[:300]})"}
    if before is not None:
        summaries.save(path, row, before=before)
    return {"path": path, "row": row}


def main(argv: list[str]) -> int:
    for host, path in zip(argv[0::2], argv[1::2]):
        try:
            text = json.dumps(row_line(host, path), separators=(",", ":"), allow_nan=False)
        except ValueError as exc:   # a row JSON cannot hold (a NaN) is this capture's error, not the others'
            text = json.dumps({"path": path, "error": f"cannot encode its row ({exc})"}, separators=(",", ":"))
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
