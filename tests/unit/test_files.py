"""``/files`` (tb_iotrace.plugin.endpoints.files): every file record of the view's hosts with
its Darshan counters."""
from __future__ import annotations

import pytest

from tab_view import synthetic_view
from tb_iotrace.plugin.endpoints.files import files_impl
from tb_iotrace.plugin.synthetic import HOSTILE_NAME


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    return synthetic_view(tmp_path_factory.mktemp("files"), ("worker0", "worker1"))


def test_one_row_per_record_with_its_counters(view) -> None:
    got = files_impl(view)
    n = got["rows"]
    assert n > 0 and all(len(got[k]) == n for k in ("path", "module", "host", "code", "values"))
    assert set(got["host"]) == {"worker0", "worker1"}
    assert set(got["module"]) <= {"POSIX", "STDIO"}
    width = len(got["counters"])
    assert all(len(v) == width for v in got["values"])
    # a POSIX row has no STDIO counters and the other way round
    for module, values in zip(got["module"], got["values"]):
        other = "STDIO_" if module == "POSIX" else "POSIX_"
        assert all(v is None for c, v in zip(got["counters"], values) if c.startswith(other))
    assert HOSTILE_NAME in got["path"]      # a file's name is data, passed as it is
