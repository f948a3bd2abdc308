"""Run a function right after a top-level module's import finishes (or now, if it has)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["call_after_import"]


class _AfterImport:
    """A one-shot meta path finder that wraps the module's ``exec_module``."""

    def __init__(self, name: str, fn: Callable[[], None]) -> None:
        self.name = name
        self.fn = fn

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name:
            return None
        import importlib.util

        if self in sys.meta_path:
            sys.meta_path.remove(self)   # one shot; the other finders locate the module
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module  # type: ignore[attr-defined]
        fn = self.fn

        def exec_module(module: Any) -> None:
            orig_exec(module)
            fn()

        loader.exec_module = exec_module  # type: ignore[attr-defined]
        return spec


def call_after_import(name: str, fn: Callable[[], None]) -> None:
    """Call ``fn`` now if ``name`` is imported, else once right after ``import name`` finishes."""
    if name in sys.modules:
        fn()
    else:
        sys.meta_path.insert(0, _AfterImport(name, fn))
