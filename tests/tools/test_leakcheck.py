"""tools/leakcheck.py: the valgrind report parser on hand-written samples, and (slow, skipped
without valgrind) two real runs: a clean one, and one that must find a leak made on purpose."""

from __future__ import annotations

import io
import shutil
import textwrap
from pathlib import Path

import pytest

from tools import leakcheck

CORE = "/tmp/agentgrammar-leakcheck.x/agentgrammar/_core.abi3.so"
PYTHON = "/root/.pyenv/versions/3.11.7/bin/python3.11"
MALLOC = "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so"


def frame(fn: str, obj: str, file: str = "", line: int = 0) -> str:
    where = f"<file>{file}</file><line>{line}</line>" if file else ""
    return f"<frame><ip>0x4848899</ip><obj>{obj}</obj><fn>{fn}</fn>{where}</frame>"


def leak(kind: str, nbytes: int, *frames: str, unique: str = "0x1") -> str:
    return (
        f"<error><unique>{unique}</unique><tid>1</tid><kind>{kind}</kind>"
        f"<xwhat><text>{nbytes} bytes in 1 blocks are lost in loss record 1 of 9</text>"
        f"<leakedbytes>{nbytes}</leakedbytes><leakedblocks>1</leakedblocks></xwhat>"
        f"<stack>{''.join(frames)}</stack></error>"
    )


def report(*errors: str, counts: str = "", end: bool = True) -> str:
    head = (
        '<?xml version="1.0"?>\n<valgrindoutput>\n<protocolversion>4</protocolversion>\n'
        "<protocoltool>memcheck</protocoltool>\n<pid>4242</pid>\n"
        "<status><state>RUNNING</state><time>00:00:00:00.1 </time></status>\n"
    )
    tail = (
        f"<errorcounts>{counts}</errorcounts>\n<suppcounts></suppcounts>\n</valgrindoutput>\n" if end else ""
    )
    return head + "\n".join(errors) + "\n" + tail


OUR_LEAK = leak(
    "Leak_DefinitelyLost",
    96,
    frame("calloc", MALLOC),
    frame("ag_vocab_new", CORE, "ag_vocab.c", 112),
    frame("_cffi_f_ag_vocab_new", CORE, "agentgrammar._core.c", 900),
    frame("cfunction_call", PYTHON, "methodobject.c", 537),
    unique="0x10",
)
OUR_INDIRECT = leak(
    "Leak_IndirectlyLost",
    2,
    frame("malloc", MALLOC),
    frame("ag_vocab_new", CORE, "ag_vocab.c", 120),
    unique="0x11",
)
# A static function of the core, without a name (no debug info): the object still tells.
OUR_UNNAMED = leak("Leak_DefinitelyLost", 8, frame("malloc", MALLOC), frame("", CORE), unique="0x12")
CPYTHON_LEAK = leak(
    "Leak_DefinitelyLost",
    24,
    frame("malloc", MALLOC),
    frame("PyFloat_FromDouble", PYTHON, "floatobject.c", 149),
    frame("fill_time", PYTHON, "posixmodule.c", 2391),
    unique="0x20",
)
# The module objects cffi's generated init creates: CPython keeps them to the end; not ours.
CFFI_INIT_LEAK = leak(
    "Leak_DefinitelyLost",
    184,
    frame("malloc", MALLOC),
    frame("_PyObject_GC_New", PYTHON, "gcmodule.c", 2298),
    frame("_cffi_init", CORE, "agentgrammar._core.c", 434),
    frame("PyInit__core", CORE, "agentgrammar._core.c", 2674),
    unique="0x21",
)
OUR_INVALID_READ = (
    "<error><unique>0x30</unique><tid>1</tid><kind>InvalidRead</kind>"
    "<what>Invalid read of size 4</what>"
    f"<stack>{frame('ag_fsm_step', CORE, 'ag_fsm.c', 77)}{frame('ag_matcher_fill_mask', CORE, 'ag_matcher.c', 310)}"
    f"{frame('_cffi_f_ag_matcher_fill_mask', CORE, 'agentgrammar._core.c', 1500)}</stack>"
    "<auxwhat>Address 0x5a1b0e8 is 0 bytes after a block of size 40 alloc'd</auxwhat>"
    f"<stack>{frame('malloc', MALLOC)}{frame('ag_fsm_build', CORE, 'ag_fsm.c', 20)}</stack></error>"
)
CPYTHON_UNINIT = (
    "<error><unique>0x31</unique><tid>1</tid><kind>UninitCondition</kind>"
    "<what>Conditional jump or move depends on uninitialised value(s)</what>"
    f"<stack>{frame('maybe_small_long', PYTHON, 'longobject.c', 71)}</stack></error>"
)
# An invalid read in CPython of a block the core freed: ours (the free stack is ours).
USE_AFTER_OUR_FREE = (
    "<error><unique>0x32</unique><tid>1</tid><kind>InvalidRead</kind>"
    "<what>Invalid read of size 1</what>"
    f"<stack>{frame('memcpy', MALLOC)}{frame('PyBytes_FromStringAndSize', PYTHON)}</stack>"
    "<auxwhat>Address 0x5a1b0e8 is 0 bytes inside a block of size 16 free'd</auxwhat>"
    f"<stack>{frame('free', MALLOC)}{frame('ag_matcher_free', CORE, 'ag_matcher.c', 60)}</stack></error>"
)
COUNTS = (
    "<pair><count>3</count><unique>0x30</unique></pair><pair><count>552</count><unique>0x31</unique></pair>"
)


