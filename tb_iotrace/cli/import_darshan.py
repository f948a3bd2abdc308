"""``tb-iotrace import-darshan``."""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from tb_iotrace.base.redact import redact_url
from tb_iotrace.store import remote
from tb_iotrace.base.atomic import atomic_write
from tb_iotrace.base.safenames import printable, safe_component
from tb_iotrace.cli._base import Command, UserError

MODULES = ("POSIX", "STDIO")
DXT = "DXT_POSIX"
USER_ERROR_RC = 3
DEFAULT_TIMEOUT_S = 600.0
# The reading child's program: argv = [package parent folder, log, meta.json, dxt.npz]. Its
# working directory is a scratch folder (libdarshan-util has unlinked garbage relative paths
# on corrupt logs), so tb_iotrace is imported from where this one was.
READER = ("import sys; sys.path.insert(0, sys.argv[1]); "
          "from tb_iotrace.cli.import_darshan import _read_log; _read_log(sys.argv[2], sys.argv[3], sys.argv[4])")


# --------------------------------------------------------------------------- the reading child


def _read_log(log: str, out_json: str, out_npz: str) -> None:
    """Runs in a child process: libdarshan-util aborts the process on some corrupt logs."""
    try:
        import darshan
    except ImportError:
        print("tbio: reading Darshan logs needs PyDarshan: pip install 'tb_iotrace[darshan]'", file=sys.stderr)
        sys.exit(USER_ERROR_RC)
    try:
        rep = darshan.DarshanReport(log, read_all=False)
    except Exception as exc:
        print(f"tbio: not a readable Darshan log ({exc})", file=sys.stderr)
        sys.exit(USER_ERROR_RC)
    job = rep.metadata.get("job", {})
    files = []
    for mod in MODULES:
        if mod not in rep.modules:
            continue
        rep.mod_read_all_records(mod)
        df = rep.records[mod].to_df()
        c, f = df["counters"], df["fcounters"]
        ccols = [k for k in c.columns if k not in ("rank", "id")]
        fcols = [k for k in f.columns if k not in ("rank", "id")]
        fidx = {(int(r), int(i)): j for j, (r, i) in enumerate(zip(f["rank"].tolist(), f["id"].tolist()))}
        cvals = c[ccols].to_numpy(dtype=np.int64) if ccols else np.zeros((len(c), 0), np.int64)
        fvals = f[fcols].to_numpy(dtype=np.float64) if fcols else np.zeros((len(f), 0))
        for j, (rank, rid) in enumerate(zip(c["rank"].tolist(), c["id"].tolist())):
            k = fidx.get((int(rank), int(rid)))
            files.append({"path": int(rid), "module": mod, "record_id": int(rid),
                          "rank": int(rank), "counters": dict(zip(ccols, map(int, cvals[j]))),
                          "fcounters": dict(zip(fcols, map(float, fvals[k]))) if k is not None else {}})
    cols: dict[str, list[Any]] = {k: [] for k in ("t0", "t1", "offset", "length", "rank", "write", "path")}
    hostname = ""
    paths: list[Any] = []
    if DXT in rep.modules:
        rep.mod_read_all_dxt_records(DXT)
        for e in rep.records[DXT].to_df():
            hostname = hostname or str(e.get("hostname") or "")
            pid = len(paths)
            paths.append(int(e["id"]))
            for write, segs in ((0, e["read_segments"]), (1, e["write_segments"])):
                if len(segs) == 0:
                    continue
                n = len(segs)
                cols["t0"].append(segs["start_time"].to_numpy(np.float64))
                cols["t1"].append(segs["end_time"].to_numpy(np.float64))
                cols["offset"].append(segs["offset"].to_numpy(np.int64))
                cols["length"].append(segs["length"].to_numpy(np.int64))
                cols["rank"].append(np.full(n, int(e["rank"]), np.int64))
                cols["write"].append(np.full(n, write, np.int8))
                cols["path"].append(np.full(n, pid, np.int64))
    names = dict(rep.name_records)  # filled as modules are read
    for f in files:
        f["path"] = names.get(f["path"], str(f["path"]))
    paths = [names.get(p, str(p)) for p in paths]
    arrays = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
    np.savez(out_npz, paths=np.array(paths, dtype=str), **arrays)
    meta = {"job": {k: v for k, v in job.items() if isinstance(v, (int, float, str))},
            "exe": str(rep.metadata.get("exe", "")), "modules": list(rep.modules), "hostname": hostname,
            "has_dxt": DXT in rep.modules, "files": files}
    with open(out_json, "w") as fh:
        json.dump(meta, fh)


