"""``/findings``: the analysis' findings for every host of the view (computed by
:mod:`..findings_runner`)."""
from __future__ import annotations

from typing import Any

from ..findings_runner import findings_for
from ..view import View


def findings_impl(view: View) -> dict[str, Any]:
    """Findings from tb_iotrace.analysis, per host of the view:
    ``{"findings": [{"id", "severity", "title", "statement", "evidence", "files", "ops",
    "suggestion", "host"?}], "message", "notes"}``."""
    findings: list[dict[str, Any]] = []
    notes: list[str] = []
    messages: list[str] = []
    for part in view.parts:
        try:
            got = findings_for(part.capture.path)
        except Exception as exc:  # a finding failure never breaks the tab
            got = {"findings": [], "message": f"Findings could not be computed: {exc}"}
        for f in got["findings"]:
            findings.append(dict(f, host=part.host) if len(view.parts) > 1 else f)
        notes += got.get("notes", [])
        if got.get("message"):
            messages.append(got["message"])
    message = "" if findings else (messages[0] if messages else "No findings for this capture.")
    return {"findings": findings, "message": message, "notes": notes}
