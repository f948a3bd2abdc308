"""What every subcommand shares."""
from __future__ import annotations

import argparse


class UserError(Exception):
    """A problem with the user's input: printed as one line, exit code 1."""


class Command:
    """Base of the subcommands: ``name``, help in the docstring, ``add_arguments``, ``run``."""

    name = ""
    passes_arguments_on = False      # True: every argument after the name is the command's, unparsed
                                     # (``args.passed_on``; its parser only shows them in --help)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> int:
        raise NotImplementedError
