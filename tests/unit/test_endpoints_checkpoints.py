"""The tab's /checkpoints (tb_iotrace.plugin.endpoints.checkpoints) on analysis answers as the
findings child gives them: phases on the view's clock, one table per save across the hosts
with the straggler marked, nothing for hosts without checkpoints."""
from __future__ import annotations

from types import SimpleNamespace

from tb_iotrace.plugin.endpoints import checkpoints as impl

MiB = 1 << 20
S = 1_000_000_000
T0 = 1_700_000_000 * S


def _phase(start_s: float, finish_s: float, busy_s: float) -> dict:
    return {"kind": "save", "start_ns": T0 + int(start_s * S), "end_ns": T0 + int(finish_s * S),
            "finish_ns": T0 + int(finish_s * S), "bytes": 8 * MiB, "files": 1, "io_time_s": busy_s / 2,
            "fsync_time_s": busy_s / 2, "blocking_ns": int((finish_s - start_s) * S), "background_ns": 0,
            "path": "/ck/x.distcp", "source": "shape", "fs_type": "ext4", "mount_point": "/"}


def _view(hosts: list[str]) -> SimpleNamespace:
    parts = [SimpleNamespace(host=h, offset=k * 1000, capture=SimpleNamespace(path=f"/logs/{h}.json",
                                                                           profile_start_ns=T0))
             for k, h in enumerate(hosts)]
    return SimpleNamespace(parts=parts)


def _answers(ranks: dict[str, tuple[int | None, list[dict]]]) -> dict[str, dict]:
    return {f"/logs/{h}.json": {"findings": [], "checkpoints": ph, "rank": r,
                                "training": {"time_ns": 10 * S, "steps": None, "basis": "data I/O span"}}
            for h, (r, ph) in ranks.items()}


def test_two_ranks_one_late(monkeypatch):
    got = _answers({"a.1": (0, [_phase(1.0, 1.05, 0.04)]), "a.2": (1, [_phase(1.0, 1.6, 0.6)])})
    monkeypatch.setattr(impl, "findings_for_all", lambda paths: got)
    body = impl.checkpoints_impl(_view(["a.1", "a.2"]))
    assert body["pending"] == 0 and body["hosts"] == 2 and body["message"] == ""
    a, b = body["phases"]
    assert (a["host"], a["start"], a["finish"]) == ("a.1", 1 * S, int(1.05 * S))
    assert (b["host"], b["rank"], b["start"]) == ("a.2", 1, 1 * S + 1000)        # the host's offset on the clock
    (save,) = body["saves"]
    assert save["straggler"] == "a.2" and [r["rank"] for r in save["ranks"]] == [0, 1]
    assert save["ranks"][1]["finish"] - save["ranks"][0]["finish"] == int(0.55 * S) + 1000
    assert body["straggler"]["host"] == "a.2" and body["straggler"]["evidence"]["rank"] == 1


def test_hosts_without_checkpoints_and_pending(monkeypatch):
    got = _answers({"a.1": (None, [])})
    monkeypatch.setattr(impl, "findings_for_all", lambda paths: {**got, "/logs/a.2.json": None})
    body = impl.checkpoints_impl(_view(["a.1", "a.2"]))
    assert body["phases"] == [] and body["saves"] == [] and body["straggler"] is None and body["pending"] == 1
    monkeypatch.setattr(impl, "findings_for", lambda path: got[path])
    body = impl.checkpoints_impl(_view(["a.1"]))
    assert body["pending"] == 0 and body["message"] == "No checkpoint saves or loads in this capture."