# --------------------------------------------------------------------------- writing the capture


def _task_env(space: Any, start_ns: int, stop_ns: int) -> None:
    plane = space.planes.add()
    plane.id = max([p.id for p in space.planes[:-1]], default=0) + 1
    plane.name = "Task Environment"
    for sid, (name, value) in enumerate((("profile_start_time", start_ns), ("profile_stop_time", stop_ns)), 1):
        plane.stat_metadata[sid].id = sid
        plane.stat_metadata[sid].name = name
        st = plane.stats.add()
        st.metadata_id = sid
        st.uint64_value = int(value)


def _run_name(start_ns: int) -> str:
    """The run folder: the job's start (UTC) as TensorFlow names profile runs."""
    try:
        return time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(start_ns // 10**9))
    except (OverflowError, ValueError, OSError):   # a start time no calendar holds
        return "darshan_unknown_start"


def write_capture(meta: dict[str, Any], arrays: dict[str, np.ndarray], logdir: str, host: str | None) -> tuple[str, int]:
    from tb_iotrace.store.xplane import IoTrace, XSpace, add_io_to_space

    job = meta["job"]
    start_ns = int(job.get("start_time_sec", 0)) * 10**9 + int(job.get("start_time_nsec", 0))
    end_ns = int(job.get("end_time_sec", 0)) * 10**9 + int(job.get("end_time_nsec", 0))
    n = len(arrays["t0"])
    t0 = start_ns + np.round(arrays["t0"] * 1e9).astype(np.int64)
    t1 = start_ns + np.round(arrays["t1"] * 1e9).astype(np.int64)
    order = np.argsort(t0, kind="stable")
    paths = arrays["paths"].astype(object)
    ranks = arrays["rank"].astype(np.int64)
    length = arrays["length"].astype(np.int64)
    trace = IoTrace(
        op=np.where(arrays["write"].astype(bool), "write", "read").astype(object)[order],
        path=(paths[arrays["path"].astype(np.int64)] if n else np.empty(0, object))[order],
        offset=arrays["offset"].astype(np.int64)[order], requested=length[order], returned=length[order],
        fd=np.full(n, -1, np.int32), errno=np.zeros(n, np.int32), start_ns=t0[order], end_ns=t1[order],
        tid=ranks[order], threads={int(r): (0, f"rank {r}") for r in np.unique(ranks).tolist()},
        counters=meta["files"])
    space = XSpace()
    space.hostnames.append(host or meta.get("hostname") or "darshan")
    space.planes.add().name = "/host:CPU"
    _task_env(space, start_ns, max(end_ns, int(t1.max()) if n else end_ns))
    add_io_to_space(space, trace, start_ns=start_ns, max_events=max(n, 1))
    run = _run_name(start_ns)
    # the log's hostname was written on another machine: one safe component (no "..", "/")
    name = host or safe_component(meta.get("hostname") or "darshan", "darshan")
    out_dir = os.path.join(logdir, "plugins", "profile", run)
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, f"{name}.xplane.pb")
    data = space.SerializeToString()
    atomic_write(out, lambda fh: fh.write(data))
    return out, n


def _run_reader(log: str, out_json: str, out_npz: str, tmp: str, timeout_s: float) -> subprocess.CompletedProcess | None:
    """Read the log in a child process (libdarshan-util segfaults or aborts on some corrupt
    logs), in its own session, with ``tmp``/cwd, a fresh folder, as its working directory;
    None when it ran past ``timeout_s`` (it and anything it started are killed)."""
    cwd = os.path.join(tmp, "cwd")
    os.mkdir(cwd)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cmd = [sys.executable, "-c", READER, pkg_parent, log, out_json, out_npz]
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace", start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        return None
    except BaseException:   # Ctrl-C: the child is in its own session, it must not outlive us
        _kill_group(proc)
        raise
    _kill_group(proc)       # whatever it left running
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


