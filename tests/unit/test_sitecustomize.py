"""tb_iotrace.recording.autostart.sitecustomize, in fresh interpreters (it runs at their start;
once also imported by its dotted name in this process):
without TB_IOTRACE_RUN_DIR (unset or empty) nothing of tb_iotrace is imported and a user's own
``sitecustomize`` runs as it would without us; with it, capture is on before the user's runs; a
user's ``sitecustomize`` that fails to import another module fails exactly as it would without us
(not swallowed, not turned into "no sitecustomize"); without one, ours stays and nothing is said;
a tb_iotrace that cannot be imported is silent unless TB_IOTRACE_VERBOSE; a ``start()`` that
raises costs one line on stderr and the process runs on. sys.path is left as it was."""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import tb_iotrace

MODULE = "tb_iotrace.recording.autostart.sitecustomize"
REPO = Path(tb_iotrace.__file__).resolve().parent.parent
OURS = Path(importlib.util.find_spec(MODULE).origin).resolve()      # the file `tb-iotrace run` puts first
AUTOSTART = OURS.parent

PROBE = r'''
import json, os, sys
sc = sys.modules.get("sitecustomize")
print(json.dumps({"pid": os.getpid(), "executable": sys.executable,
                  "sitecustomize": getattr(sc, "__file__", None),
                  "imported": sorted(m for m in sys.modules if m == "tb_iotrace" or m.startswith("tb_iotrace.")),
                  "path": sys.path}))
'''

USER_SC = r'''
import json, os, sys
_on = getattr(sys.modules.get("tb_iotrace"), "is_enabled", None)   # None: not imported, or a stand-in
with open(os.environ["USER_SC_OUT"], "w") as _fh:
    json.dump({"pid": os.getpid(), "capture_on": bool(_on is not None and _on())}, _fh)
'''


def clean_env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TB_IOTRACE", "TBIO_")) and k not in ("PYTHONPATH", "PYTHONVERBOSE")}
    env.update(PYTHONDONTWRITEBYTECODE="1", **more)
    return env


def run(env: dict[str, str], *path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(env, PYTHONPATH=os.pathsep.join(str(p) for p in path))
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)


def probe(r: subprocess.CompletedProcess[str]) -> dict:
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def user_sitecustomize(tmp_path: Path, body: str = USER_SC) -> Path:
    d = tmp_path / "user_site"
    d.mkdir()
    (d / "sitecustomize.py").write_text(body)
    return d


def in_order(sys_path: list[str], *entries: Path) -> list[str]:
    want = [str(e) for e in entries]
    return [p for p in sys_path if p in want]


