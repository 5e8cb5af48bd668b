"""Extract the string-acceptance checks of xgrammar's pytest files (for tools/xgrammar_suite.py).

Each test file is imported with ``xgrammar`` replaced by a recording stand-in and its ``assert``
statements rewritten (``ast``), then every test function is called once per pytest parametrize
combination. The stand-in's grammar constructors (``Grammar.from_ebnf`` and the like) return a
``GrammarSpec`` saying how the grammar was built; its ``_is_grammar_accept_string`` returns a
pending ``Check``. An assert on a check, in the test or in a helper it calls (``assert check``,
``assert not check``, ``assert check == expected``), records a ``Case`` with the expected
answer; other asserts become no-ops, so a test goes on after an assert this module does not
understand. Whatever else a test reaches of xgrammar (matchers, tokenizers, compilers) is an
opaque value that raises ``NotExtracted`` when a test tries to use it; the checks that test made
before that point are kept.

Example:
    >>> src = 'import xgrammar as xgr\\nfrom xgrammar.testing import _is_grammar_accept_string\\n'
    >>> src += 'def test_a():\\n    g = xgr.Grammar.from_regex("a+")\\n'
    >>> src += '    assert _is_grammar_accept_string(g, "aa")\\n    assert not _is_grammar_accept_string(g, "b")\\n'
    >>> [(c.grammar.kind, c.text, c.expected) for c in extract_source(src, "t.py").cases]
    [('regex', 'aa', True), ('regex', 'b', False)]
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import itertools
import json
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from _pytest.mark.structures import ParameterSet


class NotExtracted(Exception):
    """A test used something of xgrammar that this extractor does not model."""


@dataclass(frozen=True)
class GrammarSpec:
    """How a test built a grammar: ``kind`` (``ebnf``, ``regex``, ``json_schema``,
    ``structural_tag``, ``lark``, ``builtin_json``, ``union``, ``concat``), positional ``args``
    and keyword ``options`` as the test passed them (structural tags as plain dicts)."""

    kind: str
    args: Tuple[Any, ...]
    options: Tuple[Tuple[str, Any], ...] = ()

    def key(self) -> str:
        """A text that identifies this grammar (conversions are cached by it)."""
        return json.dumps(
            [self.kind, _plain(self.args), _plain(dict(self.options))], default=repr, sort_keys=True
        )

    def __str__(self) -> str:  # tests print grammars, and parse printed EBNF again
        return self.args[0] if self.kind == "ebnf" else f"<{self.kind} grammar>"

    def __contains__(self, text: object) -> bool:  # tests look for rule names in EBNF text
        return True


@dataclass
class Check:
    """A pending ``_is_grammar_accept_string`` call, until an assert gives its expected answer."""

    grammar: GrammarSpec
    text: str
    complete: bool

    def __bool__(self) -> bool:
        raise NotExtracted("an acceptance result used outside an assert")


@dataclass
class Case:
    """One extracted check: ``grammar`` should accept ``text`` (as a whole sentence when
    ``complete``, else as a prefix) exactly when ``expected``."""

    file: str
    test: str
    grammar: GrammarSpec
    text: str
    expected: bool
    complete: bool = True


@dataclass
class FileExtraction:
    """The cases of one file; its test calls, and why those that recorded no case made none."""

    cases: List[Case] = field(default_factory=list)
    calls: int = 0
    stopped: Dict[str, int] = field(default_factory=dict)  # why -> test calls that made no case
    import_error: Optional[str] = None


# --------------------------------------------------------------------------- stand-in xgrammar


class _Opaque:
    """Any part of xgrammar that is not modelled: absorbs attribute reads and calls (so module
    level set-up still imports), and raises ``NotExtracted`` once a test depends on a value."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, name: str) -> "_Opaque":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Opaque(f"{self._name}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> "_Opaque":
        return _Opaque(f"{self._name}()")

    def _used(self, *args: Any) -> Any:
        raise NotExtracted(f"uses {self._name.split('(')[0]}")

    __bool__ = __iter__ = __len__ = __getitem__ = __enter__ = __index__ = __int__ = _used
    __lt__ = __gt__ = __add__ = __radd__ = __contains__ = __setitem__ = _used

    def __exit__(self, *exc: Any) -> None:
        return None


