"""How a jaxlib checks the size of a plugin's profiler table, read from its shared object.

jaxlib's ``PluginTracer`` (the tracer ``register_plugin_profiler`` installs) compares the
``struct_size`` of the plugin's ``PLUGIN_Profiler_Api`` table with a size of its own before it
uses the table; on a failed check it logs "Unexpected PLUGIN_Profiler_Api size: expected ..."
and (up to jaxlib 0.10 at least) the session then crashes on a null table. Releases up to
0.10.2 compare *exactly* with 80 (10 members); jaxlib 0.11 says "expected at least": it takes
any table of a minimum size. Which check a jaxlib makes is read here from its bytes, so that
tb_iotrace registers with any release whose check one of its tables passes, and with no other:

- the form of the check: the log message's text after "expected" (" at least " or nothing);
- the size: the comparison in the tracer's constructor (found through the symbol table):
  on x86-64 ``cmpq $imm8, (reg)`` then a conditional jump, on AArch64 ``cmp xN, #imm`` then
  ``b.cond``. An equality jump is an exact check; an unsigned ordering one is a minimum
  (``jb``/``b.lo`` fails below ``imm``, ``jbe``/``b.ls`` below ``imm + 1``).

The message and the instruction must agree; anything else is an unknown check, and the
caller leaves that jaxlib alone. Pure functions of bytes: tests feed real shared objects and
small synthetic ones alike.
"""
from __future__ import annotations

import mmap
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Union

__all__ = ["MESSAGE", "TableCheck", "read_table_check", "table_size_for", "with_known_size"]

MESSAGE = b"Unexpected PLUGIN_Profiler_Api size: expected"
# The tracer's constructors (C1/C2), mangled: xla::profiler::PluginTracer::PluginTracer(...);
# their arguments are not matched, so a new signature is still found.
CTOR_PREFIX = b"_ZN3xla8profiler12PluginTracerC"
CODE_WINDOW = 192          # bytes of the constructor searched for the comparison

Data = Union[bytes, mmap.mmap]   # what the readers search (both have find() and slices)

EM_X86_64 = 62
EM_AARCH64 = 183
SHT_SYMTAB, SHT_NOBITS, SHT_DYNSYM = 2, 8, 11
SHF_ALLOC = 0x2


@dataclass(frozen=True)
class TableCheck:
    """What a jaxlib demands of the table: ``kind`` is ``"exact"`` (``size`` exactly),
    ``"at_least"`` (``size`` or more), ``"none"`` (no plugin tracer in these bytes) or
    ``"unknown"`` (a tracer whose check could not be read; ``detail`` says what was seen, ``form``
    the message's form when it was read but the size was not: a stripped build, or code this
    reader does not follow)."""

    kind: str
    size: int | None = None
    detail: str = ""
    form: str = ""     # an unknown check whose message was read: its form ("exact"/"at_least")

    def passes(self, table_size: int) -> bool:
        if self.size is None:
            return False
        if self.kind == "exact":
            return table_size == self.size
        if self.kind == "at_least":
            return table_size >= self.size
        return False

    def describe(self) -> str:
        how = f" ({self.detail})" if self.detail else ""
        if self.kind == "exact":
            return f"a table of exactly {self.size} bytes{how}"
        if self.kind == "at_least":
            return f"a table of at least {self.size} bytes{how}"
        if self.kind == "none":
            return "no plugin profiler"
        return f"a table check tb_iotrace cannot read ({self.detail})"


def with_known_size(check: TableCheck, version: tuple[int, ...],
                    known: Iterable[tuple[str, tuple[int, ...], tuple[int, ...], int]]) -> TableCheck:
    """``check`` completed from releases read before: an unknown check whose message form was
    read but whose size was not (no symbol table, code this reader does not follow) takes the
    size the same form had in the wheels of that release (``known``: form, first, last release,
    size). Any other check is returned as it is."""
    if check.kind != "unknown" or not check.form:
        return check
    for form, lo, hi, size in known:
        if form == check.form and lo <= version[:3] <= hi:
            return TableCheck(form, size, detail=f"size as in the wheels of jaxlib {'.'.join(map(str, lo))} to "
                              f"{'.'.join(map(str, hi))} ({check.detail})")
    return check


def table_size_for(check: TableCheck, implemented: Iterable[int]) -> int | None:
    """The implemented table size ``check`` passes, the smallest one when several do (the
    oldest members are the ones every release drives); None when none does."""
    fits = sorted(s for s in implemented if check.passes(s))
    return fits[0] if fits else None


