"""cffi (API mode) build of the XPlane codecs (native/codec: encode.c, xdecode.c) into
``tb_iotrace._codec``: a module of their own, so what only reads or writes captures
(TensorBoard's plugin, the CLI, the analysis) never loads the interposer
(``tb_iotrace._native``). Sources from native/sources.cmake (TBIO_CODEC_SOURCES),
declarations from native/codec/codec.h.
"""
from __future__ import annotations

import sys
from pathlib import Path

from cffi import FFI

NATIVE = Path(__file__).resolve().parent
ROOT = NATIVE.parent
sys.path.insert(0, str(NATIVE))
from build_ffi import cdef, sources  # noqa: E402  (one parser of sources.cmake and headers)

ffibuilder = FFI()
ffibuilder.cdef(cdef(NATIVE / "codec" / "codec.h", "TBIO_CODEC_API"))
ffibuilder.set_source(
    "tb_iotrace._codec",
    '#include "codec.h"',
    sources=sources("TBIO_CODEC_SOURCES"),  # relative to the project root, where setup.py runs
    include_dirs=["native/codec"],
    extra_compile_args=["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
                        "-fvisibility=hidden", "-O2"],
)

if __name__ == "__main__":
    ffibuilder.compile(tmpdir=str(ROOT), verbose=True)