def _plain(value: Any) -> Any:
    """``value`` with stand-in structural-tag models and pydantic models as plain data."""
    if isinstance(value, _StagModel):
        return value.model_dump()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, type) and hasattr(value, "model_json_schema"):
        return value.model_json_schema()
    if hasattr(value, "model_dump") and not isinstance(value, type):
        return value.model_dump(mode="json")
    return value


class _StagModel:
    """A structural-tag model of ``xgrammar.structural_tag`` (``TagFormat(begin=..., ...)``):
    kept as its fields plus the ``type`` its class name implies."""

    type_name = ""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("fields", {})  # absent while copy or pickle rebuilds one
        if name in fields:
            return fields[name]
        raise AttributeError(name)

    def model_dump(self, **_: Any) -> Dict[str, Any]:
        body = {k: _plain(v) for k, v in self.fields.items()}
        return {"type": self.type_name, **body} if self.type_name else body

    def model_dump_json(self, **_: Any) -> str:
        return json.dumps(self.model_dump())


def _model_class(name: str) -> type:
    """The stand-in for model class ``name``: ``TagFormat`` has type ``tag``."""
    stem = name[: -len("Format")] if name.endswith("Format") else name
    type_name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", stem).lower()
    if name in ("StructuralTagItem", "Format"):
        type_name = ""
    return type(name, (_StagModel,), {"type_name": type_name})


class _StructuralTag(_StagModel):
    type_name = "structural_tag"

    @classmethod
    def from_legacy_structural_tag(cls, tags: Any, triggers: Any) -> "_StructuralTag":
        return cls(format=_legacy_format(tags, triggers))

    @classmethod
    def from_json(cls, text: Any) -> Any:
        return json.loads(text) if isinstance(text, str) else text


def _legacy_format(tags: Any, triggers: Any) -> Dict[str, Any]:
    """xgrammar's legacy (tags, triggers) form as a ``triggered_tags`` format."""
    items = []
    for tag in tags:
        t = _plain(tag)
        items.append(
            {
                "type": "tag",
                "begin": t["begin"],
                "content": {"type": "json_schema", "json_schema": t["schema"]},
                "end": t["end"],
            }
        )
    return {"type": "triggered_tags", "triggers": list(triggers), "tags": items}


def _spec(kind: str, *args: Any, **options: Any) -> GrammarSpec:
    for value in (*args, *options.values()):
        if isinstance(value, _Opaque):
            raise NotExtracted(f"a {kind} grammar built from an unmodelled value")
    return GrammarSpec(
        kind,
        tuple(_freeze(_plain(a)) for a in args),
        tuple(sorted((k, _freeze(_plain(v))) for k, v in options.items())),
    )


