"""Every test file's name is used once across tests/: the suite is one pytest run, which cannot
import two test modules of the same name from folders without ``__init__.py`` (it stops with
"import file mismatch" for the second)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_files_share_a_name() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "fixtures" not in p.parts)
    assert [n for n, k in names.items() if k > 1] == []
