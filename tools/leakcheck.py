"""Leak check of the test suite under valgrind (memcheck), counting only what is agentgrammar's.

LeakSanitizer cannot run the Python tests (it reports CPython's deliberate leaks, and the
extension would need a sanitizer-built interpreter); valgrind can, with ``PYTHONMALLOC=malloc``
so that it sees every Python allocation. This tool copies the repository (tracked files and
new, not-ignored ones) into a temporary folder, builds the C core there with debug info
(``CFLAGS="-g -fno-omit-frame-pointer"``; the build's own ``-O2`` comes after and stays, and
valgrind names inlined functions from the debug info; the installed build is left alone), runs
pytest from inside the copy under::

    valgrind --leak-check=full --show-leak-kinds=definite,indirect
             --errors-for-leak-kinds=definite --num-callers=40 --xml=yes ...

and parses valgrind's XML report. A leak record or a memory error (invalid read/write/free,
use of an uninitialised value, ...) is *ours* when a frame of one of its stacks lies in the
extension (the object ``agentgrammar/_core*.so``, or a function named ``ag_*``): for a leak
the allocation stack, for an error the stack where it happened and those of the block it
concerns (where that was allocated or freed). Each of ours is printed (kind, bytes, the top
frames of its stacks); the leaks and errors of CPython and other libraries are only counted.

Usage::

    python tools/leakcheck.py                        # the default subset (DEFAULT_TESTS), ~15 min
    python tools/leakcheck.py tests/engine/test_matcher.py -k rollback   # any pytest arguments
    python tools/leakcheck.py --keep ...             # keep the build folder and the XML reports
    python tools/leakcheck.py --work DIR ...         # build in DIR (kept); reuse its build if any
    python tools/leakcheck.py --parse REPORT.xml...  # only parse reports valgrind already wrote

Options of the tool come first; everything from the first other argument (or after ``--``)
goes to pytest, in place of the default subset. ``AG_PROPERTY_EXAMPLES`` defaults to 5 (see
ENV_DEFAULTS); ``VALGRIND`` names another valgrind. A test that spawns a process (the C driver
of tests/csrc, the fuzz worker) runs that process outside valgrind. Exit status: 0 clean; 1 leaks or memory errors of ours (or, with ``--parse``,
a report cut short); 2 none of ours, but pytest failed; 3 the check could not run (the build
failed, or valgrind wrote no complete report).
"""

from __future__ import annotations

import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
VALGRIND = os.environ.get("VALGRIND", "valgrind")

#: The default pytest arguments: the engine, EBNF and JSON Schema compilation, the C API driver
#: and the fuzz smoke tests, without the xgrammar differential tests (they mostly run xgrammar)
#: and the Llama-3.2 vocabulary tests (loading 128k tokens through transformers takes minutes
#: under valgrind) and the tests that time themselves (``*_is_fast``). About 13 minutes of CPU
#: (one core: valgrind runs the threads one at a time), 480 tests.
DEFAULT_TESTS = [
    "tests/engine",
    "--ignore=tests/engine/test_xgrammar_differential.py",  # collecting it imports xgrammar, torch
    "tests/grammar/test_ebnf.py",
    "tests/grammar/test_json_schema.py",
    "tests/csrc",
    "tests/fuzz",
    "-m",
    "not slow",
    "-k",
    "not xgrammar and not llama and not is_fast",
]
#: Environment defaults for the run: fewer examples for tests/engine/test_matcher_properties.py
#: (60 natively; each one is a random walk checked against the Python reference matcher).
ENV_DEFAULTS = {"AG_PROPERTY_EXAMPLES": "5"}

VALGRIND_ARGS = [
    "--tool=memcheck",
    "--leak-check=full",
    "--show-leak-kinds=definite,indirect",
    "--errors-for-leak-kinds=definite",
    "--num-callers=40",
    "--error-limit=no",
    "--child-silent-after-fork=yes",
    "--xml=yes",
]

CFLAGS = "-g -fno-omit-frame-pointer"
LEAK_KINDS = {"Leak_DefinitelyLost": "definite", "Leak_IndirectlyLost": "indirect"}
TOP_FRAMES = 12


# ---- the report ------------------------------------------------------------------------


