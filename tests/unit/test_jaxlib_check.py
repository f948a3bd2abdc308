"""How a jaxlib checks the size of the profiler table, read from its bytes
(tb_iotrace/recording/jaxlib_check.py): on the jaxlib installed here (its machine code compares
exactly with 80, as every release up to 0.10.2 does) and on small synthetic ELF objects that
carry the two message forms ("expected " and "expected at least ") and the comparisons x86-64
and AArch64 compilers emit for an exact and a minimum check."""
from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

import pytest

from tb_iotrace.base.frameworks import JAXLIB_CHECKS_READ, release
from tb_iotrace.recording.jaxlib_check import MESSAGE, TableCheck, read_table_check, table_size_for, with_known_size

EXACT = MESSAGE + b" \x00"
AT_LEAST = MESSAGE + b" at least \x00"
CTOR = b"_ZN3xla8profiler12PluginTracerC2EPK19PLUGIN_Profiler_ApiRKN10tensorflow14ProfileOptionsE"
TEXT_ADDR = 0x401000

# x86-64 prologues as clang emits them (jaxlib 0.10.2: test %rsi; je; mov %rsi,%rbx; then the compare)
X86_HEAD = bytes.fromhex("55 4889e5 4156 53 4881ec20020000 4885f6 0f844f010000 4889f3")
ARM_HEAD = [0xD10343FF, 0xA90B7BFD, 0xB4000461, 0xF9400028, 0xAA0103F4]


def arm(words: list[int]) -> bytes:
    return b"".join(struct.pack("<I", w) for w in words)


def elf(code: bytes, rodata: bytes, machine: int = 62, symbols: tuple[bytes, ...] = (CTOR,),
        symtab: bool = True) -> bytes:
    """A minimal little-endian ELF64 object: .text holding ``code`` at TEXT_ADDR, .rodata, and
    (``symtab``) a symbol table whose ``symbols`` all point at the code."""
    strtab = b"\x00" + b"".join(s + b"\x00" for s in symbols)
    syms = b"\x00" * 24
    at = 1
    for s in symbols:
        syms += struct.pack("<IBBHQQ", at, 0x12, 0, 1, TEXT_ADDR, len(code))
        at += len(s) + 1
    sections = [(b".text", 1, 0x6, TEXT_ADDR, code, 0, 0), (b".rodata", 1, 0x2, 0x500000, rodata, 0, 0)]
    if symtab:
        sections += [(b".symtab", 2, 0, 0, syms, 4, 24), (b".strtab", 3, 0, 0, strtab, 0, 0)]
    shstr = b"\x00" + b"".join(name + b"\x00" for name, *_ in sections) + b".shstrtab\x00"
    sections.append((b".shstrtab", 3, 0, 0, shstr, 0, 0))
    body, offsets = b"", []
    for _, _, _, _, data, _, _ in sections:
        offsets.append(64 + len(body))
        body += data + b"\x00" * (-len(data) % 8)
    shoff = 64 + len(body)
    header = (b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + struct.pack("<HHIQQQIHHHHHH", 3, machine, 1, 0, 0, shoff,
                                                                  0, 64, 0, 0, 64, len(sections) + 1,
                                                                  len(sections)))
    shdrs = b"\x00" * 64
    name_at = 1
    for (name, typ, flags, addr, data, link, entsize), off in zip(sections, offsets):
        shdrs += struct.pack("<IIQQQQIIQQ", name_at, typ, flags, addr, off, len(data), link, 0, 8, entsize)
        name_at += len(name) + 1
    return header + body + shdrs


@pytest.mark.parametrize("code,message,want", [
    # jaxlib 0.4.19 .. 0.10.2: cmpq $0x50,(%rsi); jne
    (X86_HEAD + bytes.fromhex("48833e50 0f8579010000"), EXACT, TableCheck("exact", 80)),
    # a minimum, as "size < 80 fails": cmpq $0x4f,(%rsi); jbe (short)
    (X86_HEAD + bytes.fromhex("48833e4f 7610"), AT_LEAST, TableCheck("at_least", 80)),
    # ... or cmpq $0x68,(%rsi); jb (near): at least 104
    (X86_HEAD + bytes.fromhex("48833e68 0f8210000000"), AT_LEAST, TableCheck("at_least", 104)),
    # the size loaded first: mov (%rsi),%rax; cmp $0x4f,%rax; ja
    (X86_HEAD + bytes.fromhex("488b06 4883f84f 7705"), AT_LEAST, TableCheck("at_least", 80)),
    # a signed compare first (not the size check: jl), then the size check
    (X86_HEAD + bytes.fromhex("4883f801 7c02") + bytes.fromhex("48833e50 7505"), EXACT, TableCheck("exact", 80)),
    # [%rbx + 0] and a 32-bit immediate
    (X86_HEAD + bytes.fromhex("48837b0050 7505"), EXACT, TableCheck("exact", 80)),
    (X86_HEAD + bytes.fromhex("48813e00010000 7405"), EXACT, TableCheck("exact", 256)),
])
def test_x86_checks(code: bytes, message: bytes, want: TableCheck) -> None:
    assert read_table_check(elf(code, b"junk\x00" + message + b"more\x00")) == want


