"""``tb-iotrace tensorboard``: TensorBoard on a logdir in a bucket, with TensorFlow installed."""
from __future__ import annotations

import argparse
import sys
import types

from tb_iotrace.cli._base import Command
from tb_iotrace.store.remote import is_url   # a scheme at the start: "a/b://c" is a local path

NOTF = "tensorboard.compat.notf"     # TensorBoard's own switch: present, it reads through its stub


FLAGS = ("--logdir", "--logdir_spec", "--load_fast")   # TensorBoard's flags this command looks at


def flag_of(arg: str) -> str | None:
    """Which of :data:`FLAGS` ``arg`` (``--flag`` or ``--flag=value``) names as TensorBoard's
    parser takes it: the flag itself or an unambiguous prefix of it (argparse's abbreviations:
    ``--logdir_s`` is ``--logdir_spec``; ``--logdir`` is itself, not a prefix)."""
    name = arg.split("=", 1)[0]
    if not name.startswith("--") or len(name) < 3:
        return None
    if name in FLAGS:
        return name
    hits = [f for f in FLAGS if f.startswith(name)]
    return hits[0] if len(hits) == 1 else None


def logdirs(argv: list[str]) -> list[str]:
    """The ``--logdir``/``--logdir_spec`` values among TensorBoard's arguments (a spec's
    ``name:path`` parts give their paths)."""
    out: list[str] = []
    for i, a in enumerate(argv):
        flag = flag_of(a)
        if flag not in ("--logdir", "--logdir_spec"):
            continue
        if "=" in a:
            val = a.split("=", 1)[1]
        elif i + 1 < len(argv):
            val = argv[i + 1]
        else:
            continue
        if flag == "--logdir":
            out.append(val)
        else:      # name:path,name:path (a bare path, or a URL, has no name)
            for part in val.split(","):
                name, sep, path = part.partition(":")
                out.append(path if sep and not path.startswith("//") else part)
    return out


class TensorBoard(Command):
    """Start TensorBoard (its own command line, every argument passed on); a URL logdir
    (s3://, gs://, any fsspec URL) is read through TensorBoard's own file layer (boto3 for
    s3://, fsspec for the others: the credentials and endpoint variables tb-iotrace's own
    reads use; TensorBoard's Python loader, --load_fast=false unless given), not TensorFlow's,
    which has no s3:// without tensorflow-io: plain `tensorboard --logdir s3://...` stops at
    start-up where TensorFlow is installed.
    Example: tb-iotrace tensorboard --logdir s3://bucket/logs --port 6006"""

    name = "tensorboard"
    passes_arguments_on = True

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("tensorboard_args", nargs="*", metavar="TENSORBOARD-ARGS",
                            help="TensorBoard's arguments (tensorboard --helpfull)")

    def run(self, args: argparse.Namespace) -> int:
        argv = list(getattr(args, "passed_on", None) or args.tensorboard_args)
        if any(is_url(p) for p in logdirs(argv)):
            if NOTF not in sys.modules:
                # before tensorboard.compat.tf is first resolved: TensorBoard then takes its stub
                # (tensorboard.compat.tensorflow_stub), whose gfile reads s3:// and fsspec URLs
                sys.modules[NOTF] = types.ModuleType(NOTF)
            if not any(flag_of(a) == "--load_fast" for a in argv):
                # TensorBoard's fast loader (a Rust server) has a GCS client of its own and no
                # s3://: the Python loader reads through the stub, as above
                argv.append("--load_fast=false")
        from tensorboard import main as tb_main

        sys.argv = ["tensorboard", *argv]
        tb_main.run_main()
        return 0


__all__ = ["TensorBoard", "flag_of", "is_url", "logdirs"]
