"""tb_iotrace.analysis.thresholds: the one table of thresholds is frozen, ``to_dict`` gives every
field as a copy, its severity lines are in order, and docs/findings.md lists every threshold with
the default the dataclass really has."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from tb_iotrace.analysis.thresholds import DEFAULT, KiB, MiB, Thresholds

DOC = Path(__file__).resolve().parents[2] / "docs" / "findings.md"


def _doc_defaults() -> dict[str, list[str]]:
    """threshold name -> the default cell's values, from the Thresholds table of findings.md."""
    text = DOC.read_text(encoding="utf-8").split("## Thresholds", 1)[1].split("\n## ", 1)[0]
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[1].startswith("`"):
            continue
        names = re.findall(r"`(\w+)`", cells[1])
        values = [v.strip(" >=<") for v in cells[2].split(",")]
        for i, n in enumerate(names):
            out[n] = [values[i] if len(values) == len(names) else cells[2]]
    return out


def _as_number(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)\s*(KiB|MiB|MiB/s|ms)?", text.strip())
    assert m, f"unparsed default {text!r}"
    scale = {"KiB": KiB, "MiB": MiB, "MiB/s": MiB, "ms": 1e-3, None: 1}[m.group(2)]
    return float(m.group(1)) * scale


def test_every_threshold_is_documented_with_its_default() -> None:
    doc = _doc_defaults()
    fields = {f.name: f.default for f in dataclasses.fields(Thresholds)}
    assert set(fields) - set(doc) == set(), "thresholds missing from docs/findings.md"
    assert set(doc) - set(fields) == set(), "docs/findings.md names thresholds that do not exist"
    for name, default in fields.items():
        assert _as_number(doc[name][0]) == pytest.approx(default), name


def test_frozen_and_overridable_one_field_at_a_time() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT.small_read_bytes = 1   # type: ignore[misc]
    t = Thresholds(small_read_bytes=32 * KiB)
    assert t.small_read_bytes == 32 * KiB and DEFAULT.small_read_bytes == 64 * KiB
    assert dataclasses.replace(t, small_read_bytes=DEFAULT.small_read_bytes) == DEFAULT


def test_to_dict_is_every_field_and_a_copy() -> None:
    d = DEFAULT.to_dict()
    assert list(d) == [f.name for f in dataclasses.fields(Thresholds)]
    d["min_steps"] = 99
    assert DEFAULT.min_steps == 3 and Thresholds(**DEFAULT.to_dict()) == DEFAULT


def test_severity_lines_are_in_order() -> None:
    t = DEFAULT
    assert 0 < t.input_wait_moderate_share < t.input_wait_share < t.input_wait_critical_share < 1
    assert 0 < t.impact_info_share < t.impact_critical_share <= 1
    assert t.small_write_bytes < t.small_read_bytes < t.small_file_bytes < t.staging_file_bytes