@dataclass
class Frame:
    fn: str = ""
    obj: str = ""
    file: str = ""
    line: str = ""
    ip: str = ""

    @property
    def ours(self) -> bool:
        """In agentgrammar's C core: an ``ag_*`` function, or any function of the extension
        ``agentgrammar/_core*.so`` but cffi's generated glue (``_cffi_*``, ``PyInit_*``: the
        module objects it creates live as long as the interpreter, like any extension's)."""
        if self.fn.startswith("ag_"):
            return True
        obj = Path(self.obj)
        if not (
            obj.parent.name == "agentgrammar" and obj.name.startswith("_core") and obj.name.endswith(".so")
        ):
            return False
        return not self.fn.startswith(("_cffi_", "PyInit_"))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.file else Path(self.obj).name or "?"
        return f"{self.fn or self.ip or '???'} ({where})"


@dataclass
class Finding:
    """One record of valgrind's report: a leak (a loss record) or a memory error."""

    kind: str  # valgrind's kind: Leak_DefinitelyLost, InvalidRead, UninitCondition, ...
    what: str
    stacks: List[List[Frame]] = field(default_factory=list)
    labels: List[str] = field(default_factory=list)  # per stack: "" (where), or the auxwhat before it
    auxwhat: List[str] = field(default_factory=list)
    bytes: int = 0  # leaked bytes (leaks only)
    blocks: int = 0  # leaked blocks (leaks only)
    count: int = 1  # how many times the error happened (errors only)
    unique: str = ""

    @property
    def is_leak(self) -> bool:
        return self.kind.startswith("Leak_")

    @property
    def ours(self) -> bool:
        stacks = self.stacks[:1] if self.is_leak else self.stacks
        return any(f.ours for stack in stacks for f in stack)

    def describe(self, top: int = TOP_FRAMES) -> str:
        """The kind, the size, and each stack down to a few frames past its last one of ours."""
        if self.is_leak:
            head = f"{LEAK_KINDS.get(self.kind, self.kind)} leak: {self.bytes} bytes in {self.blocks} blocks"
        else:
            times = f" ({self.count} times)" if self.count > 1 else ""
            head = f"{self.kind}: {self.what}{times}"
        lines = [head]
        for label, stack in zip(self.labels, self.stacks):
            if label:
                lines.append(f"  {label}")
            last = max((i for i, f in enumerate(stack) if f.ours), default=-1)
            shown = min(top, max(last + 3, 6))
            lines += [f"    {'*' if f.ours else ' '} {f}" for f in stack[:shown]]
            if len(stack) > shown:
                lines.append(f"      ... {len(stack) - shown} more frames")
        lines += [f"  {a}" for a in self.auxwhat if a not in self.labels]
        return "\n".join(lines)


@dataclass
class Report:
    findings: List[Finding] = field(default_factory=list)
    files: List[str] = field(default_factory=list)
    incomplete: List[str] = field(default_factory=list)  # reports cut short (a crash, a kill)

    def ours(self, leak: Optional[bool] = None, kind: Optional[str] = None) -> List[Finding]:
        return [
            f
            for f in self.findings
            if f.ours and (leak is None or f.is_leak == leak) and (kind is None or f.kind == kind)
        ]

    def others(self, leak: bool) -> List[Finding]:
        return [f for f in self.findings if not f.ours and f.is_leak == leak]

    def summary(self) -> List[str]:
        definite = self.ours(kind="Leak_DefinitelyLost")
        indirect = self.ours(kind="Leak_IndirectlyLost")
        errors = self.ours(leak=False)
        other_leaks, other_errors = self.others(True), self.others(False)
        return [
            f"ours: {len(definite)} definite leaks ({sum(f.bytes for f in definite)} bytes), "
            f"{len(indirect)} indirect leaks ({sum(f.bytes for f in indirect)} bytes), "
            f"{len(errors)} memory errors ({sum(f.count for f in errors)} occurrences)",
            f"others (CPython, libraries): {len(other_leaks)} leak records "
            f"({sum(f.bytes for f in other_leaks)} bytes), {len(other_errors)} memory errors",
        ]


def _text(elem: Optional[ET.Element], path: str) -> str:
    if elem is None:
        return ""
    return (elem.findtext(path) or "").strip()


def _stack(elem: ET.Element) -> List[Frame]:
    return [
        Frame(
            fn=_text(f, "fn"),
            obj=_text(f, "obj"),
            file=_text(f, "file"),
            line=_text(f, "line"),
            ip=_text(f, "ip"),
        )
        for f in elem.findall("frame")
    ]