def _freeze(value: Any) -> Any:
    """A hashable form of plain data (dicts as JSON text)."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=False)
    return value


class _Grammar:
    """``xgrammar.Grammar``: each constructor returns a ``GrammarSpec``."""

    @staticmethod
    def from_ebnf(text: str, *, root_rule_name: str = "root") -> GrammarSpec:
        return _spec("ebnf", text, root_rule_name=root_rule_name)

    @staticmethod
    def from_regex(pattern: str, **_: Any) -> GrammarSpec:
        return _spec("regex", pattern)

    @staticmethod
    def from_json_schema(schema: Any, **options: Any) -> GrammarSpec:
        options.pop("print_converted_ebnf", None)
        if isinstance(schema, str):
            schema = json.loads(schema)
        return _spec("json_schema", schema, **options)

    @staticmethod
    def from_structural_tag(*args: Any, **kwargs: Any) -> GrammarSpec:
        if len(args) == 2 or "triggers" in kwargs:  # the legacy (tags, triggers) form
            tags, triggers = args if len(args) == 2 else (args[0], kwargs["triggers"])
            return _spec(
                "structural_tag", {"type": "structural_tag", "format": _legacy_format(tags, triggers)}
            )
        tag = args[0] if args else kwargs.get("structural_tag")
        if isinstance(tag, str):
            tag = json.loads(tag)
        return _spec("structural_tag", tag)

    @staticmethod
    def from_lark(text: str, **options: Any) -> GrammarSpec:
        return _spec("lark", text, **options)

    @staticmethod
    def builtin_json_grammar() -> GrammarSpec:
        return _spec("builtin_json")

    @staticmethod
    def union(*grammars: Any) -> GrammarSpec:
        return _spec("union", *_grammar_list(grammars))

    @staticmethod
    def concat(*grammars: Any) -> GrammarSpec:
        return _spec("concat", *_grammar_list(grammars))


def _grammar_list(grammars: Tuple[Any, ...]) -> List[Any]:
    if len(grammars) == 1 and isinstance(grammars[0], (list, tuple)):
        grammars = tuple(grammars[0])
    return [_as_spec(g) for g in grammars]


def _as_spec(grammar: Any) -> GrammarSpec:
    """A grammar argument: a spec, or EBNF text as ``_is_grammar_accept_string`` allows."""
    if isinstance(grammar, GrammarSpec):
        return grammar
    if isinstance(grammar, str):
        return _spec("ebnf", grammar, root_rule_name="root")
    raise NotExtracted(f"a check on a {type(grammar).__name__}, not a grammar")


def _is_grammar_accept_string(
    grammar: Any, input_str: Any, *, require_termination: bool = True, **_: Any
) -> Check:
    if not isinstance(input_str, str):
        raise NotExtracted("a check on a non-str input")
    return Check(_as_spec(grammar), input_str, bool(require_termination))


def _json_schema_to_ebnf(schema: Any, **options: Any) -> GrammarSpec:
    """xgrammar's EBNF text of a schema (``json_format`` an XML style or ``json``): kept as the
    schema's grammar, which the tests use both as text (compared, a no-op here) and as a grammar."""
    if options.get("json_format", "json") == "json":
        options.pop("json_format", None)
    return _Grammar.from_json_schema(schema, **options)


def _real_builtin_structural_tag() -> Optional[types.ModuleType]:
    """The installed xgrammar's pure-Python builders of model structural tags, if importable:
    their tags come back as pydantic models, dumped to plain dicts by ``_plain``."""
    try:
        import xgrammar.builtin_structural_tag as real

        return real
    except Exception:
        return None


def _module(name: str, attrs: Dict[str, Any]) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    mod.__getattr__ = lambda attr: _Opaque(f"{name}.{attr}")  # type: ignore[attr-defined]
    return mod


def _stand_in_modules() -> Dict[str, types.ModuleType]:
    """``xgrammar`` and the submodules the tests import, as stand-ins."""
    models = {n: _model_class(n) for n in _MODEL_NAMES}
    models["StructuralTag"] = _StructuralTag
    stag = _module("xgrammar.structural_tag", dict(models))
    testing = _module(
        "xgrammar.testing",
        {
            "_is_grammar_accept_string": _is_grammar_accept_string,
            "_ebnf_to_grammar_no_normalization": lambda text, root_rule_name="root": _spec(
                "ebnf", text, root_rule_name=root_rule_name
            ),
            "_json_schema_to_ebnf": _json_schema_to_ebnf,
            "_regex_to_ebnf": lambda pattern, with_rule_name=True: _spec("regex", pattern),
            "_print_grammar_fsms": lambda grammar: "",
        },
    )
    top = _module(
        "xgrammar",
        {
            "Grammar": _Grammar,
            "StructuralTag": _StructuralTag,
            "StructuralTagItem": models["StructuralTagItem"],
            "structural_tag": stag,
            "testing": testing,
        },
    )
    top.__path__ = []  # type: ignore[attr-defined]  # a package, so submodule imports resolve
    found = {"xgrammar": top, "xgrammar.structural_tag": stag, "xgrammar.testing": testing}
    if _BUILTIN_TAGS is not None:
        found["xgrammar.builtin_structural_tag"] = _BUILTIN_TAGS
        top.builtin_structural_tag = _BUILTIN_TAGS  # type: ignore[attr-defined]
    for sub in ("grammar", "compiler", "matcher", "tokenizer_info", "base", "exception", "builtin_structural_tag",
                "openai_tool_call_schema", "kernels", "contrib", "config"):  # fmt: skip
        found.setdefault(f"xgrammar.{sub}", _module(f"xgrammar.{sub}", {"Grammar": _Grammar}))
    return found