@pytest.mark.parametrize("words,message,want", [
    # jaxlib 0.10.2 aarch64: ldr x8,[x1]; mov x20,x1; cmp x8,#0x50; b.ne
    ([0xF101411F, 0x54000581], EXACT, TableCheck("exact", 80)),
    ([0xF101411F, 0xAA0003F3, 0x54000583], AT_LEAST, TableCheck("at_least", 80)),   # b.lo
    ([0xF1019D1F, 0x54000589], AT_LEAST, TableCheck("at_least", 104)),              # cmp #0x67; b.ls
    ([0xF100051F, 0x5400004B, 0xF101411F, 0x54000581], EXACT, TableCheck("exact", 80)),  # b.lt first: skipped
])
def test_arm_checks(words: list[int], message: bytes, want: TableCheck) -> None:
    assert read_table_check(elf(arm(ARM_HEAD + words), message, machine=183)) == want


def test_no_plugin_tracer() -> None:
    """jaxlib 0.4.18 and older, or a library of jaxlib's that is not the one with the tracer."""
    assert read_table_check(elf(X86_HEAD, b"hello\x00")) == TableCheck("none")
    assert read_table_check(b"not an ELF file at all") == TableCheck("none")


@pytest.mark.parametrize("blob,detail", [
    (elf(X86_HEAD + bytes.fromhex("48833e50 0f85790100"), AT_LEAST), "message says at_least, code compares exact"),
    (elf(X86_HEAD + bytes.fromhex("48833e4f 7610"), EXACT), "message says exact, code compares at_least"),
    (elf(X86_HEAD, MESSAGE + b" between 80 and 104\x00"), "message 'between 80 and 104'"),
    (elf(X86_HEAD + bytes.fromhex("48833e50 7505"), EXACT, symtab=False), "no PluginTracer symbol"),
    (elf(X86_HEAD + bytes.fromhex("48833e50 7505"), EXACT, symbols=(CTOR + b".cold",)), "no PluginTracer symbol"),
    (elf(X86_HEAD + b"\x90" * 40, EXACT), "no comparison found"),
    (elf(X86_HEAD + bytes.fromhex("48833e50 7505"), EXACT, machine=40), "machine 40"),
    (elf(X86_HEAD + bytes.fromhex("48833e02 7505"), EXACT), "implausible size 2"),
    (b"\x7fELF\x02\x01" + b"\x00" * 40 + EXACT, "exact check, size unread"),
    (b"\x7fELF\x01\x01" + b"\x00" * 80 + EXACT, "not a little-endian 64-bit ELF object"),
])
def test_unknown_checks(blob: bytes, detail: str) -> None:
    """Anything but a message and a comparison that agree is a check tb_iotrace cannot read:
    never a guess."""
    got = read_table_check(blob)
    assert got.kind == "unknown" and got.size is None
    assert detail in got.detail, got.detail
    assert table_size_for(got, (80, 104)) is None


@pytest.mark.parametrize("message,version,want", [
    (EXACT, (0, 10, 2), TableCheck("exact", 80)), (EXACT, (0, 4, 19), TableCheck("exact", 80)),
    (AT_LEAST, (0, 11, 2), TableCheck("at_least", 80)),
    (EXACT, (0, 10, 3), None), (EXACT, (0, 11, 2), None), (AT_LEAST, (0, 10, 2), None),
    (AT_LEAST, (0, 12, 0), None),
])
def test_stripped_library_takes_the_size_of_the_wheels_read(message: bytes, version: tuple[int, ...],
                                                            want: TableCheck | None) -> None:
    """A build without a symbol table (a stripped one): the message's form is read from the
    library itself; the size is the one that form had in the wheels of that very release, and
    none for a release not read (one warning then, the job untouched)."""
    got = read_table_check(elf(X86_HEAD + bytes.fromhex("48833e50 7505"), message, symtab=False))
    assert got.kind == "unknown" and got.form == ("exact" if message == EXACT else "at_least")
    done = with_known_size(got, version, JAXLIB_CHECKS_READ)
    if want is None:
        assert done == got
    else:
        assert (done.kind, done.size) == (want.kind, want.size)
        assert "size as in the wheels of jaxlib" in done.describe() and "no PluginTracer symbol" in done.describe()
    # a check read whole, or one whose message was not understood, is never completed
    assert with_known_size(TableCheck("exact", 88), version, JAXLIB_CHECKS_READ) == TableCheck("exact", 88)
    odd = TableCheck("unknown", detail="message 'between'")
    assert with_known_size(odd, version, JAXLIB_CHECKS_READ) == odd


