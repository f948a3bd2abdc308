"""Run and host names as path components of the dataset (``run=<value>/host=<value>``).

Run and host names come from files (a capture's file name, a Kineto trace's ``<name>/pid<N>``,
a Darshan log's host name): anything may be in them. :func:`component` percent-encodes every
byte outside a small safe set (UTF-8; a name read with ``surrogateescape`` keeps its raw
bytes), so the value never holds ``/``, a control character, ``%`` or ``=``, never starts with
``.`` (no ``..``, no hidden file), and a very long one is cut and given a hash of the whole.
The encoding is Hive's (``%XX``, upper-case hex), so tools that decode Hive partitions get the
name back when it was not cut. The tables keep the real names in their ``run`` and ``host``
columns: nothing reads them back from the path.

(A local helper: the CLI is gaining a shared one for safe names; the two should become one.)
"""
from __future__ import annotations

import hashlib

SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.+,@~")
MAX_LEN = 160       # of the encoded value; a path component may be 255 bytes


def component(value: str) -> str:
    """``value`` as one safe path component (an empty name is ``__empty__``: two names may
    share a folder, their rows keep them apart)."""
    raw = value.encode("utf-8", "surrogateescape")
    out = "".join(chr(b) if b in SAFE else f"%{b:02X}" for b in raw)
    if out.startswith("."):
        out = "%2E" + out[1:]
    if not out:
        out = "__empty__"
    if len(out) > MAX_LEN:
        digest = hashlib.sha256(raw).hexdigest()[:16]
        cut = out[:MAX_LEN - 18]
        if "%" in cut[-2:]:                                     # never split an escape
            cut = cut[:cut.rfind("%")]
        out = f"{cut}~{digest}"
    return out
