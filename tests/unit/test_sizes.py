"""tb_iotrace.base.sizes: bytes in binary units, whole bytes below 1 KiB, TiB the largest."""
from __future__ import annotations

from tb_iotrace.base.sizes import human_bytes


def test_units_step_at_1024():
    assert human_bytes(0) == "0 B" and human_bytes(1023) == "1023 B"
    assert human_bytes(1024) == "1.0 KiB" and human_bytes(1536) == "1.5 KiB"
    assert human_bytes(5 << 20) == "5.0 MiB" and human_bytes(3 << 30) == "3.0 GiB"
    assert human_bytes(2 << 40) == "2.0 TiB" and human_bytes(4096 << 40) == "4096.0 TiB"
    assert human_bytes(-2048) == "-2.0 KiB"
