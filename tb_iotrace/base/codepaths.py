"""The one rule for which recorded paths are the process loading its code, not data I/O.

A traced Python process opens, stats and reads hundreds of files before it reads any data:
its interpreter, the standard library, ``site-packages`` (``.py``, ``.pyc``, ``.so``), the
directories the import system scans, framework configuration such as ``~/.keras/keras.json``.
The report, the I/O tab and the findings show that as one summary line and keep their
busiest-files lists and their evidence for data files (each has a switch to show all).

A path is code loading when
- its name says so: ``.py``/``.pyc``/``.pyo``/``.pyi``/``.pyd``/``.pth``, ``.so`` and ``.so.N``
  shared libraries, a ``python3.11``/``pyvenv.cfg`` interpreter file;
- it lies where Python keeps code: ``site-packages/``, ``dist-packages/``, ``__pycache__/``,
  ``lib/python3.X/`` (the interpreter's standard library), ``*.dist-info/``, ``*.egg-info/``;
- it is framework configuration read at import: ``~/.keras/keras.json``, matplotlib's
  ``~/.config/matplotlib`` and ``~/.cache/matplotlib``;
- it lies under one of the process's ``sys.prefix``/``sys.base_prefix``/``sys.exec_prefix``, or
  is one of its ``sys.path`` entries (whole-run records carry them: ``python`` in the record);
- or it is a directory that holds one of the above (the import system and ``realpath`` stat
  every parent: the script's directory, ``/root``, the venv's folders).

:func:`code_paths` also returns tb_iotrace's own files (:mod:`tb_iotrace.base.ownpaths`: its
profile windows, records, staging): like code loading, they are not the job's data I/O.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from tb_iotrace.base.ownpaths import is_own_path

CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyi", ".pyd", ".pth", ".so")
CODE_PARTS = ("/site-packages/", "/dist-packages/", "/__pycache__/", "/lib/python3", "/lib64/python3",
              ".dist-info/", ".egg-info/")
CONFIG_PATHS = ("/.keras/keras.json", "/.config/matplotlib/", "/.cache/matplotlib/")
_NAME = re.compile(r"(\.so(\.\d+)+|/python[0-9.]*|/pyvenv\.cfg|/\.config/matplotlib|/\.cache/matplotlib)$")


def this_python() -> dict[str, Any]:
    """What a record keeps of the process's interpreter, for :func:`code_paths`."""
    prefixes = sorted({p for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix) if p})
    return {"prefixes": prefixes, "path": [p for p in sys.path if p]}


def is_code_path(path: str, prefixes: Iterable[str] = ()) -> bool:
    """The rule for one path on its own (no directory or ``sys.path`` context)."""
    if not path:
        return True          # no name (an anonymous fd): nothing a user could act on
    if path.endswith(CODE_SUFFIXES) or _NAME.search(path):
        return True
    if any(m in path for m in CODE_PARTS) or any(c in path for c in CONFIG_PATHS):
        return True
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes if p and p != "/")


def code_paths(paths: Iterable[str], python: Mapping[str, Any] | None = None) -> set[str]:
    """The code-loading paths among ``paths`` (see the module docstring); ``python``: a record's
    ``{"prefixes": [...], "path": [...]}`` when known."""
    every = set(paths)
    prefixes = list((python or {}).get("prefixes") or [])
    entries = {os.path.normpath(p) for p in (python or {}).get("path") or [] if p}
    code = {p for p in every if is_code_path(p, prefixes) or os.path.normpath(p) in entries or is_own_path(p)}
    for p in list(code):
        d = os.path.dirname(p)
        while d and d != "/" and d not in code:
            if d in every:
                code.add(d)
            d = os.path.dirname(d)
    return code
