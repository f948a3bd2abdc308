"""A check of tb_iotrace on a CUDA machine in a few minutes (and on the CPU, to test it first).

    python bench/gpu_check.py                  # CUDA: every job on the GPU
    python bench/gpu_check.py --device cpu     # or DEV=cpu: the same jobs on the CPU
    python bench/gpu_check.py --quick --out DIR --keep

Three profiled jobs, each in a fresh interpreter, each reading files it wrote first:
- PyTorch: an image-folder-like dataset (small PNG files, or .npy without PIL) decoded in
  ``__getitem__``, a small CNN, under ``torch.profiler`` with
  ``on_trace_ready=tb_iotrace.torch.trace_handler(...)`` (CUDA activities on a GPU). The loader
  is tuned as the naive loader's tuned twin (``persistent_workers=True``; on CUDA ``pin_memory=True`` and
  up to 8 workers, the usable cores less one; on the CPU 2 workers and a 300 ms sleep in each
  step standing for the GPU's time), and the window opens after 5 steps, once the workers run:
  its verdict must be **not input-bound** (the step waits for input under 5% of its time) on
  both, and the check asserts it;
- JAX: ``tb_iotrace.enable()``, then ``jax.profiler.trace`` around one
  ``StepTraceAnnotation`` per ``.npy`` file read and a jitted matmul;
- TensorFlow, where ``import tensorflow`` works (a line says so where it does not): the same
  reads with ``tf.io.read_file`` under ``tf.profiler.experimental``.

Each output is read back as users read it: ``tb-iotrace report --json`` (files, bytes, steps,
notes, the per-host ``verdict`` when the report has one) and the TensorBoard tab's own model
(the plugin's ``/capture`` lanes). The check asserts I/O lanes and the files' bytes in every
output and, on CUDA, GPU lanes; it prints what it saw and exits 1 if any assertion failed.

It needs only what the machine has (torch, jax, tensorboard; TensorFlow optional) and
tb_iotrace installed from a wheel: no network (docs/gpu_check.md says how to carry it over).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
NPY_FILES = 4

try:   # installed (a wheel on the GPU machine), or this checkout
    import tb_iotrace  # noqa: F401
except ImportError:
    sys.path.insert(0, str(HERE.parent))


class CheckFailed(AssertionError):
    pass


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


# ------------------------------------------------------------------ data


def make_images(folder: Path, n: int) -> list[str]:
    """``n`` small RGB images in class folders (PNG with PIL, .npy without)."""
    import numpy as np

    rng = np.random.default_rng(0)
    try:
        from PIL import Image
    except ImportError:
        Image = None
    paths = []
    for i in range(n):
        d = folder / f"class{i % 4}"
        d.mkdir(parents=True, exist_ok=True)
        px = rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)
        if Image is not None:
            p = d / f"img{i:04d}.png"
            Image.fromarray(px).save(p)
        else:
            p = d / f"img{i:04d}.npy"
            np.save(p, px)
        paths.append(str(p))
    return paths


def make_arrays(folder: Path) -> list[str]:
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(NPY_FILES):
        p = folder / f"part{i}.npy"
        np.save(p, np.random.default_rng(i).standard_normal((256, 256)).astype(np.float32))
        paths.append(str(p))
    return paths


# ------------------------------------------------------------------ the jobs (child processes)


class ImageFiles:
    """A map-style dataset over image files, decoded in ``__getitem__`` (the reads happen here,
    in the DataLoader's worker processes)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> Any:
        import numpy as np
        import torch

        p = self.paths[i]
        if p.endswith((".png", ".jpg")):
            from PIL import Image

            with Image.open(p) as im:
                px = np.asarray(im.convert("RGB"))
        else:
            px = np.load(p)
        x = torch.from_numpy(px.copy()).permute(2, 0, 1).float() / 255.0
        return x, i % 4


SKIP = 5                 # steps before the window: the workers started and ahead
CPU_STEP_S = 0.05        # on the CPU, the GPU's time in each step (a sleep: it leaves the cores to the workers)
# the profiled tuned twin's: long enough that the main process's few ms of taking a ready batch
# (waking, unpickling, under a load of 4 on 2 cores) stay far under the 5% a 'not input' verdict
# allows (at 50 ms they did not; at 200 ms over 6 steps, the suite beside `stress --cpu 2` once
# waited 10%: ~120 ms of stalls. 10 steps of 300 ms take 150 ms of stalls before 5%)
CPU_PROFILED_STEP_S = 0.3


def torch_workers(device: str) -> int:
    """The tuned twin's workers: 8 on a GPU machine (the usable cores less one for the
    training process, at least 2); 2 on the CPU run."""
    if device != "cuda":
        return 2
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 2
    return max(2, min(8, cpus - 1))


def train_step(model: Any, opt: Any, x: Any, y: Any, device: str, cpu_step_s: float = CPU_STEP_S) -> None:
    """One step of the small CNN (on the CPU run, a sleep stands for the GPU's time)."""
    import torch

    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if device != "cuda":
        time.sleep(cpu_step_s)


def profile(device: str, steps: int, handler: Any) -> Any:
    """torch.profiler over ``steps`` steps after SKIP, CUDA activity on the GPU."""
    import torch

    acts = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    sched = torch.profiler.schedule(wait=SKIP - 1, warmup=1, active=steps, repeat=1)
    return torch.profiler.profile(activities=acts, schedule=sched, on_trace_ready=handler)


def job_torch(out: str, paths: list[str], device: str, steps: int) -> dict[str, Any]:
    import torch
    from torch.utils.data import DataLoader

    import tb_iotrace.torch as tbt

    if device != "cuda":
        # tensors cross from the workers through files, not through a descriptor fetched from a
        # thread of the worker (on a loaded 2-core machine that round trip alone is a wait)
        torch.multiprocessing.set_sharing_strategy("file_system")
    handler = tbt.trace_handler(out)   # before the workers start
    loader = DataLoader(ImageFiles(paths), batch_size=8, num_workers=torch_workers(device), shuffle=False,
                        pin_memory=(device == "cuda"), persistent_workers=True)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(32, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(device, steps, handler) as prof:
        for k, (x, y) in enumerate(loader):
            train_step(model, opt, x, y, device, CPU_PROFILED_STEP_S)
            prof.step()
            if k + 1 >= steps + SKIP:
                break
    if device == "cuda":
        torch.cuda.synchronize()
    from tb_iotrace.recording import pytorch as torch_capture

    return {"torch": torch.__version__, "cuda": torch.cuda.is_available(), "written": handler.written,
            "hooks_off": torch_capture.hooks_off()}


def make_jpegs(folder: Path, n: int) -> list[str]:
    """``n`` 96x96 JPEGs in class folders: the loader pair's data set (decoded with PIL in the workers)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(1)
    paths = []
    for i in range(n):
        d = folder / f"class{i % 4}"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"img{i:04d}.jpg"
        Image.fromarray(rng.integers(0, 256, (96, 96, 3), dtype=np.uint8)).save(p, quality=90)
        paths.append(str(p))
    return paths


COMPARE_STEPS = 120      # timed steps of each twin (after SKIP steps of warm-up)


def job_compare(out: str, paths: list[str], device: str, steps: int) -> dict[str, Any]:
    """The loader pair: the naive loader (2 workers, no pinning, workers not kept) profiled under
    ``trace_handler``, then both twins timed without the profiler; returns their steps/s."""
    import torch
    from torch.utils.data import DataLoader

    import tb_iotrace.torch as tbt

    if device != "cuda":
        torch.multiprocessing.set_sharing_strategy("file_system")

    def loader(tuned: bool) -> Any:
        return DataLoader(ImageFiles(paths), batch_size=32, shuffle=True,
                          num_workers=torch_workers(device) if tuned else 2,
                          pin_memory=tuned and device == "cuda", persistent_workers=tuned)

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(64, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def train(batches: Any, n: int, prof: Any = None) -> float:
        """Steps per second over ``n`` steps after SKIP steps of warm-up (epochs restart as needed)."""
        k, t0 = 0, 0.0
        while True:
            for x, y in batches:
                if k == SKIP:
                    if device == "cuda":
                        torch.cuda.synchronize()
                    t0 = time.perf_counter()
                train_step(model, opt, x, y, device)
                if prof is not None:
                    prof.step()
                k += 1
                if k >= SKIP + n:
                    if device == "cuda":
                        torch.cuda.synchronize()
                    return n / (time.perf_counter() - t0)

    handler = tbt.trace_handler(out)   # before the workers start
    with profile(device, steps, handler) as prof:
        train(loader(False), steps, prof)
    rates = {"naive": train(loader(False), COMPARE_STEPS), "tuned": train(loader(True), COMPARE_STEPS)}
    return {"torch": torch.__version__, "cuda": torch.cuda.is_available(), "steps_per_s": rates,
            "workers": {"naive": 2, "tuned": torch_workers(device)}}


def job_jax(out: str, paths: list[str], device: str) -> dict[str, Any]:
    import tb_iotrace

    tb_iotrace.enable()   # before jax: registration happens at its import
    import jax
    import jax.numpy as jnp
    import numpy as np

    from tb_iotrace.recording import jax as jaxhook

    @jax.jit
    def step(w: Any, x: Any) -> Any:
        return jnp.tanh(x @ w).sum()

    w = jnp.ones((256, 256), jnp.float32) / 256
    step(w, w).block_until_ready()   # compiled before the window
    with jax.profiler.trace(out):
        for i, p in enumerate(paths):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                with open(p, "rb") as fh:   # one read of the file (np.load(fh) reads its head twice)
                    x = np.load(io.BytesIO(fh.read()))
                step(w, jnp.asarray(x)).block_until_ready()
    return {"jax": jax.__version__, "platform": jax.devices()[0].platform, "hook": jaxhook.hook_state()}


def job_tf(out: str, paths: list[str], device: str) -> dict[str, Any]:
    import tb_iotrace

    tb_iotrace.enable()
    import tensorflow as tf

    w = tf.ones((256, 256)) / 256.0
    tf.profiler.experimental.start(out)
    for i, p in enumerate(paths):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            raw = tf.io.read_file(p)
            x = tf.reshape(tf.io.decode_raw(tf.strings.substr(raw, -256 * 256 * 4, 256 * 256 * 4), tf.float32),
                           (256, 256))
            float(tf.reduce_sum(tf.tanh(tf.matmul(x, w))))
    tf.profiler.experimental.stop()
    return {"tensorflow": tf.__version__, "gpus": len(tf.config.list_physical_devices("GPU"))}


def child(args: argparse.Namespace) -> int:
    spec = json.loads(Path(args.spec).read_text())
    fn: Callable[..., dict[str, Any]] = {"torch": job_torch, "compare": job_compare, "jax": job_jax,
                                         "tf": job_tf}[args.child]
    kwargs = {"steps": spec["steps"]} if args.child in ("torch", "compare") else {}
    got = fn(spec["out"], spec["paths"], spec["device"], **kwargs)
    Path(spec["result"]).write_text(json.dumps(got))
    return 0


# ------------------------------------------------------------------ reading the outputs back


def report_json(path: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "tb_iotrace", "report", path, "--json", "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    expect(proc.returncode == 0, f"tb-iotrace report failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def tab_captures(logdir: str) -> list[dict[str, Any]]:
    """The tab's ``/capture`` answer for every run and host under ``logdir`` (its own routes,
    called in-process as TensorBoard calls them)."""
    from werkzeug.test import Client
    from werkzeug.wrappers import Response

    from tb_iotrace.plugin import IoTracePlugin

    apps = IoTracePlugin(SimpleNamespace(logdir=logdir)).get_plugin_apps()

    def get(route: str, **params: Any) -> Any:
        resp = Client(apps[route], Response).get(f"/data/plugin/iotrace{route}", query_string=params)
        body = json.loads(resp.get_data())
        expect(resp.status_code == 200, f"{route} {params}: {resp.status_code} {body}")
        return body

    out = []
    for run in get("/runs")["runs"]:
        for host in run["hosts"]:
            cap = get("/capture", run=run["run"], host=host)
            out.append(cap)
    return out


def hosts_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [h for run in doc["runs"] for h in run["hosts"]]


def bytes_read(hosts: list[dict[str, Any]]) -> dict[str, int]:
    """Bytes read per path over every host and module (POSIX and STDIO records)."""
    got: dict[str, int] = {}
    for h in hosts:
        for f in h["files"]:
            c = f.get("counters") or {}
            n = int(c.get("POSIX_BYTES_READ", 0) or 0) + int(c.get("STDIO_BYTES_READ", 0) or 0)
            if n:
                got[f["path"]] = got.get(f["path"], 0) + n
    return got


def look(name: str, logdir: str, device: str, data_paths: list[str], exact: bool,
         bound: str | tuple[str, ...] | None = None) -> list[str]:
    """Read one job's output; assert (with ``bound``: the job host's verdict is that); return
    the lines that say what was seen."""
    lines = []
    doc = report_json(logdir)
    hosts = hosts_of(doc)
    expect(bool(hosts), "the report found no capture")
    got = bytes_read(hosts)
    read = {p: got[p] for p in data_paths if p in got}
    sizes = {p: os.path.getsize(p) for p in data_paths}
    lines.append(f"report: {len(hosts)} host(s), {len(read)}/{len(data_paths)} data files read, "
                 f"{sum(read.values()):,} bytes")
    expect(bool(read), "no data file read in the report")
    if exact:
        wrong = {p: (read.get(p), sizes[p]) for p in data_paths if read.get(p) != sizes[p]}
        expect(not wrong, f"bytes read differ from the file sizes: {wrong}")
    for h in hosts:
        expect("no_io_reason" not in h, f"{h['host']}: {h.get('no_io_reason')}")
        steps = h.get("steps") or []
        label = f"host {h['host']}" + (f" ({h['process'].get('role')})" if h.get("process") else "")
        lines.append(f"{label}: {len(h['files'])} files, {len(steps)} steps"
                     + (f", input wait {h['summary'].get('input_wait_pct')}%" if h.get("summary") else ""))
        for n in h.get("notes") or []:
            lines.append(f"  note: {n}")
        if h.get("verdict"):   # null for a PyTorch run's worker processes
            v = h["verdict"]
            lines.append(f"  verdict: bound={v.get('bound')} input_wait_share={v.get('input_wait_share')} "
                         f"wait_breakdown={v.get('wait_breakdown')}")
            lines.append(f"  advice: {v.get('advice')}")
    if bound is not None:
        verdicts = [h["verdict"] for h in hosts if h.get("verdict")]
        expect(len(verdicts) == 1, f"{len(verdicts)} verdicts in the report, not the job's one")
        v = verdicts[0]
        lines.append(f"verdict expected: {bound}; got: {v.get('bound')} "
                     f"(input wait {100 * (v.get('input_wait_share') or 0):.1f}% of step time)")
        want = (bound,) if isinstance(bound, str) else bound
        expect(v.get("bound") in want, f"the verdict is {v.get('bound')!r}, not {bound!r}: {v.get('advice')}")
    caps = tab_captures(logdir)
    groups: dict[str, list[str]] = {}
    for cap in caps:
        for ln in cap["lanes"]:
            groups.setdefault(ln["group"], []).append(ln["name"])
        for m in cap.get("messages") or []:
            lines.append(f"  tab message: {m}")
    lines.append("tab lanes: " + ", ".join(f"{g} {len(v)}" for g, v in sorted(groups.items())))
    if groups.get("device"):
        lines.append("  device lanes: " + "; ".join(groups["device"][:6]))
    lines.append("  I/O lanes: " + "; ".join(groups.get("io", [])[:6]))
    expect(bool(groups.get("io")), "no I/O lane in the tab")
    expect(sum(c["io"]["events"] for c in caps) > 0, "no I/O event in the tab")
    if device == "cuda":
        gpu = [n for n in groups.get("device", []) if "GPU" in n.upper() or "STREAM" in n.upper()]
        expect(bool(gpu), f"no GPU lane in the tab (device lanes: {groups.get('device')})")
    return lines


# ------------------------------------------------------------------ the check


def run_job(name: str, work: Path, spec: dict[str, Any], env: dict[str, str], timeout: float) -> dict[str, Any]:
    spec = dict(spec, result=str(work / f"{name}.result.json"))
    spec_path = work / f"{name}.spec.json"
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", name, "--spec", str(spec_path)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise CheckFailed(f"the {name} job failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(Path(spec["result"]).read_text())


def tf_importable(env: dict[str, str]) -> tuple[bool, str]:
    proc = subprocess.run([sys.executable, "-c", "import tensorflow as tf; print(tf.__version__)"],
                          capture_output=True, text=True, timeout=300, env=env)
    return proc.returncode == 0, (proc.stdout.strip() or proc.stderr.strip().splitlines()[-1:] or [""])[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default=os.environ.get("DEV", "cuda"),
                    help="where the jobs compute (default: $DEV, else cuda)")
    ap.add_argument("--out", help="where the outputs go (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the outputs (always kept with --out)")
    ap.add_argument("--quick", action="store_true", help="fewer images and steps (the CPU test)")
    ap.add_argument("--only", choices=("torch", "compare", "jax", "tf"), action="append",
                    help="run only these jobs (compare: the naive loader against its tuned twin)")
    ap.add_argument("--child", choices=("torch", "compare", "jax", "tf"), help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)

    t0 = time.monotonic()
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="tbio-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    device = args.device
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    if device == "cpu":
        env.update(JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="")
    import tb_iotrace as tbio

    print(f"tb_iotrace {tbio.__version__} from {Path(tbio.__file__).parent}; python {sys.version.split()[0]}; "
          f"device {device}; outputs in {work}")
    # the window opens after SKIP steps, and the workers read prefetch 2 batches of 8 each ahead:
    # enough images that they still read inside it (2 workers on the CPU: 5 + 10 + 4 < 24 batches)
    n_images, steps = (192, 10) if args.quick else (512, 12)
    jobs = args.only or ["torch", "compare", "jax", "tf"]
    failed: list[str] = []
    for name in jobs:
        t = time.monotonic()
        try:
            if name == "torch":
                paths = make_images(work / "images", n_images)
                res = run_job("torch", work, {"out": str(work / "torch"), "paths": paths, "device": device,
                                              "steps": steps}, env, timeout=900)
                print(f"== PyTorch {res['torch']} (CUDA available: {res['cuda']}): "
                      f"{len(res['written'])} trace(s)")
                for why in res["hooks_off"]:
                    print(f"  hook off: {why}")
                if device == "cuda":
                    expect(res["cuda"], "torch sees no CUDA device")
                # the tuned twin: not input-bound, on the GPU and on the CPU alike
                lines = look("torch", str(work / "torch"), device, paths, exact=False, bound="not input")
            elif name == "compare":
                paths = make_jpegs(work / "jpegs", 256 if args.quick else 3000)
                res = run_job("compare", work, {"out": str(work / "compare"), "paths": paths, "device": device,
                                                "steps": steps}, env, timeout=900)
                rates, workers = res["steps_per_s"], res["workers"]
                print(f"== PyTorch {res['torch']}: naive loader (2 workers, no pin_memory) against its tuned twin "
                      f"({workers['tuned']} workers, pin_memory on CUDA, persistent workers)")
                # on the GPU the naive loader starves the step (25% of the step, 1.7x from
                # tuning); on the CPU run the sleep standing for the GPU hides it, so no bound is asserted
                lines = look("compare", str(work / "compare"), device, paths, exact=False,
                             bound=("input", "partly input") if device == "cuda" else None)
                v = next(h["verdict"] for h in hosts_of(report_json(str(work / "compare"))) if h.get("verdict"))
                change = v.get("expected_step_time_change")
                predicted = 1 / (1 + change) if change is not None and change > -1 else None
                measured = rates["tuned"] / rates["naive"]
                lines.append(f"steps/s: naive {rates['naive']:.1f}, tuned {rates['tuned']:.1f}: measured speedup "
                             f"{measured:.2f}x; the naive verdict's change ({v.get('change')!r}) predicts "
                             + (f"{predicted:.2f}x" if predicted else "nothing"))
                if device == "cuda":
                    expect(bool(v.get("change")), f"the input-bound verdict names no change: {v.get('advice')}")
            elif name == "jax":
                paths = make_arrays(work / "arrays")
                res = run_job("jax", work, {"out": str(work / "jax"), "paths": paths, "device": device},
                              env, timeout=600)
                hook = res["hook"]
                print(f"== JAX {res['jax']} on {res['platform']}: jaxlib {hook.get('jaxlib')} "
                      f"({os.path.basename(hook.get('library') or '?')}) checks {hook.get('check')}; "
                      f"table {hook.get('table')}, registered {hook.get('registered')}")
                if device == "cuda":
                    expect(res["platform"] == "gpu", f"jax runs on {res['platform']}, not on the GPU")
                expect(bool(hook.get("registered")), "tb_iotrace did not register with this jaxlib")
                lines = look("jax", str(work / "jax"), device, paths, exact=True)
            else:
                ok, version = tf_importable(env)
                if not ok:
                    print(f"== TensorFlow: not importable on this machine ({version}): skipped")
                    continue
                paths = make_arrays(work / "arrays")
                res = run_job("tf", work, {"out": str(work / "tf"), "paths": paths, "device": device},
                              env, timeout=600)
                print(f"== TensorFlow {res['tensorflow']} ({res['gpus']} GPU(s) visible)")
                lines = look("tf", str(work / "tf"), device, paths, exact=True)
            for line in lines:
                print("  " + line)
            print(f"  {name}: OK ({time.monotonic() - t:.1f} s)")
        except Exception as exc:
            failed.append(name)
            detail = str(exc) if isinstance(exc, CheckFailed) else traceback.format_exc()
            print(f"  {name}: FAILED ({time.monotonic() - t:.1f} s): {detail}")
    print(f"gpu_check: {len(jobs) - len(failed)} of {len(jobs)} jobs passed"
          + (f", failed: {', '.join(failed)}" if failed else "") + f" in {time.monotonic() - t0:.0f} s")
    if not (args.out or args.keep):
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
