"""One capture's decode for the I/O tab (``tb_iotrace.model.tab.of_xplane.decode_xplane``), two
checkouts side by side: the cold "All hosts" switch of ``bench/plugin_hosts.py`` is 64 of these.
With ``--analysis``, the analysis's read of a capture (``analysis.slim_xspace.read_slim_xspace``).

    python bench/capture_decode.py --old /work/main --captures /tmp/hosts/plugins/profile/*/

Each round runs one fresh process per checkout (order alternated), each decoding the same
captures (after one warm-up decode) and printing its CPU seconds per capture; the table gives
the median and best of the rounds, and old/new per round. The machine's load is printed: on a
shared VM, compare only the two columns of one run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import sys, time
import importlib


def first(*names):
    # older checkouts have older module names: before the layer folders (2026-11-26), before
    # the readers were named by what they yield (2026-11-28), and before the tab's readers moved
    # into the model (2026-11-29)
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    raise ImportError(names)


tab = first("tb_iotrace.model.tab.of_xplane", "tb_iotrace.analysis.decoded.tab_xplane", "tb_iotrace.plugin.capture_load",
            "tb_iotrace.plugin." + "model")
decode = getattr(tab, "decode_xplane", None) or getattr(tab, "load_capture")
if sys.argv[1] == "analysis":   # the analysis's read of a capture instead of the tab's
    reader = first("tb_iotrace.analysis.slim_xspace", "tb_iotrace.analysis.capture_reader", "tb_iotrace.analysis." + "source")
    read = getattr(reader, "read_slim_xspace", None) or getattr(reader, "load_for_analysis")
    decode = lambda f, host: read(f)   # noqa: E731
files = sys.argv[2:]
decode(files[0], "h")  # imports, first-touch of the file pages
c = time.process_time()
for f in files:
    decode(f, "h")
print((time.process_time() - c) / len(files))
"""


def run(tree: str, files: list[str], what: str = "tab") -> float:
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", CHILD, what, *files], env=env, cwd=tree, check=True,
                         capture_output=True, text=True)
    return float(out.stdout.split()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="the other checkout (its tb_iotrace, native modules built)")
    ap.add_argument("--new", default=str(Path(__file__).resolve().parents[1]), help="default: this checkout")
    ap.add_argument("--captures", required=True, help="a folder of *.xplane.pb")
    ap.add_argument("--files", type=int, default=16, help="captures decoded per process")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--analysis", action="store_true",
                    help="time the analysis's read (analysis.slim_xspace.read_slim_xspace), not the tab's")
    args = ap.parse_args()
    files = sorted(str(p) for p in Path(args.captures).glob("*.xplane.pb"))[:args.files]
    if not files:
        print(f"no *.xplane.pb in {args.captures}", file=sys.stderr)
        return 2
    print(f"load average before: {os.getloadavg()[0]:.2f}; {len(files)} captures per process, "
          f"{sum(os.path.getsize(f) for f in files) / len(files) / 1e6:.1f} MB each")
    old: list[float] = []
    new: list[float] = []
    for r in range(args.rounds):
        pair = [("old", args.old), ("new", args.new)]
        if r % 2:
            pair.reverse()
        for name, tree in pair:
            (old if name == "old" else new).append(run(tree, files, "analysis" if args.analysis else "tab"))
        print(f"  round {r}: old {1000 * old[-1]:.1f} ms  new {1000 * new[-1]:.1f} ms  "
              f"new/old {new[-1] / old[-1]:.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"CPU per capture, median (best): old {1000 * statistics.median(old):.1f} ms "
          f"({1000 * min(old):.1f})  new {1000 * statistics.median(new):.1f} ms ({1000 * min(new):.1f})  "
          f"new/old median {statistics.median(n / o for n, o in zip(new, old)):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