class ImportDarshan(Command):
    """Import a Darshan log (POSIX, STDIO and DXT_POSIX records) into a logdir.

    tb-iotrace import-darshan LOG.darshan --logdir DIR [--host NAME]

    Reads the log with PyDarshan (optional: pip install 'tb_iotrace[darshan]') and writes
    DIR/plugins/profile/<job start, UTC>/<host>.xplane.pb, which `tb-iotrace report`,
    `tb-iotrace export` and TensorBoard's I/O tab read like a native capture: the per-file
    counters of every rank (each record keeps its "rank"), and, when the log has DXT, the
    timeline of DXT segments (one I/O lane per rank, ops "read"/"write", offset and length).
    A log without DXT imports its counters only. Other modules (MPI-IO, HDF5, Lustre) are
    not imported. The log is read in a child process, in a scratch folder, stopped after
    --timeout seconds (default 600). <host> is the DXT hostname (made one safe file name: "/" and control
    characters become "_", no leading dot), else "darshan".
    """

    name = "import-darshan"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("log", metavar="LOG.darshan")
        parser.add_argument("--logdir", required=True, metavar="DIR",
                            help="a folder or a URL (s3://, gs://; the capture is uploaded whole)")
        parser.add_argument("--host", metavar="NAME", help="host name of the capture file")
        parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                            help=f"time limit for reading the log (default {DEFAULT_TIMEOUT_S:g})")

    def run(self, args: argparse.Namespace) -> int:
        if not os.path.isfile(args.log):
            raise UserError(f"{args.log}: no such file" if not os.path.exists(args.log) else f"{args.log}: not a file")
        url = args.logdir.rstrip("/") if remote.is_url(args.logdir) else None
        if url is not None:
            try:   # before reading the log: a wrong bucket costs nothing
                remote.check_writable(url)
            except remote.RemoteError as exc:
                raise UserError(str(exc)) from None
        else:
            args.logdir = remote.local_path(args.logdir)
        if url is None and os.path.exists(args.logdir) and not os.path.isdir(args.logdir):
            raise UserError(f"{args.logdir}: exists and is not a directory")
        if args.host is not None and (not args.host or "/" in args.host or args.host.startswith(".")):
            raise UserError(f"invalid host name {args.host!r}")
        if not args.timeout > 0:
            raise UserError(f"--timeout must be a number of seconds > 0, not {args.timeout:g}")
        with tempfile.TemporaryDirectory(prefix="tbio-darshan-") as tmp:
            js, npz = os.path.join(tmp, "meta.json"), os.path.join(tmp, "dxt.npz")
            r = _run_reader(os.path.abspath(args.log), js, npz, tmp, args.timeout)
            if r is None:
                raise UserError(f"{args.log}: reading the log took longer than the time limit "
                                f"({args.timeout:g} s, --timeout): stopped")
            err = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")]
            if r.returncode == USER_ERROR_RC:
                ours = [ln[len("tbio: "):] for ln in err if ln.startswith("tbio: ")]
                raise UserError(f"{args.log}: {(ours or err or ['cannot read'])[-1]}")
            if r.returncode != 0 or not os.path.exists(js):
                # a traceback's frames say nothing to the user (and a child that crashed while
                # printing one leaves only its head): its exception line, else the exit
                said = [ln for ln in err if not ln.startswith(("Traceback", " ", "\t"))]
                why = "; ".join(said[-2:]) if said else f"exit code {r.returncode}"
                raise UserError(f"{args.log}: corrupt or unsupported Darshan log ({why})")
            if err and any("failed" in ln.lower() for ln in err):
                raise UserError(f"{args.log}: corrupt or truncated Darshan log ({err[0]})")
            with open(js) as fh:
                meta = json.load(fh)
            with np.load(npz, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        if url is None:
            try:
                out, n = write_capture(meta, arrays, args.logdir, args.host)
            except OSError as exc:
                raise UserError(f"{args.logdir}: {exc.strerror or exc}") from None
        else:
            # written into a local staging folder, then uploaded whole to the same path
            with tempfile.TemporaryDirectory(prefix="tbio-darshan-out-") as stage:
                local, n = write_capture(meta, arrays, stage, args.host)
                out = remote.join(url, os.path.relpath(local, stage).replace(os.sep, "/"))
                try:
                    remote.upload_file(local, out)
                except remote.RemoteError as exc:
                    raise UserError(f"upload failed: {exc}") from None
        skipped = [m for m in meta["modules"] if m not in MODULES + (DXT,)]
        print(printable(f"wrote {redact_url(out)}: {len(meta['files'])} file records, {n} DXT segments"
                        + ("" if meta["has_dxt"] else " (no DXT in this log: counters only)")
                        + (f"; not imported: {', '.join(map(str, skipped))}" if skipped else "")), file=sys.stderr)
        return 0
