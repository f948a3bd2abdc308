"""The map-style dataset the PyTorch test jobs share: sample i is file i read whole (one open,
one read to EOF, one close, in whichever process loads it), its first ``head`` bytes as floats."""
from __future__ import annotations

import torch
from torch.utils.data import Dataset


class Files(Dataset):
    def __init__(self, paths: list[str], head: int = 64) -> None:
        self.paths = paths
        self.head = head

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        with open(self.paths[i], "rb") as fh:
            data = fh.read()
        return torch.frombuffer(bytearray(data[: self.head]), dtype=torch.uint8).float()
