"""tb_iotrace.base.frameworks: which jaxlib releases are hooked, from a version string."""
from __future__ import annotations

import pytest

from tb_iotrace.base.frameworks import (JAXLIB_CHECKS_READ, JAXLIB_FIRST, JAXLIB_GATED, JAXLIB_NEWEST_READ,
                                        jaxlib_hookable, jaxlib_support, release)


@pytest.mark.parametrize("version,want", [
    ("0.4.19", (0, 4, 19)), ("0.10.2rc1", (0, 10, 2)), ("0.4.36.dev20241122", (0, 4, 36)),
    ("1.2", (1, 2)), ("1.2rc3.4", (1, 2)), ("0.5.0+cuda12", (0, 5, 0)), ("2.a.3", (2,)), ("", ()), ("dev", ()),
])
def test_release_reads_numbers_up_to_the_first_suffix(version: str, want: tuple[int, ...]) -> None:
    assert release(version) == want


@pytest.mark.parametrize("version,want", [
    ("0.4.18", False), ("0.4.19", True), ("0.4.19rc0", True), ("0.10.2", True), ("0.11.2", True),
    ("1.0", True), ("0.3.99", False), ("unknown", None), ("", None),
])
def test_hookable_from_the_first_plugin_profiler_on(version: str, want: bool | None) -> None:
    assert jaxlib_hookable(version) is want


def test_the_facts_agree_with_each_other() -> None:
    assert JAXLIB_GATED[0] == JAXLIB_FIRST == JAXLIB_CHECKS_READ[0][1]
    assert release(JAXLIB_NEWEST_READ) == JAXLIB_CHECKS_READ[-1][2]
    for (_, first, last, size), nxt in zip(JAXLIB_CHECKS_READ, JAXLIB_CHECKS_READ[1:] + ((None, (99,), None, 0),)):
        assert first <= last < nxt[1] and size > 0          # ordered, not overlapping


def test_support_names_the_first_and_newest_release() -> None:
    text = jaxlib_support()
    assert "jaxlib 0.4.19 and later" in text and JAXLIB_NEWEST_READ in text
