"""A dataset read once per epoch is not redundant-reads; a file read twice within one epoch is
(tb_iotrace.analysis.epochs). Before, a PyTorch job reading its 64 files once per epoch for 12
epochs got a redundant-reads warning, with the TF-only advice Dataset.cache()."""
from __future__ import annotations

from tb_iotrace.analysis import analyze

from test_analysis import MOUNTINFO, make_trace

MiB = 1 << 20
TORCH_CODE = "/venv/lib/python3.12/site-packages/torch/utils/data/dataloader.py"


def _read_whole(path: str, t: int) -> list[tuple]:
    """Open, read 1 MiB in 4 reads, close: 1 ms."""
    rows = [("open", path, -1, 3, t, 10_000)]
    rows += [("pread64", path, k * (MiB // 4), MiB // 4, t + 20_000 + k * 200_000, 150_000) for k in range(4)]
    return rows + [("close", path, -1, 0, t + 900_000, 5_000)]


def _job(epochs: int, twice_in_epoch: bool, files: int = 8) -> list[tuple]:
    t, rows = 10**18, [("open", TORCH_CODE, -1, 3, 10**18 - 10**9, 10_000),
                       ("read", TORCH_CODE, 0, 4096, 10**18 - 10**9 + 20_000, 10_000)]
    for _ in range(epochs):
        for i in range(files):
            for _ in range(2 if twice_in_epoch else 1):
                rows += _read_whole(f"/data/f{i}.npz", t)
                t += 10**6
        t += 10**8                 # the epoch's end
    return rows


def test_once_per_epoch_is_not_redundant() -> None:
    a = analyze(trace=make_trace(_job(12, False)), mountinfo=MOUNTINFO)
    assert a is not None and "redundant-reads" not in a.ids


def test_twice_within_an_epoch_is_redundant_in_pytorch_terms() -> None:
    """Each file read twice in a row in each of 3 epochs: the sweeps overlap, so no epochs are
    seen: 6 reads of each file, 5 read again. The job loaded torch's DataLoader: the advice is
    PyTorch's, not Dataset.cache()."""
    a = analyze(trace=make_trace(_job(3, True)), mountinfo=MOUNTINFO)
    f = a.finding("redundant-reads")
    assert f is not None and f["evidence"]["files"] == 8 and f["evidence"]["ratio"] == 6.0
    assert "Dataset.cache()" not in f["suggestion"] and "persistent_workers" in f["suggestion"]


def test_one_file_alone_read_again_stays_redundant() -> None:
    """A single file scanned 3 times: nothing tells its passes from epochs: redundant."""
    a = analyze(trace=make_trace(_job(3, False, files=1)), mountinfo=MOUNTINFO)
    assert a.finding("redundant-reads")["evidence"]["ratio"] == 3.0
