"""tb_iotrace.base.safenames: names from inside a file made safe as a path component and for a
terminal."""
from __future__ import annotations

import re

from tb_iotrace.base.safenames import MAX_COMPONENT_BYTES, printable, quoted, safe_component

CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def test_safe_component():
    for bad in ("..", ".", "", "../../../x", "/abs/x", "a/b", ".hidden", "a\x00b", "x\x1b[2J\n", "\\..\\x"):
        out = safe_component(bad)
        assert out and "/" not in out and "\x00" not in out and not out.startswith(".")
        assert out == safe_component(out)           # stable: a safe name stays as it is
        assert not CONTROL.search(out)
    for good in ("bdw-0003", "worker0", "34.83.195.179_6003", "host.example.com", "h_1"):
        assert safe_component(good) == good
    assert len(safe_component("x" * 1000).encode()) <= 200
    assert len(safe_component("é" * 1000).encode()) <= 200


def test_safe_component_replaces_each_bad_character_in_place():
    assert safe_component("a/b\\c") == "a_b_c"
    assert safe_component("..x") == "__x"              # leading dots only, one "_" each
    assert safe_component("x..y") == "x..y"            # inner dots stay
    assert safe_component("", fallback="host") == "host"
    assert safe_component(7) == "7"


def test_safe_component_cuts_on_a_character_boundary():
    out = safe_component("a" + "é" * 200)              # 1 + 400 bytes: the cut falls inside an "é"
    assert len(out.encode()) <= MAX_COMPONENT_BYTES
    assert out == "a" + "é" * ((MAX_COMPONENT_BYTES - 1) // 2)


def test_printable():
    assert printable("plain /data/a.tfrecord") == "plain /data/a.tfrecord"
    assert printable("a\x1b]0;pwned\x07b") == "a\\x1b]0;pwned\\x07b"
    assert printable("a\r\nb\tc") == "a\\r\\nb\\tc"
    assert printable("\x9b31m\x7f") == "\\x9b31m\\x7f"
    assert printable("bad\udcffbyte") == "bad\\udcffbyte"        # surrogate-escaped bytes
    assert printable("é 日本") == "é 日本"
    assert printable("a\u2028b") == "a\\u2028b"                   # a line separator
    assert printable(3.5) == "3.5"


def test_quoted_shows_the_ends_of_a_name():
    assert quoted("a b ") == "'a b '"
    assert quoted("x\ny") == "'x\\ny'"