def test_imported_by_its_dotted_name_without_run_dir_it_only_chains(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process, on a sys.path of our own: no capture started, the sitecustomize found
    on sys.path run (the one Python would have run), sys.path given back as it was."""
    user = user_sitecustomize(tmp_path, "import os\nopen(os.environ['USER_SC_OUT'], 'w').write('ran')\n")
    out = tmp_path / "ran"
    monkeypatch.delenv("TB_IOTRACE_RUN_DIR", raising=False)
    monkeypatch.setenv("USER_SC_OUT", str(out))
    path = [str(user)] + sys.path
    monkeypatch.setattr(sys, "path", path[:])
    monkeypatch.setitem(sys.modules, "sitecustomize", types.ModuleType("sitecustomize"))  # put back after
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    was_on = tb_iotrace.is_enabled()
    mod = importlib.import_module(MODULE)
    sys.modules.pop(MODULE, None)
    assert Path(mod.__file__).resolve() == OURS
    assert out.read_text() == "ran"
    assert Path(sys.modules["sitecustomize"].__file__).resolve() == (user / "sitecustomize.py").resolve()
    assert sys.path == path
    assert tb_iotrace.is_enabled() == was_on


@pytest.mark.parametrize("run_dir", [None, ""], ids=["unset", "empty"])
def test_without_run_dir_nothing_starts_and_the_users_sitecustomize_runs(tmp_path: Path,
                                                                         run_dir: str | None) -> None:
    user = user_sitecustomize(tmp_path)
    out = tmp_path / "user_sc.json"
    env = clean_env(USER_SC_OUT=str(out), TB_IOTRACE_VERBOSE="1")
    if run_dir is not None:
        env["TB_IOTRACE_RUN_DIR"] = run_dir
    r = run(env, AUTOSTART, user, REPO)
    got = probe(r)
    assert r.stderr == ""
    assert got["imported"] == []                                   # nothing of tb_iotrace, let alone a capture
    assert json.loads(out.read_text()) == {"pid": got["pid"], "capture_on": False}
    assert Path(got["sitecustomize"]).resolve() == (user / "sitecustomize.py").resolve()
    assert in_order(got["path"], AUTOSTART, user, REPO) == [str(AUTOSTART), str(user), str(REPO)]


def test_with_run_dir_capture_is_on_before_the_users_sitecustomize_runs(tmp_path: Path) -> None:
    user = user_sitecustomize(tmp_path)
    out = tmp_path / "user_sc.json"
    logs = tmp_path / "logs"
    env = clean_env(USER_SC_OUT=str(out), TB_IOTRACE_RUN_DIR=str(logs), TB_IOTRACE_FLUSH_S="0")
    r = run(env, AUTOSTART, user, REPO)
    got = probe(r)
    assert json.loads(out.read_text()) == {"pid": got["pid"], "capture_on": True}
    assert "tb_iotrace.recording.autostart" in got["imported"]
    assert Path(got["sitecustomize"]).resolve() == (user / "sitecustomize.py").resolve()
    assert in_order(got["path"], AUTOSTART, user, REPO) == [str(AUTOSTART), str(user), str(REPO)]
    records = [json.loads(p.read_text()) for p in (logs / "plugins" / "iotrace").glob("*.json")]
    assert [rec["pid"] for rec in records] == [got["pid"]], r.stderr[-3000:]


def test_users_sitecustomize_import_error_is_not_swallowed(tmp_path: Path) -> None:
    """What the user's sitecustomize's failed import says is what Python says without us."""
    user = user_sitecustomize(tmp_path, "import tbio_no_such_module_anywhere\n")
    without = run(clean_env(), user, REPO)
    probe(without)
    assert "tbio_no_such_module_anywhere" in without.stderr       # the control: Python itself tells it
    r = run(clean_env(), AUTOSTART, user, REPO)
    got = probe(r)                                                 # the process still runs
    assert r.stderr == without.stderr
    assert in_order(got["path"], AUTOSTART, user, REPO) == [str(AUTOSTART), str(user), str(REPO)]


def test_no_users_sitecustomize_is_no_error(tmp_path: Path) -> None:
    r = run(clean_env(), AUTOSTART, REPO)
    got = probe(r)
    assert r.stderr == ""
    assert Path(got["sitecustomize"]).resolve() == OURS            # ours stays the one imported
    assert got["imported"] == []
    assert in_order(got["path"], AUTOSTART, REPO) == [str(AUTOSTART), str(REPO)]


def stand_in_tb_iotrace(tmp_path: Path, autostart_init: str | None) -> Path:
    """A ``tb_iotrace`` that shadows the real one (and the installed one): a plain module, not a
    package (``autostart_init`` None: ``tb_iotrace.recording`` cannot be imported, whatever
    else is installed), or a package whose ``recording.autostart`` is ``autostart_init``."""
    root = tmp_path / "stand_in"
    root.mkdir()
    if autostart_init is None:
        (root / "tb_iotrace.py").write_text("")
        return root
    pkg = root / "tb_iotrace"
    (pkg / "recording" / "autostart").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "recording" / "__init__.py").write_text("")
    (pkg / "recording" / "autostart" / "__init__.py").write_text(autostart_init)
    return root


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_tb_iotrace_not_importable_is_silent_unless_verbose(tmp_path: Path, verbose: bool) -> None:
    stand_in = stand_in_tb_iotrace(tmp_path, None)
    user = user_sitecustomize(tmp_path)
    out = tmp_path / "user_sc.json"
    logs = tmp_path / "logs"
    env = clean_env(USER_SC_OUT=str(out), TB_IOTRACE_RUN_DIR=str(logs))
    if verbose:
        env["TB_IOTRACE_VERBOSE"] = "1"
    r = run(env, AUTOSTART, stand_in, user)
    got = probe(r)
    if verbose:
        [line] = r.stderr.splitlines()
        assert line.startswith("tb-iotrace: ") and got["executable"] in line
        assert "tb_iotrace.recording" in line                     # what could not be imported
    else:
        assert r.stderr == ""
    assert json.loads(out.read_text())["pid"] == got["pid"]       # the user's sitecustomize still ran
    assert not logs.exists()                                       # nothing recorded


def test_start_that_raises_is_one_line_and_the_process_runs_on(tmp_path: Path) -> None:
    stand_in = stand_in_tb_iotrace(
        tmp_path, "def start():\n    raise OSError(28, 'No space left on device')\n")
    user = user_sitecustomize(tmp_path)
    out = tmp_path / "user_sc.json"
    env = clean_env(USER_SC_OUT=str(out), TB_IOTRACE_RUN_DIR=str(tmp_path / "logs"))
    r = run(env, AUTOSTART, stand_in, user)
    got = probe(r)                                                 # rc 0, the script's own output there
    [line] = r.stderr.splitlines()
    assert line.startswith("tb-iotrace: ") and str(got["pid"]) in line and "No space left on device" in line
    assert json.loads(out.read_text())["pid"] == got["pid"]       # the user's sitecustomize still ran
    assert in_order(got["path"], AUTOSTART, stand_in, user) == [str(AUTOSTART), str(stand_in), str(user)]