def test_frames_of_ours() -> None:
    assert leakcheck.Frame("ag_vocab_new", "/somewhere/else.so").ours
    assert leakcheck.Frame("", CORE).ours
    assert leakcheck.Frame("mask_word", "/x/agentgrammar/_core.cpython-311-x86_64-linux-gnu.so").ours
    assert not leakcheck.Frame("_cffi_f_ag_vocab_new", CORE).ours
    assert not leakcheck.Frame("PyInit__core", CORE).ours
    assert not leakcheck.Frame("malloc", MALLOC).ours
    assert not leakcheck.Frame("helper", "/site-packages/other/_core.abi3.so").ours


def test_leak_in_ag_function_is_ours_and_cpython_leak_is_not() -> None:
    r = leakcheck.parse_xml(report(OUR_LEAK, OUR_INDIRECT, OUR_UNNAMED, CPYTHON_LEAK, CFFI_INIT_LEAK))
    assert not r.incomplete
    assert [(f.kind, f.bytes) for f in r.ours()] == [
        ("Leak_DefinitelyLost", 96),
        ("Leak_IndirectlyLost", 2),
        ("Leak_DefinitelyLost", 8),
    ]
    assert [f.bytes for f in r.others(leak=True)] == [24, 184]
    ours, others = r.summary()
    assert ours.startswith("ours: 2 definite leaks (104 bytes), 1 indirect leaks (2 bytes), 0 memory errors")
    assert others.startswith("others (CPython, libraries): 2 leak records (208 bytes), 0 memory errors")


def test_invalid_read_in_core_is_ours_and_counted() -> None:
    r = leakcheck.parse_xml(report(OUR_INVALID_READ, CPYTHON_UNINIT, USE_AFTER_OUR_FREE, counts=COUNTS))
    errors = r.ours(leak=False)
    assert [(f.kind, f.count) for f in errors] == [("InvalidRead", 3), ("InvalidRead", 1)]
    assert [(f.kind, f.count) for f in r.others(leak=False)] == [("UninitCondition", 552)]
    assert "1 indirect" not in r.summary()[0] and "2 memory errors (4 occurrences)" in r.summary()[0]
    text = errors[0].describe()
    assert text.startswith("InvalidRead: Invalid read of size 4 (3 times)")
    assert "* ag_fsm_step (ag_fsm.c:77)" in text and "block of size 40 alloc'd" in text
    assert "* ag_fsm_build (ag_fsm.c:20)" in text


