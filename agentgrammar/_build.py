"""Build script for the C engine (cffi, API mode, out of line).

setuptools runs this through ``cffi_modules`` in setup.py; it compiles every file
in ``csrc/`` into the extension ``agentgrammar._core``. The cdef is read from the
public header, so the header stays the single description of the C API, and from the
testing header (entry points for the engine's own tests, such as the mask oracle), which
the module exposes too but which is not part of that API.

Set ``AGENTGRAMMAR_SANITIZE=address,undefined`` to build an instrumented core.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
HEADER = CSRC / "agentgrammar.h"
TESTING_HEADER = CSRC / "agentgrammar_testing.h"


def _cdef_from_header(text: str) -> str:
    """The declarations of the header, without comments, preprocessor lines or C++ guards."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    keep = [
        line
        for line in text.splitlines()
        if not line.lstrip().startswith("#") and line.strip() not in ('extern "C" {', "}")
    ]
    return "\n".join(keep)


def _compile_args() -> list[str]:
    args = ["-std=c11", "-O2", "-Wall", "-Wextra", "-fvisibility=hidden", "-pthread"]
    sanitize = os.environ.get("AGENTGRAMMAR_SANITIZE")
    if sanitize:
        args += [f"-fsanitize={sanitize}", "-fno-omit-frame-pointer", "-g", "-O1"]
    return args


def _link_args() -> list[str]:
    sanitize = os.environ.get("AGENTGRAMMAR_SANITIZE")
    return ["-pthread"] + ([f"-fsanitize={sanitize}"] if sanitize else [])


ffibuilder = FFI()
ffibuilder.cdef(_cdef_from_header(HEADER.read_text()))
ffibuilder.cdef(_cdef_from_header(TESTING_HEADER.read_text()))
ffibuilder.set_source(
    "agentgrammar._core",
    '#include "agentgrammar.h"\n#include "agentgrammar_testing.h"',
    sources=[str(p.relative_to(ROOT)) for p in sorted(CSRC.glob("*.c"))],
    # Every source includes the internal headers: a header change alone rebuilds them all.
    depends=[str(p.relative_to(ROOT)) for p in sorted(CSRC.glob("*.h"))],
    include_dirs=[str(CSRC.relative_to(ROOT))],
    extra_compile_args=_compile_args(),
    extra_link_args=_link_args(),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
