"""tb_iotrace.recording.importhook: a function runs once, right after a module's import has
finished (the module complete), or at once when it is imported already."""
from __future__ import annotations

import sys

from tb_iotrace.recording.importhook import call_after_import


def test_after_the_import_once_or_now(tmp_path, monkeypatch):
    name = "tbio_hooked_mod_x"
    (tmp_path / f"{name}.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[object] = []
    call_after_import(name, lambda: seen.append(getattr(sys.modules[name], "VALUE", None)))
    assert seen == []                                  # not imported yet: waits
    try:
        __import__(name)
        assert seen == [42]                            # after the module's body ran
        del sys.modules[name]
        __import__(name)
        assert seen == [42]                            # one shot
        assert not any(getattr(f, "name", None) == name for f in sys.meta_path)   # its finder gone
        call_after_import(name, lambda: seen.append("now"))
        assert seen == [42, "now"]                     # imported already: at once
    finally:
        sys.modules.pop(name, None)
