"""tb_iotrace.fleet.deps: a missing optional package of the fleet dataset is one line naming
the extra that installs it."""
from __future__ import annotations

import json

import pytest

from tb_iotrace.fleet.deps import FleetError, require


def test_a_missing_package_names_the_extra() -> None:
    with pytest.raises(FleetError, match=r"needs no_such_pkg_tbio, from the 'fleet' extra: pip install 'tb_iotrace\[fleet\]'"):
        require("no_such_pkg_tbio.sub")
    assert require("json") is json