def _finding(elem: ET.Element) -> Finding:
    xwhat = elem.find("xwhat")
    finding = Finding(
        kind=_text(elem, "kind"),
        what=_text(elem, "what") or _text(xwhat, "text"),
        unique=_text(elem, "unique"),
        bytes=int(_text(xwhat, "leakedbytes") or 0),
        blocks=int(_text(xwhat, "leakedblocks") or 0),
    )
    pending = ""
    for child in elem:
        if child.tag == "stack":
            finding.stacks.append(_stack(child))
            finding.labels.append(pending)
            pending = ""
        elif child.tag in ("auxwhat", "xauxwhat"):
            pending = (child.text or "").strip() or _text(child, "text")
            finding.auxwhat.append(pending)
    return finding


def parse_xml(text: str, name: str = "<report>") -> Report:
    """The findings of one valgrind XML report (``--xml=yes``); a report cut short (valgrind
    killed, the process crashed) keeps its complete ``<error>`` records and is flagged."""
    report = Report(files=[name])
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        report.incomplete.append(name)
        errors = [ET.fromstring(m.group(0)) for m in re.finditer(r"<error>.*?</error>", text, re.S)]
        counts = {}
    else:
        errors = root.findall("error")
        counts = {_text(p, "unique"): int(_text(p, "count") or 1) for p in root.findall("errorcounts/pair")}
    for elem in errors:
        finding = _finding(elem)
        if not finding.is_leak:
            finding.count = counts.get(finding.unique, 1)
        report.findings.append(finding)
    return report


def parse_files(paths: Iterable[Path]) -> Report:
    report = Report()
    for path in paths:
        one = parse_xml(Path(path).read_text(errors="replace"), str(path))
        report.findings += one.findings
        report.files += one.files
        report.incomplete += one.incomplete
    return report


def print_report(report: Report, out=None) -> int:  # type: ignore[no-untyped-def]
    """Print each finding of ours and the counts; 1 when there is any finding of ours."""
    out = out or sys.stdout
    order = {"Leak_DefinitelyLost": 1, "Leak_IndirectlyLost": 2}
    ours = sorted(report.ours(), key=lambda f: (order.get(f.kind, 0), -f.bytes))
    for f in ours:
        print(f"leakcheck: {f.describe()}\n", file=out)
    for line in report.summary():
        print(f"leakcheck: {line}", file=out)
    for name in report.incomplete:
        print(f"leakcheck: report {name} is cut short (the process crashed or was killed)", file=out)
    return 1 if ours else 0


# ---- the run -------------------------------------------------------------------------------


def copy_tree(dest: Path, root: Path = ROOT) -> None:
    """Copy the source tree (tracked files and new, not-ignored ones) into ``dest``, without a built core."""
    try:
        listing = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"],
            capture_output=True,
            check=True,
        ).stdout
        names = [n.decode() for n in listing.split(b"\0") if n]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "build", "__pycache__"}
        names = [
            str(p.relative_to(root))
            for p in root.rglob("*")
            if p.is_file()
            and not skip.intersection(p.relative_to(root).parts)
            and not p.name.startswith(".venv")
        ]
    for name in names:
        src = root / name
        if not src.is_file() and not src.is_symlink():
            continue  # deleted in the work tree but still tracked
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / name, follow_symlinks=False)
    for so in (dest / "agentgrammar").glob("_core*.so"):
        so.unlink()


def build(work: Path) -> Path:
    """Build the C core in ``work`` with debug info; the extension's path."""
    env = dict(os.environ, CFLAGS=CFLAGS)
    env.pop("AGENTGRAMMAR_SANITIZE", None)
    log = work / "build.log"
    with log.open("w") as fh:
        done = subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=work,
            env=env,
            stdout=fh,
            stderr=fh,
        )
    sos = sorted((work / "agentgrammar").glob("_core*.so"))
    if done.returncode != 0 or not sos:
        tail = "".join(log.read_text(errors="replace").splitlines(True)[-40:])
        raise RuntimeError(f"the build failed (status {done.returncode}):\n{tail}")
    if b".debug_info" not in sos[0].read_bytes():
        print(
            f"leakcheck: warning: {sos[0]} has no debug info; static functions may be unnamed",
            file=sys.stderr,
        )
    return sos[0]


