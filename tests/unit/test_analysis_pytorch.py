"""The PyTorch advice of the findings (tb_iotrace.analysis.pytorch) for the cases a CPU-only
machine cannot produce for real (a GPU run's pin_memory) and the choice between the causes;
tests/integration/test_torch_findings.py covers real torch loops end to end."""
from __future__ import annotations

import numpy as np

from tb_iotrace.analysis.pytorch import TorchRun, input_bound_advice, worker_starts, worker_stops

MS = 10**9     # picoseconds


def loader(**kw) -> dict:
    d = {"id": 1, "num_workers": 2, "prefetch_factor": 2, "persistent_workers": False, "pin_memory": False,
         "batch_size": 8, "start_method": "fork", "iterator": "_MultiProcessingDataLoaderIter", "worker_pids": [11, 12],
         "epochs": [], "worker_stops": []}
    d.update(kw)
    return d


def advice(run: TorchRun, **kw):
    args = {"wait_ps": 100 * MS, "main_io_ps": 0, "worker_io_ps": 60 * MS, "restart_wait_ps": 0, "bursty": False,
            "io_share_floor": 0.2}
    args.update(kw)
    return input_bound_advice(run, **args)


def test_pin_memory_only_on_gpu_runs_without_it() -> None:
    for gpu, pin, said in ((True, False, True), (False, False, False), (True, True, False)):
        _, sug, ev = advice(TorchRun(gpu=gpu, loaders=[loader(pin_memory=pin)]))
        assert ("pin_memory=True" in sug) is said, (gpu, pin, sug)
        assert ev["pin_memory"] is pin
    _, sug, _ = advice(TorchRun(gpu=True, loaders=[loader(num_workers=0, prefetch_factor=None)]), main_io_ps=60 * MS,
                       worker_io_ps=0)
    assert "num_workers=N" in sug and "pin_memory=True" in sug


def test_the_cause_picks_the_knob() -> None:
    run = TorchRun(cpus=8, loaders=[loader()])
    stmt, sug, ev = advice(run)
    assert ev["cause"] == "workers-behind" and sug.startswith("Most steps wait")
    assert "raise num_workers (now 2; 8 cores usable)" in sug and "2 x 2 = 4 batches" in sug
    assert "their reads covered 60% of the wait" in stmt
    _, sug, ev = advice(run, bursty=True)
    assert ev["cause"] == "workers-behind-bursts" and sug.index("prefetch_factor") < sug.index("num_workers")
    stmt, sug, ev = advice(run, worker_io_ps=5 * MS)
    assert "decoding" in stmt and "collate_fn" in sug
    stmt, sug, ev = advice(run, restart_wait_ps=50 * MS)
    assert ev["cause"] == "worker-restarts" and "persistent_workers=True" in sug and "50%" in stmt
    _, _, ev = advice(run, restart_wait_ps=49 * MS)
    assert ev["cause"] == "workers-behind"
    # no DataLoader noted (an older trace): who read during the wait decides
    _, sug, ev = advice(TorchRun(), main_io_ps=30 * MS, worker_io_ps=0)
    assert ev["cause"] == "main-process-loading" and "num_workers" not in ev


def test_worker_starts_and_stops_on_the_capture_clock() -> None:
    t0 = 1_000_000_000_000
    epochs = [{"start_ns": t0 + 10_000_000, "end_ns": t0 + 12_000_000, "new_iterator": True, "workers_started": [1, 2]},
              {"start_ns": t0 + 50_000_000, "end_ns": t0 + 51_000_000, "new_iterator": False, "workers_started": []}]
    stops = [{"start_ns": t0 + 40_000_000, "end_ns": t0 + 45_000_000, "workers": [1, 2]}]
    run = TorchRun(loaders=[loader(epochs=epochs, worker_stops=stops)], start_ns=t0)
    # waits (ps since t0): one before the epoch's iter() ended, the first after it ends at 30 ms
    ws, we = np.array([5 * MS, 20 * MS, 35 * MS]), np.array([8 * MS, 30 * MS, 46 * MS])
    (s,) = worker_starts(run, (ws, we))
    assert s["cost_s"] == 0.020 and s["iter_s"] == 0.002 and s["first_wait_ps"] == 10 * MS and s["workers"] == 2
    (st,) = worker_stops(run)
    assert st["cost_s"] == 0.005 and st["start_ps"] == 40 * MS
