"""The report's table of storage endpoints (:mod:`tb_iotrace.model.endpoints`): one row per
endpoint a process connected to, with its connections, calls, bytes and time in calls."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tb_iotrace.analysis.text_report import human_bytes
from tb_iotrace.base.safenames import printable

MAX_SHOWN = 20


def render_endpoints(endpoints: Sequence[Mapping[str, Any]]) -> str:
    """The text table (the report's ``"endpoints"`` entries, most bytes in first)."""
    width = max([len("endpoint")] + [len(printable(str(e["endpoint"]))) for e in endpoints[:MAX_SHOWN]])
    out = ["Storage endpoints (network connections the process opened; the socket calls on them)",
           f"  {'endpoint':<{width}} {'conns':>5} {'calls in':>8} {'bytes in':>10} {'s in':>8} "
           f"{'calls out':>9} {'bytes out':>10} {'s out':>8}"]
    for e in endpoints[:MAX_SHOWN]:
        out.append(f"  {printable(str(e['endpoint'])):<{width}} {e['connections']:>5} {e['calls_in']:>8} "
                   f"{human_bytes(e['bytes_in']):>10} {e['time_in_s']:>8.4f} {e['calls_out']:>9} "
                   f"{human_bytes(e['bytes_out']):>10} {e['time_out_s']:>8.4f}")
    if len(endpoints) > MAX_SHOWN:
        out.append(f"  ... {len(endpoints) - MAX_SHOWN} more endpoints (--json for all)")
    out.append("")
    return "\n".join(out)
