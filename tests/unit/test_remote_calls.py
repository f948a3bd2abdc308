"""tb_iotrace.store.remote_calls: every call to a storage server ends by a deadline (its
environment variable, its transfer size), and the clients' own timeouts fit within it."""
from __future__ import annotations

from typing import Any

import pytest

from tb_iotrace.store import remote_calls
from tb_iotrace.store.remote_calls import (DEFAULT_TIMEOUT_S, ENV_TIMEOUT, MIN_RATE, CallTimeout, call, deadline,
                                           storage_options, timeout_s)


@pytest.mark.parametrize("raw,want", [(None, DEFAULT_TIMEOUT_S), ("3.5", 3.5), ("0", DEFAULT_TIMEOUT_S),
                                      ("-1", DEFAULT_TIMEOUT_S), ("86400", DEFAULT_TIMEOUT_S), ("nan", DEFAULT_TIMEOUT_S),
                                      ("soon", DEFAULT_TIMEOUT_S)])
def test_timeout_from_the_environment(monkeypatch: pytest.MonkeyPatch, raw: str | None, want: float) -> None:
    if raw is None:
        monkeypatch.delenv(ENV_TIMEOUT, raising=False)
    else:
        monkeypatch.setenv(ENV_TIMEOUT, raw)
    assert timeout_s() == want


def test_deadline_grows_with_the_transfer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_TIMEOUT, "2")
    assert deadline() == 2.0 and deadline(-5) == 2.0
    assert deadline(10 * MIN_RATE) == 12.0


def test_client_options_fit_within_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_TIMEOUT, "3")
    s3 = storage_options("s3")["config_kwargs"]
    assert s3["connect_timeout"] == 3 and s3["read_timeout"] == 3 and s3["retries"]["max_attempts"] == 2
    assert storage_options("s3a") == storage_options("s3")
    monkeypatch.setenv(ENV_TIMEOUT, "60")
    assert storage_options("s3")["config_kwargs"]["connect_timeout"] == remote_calls.CONNECT_TIMEOUT_S
    assert storage_options("gs") == {"requests_timeout": 60.0, "timeout": 60.0} == storage_options("gcs")
    assert storage_options("file") == {}


def test_a_local_filesystem_is_called_as_it_is() -> None:
    class Local:
        def cat(self, path: str, **kw: Any) -> tuple[str, dict[str, Any]]:
            return path, kw

    assert call(Local(), "cat", "/x", start=1) == ("/x", {"start": 1})          # no timeout argument


def test_an_asynchronous_filesystem_gets_the_deadline_and_a_timeout_is_one_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fsspec_asyn = pytest.importorskip("fsspec.asyn")
    from fsspec.exceptions import FSTimeoutError

    monkeypatch.setenv(ENV_TIMEOUT, "4")
    seen: list[Any] = []

    class Slow(fsspec_asyn.AsyncFileSystem):
        def cat_file(self, path: str, timeout: float | None = None, **kw: Any) -> bytes:
            seen.append(timeout)
            if path == "hang":
                raise FSTimeoutError
            return b"ok"

    fs = Slow(skip_instance_cache=True)
    assert call(fs, "cat_file", "x", nbytes=MIN_RATE) == b"ok"
    assert seen == [5.0]
    with pytest.raises(CallTimeout, match=r"within 4 s \(TBIO_REMOTE_TIMEOUT_S=4\)"):
        call(fs, "cat_file", "hang")
    assert isinstance(CallTimeout("x"), TimeoutError)