_BUILTIN_TAGS: Optional[types.ModuleType] = None

_MODEL_NAMES = (
    "AnyTextFormat AnyTokensFormat ConstStringFormat DispatchFormat ExcludeTokenFormat Format GrammarFormat "
    "JSONSchemaFormat OptionalFormat OrFormat PlusFormat QwenXMLParameterFormat RegexFormat RepeatFormat "
    "SequenceFormat StarFormat StructuralTagItem TagFormat TagsWithSeparatorFormat TokenDispatchFormat "
    "TokenFormat TokenTriggeredTagsFormat TriggeredTagsFormat"
).split()


# --------------------------------------------------------------------------- assert rewriting


class _AssertRewriter(ast.NodeTransformer):
    """``assert X`` -> ``__xg_truth(X, True)``, ``assert not X`` -> ``__xg_truth(X, False)``,
    ``assert A == B`` / ``A is B`` -> ``__xg_equal(A, B)``; ``pytest.raises`` blocks swallow."""

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is)):
            call = _call("__xg_equal", [test.left, test.comparators[0]])
        elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            call = _call("__xg_truth", [test.operand, ast.Constant(False)])
        else:
            call = _call("__xg_truth", [test, ast.Constant(True)])
        return ast.copy_location(ast.Expr(call), node)

    def visit_With(self, node: ast.With) -> ast.stmt:
        self.generic_visit(node)
        for item in node.items:
            ctx = item.context_expr
            if (
                isinstance(ctx, ast.Call)
                and isinstance(ctx.func, ast.Attribute)
                and ctx.func.attr == "raises"
            ):
                item.context_expr = ast.copy_location(_call("__xg_swallow", []), ctx)
                item.optional_vars = None
        return node


def _call(name: str, args: List[ast.expr]) -> ast.Call:
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[])


class _Recorder:
    """The rewritten asserts' targets: they turn a ``Check`` and its expected answer into a case."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.test = ""
        self.cases: List[Case] = []

    def truth(self, value: Any, expected: bool) -> None:
        if isinstance(value, Check):
            self._record(value, expected)
        elif isinstance(value, _Opaque):
            raise NotExtracted(f"asserts on {value._name.split('(')[0]}")

    def equal(self, left: Any, right: Any) -> None:
        for check, other in ((left, right), (right, left)):
            if isinstance(check, Check):
                if isinstance(other, Check) or not isinstance(other, (bool, int)):
                    raise NotExtracted("an acceptance result compared with a non-bool")
                self._record(check, bool(other))
                return
        if isinstance(left, _Opaque) or isinstance(right, _Opaque):
            raise NotExtracted("asserts on an unmodelled xgrammar value")

    def _record(self, check: Check, expected: bool) -> None:
        self.cases.append(Case(self.file, self.test, check.grammar, check.text, expected, check.complete))


@contextlib.contextmanager
def _swallow() -> Iterator[None]:
    try:
        yield
    except Exception:  # the block expects xgrammar to raise; the stand-in did not
        pass


# --------------------------------------------------------------------------- running the tests


def _preload() -> None:
    """Import what the tests import that itself may import xgrammar (torch's optional backends,
    transformers): under the stand-in their imports break half-way."""
    global _BUILTIN_TAGS
    if _BUILTIN_TAGS is None:
        _BUILTIN_TAGS = _real_builtin_structural_tag()
    for name in ("torch", "transformers"):
        with contextlib.suppress(Exception):
            __import__(name)
    with contextlib.suppress(Exception):
        from transformers import AutoTokenizer  # noqa: F401 - a lazy attribute, resolved now


@contextlib.contextmanager
def _xgrammar_replaced(folder: Optional[Path]) -> Iterator[None]:
    _preload()
    saved = {k: v for k, v in sys.modules.items() if k == "xgrammar" or k.startswith("xgrammar.")}
    for k in saved:
        del sys.modules[k]
    sys.modules.update(_stand_in_modules())
    if folder is not None:
        sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        for k in [k for k in sys.modules if k == "xgrammar" or k.startswith("xgrammar.")]:
            del sys.modules[k]
        sys.modules.update(saved)
        if folder is not None:
            sys.path.remove(str(folder))


def extract_source(source: str, name: str, folder: Optional[Path] = None) -> FileExtraction:
    """The checks of one test file's ``source`` (``name`` labels its cases)."""
    out = FileExtraction()
    recorder = _Recorder(name)
    tree = _AssertRewriter().visit(ast.parse(source, filename=name))
    ast.fix_missing_locations(tree)
    namespace: Dict[str, Any] = {
        "__name__": f"xgsuite_{Path(name).stem}",
        "__file__": name,
        "__xg_truth": recorder.truth,
        "__xg_equal": recorder.equal,
        "__xg_swallow": _swallow,
    }
    with _xgrammar_replaced(folder), contextlib.redirect_stdout(io.StringIO()):  # tests print
        try:
            exec(compile(tree, name, "exec"), namespace)
        except BaseException as e:
            out.import_error = f"{type(e).__name__}: {e}"[:200]
            return out
        for test_name, fn in _tests(namespace):
            try:
                calls = list(_calls(fn))
            except Exception as e:
                out.calls += 1
                _count(
                    out,
                    f"parametrize: {e}"
                    if isinstance(e, NotExtracted)
                    else f"parametrize raised {type(e).__name__}",
                )
                continue
            for call_id, kwargs, skip in calls:
                out.calls += 1
                recorder.test = f"{test_name}[{call_id}]" if call_id else test_name
                if skip:
                    _count(out, skip)
                    continue
                before = len(recorder.cases)
                reason = _run(fn, kwargs)
                if len(recorder.cases) == before:
                    _count(out, reason or "no acceptance check")
    out.cases = recorder.cases
    return out


