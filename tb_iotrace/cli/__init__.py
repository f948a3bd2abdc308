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

from tb_iotrace.base.safenames import printable
from tb_iotrace.cli._base import Command, UserError
from tb_iotrace.model.sources import SourceError
from tb_iotrace.cli.export import Export
from tb_iotrace.cli.fleet import Fleet
from tb_iotrace.cli.import_darshan import ImportDarshan
from tb_iotrace.cli.report import Report
from tb_iotrace.cli.run import Run
from tb_iotrace.cli.attach import Attach

COMMANDS: tuple[type[Command], ...] = (Run, Attach, Report, Export, ImportDarshan, Fleet)

__all__ = ["main", "build_parser", "COMMANDS", "UserError"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tb-iotrace", description="Darshan-style POSIX/STDIO I/O capture for TensorFlow: run, report, export.")
    parser.add_argument("-v", "--verbose", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for cls in COMMANDS:
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
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    cmd = args._command()
    try:
        return int(cmd.run(args) or 0)
    except (UserError, SourceError) as exc:
        return _error(cmd.name, str(exc), args.verbose)
    except KeyboardInterrupt:
        print(f"tb-iotrace {cmd.name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
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