def split_args(argv: Sequence[str]) -> tuple[dict, List[str]]:
    """The tool's options (leading) and pytest's arguments (the rest)."""
    opts: dict = {"keep": False, "work": None, "parse": []}
    args = list(argv)
    while args:
        a = args[0]
        if a == "--":
            args.pop(0)
            break
        if a == "--keep":
            opts["keep"] = True
        elif a == "--work" and len(args) > 1:
            opts["work"] = Path(args.pop(1)).resolve()
        elif a.startswith("--work="):
            opts["work"] = Path(a.split("=", 1)[1]).resolve()
        elif a == "--parse":
            opts["parse"] = [Path(p) for p in args[1:]]
            args = []
            break
        elif a in ("-h", "--help"):
            opts["help"] = True
        else:
            break
        args.pop(0)
    return opts, args


def junit_counts(path: Path) -> Optional[dict]:
    """``{tests, failures, errors, skipped}`` from pytest's JUnit XML, or None."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    keys = ("tests", "failures", "errors", "skipped")
    return {k: sum(int(s.get(k, 0)) for s in suites) for k in keys}


def run(opts: dict, pytest_args: List[str]) -> int:
    start = time.monotonic()
    made = opts["work"] is None
    work = Path(tempfile.mkdtemp(prefix="agentgrammar-leakcheck.")) if made else opts["work"]
    keep = opts["keep"] or not made
    try:
        if not any((work / "agentgrammar").glob("_core*.so")):
            print(f"leakcheck: copying the tree to {work} and building the C core with CFLAGS={CFLAGS!r}")
            work.mkdir(parents=True, exist_ok=True)
            copy_tree(work)
            try:
                build(work)
            except RuntimeError as exc:
                print(f"leakcheck: {exc}", file=sys.stderr)
                return 3
        else:
            print(f"leakcheck: reusing the build in {work}")
        built = time.monotonic()
        env = dict(os.environ, PYTHONMALLOC="malloc", PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
        env.pop("LD_PRELOAD", None)
        for key, value in ENV_DEFAULTS.items():
            env.setdefault(key, value)
        env.pop("PYTHONPATH", None)
        check = subprocess.run(
            [sys.executable, "-c", "import agentgrammar, sys; print(agentgrammar.__file__)"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
        )
        if not check.stdout.strip().startswith(str(work)):
            print(f"leakcheck: the copy in {work} is not the agentgrammar imported: {check}", file=sys.stderr)
            return 3
        reports = work / "valgrind"
        if reports.exists():
            shutil.rmtree(reports)
        reports.mkdir()
        junit = work / "junit.xml"
        junit.unlink(missing_ok=True)
        args = pytest_args or DEFAULT_TESTS
        cmd = [VALGRIND, *VALGRIND_ARGS, f"--xml-file={reports}/valgrind.%p.xml"]
        cmd += [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *args]
        print("leakcheck: " + shlex.join(cmd), flush=True)
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen(cmd, cwd=work, env=env)
        status = proc.wait()
        end = time.monotonic()
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime

        main_report = reports / f"valgrind.{proc.pid}.xml"
        report = parse_files(sorted(reports.glob("valgrind.*.xml")))
        print()
        ours = print_report(report)
        counts = junit_counts(junit)
        if counts:
            passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
            print(
                f"leakcheck: tests: {counts['tests']} run, {passed} passed, {counts['failures']} failed, "
                f"{counts['errors']} errors, {counts['skipped']} skipped (pytest status {status})"
            )
        else:
            print(f"leakcheck: tests: no pytest report (pytest status {status})")
        print(
            f"leakcheck: wall time {end - start:.0f} s (build {built - start:.0f} s, "
            f"tests under valgrind {end - built:.0f} s, {cpu:.0f} s of CPU)"
        )
        if keep:
            print(f"leakcheck: kept {work} (valgrind reports in {reports})")
        if ours:
            print("leakcheck: FAILED: leaks or memory errors in agentgrammar's C core (above)")
            return 1
        if not main_report.exists() or str(main_report) in report.incomplete:
            print(f"leakcheck: FAILED: valgrind wrote no complete report ({main_report})")
            return 3
        if status != 0:
            print(f"leakcheck: FAILED: pytest failed under valgrind (status {status})")
            return 2
        print("leakcheck: clean")
        return 0
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    opts, pytest_args = split_args(sys.argv[1:] if argv is None else argv)
    if opts.get("help"):
        print(__doc__)
        return 0
    if opts["parse"]:
        report = parse_files(opts["parse"])
        return print_report(report) or (1 if report.incomplete else 0)
    if not shutil.which(VALGRIND):
        print(f"leakcheck: {VALGRIND} not found", file=sys.stderr)
        return 3
    return run(opts, pytest_args)


if __name__ == "__main__":
    sys.exit(main())
