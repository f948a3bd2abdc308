"""tb-iotrace tensorboard (tb_iotrace.cli.tensorboard): which arguments name logdirs (--logdir,
--logdir_spec in both spellings, a spec's name:path parts), which logdirs are URLs, and what it
hands TensorBoard: every argument unchanged for a local logdir; for a URL logdir TensorBoard's
TensorFlow-free stub (tensorboard.compat.notf, set before TensorBoard resolves TensorFlow, an
existing one kept) and --load_fast=false unless given. TensorBoard's entry point is replaced in
process; the child-process tests run the real one only with --version_tb or a bad flag, which
exit at once (no server)."""
from __future__ import annotations

import importlib.util
import os
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tb_iotrace.cli import main
from tb_iotrace.cli import tensorboard as tb_cli
from tb_iotrace.store import remote

from test_cli_export import run_child

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


@dataclass
class Launch:
    argv: list[str]                       # sys.argv when TensorBoard's run_main was called
    notf: types.ModuleType | None         # sys.modules["tensorboard.compat.notf"] then


@pytest.fixture()
def launches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Launch]]:
    """TensorBoard's ``run_main`` replaced by a recorder; sys.argv and the notf entry of
    sys.modules as they were before, after the test."""
    from tensorboard import main as tb_main

    seen: list[Launch] = []
    monkeypatch.setattr(tb_main, "run_main",
                        lambda: seen.append(Launch(list(sys.argv), sys.modules.get(tb_cli.NOTF))))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    had = tb_cli.NOTF in sys.modules
    old = sys.modules.pop(tb_cli.NOTF, None)
    try:
        yield seen
    finally:
        sys.modules.pop(tb_cli.NOTF, None)
        if had:
            sys.modules[tb_cli.NOTF] = old


def launch(seen: list[Launch], *args: str) -> Launch:
    """``tb-iotrace tensorboard ARGS`` through the CLI; what TensorBoard was started with."""
    assert main(["tensorboard", *args]) == 0
    assert len(seen) == 1
    return seen[0]


LOGDIRS = [
    (["--logdir", "/data/logs"], ["/data/logs"]),
    (["--logdir=s3://b/logs"], ["s3://b/logs"]),
    (["--port", "6006", "--logdir", "gs://b/l", "--bind_all"], ["gs://b/l"]),
    (["--port", "6006", "--logdir"], []),                                     # no value after it
    (["--logdir_spec", "train:/a,eval:s3://b/e"], ["/a", "s3://b/e"]),
    (["--logdir_spec=s3://b/x,gs://c/y"], ["s3://b/x", "gs://c/y"]),          # bare URLs, no name
    (["--logdir_spec", "/plain/dir"], ["/plain/dir"]),
    (["--logdir_spec", "run:file:///tmp/x"], ["file:///tmp/x"]),
    (["--logdir", "/a", "--logdir_spec=b:/b"], ["/a", "/b"]),
    (["--logdirs", "s3://b", "--logdir_specx=s3://c", "s3://d"], []),         # other flags, bare words
]


@pytest.mark.parametrize("argv, want", LOGDIRS, ids=[" ".join(a) for a, _ in LOGDIRS])
def test_logdirs_named_by_the_arguments(argv: list[str], want: list[str]) -> None:
    assert tb_cli.logdirs(argv) == want


@pytest.mark.parametrize("path", ["s3://b/logs", "gs://b", "memory://x", "hdfs://nn:8020/logs", "az://c/p"])
def test_urls(path: str) -> None:
    assert tb_cli.is_url(path)


@pytest.mark.parametrize("path", ["/data/logs", "logs", "file:///tmp/logs", "s3:logs", ""])
def test_not_urls(path: str) -> None:
    assert not tb_cli.is_url(path)


LOCAL = [
    [],
    ["--logdir", "LOCAL", "--port", "6006"],
    # the flags tb-iotrace's own parser has (-v, -h) are TensorBoard's here
    ["-v", "--logdir=LOCAL", "-h", "--help", "--helpfull"],
    ["--logdir_spec", "a:LOCAL,b:file:///tmp/b"],
]


@pytest.mark.parametrize("args", LOCAL, ids=[" ".join(a) or "none" for a in LOCAL])
def test_local_logdir_arguments_passed_on_unchanged(launches: list[Launch], tmp_path: Path,
                                                    args: list[str]) -> None:
    args = [a.replace("LOCAL", str(tmp_path)) for a in args]
    got = launch(launches, *args)
    assert got.argv == ["tensorboard", *args]
    assert got.notf is None and tb_cli.NOTF not in sys.modules


URLS = [
    ["--logdir", "s3://bucket/logs", "--port", "6006"],
    ["--logdir=gs://bucket/logs"],
    ["--logdir_spec", "train:/local/train,eval:s3://bucket/eval"],
    ["--logdir_spec=memory://x"],
]


@pytest.mark.parametrize("args", URLS, ids=[" ".join(a) for a in URLS])
def test_url_logdir_read_through_the_stub(launches: list[Launch], args: list[str]) -> None:
    got = launch(launches, *args)
    assert got.argv == ["tensorboard", *args, "--load_fast=false"]
    # in place when TensorBoard starts, so that it resolves tensorboard.compat.tf to its stub
    assert isinstance(got.notf, types.ModuleType) and got.notf.__name__ == tb_cli.NOTF