# ------------------------------------------------------------------ the message


def _message_form(buf: Data) -> str | None:
    """``"exact"``/``"at_least"`` from the log message's text, None when it is absent, or
    ``"other:<text>"`` for a wording not known."""
    at = buf.find(MESSAGE)
    if at < 0:
        return None
    end = buf.find(b"\x00", at, at + len(MESSAGE) + 64)
    tail = buf[at + len(MESSAGE): end if end >= 0 else at + len(MESSAGE) + 64]
    if tail.strip() == b"":
        return "exact"
    if tail.strip().startswith(b"at least"):
        return "at_least"
    return "other:" + tail.decode("latin-1").strip()


# ------------------------------------------------------------------ ELF


@dataclass(frozen=True)
class _Section:
    name_off: int
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    entsize: int


def _sections(buf: Data) -> tuple[int, list[_Section]]:
    """(e_machine, section headers) of a little-endian ELF64 object; ValueError otherwise."""
    if len(buf) < 64 or buf[:4] != b"\x7fELF":
        raise ValueError("not an ELF object")
    if buf[4] != 2 or buf[5] != 1:
        raise ValueError("not a little-endian 64-bit ELF object")
    machine = struct.unpack_from("<H", buf, 18)[0]
    shoff = struct.unpack_from("<Q", buf, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", buf, 0x3A)
    if shoff == 0 or shentsize < 64 or shoff + shnum * shentsize > len(buf):
        raise ValueError("no section headers")
    out = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", buf, shoff + i * shentsize)
        out.append(_Section(name, typ, flags, addr, off, size, link, entsize))
    return machine, out


def _constructors(buf: Data, sections: list[_Section]) -> list[int]:
    """File offsets of the tracer constructor's code (every symbol table is searched)."""
    found: list[int] = []
    for sym in sections:
        if sym.type not in (SHT_SYMTAB, SHT_DYNSYM) or sym.entsize != 24 or sym.link >= len(sections):
            continue
        strtab = sections[sym.link]
        s0, s1 = strtab.offset, min(strtab.offset + strtab.size, len(buf))
        names: set[int] = set()
        at = buf.find(CTOR_PREFIX, s0, s1)
        while at >= 0:
            end = buf.find(b"\x00", at, s1)
            name = buf[at:end if end >= 0 else s1]
            kind = name[len(CTOR_PREFIX):len(CTOR_PREFIX) + 2]
            if kind in (b"1E", b"2E") and not name.endswith(b".cold"):
                names.add(at - s0)
            at = buf.find(CTOR_PREFIX, at + 1, s1)
        t0, t1 = sym.offset, min(sym.offset + sym.size, len(buf))
        for name_off in names:
            key = struct.pack("<I", name_off)
            at = buf.find(key, t0, t1)
            while at >= 0:
                if (at - t0) % 24 == 0:
                    value = struct.unpack_from("<Q", buf, at + 8)[0]
                    off = _file_offset(value, sections)
                    if off is not None and off not in found:
                        found.append(off)
                at = buf.find(key, at + 1, t1)
    return found


def _file_offset(vaddr: int, sections: list[_Section]) -> int | None:
    if vaddr == 0:
        return None
    for s in sections:
        if s.flags & SHF_ALLOC and s.type != SHT_NOBITS and s.addr <= vaddr < s.addr + s.size:
            return vaddr - s.addr + s.offset
    return None


# ------------------------------------------------------------------ the comparison


def _x86_compare(code: bytes) -> tuple[str, int] | None:
    """("exact"|"at_least", size) from the first ``cmp $imm, m64/r64`` followed by a
    conditional jump, None if there is none. Instructions are not decoded one by one: the
    pattern (REX.W, opcode 0x83 or 0x81 with /7, a jump right after) is looked for at each byte."""
    for i in range(len(code) - 6):
        rex = code[i]
        if rex & 0xF8 != 0x48 or code[i + 1] not in (0x83, 0x81):
            continue
        modrm = code[i + 2]
        mod, reg, rm = modrm >> 6, (modrm >> 3) & 7, modrm & 7
        if reg != 7:
            continue
        j = i + 3
        if mod == 0 and rm in (4, 5):      # SIB or RIP-relative: not the table's first field
            continue
        if mod == 1:
            if rm == 4 or code[j] != 0:    # [reg + 0]: struct_size is the first field
                continue
            j += 1
        elif mod == 2:
            continue
        if code[i + 1] == 0x83:
            imm, j = code[j], j + 1
        else:
            if j + 4 > len(code):
                continue
            imm, j = struct.unpack_from("<I", code, j)[0], j + 4
        if j >= len(code):
            continue
        cond = code[j] & 0x0F if code[j] & 0xF0 == 0x70 else (
            code[j + 1] & 0x0F if code[j] == 0x0F and j + 1 < len(code) and code[j + 1] & 0xF0 == 0x80 else None)
        got = None if cond is None else _from_condition(
            cond, imm, {0x4: "eq", 0x5: "ne", 0x2: "lo", 0x3: "hs", 0x6: "ls", 0x7: "hi"})
        if got is not None:     # a signed or other jump: not the size check, go on
            return got
    return None


def _arm_compare(code: bytes) -> tuple[str, int] | None:
    """The same for AArch64: ``cmp xN, #imm`` (``subs xzr, xN, #imm``, unshifted) then ``b.cond``
    within the next three instructions."""
    words = [struct.unpack_from("<I", code, k)[0] for k in range(0, len(code) - 3, 4)]
    for i, w in enumerate(words):
        if w & 0xFFC0001F != 0xF100001F:
            continue
        imm = (w >> 10) & 0xFFF
        for nxt in words[i + 1:i + 4]:
            if nxt & 0xFF000010 == 0x54000000:
                got = _from_condition(nxt & 0xF, imm, {0x0: "eq", 0x1: "ne", 0x3: "lo", 0x2: "hs",
                                                        0x9: "ls", 0x8: "hi"})
                if got is not None:
                    return got
                break
        # a compare with no conditional branch after it is not the size check: go on
    return None


def _from_condition(cond: int, imm: int, names: dict[int, str]) -> tuple[str, int] | None:
    name = names.get(cond)
    if name in ("eq", "ne"):
        return "exact", imm
    if name in ("lo", "hs"):       # fails when size < imm
        return "at_least", imm
    if name in ("ls", "hi"):       # fails when size <= imm
        return "at_least", imm + 1
    return None


def read_table_check(buf: Data) -> TableCheck:
    """The table check of the jaxlib shared object in ``buf`` (its bytes, or an ``mmap`` of
    it: nothing is copied whole; see the module's docstring)."""
    form = _message_form(buf)
    if form is None:
        return TableCheck("none")
    if form.startswith("other:"):
        return TableCheck("unknown", detail=f"message '{form[6:]}'")
    try:
        machine, sections = _sections(buf)
    except (ValueError, struct.error) as exc:
        return TableCheck("unknown", detail=f"{form} check, size unread: {exc}", form=form)
    reader = {EM_X86_64: _x86_compare, EM_AARCH64: _arm_compare}.get(machine)
    if reader is None:
        return TableCheck("unknown", detail=f"{form} check, size unread: machine {machine}", form=form)
    ctors = _constructors(buf, sections)
    if not ctors:
        return TableCheck("unknown", detail=f"{form} check, size unread: no PluginTracer symbol", form=form)
    seen = set()
    for off in ctors:
        got = reader(buf[off:off + CODE_WINDOW])
        if got is not None:
            seen.add(got)
    if len(seen) != 1:
        return TableCheck("unknown", detail=f"{form} check, size unread: "
                          + ("no comparison found" if not seen else f"comparisons disagree {sorted(seen)}"),
                          form=form)
    kind, size = seen.pop()
    if kind != form:
        return TableCheck("unknown", detail=f"message says {form}, code compares {kind} {size}", form=form)
    if not 16 <= size <= 4096:
        return TableCheck("unknown", detail=f"{form} check of an implausible size {size}", form=form)
    return TableCheck(kind, size)


def main(argv: list[str] | None = None) -> int:
    """``python -m tb_iotrace.recording.jaxlib_check LIB...``: the check of each jaxlib library
    (``libjax_common.so``, or ``xla_extension.so`` before 0.6.0), e.g. of a new release's wheel."""
    import sys

    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m tb_iotrace.recording.jaxlib_check LIBRARY.so ...", file=sys.stderr)
        return 2
    rc = 0
    for path in paths:
        try:
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                check = read_table_check(m)
        except (OSError, ValueError) as exc:
            print(f"{path}: cannot read: {exc}")
            rc = 1
            continue
        print(f"{path}: {check.describe()}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