def test_print_report_names_each_of_ours_and_fails() -> None:
    out = io.StringIO()
    assert leakcheck.print_report(leakcheck.parse_xml(report(OUR_LEAK, CPYTHON_LEAK)), out) == 1
    text = out.getvalue()
    assert "definite leak: 96 bytes in 1 blocks" in text
    assert "* ag_vocab_new (ag_vocab.c:112)" in text
    assert "PyFloat_FromDouble" not in text  # others are only counted
    out = io.StringIO()
    assert leakcheck.print_report(leakcheck.parse_xml(report(CPYTHON_LEAK, CPYTHON_UNINIT)), out) == 0
    assert "ours: 0 definite leaks (0 bytes), 0 indirect leaks (0 bytes), 0 memory errors" in out.getvalue()


def test_report_cut_short_keeps_its_complete_records(tmp_path: Path) -> None:
    text = report(OUR_LEAK, CPYTHON_LEAK, end=False) + "<error><unique>0x9</unique><kind>Inv"
    path = tmp_path / "valgrind.1.xml"
    path.write_text(text)
    r = leakcheck.parse_files([path])
    assert r.incomplete == [str(path)]
    assert [f.bytes for f in r.findings] == [96, 24]
    assert leakcheck.main(["--parse", str(path)]) == 1


def test_split_args() -> None:
    opts, args = leakcheck.split_args(["--keep", "--work", "w", "tests/x.py", "-k", "not slow", "--keep"])
    assert opts["keep"] and opts["work"] == Path("w").resolve()
    assert args == ["tests/x.py", "-k", "not slow", "--keep"]
    opts, args = leakcheck.split_args(["--", "--keep"])
    assert not opts["keep"] and args == ["--keep"]


# ---- real runs under valgrind (minutes each) -------------------------------------------------

needs_valgrind = pytest.mark.skipif(shutil.which(leakcheck.VALGRIND) is None, reason="no valgrind")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the tree with a debug build, shared by the real runs (the first builds it)."""
    return tmp_path_factory.mktemp("leakcheck-work")


@pytest.mark.slow
@needs_valgrind
def test_real_run_is_clean(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    test = "tests/engine/test_matcher.py::test_rollback_restores_exact_masks"
    assert leakcheck.main(["--work", str(work), test]) == 0
    out = capsys.readouterr().out
    assert "leakcheck: tests: 1 run, 1 passed, 0 failed, 0 errors, 0 skipped (pytest status 0)" in out
    assert "leakcheck: ours: 0 definite leaks (0 bytes), 0 indirect leaks (0 bytes), 0 memory errors" in out
    assert "leakcheck: others (CPython, libraries): " in out and "leakcheck: wall time " in out
    assert out.rstrip().endswith("leakcheck: clean")


LEAKY_TEST = """
from agentgrammar._core import ffi, lib


def test_leaks_a_vocabulary():
    out = ffi.new("ag_vocab **")
    err = ffi.new("ag_error *")
    blob = ffi.from_buffer("uint8_t[]", b"ab")
    offsets = ffi.new("uint32_t[]", [0, 1, 2])
    kinds = ffi.new("uint8_t[]", [0, 0])
    assert lib.ag_vocab_new(blob, offsets, kinds, 2, 2, out, err) == lib.AG_OK
    assert out[0] != ffi.NULL  # and never handed to ag_vocab_free
"""


@pytest.mark.slow
@needs_valgrind
def test_real_run_finds_a_leak(work: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    leaky = tmp_path / "test_leaky_vocab.py"
    leaky.write_text(textwrap.dedent(LEAKY_TEST))
    assert leakcheck.main(["--work", str(work), str(leaky)]) == 1
    out = capsys.readouterr().out
    assert "leakcheck: definite leak: " in out
    assert "* ag_vocab_new (ag_vocab.c:" in out
    assert "leakcheck: tests: 1 run, 1 passed" in out
    assert "leakcheck: FAILED: leaks or memory errors in agentgrammar's C core" in out