@pytest.mark.parametrize("code", [X86_HEAD + b"\x90" * 40,                       # no comparison found
                                  X86_HEAD + bytes.fromhex("48833e02 7605"),        # implausible size
                                  X86_HEAD + bytes.fromhex("48833e50 7505")])       # code says exact
def test_code_not_followed_on_a_release_read(code: bytes) -> None:
    """jaxlib 0.11.2's message says "at least" (read on a CUDA machine) and it took the
    80-byte table; were its code one this reader does not follow, that release still registers,
    and a later one does not."""
    got = read_table_check(elf(code, AT_LEAST))
    assert got.kind == "unknown" and got.form == "at_least"
    assert table_size_for(with_known_size(got, (0, 11, 2), JAXLIB_CHECKS_READ), (80, 104)) == 80
    assert with_known_size(got, (0, 11, 3), JAXLIB_CHECKS_READ) == got


@pytest.mark.parametrize("check,size", [
    (TableCheck("exact", 80), 80), (TableCheck("exact", 104), 104), (TableCheck("exact", 88), None),
    (TableCheck("at_least", 80), 80), (TableCheck("at_least", 56), 80), (TableCheck("at_least", 81), 104),
    (TableCheck("at_least", 105), None), (TableCheck("none"), None), (TableCheck("unknown", detail="x"), None),
])
def test_table_chosen(check: TableCheck, size: int | None) -> None:
    """The smallest implemented table the check passes: the 10-member one wherever it is taken."""
    assert table_size_for(check, (80, 104)) == size


def installed_library() -> Path:
    import jaxlib  # imports no C++ of jaxlib

    pkg = Path(jaxlib.__file__).parent
    libs = [p for name in ("libjax_common.so", "xla_extension.so") if (p := pkg / name).is_file()]
    assert libs, f"no jaxlib library in {pkg}"
    return libs[0]


def test_installed_jaxlib() -> None:
    """The jaxlib of this venv (requirements-dev.txt: 0.10.2) compares exactly with 80, as its
    machine code shows (docs/jax.md); read from an mmap of the library, not a copy."""
    import jaxlib.version

    lib = installed_library()
    with open(lib, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        got = read_table_check(m)
    assert release(jaxlib.version.__version__)[:3] <= (0, 10, 2), "a newer jaxlib: read its check again"
    assert got == TableCheck("exact", 80)
    assert table_size_for(got, (80, 104)) == 80


@pytest.mark.jax
def test_loaded_check_finds_the_library_of_the_running_jaxlib() -> None:
    """``loaded_check`` reads the library the process has mapped (here after ``import jax``)."""
    import jax  # noqa: F401

    from tb_iotrace.recording import jax as jaxhook

    check, path = jaxhook.loaded_check()
    assert os.path.samefile(path, installed_library())
    assert check == TableCheck("exact", 80)


def test_command_line_reads_each_library(tmp_path: Path, capsys) -> None:
    """``python -m tb_iotrace.recording.jaxlib_check`` (how docs/jax.md reads a new release)."""
    from tb_iotrace.recording.jaxlib_check import main

    lib = tmp_path / "libjax_common.so"
    lib.write_bytes(elf(X86_HEAD + bytes.fromhex("48833e4f 7610"), AT_LEAST))
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    assert main([str(lib), str(empty), str(tmp_path / "gone.so")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{lib}: a table of at least 80 bytes"
    assert out[1].startswith(f"{empty}: cannot read") and out[2].startswith(f"{tmp_path / 'gone.so'}: cannot read")


def test_library_paths_from_the_maps_or_the_package(tmp_path: Path, monkeypatch) -> None:
    """The jaxlib libraries this process mapped, the plugin tracer's first; the package's own
    when /proc/self/maps cannot be read or lists none of them."""
    from tb_iotrace.recording import jax as jaxhook

    lib = installed_library()
    pkg = os.path.realpath(lib.parent)
    maps = tmp_path / "maps"
    maps.write_text(f"7f00-7f01 r-xp 00000000 08:01 1 {pkg}/_hlo.so\n"
                    f"7f01-7f02 r-xp 00000000 08:01 2 {os.path.realpath(lib)}\n"
                    "7f02-7f03 r-xp 00000000 08:01 3 /usr/lib/libc.so.6\n"
                    "7f03-7f04 rw-p 00000000 00:00 0\n")
    monkeypatch.setattr(jaxhook, "MAPS", str(maps))
    assert jaxhook.library_paths() == [os.path.realpath(lib), f"{pkg}/_hlo.so"]
    monkeypatch.setattr(jaxhook, "MAPS", str(tmp_path / "none"))
    assert jaxhook.library_paths() == [str(Path(pkg) / lib.name)]
