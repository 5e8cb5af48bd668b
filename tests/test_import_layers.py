"""The package's imports point down its layers (docs/architecture.md) and form no cycle.

Every module under ``agentgrammar/`` is parsed (not imported) and each import statement, at module
level or inside a function, becomes an edge of the module graph: ``from . import x`` and
``from .x import y`` are resolved against the importing module's package, and ``from p import n``
points at the module ``p.n`` when there is one, else at ``p``. Two kinds of import are left out:

* imports under ``if TYPE_CHECKING:`` (they never run: a type named for a checker);
* the parent packages that Python imports before a module (``a/__init__`` before ``a.b``):
  counting them would make every package whose ``__init__`` re-exports its modules a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1] / "agentgrammar"
PACKAGE = "agentgrammar"

# The layers, bottom first, and the modules (a module and all below it) in each. The most
# specific prefix wins: ``agentgrammar.grammar.ir`` is in "grammar IR", not "grammar".
LAYER_OF_PREFIX: Dict[str, str] = {
    "agentgrammar.errors": "base",
    "agentgrammar._gc_pause": "base",
    "agentgrammar._core": "base",  # the compiled C core (cffi)
    "agentgrammar._build": "base",  # the cffi build script
    "agentgrammar.grammar.ir": "grammar IR",
    "agentgrammar.grammar.utf8": "grammar IR",
    "agentgrammar.grammar.pieces": "grammar IR",
    "agentgrammar.grammar.memo": "grammar IR",
    "agentgrammar.grammar": "grammar",
    "agentgrammar.structural_tag": "grammar",  # the typed models of structural tags
    "agentgrammar.registry": "registry",
    "agentgrammar.engine": "engine",
    "agentgrammar.formats": "formats",
    "agentgrammar.hf": "hf",
    "agentgrammar.agent": "agent",
    "agentgrammar.demo": "demo",
    "agentgrammar.cli": "cli",
    "agentgrammar.__main__": "cli",
    "agentgrammar": "root",  # the package's __init__: the public names, and the wiring
}

# What each layer may import (besides itself). The engine compiles the grammar layer's
# ``Grammar`` (the IR and its serialized form) and the grammar layer never sees the engine:
# ``Grammar.accepts`` reaches it through ``grammar.set_acceptor``, called by the root. A format
# builds grammars and never compiles them; the registry knows no grammar.
MAY_IMPORT: Dict[str, Set[str]] = {
    "base": set(),
    "grammar IR": {"base"},
    "grammar": {"base", "grammar IR"},
    "registry": {"base"},
    "engine": {"base", "grammar IR", "grammar"},
    "formats": {"base", "grammar IR", "grammar", "registry"},
    "hf": {"base", "grammar IR", "grammar", "engine"},
    "agent": {"base", "grammar IR", "grammar", "registry", "engine", "formats", "hf"},
    "demo": {"base", "grammar IR", "grammar", "registry", "engine", "formats", "hf", "agent"},
    "cli": {"base", "grammar IR", "grammar", "registry", "engine", "formats", "hf", "agent", "demo"},
    "root": {"base", "grammar IR", "grammar", "registry", "engine", "formats", "hf", "agent", "demo", "cli"},
}

# Edges that break the rules today, each with what removes it (the integrator deletes the entry
# then; a listed edge that no longer exists fails the test, so none lingers).
KNOWN_EXCEPTIONS: Dict[Tuple[str, str], str] = {}


def _module_names() -> Dict[str, Path]:
    """Each module's dotted name -> its file (a package is its ``__init__.py``)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> List[ast.stmt]:
    """The import statements of ``tree`` at any depth, those under ``if TYPE_CHECKING:`` left out."""
    out: List[ast.stmt] = []
    stack: List[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name of the module ``node`` imports from."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> Dict[str, Dict[str, int]]:
    """module -> {imported module of this package: the line of the first such import}."""
    modules = _module_names()
    graph: Dict[str, Dict[str, int]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges: Dict[str, int] = {}
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: List[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                source = _resolve(name, is_package, node)
                for alias in node.names:
                    candidate = f"{source}.{alias.name}"
                    targets.append(candidate if candidate in modules else source)
            for target in targets:
                if (target == PACKAGE or target.startswith(PACKAGE + ".")) and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def layer_of(module: str) -> Optional[str]:
    """The layer of ``module``: that of its longest prefix in ``LAYER_OF_PREFIX``."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        found = LAYER_OF_PREFIX.get(".".join(parts[:n]))
        if found is not None:
            return found
    return None


def find_cycle(graph: Dict[str, Dict[str, int]]) -> Optional[List[str]]:
    """A cycle of ``graph`` as its path (first module repeated at the end), or None."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        iters = [iter(sorted(graph.get(start, ())))]
        state[start] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(graph.get(nxt, ()))))
    return None


def _without_exceptions(graph: Dict[str, Dict[str, int]]) -> Dict[str, Dict[str, int]]:
    return {
        m: {t: line for t, line in edges.items() if (m, t) not in KNOWN_EXCEPTIONS}
        for m, edges in graph.items()
    }


def _describe(cycle: List[str], graph: Dict[str, Dict[str, int]]) -> str:
    steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in zip(cycle, cycle[1:])]
    return "import cycle:\n  " + "\n  ".join(steps)


@pytest.fixture(scope="module")
def graph() -> Dict[str, Dict[str, int]]:
    return import_graph()


def test_the_graph_sees_the_imports_that_matter(graph: Dict[str, Dict[str, int]]) -> None:
    # a function-level import, a relative import of a sibling and of a package's name
    assert "agentgrammar.demo.app" in graph["agentgrammar.cli"]
    assert "agentgrammar.grammar.ir" in graph["agentgrammar.grammar.normalize"]
    assert "agentgrammar.grammar" in graph["agentgrammar.engine.compiler"]
    # under TYPE_CHECKING: left out
    assert "agentgrammar.formats.format" not in graph["agentgrammar.formats.request"]


def test_find_cycle_reports_the_path() -> None:
    toy = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert find_cycle(toy) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}}) is None
    assert "a (line 1) -> b" in _describe(["a", "b", "c", "a"], toy)


def test_every_module_has_a_layer(graph: Dict[str, Dict[str, int]]) -> None:
    modules = set(graph) | {t for edges in graph.values() for t in edges}
    assert sorted(m for m in modules if layer_of(m) is None) == []


def test_no_import_cycle(graph: Dict[str, Dict[str, int]]) -> None:
    cycle = find_cycle(_without_exceptions(graph))
    assert cycle is None, _describe(cycle, graph)


def test_imports_point_down_the_layers(graph: Dict[str, Dict[str, int]]) -> None:
    wrong = []
    for module, edges in sorted(_without_exceptions(graph).items()):
        mine = layer_of(module)
        assert mine is not None
        for target, line in sorted(edges.items()):
            theirs = layer_of(target)
            if theirs != mine and theirs not in MAY_IMPORT[mine]:
                wrong.append(f"{module} (line {line}, layer {mine}) imports {target} (layer {theirs})")
    assert wrong == [], "imports against the layers:\n  " + "\n  ".join(wrong)


def test_known_exceptions_still_exist(graph: Dict[str, Dict[str, int]]) -> None:
    gone = [f"{a} -> {b} ({why})" for (a, b), why in KNOWN_EXCEPTIONS.items() if b not in graph.get(a, {})]
    assert gone == [], "delete these from KNOWN_EXCEPTIONS, the import is gone:\n  " + "\n  ".join(gone)
