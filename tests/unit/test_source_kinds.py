"""Which kind of source a file is (tb_iotrace.model.source_kinds): every file held in tests/data
is told as its kind, the tab's rule for scanned files agrees with the rule for named files, and a
corrupt or unknown file gets one clear SourceError naming it, never another exception."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tb_iotrace.model.open_source import open_source
from tb_iotrace.export import darshan_log
from tb_iotrace.model.source_kinds import (CAPTURE, DARSHAN, DARSHAN_MAGIC, KINETO, RECORD, SourceError, kind_by_head, kind_by_name,
                                           kind_of, listed_kind)
from tb_iotrace.store.logdir import scan

DATA = Path(__file__).resolve().parents[1] / "data"

# Every file held in tests/data, by path under it: its kind, or None for a file of no kind. A
# file added there without a line here fails test_every_held_file_is_listed.
HELD: dict[str, str | None] = {
    "gpu_multi_worker.xplane.pb": CAPTURE,
    "jax_gpu_h200_noio.xplane.pb": CAPTURE,
    "jax_io.xplane.pb": CAPTURE,
    "jax_plain.xplane.pb": CAPTURE,
    "ddp_rank0.pt.trace.json.gz": KINETO,
    "dlio_one_step_window.pt.trace.json.gz": KINETO,
    "h200_tuned.pt.trace.json.gz": KINETO,
    "kineto_gpu_synthetic.pt.trace.json": KINETO,
    "torch_loader.pt.trace.json.gz": KINETO,
    "run_v1/plugins/iotrace/vm.21889.json": RECORD,
    "run_v1/plugins/iotrace/vm.21889.npz": None,       # a record's trace: opened through its record
    "torch_loader.json": RECORD,                        # JSON, so record-shaped: opening it says it is none
    "darshan_record_ids.tsv": None,
    "packed_answer.bin": None,
    "make_jax_captures.py": None,
    "make_torch_trace.py": None,
    "README.md": None,
    "LICENSE-Apache-2.0.txt": None,
}
# The report snapshots: JSON documents (record-shaped by their head) and text.
SNAPSHOT_KIND = {".json": RECORD, ".txt": None}
# JSON files whose head says record but which are none: open_source names them.
NOT_RECORDS = {"torch_loader.json"}


def held_files() -> list[str]:
    return sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*") if p.is_file())


def expected(rel: str) -> str | None:
    if rel.startswith("snapshots/"):
        return SNAPSHOT_KIND[Path(rel).suffix]
    return HELD[rel]


def test_every_held_file_is_listed() -> None:
    for rel in held_files():
        assert rel.startswith("snapshots/") or rel in HELD, f"tests/data/{rel}: give it its kind in HELD"
    assert all((DATA / rel).is_file() for rel in HELD)


@pytest.mark.parametrize("rel", held_files())
def test_each_held_file_is_its_kind(rel: str) -> None:
    path = DATA / rel
    want = expected(rel)
    if want is None:
        with pytest.raises(SourceError, match="unknown format") as err:
            kind_of(path)
        assert str(err.value).startswith(str(path) + ": ")
        return
    assert kind_of(path) == want
    assert kind_of(str(path)) == want


@pytest.mark.parametrize("rel", [r for r, k in HELD.items() if k in (CAPTURE, KINETO, RECORD)])
def test_opened_sources_are_of_that_kind(rel: str) -> None:
    """open_source opens a held file as the kind the rule says (its Source's kind), or, for a
    JSON that is no record, says so in one line."""
    path = DATA / rel
    if rel in NOT_RECORDS:
        with pytest.raises(SourceError, match="not a tb_iotrace run record"):
            open_source(str(path))
        return
    sources = open_source(str(path))
    assert sources and {s.kind for s in sources} == {kind_of(path)}


def test_the_tabs_rule_agrees_for_every_scanned_file(tmp_path: Path) -> None:
    """A logdir of every held source: each file the scan lists has, by its name alone
    (listed_kind, what the tab asks per request), the kind its content gives."""
    (tmp_path / "plugins" / "profile" / "s").mkdir(parents=True)
    (tmp_path / "t").mkdir()
    for rel, kind in HELD.items():
        if kind == CAPTURE:
            shutil.copyfile(DATA / rel, tmp_path / "plugins" / "profile" / "s" / Path(rel).name)
        elif kind == KINETO:
            shutil.copyfile(DATA / rel, tmp_path / "t" / Path(rel).name)
    shutil.copytree(DATA / "run_v1" / "plugins", tmp_path / "plugins", dirs_exist_ok=True)
    runs, truncated = scan(str(tmp_path), records=True, kineto=True)
    listed = [p for r in runs for p in r.hosts.values()]
    assert not truncated and len(listed) == sum(1 for k in HELD.values() if k in (CAPTURE, KINETO)) + 1
    for p in listed:
        assert listed_kind(p) == kind_of(p), p
    assert {listed_kind(p) for p in listed} == {CAPTURE, KINETO, RECORD}


def test_a_darshan_log_is_named_with_the_command_that_converts_it(tmp_path: Path) -> None:
    log = tmp_path / "job.darshan"
    r = subprocess.run([sys.executable, "-m", "tb_iotrace", "export", str(DATA / "run_v1"), "--format", "darshan-log",
                        "-o", str(log)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert kind_by_name(log) == kind_of(log) == DARSHAN and DARSHAN_MAGIC == darshan_log.MAGIC
    with pytest.raises(SourceError, match="a Darshan log.*tb-iotrace import-darshan"):
        open_source(str(log))
    # the magic in either byte order (a log written on a big-endian machine); not with the version digit gone
    head = log.read_bytes()[:16]
    assert kind_by_head(head[:8] + head[8:16][::-1]) == DARSHAN
    assert kind_by_head(b"x" + head[1:]) is None
    renamed = log.rename(tmp_path / "job.log")          # told by its header without its name
    assert kind_by_name(renamed) is None and kind_of(renamed) == DARSHAN


@pytest.mark.parametrize("name,body", [
    ("empty.bin", b""),
    ("noise.bin", bytes(range(1, 256)) * 4),
    ("text.log", b"step 1 took 3 s\n"),
    ("notes.txt", b"\n  a text whose first byte is a capture's\n"),
    ("short.log", b"3.41\0\0\0\0\x37"),              # a Darshan header cut before its magic ends
])
def test_an_unknown_file_gets_one_line(tmp_path: Path, name: str, body: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(body)
    with pytest.raises(SourceError) as err:
        kind_of(path)
    assert str(err.value) == f"{path}: unknown format (expected a logdir, a run directory, a .xplane.pb capture " \
                             f"or a tb_iotrace run record .json)"
    with pytest.raises(SourceError, match="unknown format"):
        open_source(str(path))


def test_a_file_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot read"):
        kind_of(tmp_path / "gone.json")
    with pytest.raises(SourceError, match="cannot read"):
        kind_of(tmp_path)                    # a folder where a file was expected


@pytest.mark.parametrize("rel", ["jax_io.xplane.pb", "torch_loader.pt.trace.json.gz",
                                 "run_v1/plugins/iotrace/vm.21889.json"])
def test_a_corrupt_file_of_each_kind_is_a_source_error(tmp_path: Path, rel: str) -> None:
    """Cut in half, each kind is still told by its name or head, and reading it raises
    SourceError naming the file (never a decoder's own exception)."""
    src = DATA / rel
    path = tmp_path / src.name
    raw = src.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    assert kind_of(path) == HELD[rel]
    with pytest.raises(SourceError) as err:
        for s in open_source(str(path)):
            s.io_trace()
            s.files()
    assert str(path) in str(err.value)


def test_darshans_own_logs_are_told_by_their_header() -> None:
    """The logs PyDarshan ships (written by Darshan itself, not by our exporter) are Darshan
    logs by their first bytes alone."""
    darshan = pytest.importorskip("darshan")
    logs = sorted((Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan"))
    assert logs
    for log in logs:
        assert kind_by_head(log.read_bytes()[:256]) == DARSHAN, log.name
