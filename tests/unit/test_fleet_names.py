"""tb_iotrace.fleet.names: every name becomes one safe path component (no separator, control
character, '%', '=', leading dot; only the safe set and upper-case %XX), decodable back to the
name's bytes when not cut; a long name is cut without splitting an escape, kept under
MAX_LEN and told apart by a hash of the whole."""
from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

import pytest

from tb_iotrace.fleet.names import MAX_LEN, SAFE, component

HOSTILE = ["\x1b[31mred\x1b[0m", "a\nb\r\tc", "../../etc", "run=1/host=2", "%41", "~x", "\x7f\x00",
           "名前", "odd-\udc80\udcff", " lead space", "CON", "a" * 159 + "é"]
ALLOWED = re.compile(r"^(?:[A-Za-z0-9\-_.+,@~]|%[0-9A-F]{2})+$")


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_one_safe_component(name: str) -> None:
    out = component(name)
    assert ALLOWED.match(out), out
    assert not out.startswith(".") and "/" not in out and "=" not in out and len(out) <= MAX_LEN
    assert all(ord(c) < 128 and (ord(c) in SAFE or c == "%") for c in out)


@pytest.mark.parametrize("name", HOSTILE[:-1])
def test_uncut_names_decode_back_to_their_bytes(name: str) -> None:
    out = component(name)
    assert "~" not in out or "~" in name
    assert unquote_to_bytes(out) == name.encode("utf-8", "surrogateescape")


def test_safe_names_stay_as_they_are() -> None:
    assert component("worker-0_1.2+a,b@c~d") == "worker-0_1.2+a,b@c~d"
    assert component("a.") == "a." and component("x..y") == "x..y"


@pytest.mark.parametrize("n", range(150, 175))
def test_a_cut_never_splits_an_escape(n: int) -> None:
    for filler in ("%", "é", "a%", "ab\n"):
        out = component("a" * (n % 7) + filler * n)
        head, _, digest = out.rpartition("~")
        assert len(out) <= MAX_LEN and re.fullmatch(r"[0-9a-f]{16}", digest), out
        assert ALLOWED.match(head) or head == "", out


def test_cut_names_differing_only_at_the_end_stay_apart() -> None:
    names = {component("é" * 200 + tail) for tail in ("a", "b", "", "\n")}
    assert len(names) == 4

