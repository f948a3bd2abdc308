"""``tb-iotrace``: the command line (also ``python -m tb_iotrace``).

One module per subcommand, one class per subcommand; the class docstring is its help.
Exit codes: 0 success, 1 user error or any failure on bad input (one-line message, control
characters escaped; the traceback only with ``-v``),
2 bad usage (argparse). ``run`` exits with the script's code.
"""
from __future__ import annotations

import argparse
import sys
import traceback
from typing import Sequence

import importlib
from tb_iotrace.base.safenames import printable
from tb_iotrace.cli._base import Command, UserError

# (name, module, class): a command's module is imported only when it is needed, so that
# ``tb-iotrace run`` starts the job without importing the report's and the fleet's code
COMMAND_MODULES = (("run", "tb_iotrace.cli.run", "Run"), ("attach", "tb_iotrace.cli.attach", "Attach"),
                   ("report", "tb_iotrace.cli.report", "Report"),
                   ("export", "tb_iotrace.cli.export", "Export"),
                   ("import-darshan", "tb_iotrace.cli.import_darshan", "ImportDarshan"),
                   ("fleet", "tb_iotrace.cli.fleet", "Fleet"),
                   ("tensorboard", "tb_iotrace.cli.tensorboard", "TensorBoard"))

__all__ = ["main", "build_parser", "COMMANDS", "UserError"]


def commands(only: str | None = None) -> tuple[type[Command], ...]:
    """The command classes (just ``only``'s, when it names one)."""
    names = [m for m in COMMAND_MODULES if only is None or m[0] == only] or list(COMMAND_MODULES)
    return tuple(getattr(importlib.import_module(mod), cls) for _, mod, cls in names)


def __getattr__(name: str) -> object:
    if name == "COMMANDS":
        return commands()
    raise AttributeError(name)


def _command_named(argv: Sequence[str]) -> str | None:
    """The command the arguments name (the first one that is not an option), if any."""
    for a in argv:
        if a == "--":
            return None
        if not a.startswith("-"):
            return a
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tb-iotrace", description="Darshan-style POSIX/STDIO I/O capture for TensorFlow: run, report, export.")
    parser.add_argument("-v", "--verbose", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for cls in commands(only):
        doc = (cls.__doc__ or "").strip()
        first = doc.splitlines()[0] if doc else cls.name
        p = sub.add_parser(cls.name, help=first, description=doc,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks on errors")
        cls.add_arguments(p)
        p.set_defaults(_command=cls)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    named = _command_named(argv)
    parser = build_parser(named)
    passed: list[str] | None = None
    if named is not None and any(c.name == named and c.passes_arguments_on for c in commands(named)):
        # every argument after the name is the command's own, whatever it starts with ("+exp",
        # "-h"): none goes through argparse
        at = argv.index(named) + 1
        argv, passed = argv[:at], argv[at:]
    args = parser.parse_args(argv)
    if passed is not None:
        args.passed_on = passed
    cmd = args._command()
    try:
        return int(cmd.run(args) or 0)
    except UserError as exc:
        return _error(cmd.name, str(exc), args.verbose)
    except KeyboardInterrupt:
        print(f"tb-iotrace {cmd.name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        sources = sys.modules.get("tb_iotrace.model.sources")   # imported by the commands that read
        if sources is not None and isinstance(exc, sources.SourceError):
            return _error(cmd.name, str(exc), args.verbose)
        # Whatever a hostile or damaged input makes deeper code raise (a record field of the
        # wrong type, a number out of range, a library's own error): one line, never a
        # traceback without -v. MemoryError and RecursionError are Exceptions too.
        why = str(exc) or "(no message)"
        return _error(cmd.name, f"{type(exc).__name__}: {why} (tb-iotrace -v {cmd.name} ... for the traceback)",
                      args.verbose)


def _error(command: str, message: str, verbose: bool) -> int:
    """Print the error as one line, every control character escaped (messages quote names
    from the input); the traceback before it with ``-v``."""
    if verbose:
        traceback.print_exc()
    print(f"tb-iotrace {command}: error: {printable(message)}", file=sys.stderr)
    return 1
