"""``tb-iotrace export``."""
from __future__ import annotations

import argparse

from ._base import Command, UserError

FORMATS = ("chrome", "darshan", "parquet", "csv")


class Export(Command):
    """Export captures or run records: chrome trace JSON, darshan-parser text, parquet/csv."""

    name = "export"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("path", metavar="PATH")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("-o", "--output", required=True, metavar="OUT")
        parser.add_argument("--run", metavar="R")
        parser.add_argument("--host", metavar="H")

    def run(self, args: argparse.Namespace) -> int:
        raise UserError("not implemented yet")
