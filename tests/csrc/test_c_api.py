"""The C API driven directly from C, built with AddressSanitizer and UBSan (leaks included).

Skipped where no C compiler with sanitizer runtimes is available.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _compiler() -> str:
    for cc in (os.environ.get("CC"), "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    pytest.skip("no C compiler")


def test_c_api_driver_is_clean_under_sanitizers(tmp_path: Path) -> None:
    cc = _compiler()
    exe = tmp_path / "c_api_driver"
    sources = [str(p) for p in sorted((ROOT / "csrc").glob("*.c"))]
    build = subprocess.run(
        [
            cc,
            "-std=c11",
            "-g",
            "-O1",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=undefined",
            "-pthread",
            f"-I{ROOT / 'csrc'}",
            str(ROOT / "tests/csrc/c_api_driver.c"),
            *sources,
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
    )
    if build.returncode != 0 and "asan" in build.stderr.lower():
        pytest.skip(f"sanitizer runtime unavailable: {build.stderr[-300:]}")
    assert build.returncode == 0, build.stderr
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    env.pop("LD_PRELOAD", None)
    run = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
