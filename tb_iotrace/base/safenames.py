"""Names that come from inside a file, made safe for the two places they end up.

Everything a capture, a record or a Darshan log says about itself (host names, run names,
file paths) was written by some other process, maybe on some other machine:

- :func:`safe_component` before such a name becomes one component of a path we write: never
  a separator, ``..``, a hidden (dot) name, a NUL or a control character, never longer than
  :data:`MAX_COMPONENT_BYTES`;
- :func:`printable` before such a name reaches a terminal: control characters (escape
  sequences, BEL, CR/LF, C1 controls) and other unprintable characters are written as
  Python's ``repr`` writes them (``\\x1b``, ``\\n``, ``\\udcff``), so a file name can neither
  retitle or clear a terminal nor forge a line of the report; :func:`quoted` is the same in
  quotes (the report's busiest-files table).
"""
from __future__ import annotations

MAX_COMPONENT_BYTES = 200   # NAME_MAX is 255: room for a suffix (".xplane.pb", ".tmp"...)
_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(c: str) -> str:
    if c in _ESCAPES:
        return _ESCAPES[c]
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def printable(text: object) -> str:
    """``str(text)`` with every unprintable character escaped (``str.isprintable``: controls,
    format characters, surrogates, separators other than the space)."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else _escape(c) for c in s)


def quoted(text: object) -> str:
    """``str(text)`` quoted and escaped as Python's ``repr`` writes it (the busiest-files table's
    form: a name's ends are visible); its escapes are :func:`printable`'s."""
    return repr(str(text))


def safe_component(name: object, fallback: str = "_") -> str:
    """``name`` as one path component that stays where it is joined: separators, NUL and
    unprintable characters become ``_``, leading dots become ``_`` (no ``.``, ``..`` or hidden
    name), cut to :data:`MAX_COMPONENT_BYTES` of UTF-8; ``fallback`` when nothing is left.
    A name that is already safe comes back unchanged."""
    s = "".join("_" if c in "/\\" or not c.isprintable() else c for c in str(name))
    stripped = s.lstrip(".")
    s = "_" * (len(s) - len(stripped)) + stripped
    data = s.encode("utf-8")
    if len(data) > MAX_COMPONENT_BYTES:
        s = data[:MAX_COMPONENT_BYTES].decode("utf-8", "ignore")
    return s or fallback
