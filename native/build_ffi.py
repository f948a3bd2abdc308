"""cffi (API mode) build of the native shim into ``tb_iotrace._native`` (the XPlane codecs
are a module of their own: native/build_codec.py).

The C sources come from native/sources.cmake and the declarations from
native/tbio.h, so neither list is typed twice.  Importing the built module is
the dlopen that attaches the shim; nothing is preloaded.
"""
from __future__ import annotations

import re
from pathlib import Path

from cffi import FFI

NATIVE = Path(__file__).resolve().parent
ROOT = NATIVE.parent


def sources(name: str = "TBIO_SOURCES") -> list[str]:
    text = (NATIVE / "sources.cmake").read_text()
    body = re.search(rf"set\({name}\s(.*?)\)", text, re.S)
    assert body, f"native/sources.cmake has no {name} list"
    return [s for s in body.group(1).split() if s.endswith(".c")]


def cdef(header: Path = NATIVE / "tbio.h", marker: str = "TBIO_API") -> str:
    lines = []
    for line in header.read_text().splitlines():
        if line.lstrip().startswith("#"):
            continue
        lines.append(line.replace(marker + " ", ""))
    return "\n".join(lines)


# Called by native/tfprof.c (TensorFlow) and native/pjrt.c (JAX) when a
# profile starts, stops and is collected (tb_iotrace/recording/tensorflow.py, jax.py).
PYTHON_CALLBACKS = """
extern "Python+C" int tbio_py_prof_start(void);
extern "Python+C" int tbio_py_prof_stop(void);
extern "Python+C" int64_t tbio_py_prof_collect(uint8_t *buffer, size_t size);
extern "Python+C" int tbio_py_jax_start(void);
extern "Python+C" int tbio_py_jax_stop(void);
extern "Python+C" int64_t tbio_py_jax_collect(uint8_t *buffer, size_t size);
"""

ffibuilder = FFI()
ffibuilder.cdef(cdef() + PYTHON_CALLBACKS)
ffibuilder.set_source(
    "tb_iotrace._native",
    '#include "tbio.h"',
    sources=sources(),  # relative to the project root, where setup.py runs
    include_dirs=["native"],
    # Inside the module the counter rules are hidden (direct calls, no PLT);
    # the CMake library exports them for the C unit tests.
    define_macros=[("TBIO_INTERNAL_API", '__attribute__((visibility("hidden")))')],
    extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                        "-Wno-unused-parameter", "-fvisibility=hidden", "-fno-semantic-interposition",
                        "-O2", "-flto=auto"],
    extra_link_args=["-flto=auto", "-O2"],
    libraries=["dl", "pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(tmpdir=str(ROOT), verbose=True)