@pytest.mark.parametrize("given", [["--load_fast", "true"], ["--load_fast=auto"], ["--load_fa", "true"]])
def test_load_fast_given_is_kept(launches: list[Launch], given: list[str]) -> None:
    args = ["--logdir", "s3://bucket/logs", *given]
    got = launch(launches, *args)
    assert got.argv == ["tensorboard", *args]
    assert got.notf is not None


def test_notf_module_already_there_is_kept(launches: list[Launch]) -> None:
    mine = types.ModuleType(tb_cli.NOTF)
    sys.modules[tb_cli.NOTF] = mine
    got = launch(launches, "--logdir", "gs://bucket/logs")
    assert got.notf is mine
    assert got.argv == ["tensorboard", "--logdir", "gs://bucket/logs", "--load_fast=false"]


# --------------------------------------------------------------------------- the real TensorBoard

# runs the CLI, then says on stderr whether TensorFlow was imported (TensorBoard exits by SystemExit)
CHILD = """
import sys
from tb_iotrace.cli import main
try:
    sys.exit(main(sys.argv[1:]))
finally:
    print("tensorflow imported:", "tensorflow" in sys.modules, file=sys.stderr)
"""


def tb_child(cmd: list[str]) -> tuple[int, str, str]:
    """``cmd`` in a child process (time-limited, killed in the end): exit code, stdout, stderr."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = run_child(cmd, env, timeout=240)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def child(*args: str) -> tuple[int, str, str]:
    """``tb-iotrace ARGS`` in a child process."""
    return tb_child([PY, "-c", CHILD, *args])


@pytest.mark.slow   # child processes that import TensorBoard (and TensorFlow, where installed)
def test_real_tensorboard_gets_the_arguments_and_no_tensorflow_for_a_url() -> None:
    from tensorboard import version

    rc, out, err = child("tensorboard", "--logdir", "s3://bucket/logs", "--version_tb")
    assert rc == 0, err[-3000:]
    assert version.VERSION in out.split(), out          # TensorBoard read --version_tb and the added flag
    assert "tensorflow imported: False" in err, err[-3000:]
    rc, out, err = child("tensorboard", "--version_tb")   # the same without a URL: TensorFlow when installed
    assert rc == 0 and version.VERSION in out.split(), err[-3000:]
    tf_installed = importlib.util.find_spec("tensorflow") is not None
    assert f"tensorflow imported: {tf_installed}" in err, err[-3000:]


@pytest.mark.slow
def test_real_tensorboard_usage_error_is_its_own() -> None:
    rc, out, err = child("tensorboard", "--logdir", "s3://bucket/logs", "--port", "notanumber")
    assert rc == 2, err[-3000:]
    assert "usage: tensorboard" in err and "--port" in err, err[-3000:]
    assert "usage: tb-iotrace" not in err and "Traceback" not in err, err[-3000:]


# --------------------------------------------------------------------------- arguments TensorBoard takes as they come


def test_local_logdir_named_with_colon_slash_slash_is_not_a_url(launches: list[Launch], tmp_path: Path) -> None:
    """A local folder whose path holds "://" (…/odd://run is the folder …/odd:/run) is no URL:
    the OS opens it, tb_iotrace.store.remote.is_url says local, and TensorFlow's own gfile reads
    it. Taken for a URL, TensorBoard is switched to its stub, whose gfile takes "…/odd" for a
    protocol and raises "Protocol not known" on it."""
    (tmp_path / "odd:" / "run").mkdir(parents=True)
    logdir = f"{tmp_path}/odd://run"
    assert os.path.isdir(logdir) and not remote.is_url(logdir)
    got = launch(launches, "--logdir", logdir)
    assert got.argv == ["tensorboard", "--logdir", logdir]
    assert got.notf is None


TB_PARSE = """
import sys
from tensorboard import program
from tensorboard.plugins.core import core_plugin
tb = program.TensorBoard(plugins=[core_plugin.CorePluginLoader])
tb.configure(argv=["tensorboard", *sys.argv[1:]])
print(tb.flags.logdir_spec)
"""


def test_abbreviated_logdir_spec_flag_is_seen(launches: list[Launch]) -> None:
    """TensorBoard's parser (argparse) takes any unambiguous prefix of a flag: --logdir_s is
    --logdir_spec to it, so the URL in it must get the stub too."""
    rc, out, err = tb_child([PY, "-c", TB_PARSE, "--logdir_s", "eval:s3://bucket/eval"])
    assert rc == 0 and out.split() == ["eval:s3://bucket/eval"], err[-2000:]
    got = launch(launches, "--logdir_s", "eval:s3://bucket/eval")
    assert got.argv == ["tensorboard", "--logdir_s", "eval:s3://bucket/eval", "--load_fast=false"]
    assert got.notf is not None


def test_argument_starting_with_plus_is_passed_on(launches: list[Launch], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every argument after the command is TensorBoard's: a logdir named "+exp" too (TensorBoard
    takes it; no parser of tb-iotrace's may take it for an option of its own)."""
    (tmp_path / "+exp").mkdir()
    monkeypatch.chdir(tmp_path)
    try:
        rc = main(["tensorboard", "--logdir", "+exp", "--window_title", "+1 run"])
    except SystemExit as exc:
        pytest.fail(f"tb-iotrace tensorboard refused the arguments (exit {exc.code})")
    assert rc == 0 and [x.argv for x in launches] == [["tensorboard", "--logdir", "+exp", "--window_title", "+1 run"]]