def extract_file(path: Path) -> FileExtraction:
    """The checks of the test file at ``path`` (its folder joins ``sys.path`` meanwhile)."""
    return extract_source(path.read_text(encoding="utf-8"), path.name, path.parent)


def _count(out: FileExtraction, reason: str) -> None:
    out.stopped[reason] = out.stopped.get(reason, 0) + 1


def _run(fn: Any, kwargs: Dict[str, Any]) -> str:
    """Call one test; "" when it returned, else why it stopped."""
    missing = [
        p for p in inspect.signature(fn).parameters.values() if p.name not in kwargs and p.default is p.empty
    ]
    if missing:
        return f"needs fixture {missing[0].name}"
    try:
        fn(**kwargs)
    except NotExtracted as e:
        return str(e)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:
        return f"raised {type(e).__name__}"
    return ""


def _tests(namespace: Dict[str, Any]) -> Iterator[Tuple[str, Any]]:
    """The test functions of a module, test methods of ``Test*`` classes bound to an instance."""
    for name, value in list(namespace.items()):
        if name.startswith("test") and inspect.isfunction(value):
            yield name, value
        elif name.startswith("Test") and inspect.isclass(value):
            for attr, method in vars(value).items():
                if attr.startswith("test") and inspect.isfunction(method):
                    yield f"{name}.{attr}", getattr(value(), attr)


def _calls(fn: Any) -> Iterator[Tuple[str, Dict[str, Any], str]]:
    """(id, arguments, skip reason or "") for each parametrize combination of ``fn``."""
    marks = getattr(fn, "pytestmark", [])
    if any(m.name in ("skip", "skipif", "xfail") for m in marks if m.name != "skipif" or any(m.args)):
        yield "", {}, "skip/xfail mark in their suite"
        return
    axes = []
    for mark in reversed([m for m in marks if m.name == "parametrize"]):
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        rows = []
        for i, value in enumerate(values):
            skip = ""
            if isinstance(value, ParameterSet):  # pytest.param
                if any(m.name in ("skip", "xfail") for m in value.marks):
                    skip = "skip/xfail mark in their suite"
                value = value.values if len(names) > 1 else value.values[0]
            row = dict(zip(names, value)) if len(names) > 1 else {names[0]: value}
            rows.append((str(i), row, skip))
        axes.append(rows)
    for combo in itertools.product(*axes):
        kwargs: Dict[str, Any] = {}
        for _, row, _ in combo:
            kwargs.update(row)
        skip = next((s for _, _, s in combo if s), "")
        yield "-".join(i for i, _, _ in combo), kwargs, skip
