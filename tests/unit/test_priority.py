"""tb_iotrace.base.priority: a background child of tb_iotrace runs at nice 19."""
from __future__ import annotations

import subprocess
import sys


def test_lowest_priority_sets_nice_19() -> None:
    code = "import os; from tb_iotrace.base.priority import lowest_priority; lowest_priority(); print(os.nice(0))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "19"
