"""The optional packages of the fleet dataset (``pip install 'tb_iotrace[fleet]'``)."""
from __future__ import annotations

import importlib
from typing import Any

EXTRA = "fleet"
INSTALL = f"pip install 'tb_iotrace[{EXTRA}]'"


class FleetError(Exception):
    """What a fleet command cannot do, in one line (bad dataset, bad query, missing package)."""


def require(module: str) -> Any:
    """``import module``, or FleetError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        raise FleetError(f"the fleet dataset needs {top}, from the '{EXTRA}' extra: {INSTALL}") from None
