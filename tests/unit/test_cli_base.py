"""tb_iotrace.cli._base: what every subcommand shares. ``Command``'s defaults (no name, no
options, arguments parsed, ``run`` to be written), every real verb a ``Command`` with its own
name, help and ``run``; a ``UserError`` is one escaped line and exit code 1, and
``passes_arguments_on`` hands every argument after the verb to the command unparsed."""
from __future__ import annotations

import argparse
from typing import Any

import pytest

import tb_iotrace.cli as cli
from tb_iotrace.cli._base import Command, UserError


def test_command_defaults() -> None:
    assert Command.name == "" and Command.passes_arguments_on is False
    parser = argparse.ArgumentParser()
    Command.add_arguments(parser)
    assert vars(parser.parse_args([])) == {}
    with pytest.raises(NotImplementedError):
        Command().run(argparse.Namespace())
    assert issubclass(UserError, Exception) and not issubclass(UserError, (ValueError, OSError))


def test_every_verb_is_a_command_of_its_own() -> None:
    classes = cli.commands()
    assert [c.name for c in classes] == [m[0] for m in cli.COMMAND_MODULES]
    for cls in classes:
        assert issubclass(cls, Command) and cls.run is not Command.run, cls
        assert (cls.__doc__ or "").strip(), f"{cls.name}: its docstring is its help"
    assert [c.name for c in classes if c.passes_arguments_on] == ["tensorboard"]  # its flags are TensorBoard's


def _verb(monkeypatch: pytest.MonkeyPatch, run: Any, passes_on: bool = False) -> list[argparse.Namespace]:
    """A stand-in verb ``probe`` (its ``run`` given), the only one the CLI knows."""
    seen: list[argparse.Namespace] = []

    class Probe(Command):
        """Probe: a test verb."""
        name = "probe"
        passes_arguments_on = passes_on

        @classmethod
        def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
            if not passes_on:
                parser.add_argument("--size", type=int, default=1)

        def run(self, args: argparse.Namespace) -> int:
            seen.append(args)
            return run(args)

    monkeypatch.setattr(cli, "commands", lambda only=None: (Probe,))
    return seen


def test_user_error_is_one_escaped_line_and_exit_1(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def fail(args: argparse.Namespace) -> int:
        raise UserError("no such file: 'a\nb\x1b[31m'")

    _verb(monkeypatch, fail)
    assert cli.main(["probe"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tb-iotrace probe: error: no such file: 'a")
    assert "\x1b" not in err and "Traceback" not in err


def test_exit_codes_and_parsed_options(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _verb(monkeypatch, lambda args: args.size)
    assert cli.main(["probe", "--size", "3"]) == 3
    assert cli.main(["probe"]) == 1 and seen[-1].size == 1
    seen = _verb(monkeypatch, lambda args: None)
    assert cli.main(["probe"]) == 0
    with pytest.raises(SystemExit) as got:
        cli.main(["probe", "--size", "x"])
    assert got.value.code == 2


def test_passes_arguments_on_hands_everything_after_the_verb(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _verb(monkeypatch, lambda args: 0, passes_on=True)
    assert cli.main(["-v", "probe", "python", "-h", "--size", "+x", "--"]) == 0
    assert seen[-1].passed_on == ["python", "-h", "--size", "+x", "--"] and seen[-1].verbose is True
