"""xgrammar's builtin model tags (``xgrammar.get_model_structural_tag``): every family, tool
choice, reasoning setting and ``token_markers`` setting, compiled here and by xgrammar on the
kit's real vocabularies (Qwen3, gpt-oss, Llama-3), masks compared bit for bit (special and stop
tokens compared apart, as in ``tests/engine/test_xgrammar_differential.py``) along:

* random valid walks (a random token allowed by xgrammar's mask at each step);
* a rendered call of each tool: the tag's text for that call (``render_call``: the call's
  begin, its arguments in the item's style, its end, reasoning before it where the tag has
  some), cut where xgrammar stops accepting it, so masks along calls, arguments and reasoning
  are compared. Every rendered text must be accepted whole (with ``tool_choice="none"``: the
  tag's text without a call).

A combination xgrammar itself refuses (``token_markers`` for most families; marker tokens that a
vocabulary does not have) is not a case; every other one must compile here. The default run is
Qwen3 and a few families; the ``slow`` sweep walks every combination on every vocabulary.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary, VocabularyError
from agentgrammar.engine.compiler import token_markers_of

xgr = pytest.importorskip("xgrammar")

from tests.engine.test_xgrammar_differential import Env, _choose, differential_walk  # noqa: E402
from tests.grammar.test_structural_tag_tokens import compare_walk  # noqa: E402
from tests.kit import kit_tokenizer  # noqa: E402

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "description": "Add", "parameters": {
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}},
    {"type": "function", "function": {"name": "note", "description": "Note", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["text"]}}},
]  # fmt: skip
NAMES = [t["function"]["name"] for t in TOOLS]
CHOICES: List[Any] = ["none", "auto", "required", {"type": "function", "function": {"name": "add"}}]
FAMILIES = sorted(xgr.builtin_structural_tag._structural_tag_registry)
VOCABULARIES = ["qwen3", "gpt-oss", "llama3"]


def _cases() -> List[Tuple[str, Any, bool, bool]]:
    return [(m, c, r, t) for m in FAMILIES for c in CHOICES for r in (True, False) for t in (False, True)]


def _tag(model: str, choice: Any, reasoning: bool, markers: bool) -> Dict[str, Any]:
    try:
        tag = xgr.get_model_structural_tag(
            model, tools=TOOLS, tool_choice=choice, reasoning=reasoning, token_markers=markers
        )
    except ValueError as e:  # xgrammar's own refusal (token markers for most families)
        pytest.skip(f"xgrammar refuses it: {e}")
    return tag.model_dump()


# ---- the vocabularies -----------------------------------------------------------------------

_ENVS: Dict[str, Env] = {}
_MARKED: Dict[Tuple[str, Tuple[Any, ...]], Compiler] = {}


def kit_env(folder: str) -> Env:
    """The differential walk's setting on the kit vocabulary of ``folder`` (made once)."""
    if folder in _ENVS:
        return _ENVS[folder]
    tok = kit_tokenizer(folder)  # skips, naming the path, without the kit
    vocab = Vocabulary.from_huggingface(tok)
    V, stops = vocab.vocab_size, sorted(vocab.stop_token_ids)
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=V, stop_token_ids=stops)
    words = (V + 31) // 32
    bits = np.zeros(words * 32, dtype=np.uint8)
    bits[list(vocab.special_token_ids)] = 1
    special_words = np.packbits(bits, bitorder="little").view(np.uint32)
    bits[:] = 0
    bits[stops] = 1
    stop_words = np.packbits(bits, bitorder="little").view(np.uint32)
    skip = set(vocab.special_token_ids) | set(stops)
    closing = np.array(
        [i not in skip and any(c in t for c in b'"}])\n;>!.,') for i, t in enumerate(vocab.token_bytes)]
    )
    short = np.array([i not in skip and len(t) == 1 for i, t in enumerate(vocab.token_bytes)])
    pad = V - len(closing)
    closing, short = np.pad(closing, (0, pad)), np.pad(short, (0, pad))
    env = Env(tok, vocab, info, Compiler(vocab), xgr.GrammarCompiler(info), stops, special_words, stop_words,
              closing, short)  # fmt: skip
    _ENVS[folder] = env
    return env


def qwen3_env() -> Env:
    """The differential walk's setting on the kit's Qwen3 vocabulary."""
    return kit_env("qwen3")


def _marked(folder: str, env: Env, grammar: Grammar) -> Compiler:
    """A compiler over the vocabulary marked for ``grammar``'s token markers (kept per set)."""
    markers = tuple(token_markers_of(grammar))
    if not markers:
        return env.compiler
    key = (folder, markers)
    if key not in _MARKED:
        _MARKED[key] = Compiler(env.vocab.with_token_markers(markers))
    return _MARKED[key]


def _marked_env(env: Env, vocab: Vocabulary) -> Env:
    bits = np.zeros(len(env.special_words) * 32, dtype=np.uint8)
    bits[list(vocab.special_token_ids)] = 1
    return dataclasses.replace(env, special_words=np.packbits(bits, bitorder="little").view(np.uint32))


# ---- a rendered call of each tool -----------------------------------------------------------

_EXAMPLES = {"string": "Oslo", "integer": 3, "number": 2.5}
_M3 = "]<]minimax[>["


def _example(schema: Dict[str, Any]) -> Any:
    if schema.get("type") == "array":
        return [_example(schema.get("items", {"type": "string"}))]
    return _EXAMPLES.get(schema.get("type", "string"), "x")


def _kimi_type(v: Any) -> str:
    return "string" if isinstance(v, str) else "array" if isinstance(v, list) else "number"


def _xml_value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _gemma(v: Any) -> str:
    if isinstance(v, str):
        return f'<|"|>{v}<|"|>'
    if isinstance(v, list):
        return "[" + ",".join(_gemma(x) for x in v) + "]"
    return json.dumps(v)


def _m3(v: Any) -> str:
    return "".join(f"{_M3}<item>{x}{_M3}</item>" for x in v) if isinstance(v, list) else _xml_value(v)


def _cohere(v: Any, name: Optional[str]) -> str:
    head = "<cofl:value" + (f' name="{name}"' if name is not None else "")
    if isinstance(v, str):
        return f'{head} type="raw">{v}</cofl:value>'
    if isinstance(v, list):
        return f'{head} type="list">' + "".join(_cohere(x, None) for x in v) + "</cofl:value>"
    return f'{head} type="json">{json.dumps(v)}</cofl:value>'


def render_args(schema: Dict[str, Any], style: str) -> str:
    """An instance of ``schema`` (every property, in order) in a json_schema ``style``."""
    args = {k: _example(s) for k, s in schema.get("properties", {}).items()}
    dsml = "\uff5cDSML\uff5c"
    each = {
        "qwen_xml": lambda k, v: f"<parameter={k}>{_xml_value(v)}</parameter>\n",
        "minimax_xml": lambda k, v: f'<parameter name="{k}">{_xml_value(v)}</parameter>\n',
        "glm_xml": lambda k, v: f"<arg_key>{k}</arg_key><arg_value>{_xml_value(v)}</arg_value>",
        "deepseek_xml": lambda k, v: f'<{dsml}parameter name="{k}" string="{str(isinstance(v, str)).lower()}">'
        f"{_xml_value(v)}</{dsml}parameter>\n",
        "deepseek_v4_1_xml": lambda k, v: f'<{dsml} parameter name="{k}" string="{str(isinstance(v, str)).lower()}">'
        f"{_xml_value(v)}</{dsml} parameter>\n",
        "kimi_k3_xml": lambda k, v: f'<|open|>argument key="{k}" type="{_kimi_type(v)}"<|sep|>{_xml_value(v)}'
        "<|close|>argument<|sep|>",
        "cohere_xml": lambda k, v: _cohere(v, k),
        "minimax_m3_xml": lambda k, v: f"{_M3}<{k}>{_m3(v)}{_M3}</{k}>",
    }  # fmt: skip
    if style == "json":
        return json.dumps(args)
    if style == "gemma":
        return "{" + ",".join(f"{k}:{_gemma(v)}" for k, v in args.items()) + "}"
    return "".join(each[style](k, v) for k, v in args.items())


def _strings(node: Any) -> List[str]:
    """The strings of a tag (not those of its schemas)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [s for x in node for s in _strings(x)]
    if isinstance(node, dict):
        return [s for k, v in node.items() if k != "json_schema" for s in _strings(v)]
    return []


def _mentions(node: Any, name: str) -> bool:
    return any(re.search(rf"\b{name}\b", s) for s in _strings(node))


def _text(x: Any) -> str:
    return x["token"] if isinstance(x, dict) else x[0] if isinstance(x, list) else x


def render_call(node: Any, name: str) -> Optional[str]:
    """Text of the tag ``node`` holding one call of tool ``name`` (free text "ok", reasoning
    included), or None where the tag has no way to call it."""
    kind = node.get("type")
    if kind == "structural_tag":
        return render_call(node["format"], name)
    if kind == "sequence":
        parts = [render_call(e, name) for e in node["elements"]]
        return None if None in parts else "".join(parts)  # type: ignore[arg-type]
    if kind == "const_string":
        return node["value"]
    if kind == "token":
        return node["token"]
    if kind in ("any_text", "any_tokens"):
        return "ok"
    if kind == "regex":
        return next((c for c in ("0", "1", "a", " ", "") if re.fullmatch(node["pattern"], c)), None)
    if kind == "optional":
        return render_call(node["content"], name) if _mentions(node, name) else ""
    if kind == "tag":
        content = render_call(node["content"], name)
        return None if content is None else _text(node["begin"]) + content + _text(node["end"])
    if kind in ("triggered_tags", "token_triggered_tags", "tags_with_separator"):
        tag = next((t for t in node["tags"] if _mentions(t, name)), None)
        if tag is None and not any(_mentions(t, n) for t in node["tags"] for n in NAMES):
            tag = node["tags"][0]  # tags of no call (harmony's channels): the first
        return None if tag is None else render_call(tag, name)
    if kind == "json_schema":
        return render_args(node["json_schema"], node.get("style", "json"))
    return None


def _token_ids(env: Env, text: str, markers: List[str]) -> List[int]:
    """``text`` as token ids: the markers as their tokens, the rest as plain text."""
    if not markers:
        return list(env.tok.encode(text, add_special_tokens=False, split_special_tokens=True))
    ids: List[int] = []
    for piece in re.split("(" + "|".join(map(re.escape, markers)) + ")", text):
        if piece in markers:
            ids.append(env.tok.convert_tokens_to_ids(piece))
        elif piece:
            ids += env.tok.encode(piece, add_special_tokens=False, split_special_tokens=True)
    return ids


def _accepted_prefix(env: Env, theirs: Any, ids: List[int]) -> Tuple[List[int], bool]:
    """The longest prefix of ``ids`` that xgrammar accepts, and whether that is all of them."""
    m = xgr.GrammarMatcher(theirs, override_stop_tokens=env.stops)
    for i, t in enumerate(ids):
        if not m.accept_token(t):
            return ids[:i], False
    return ids, True


def _random_path(env: Env, ours: Any, theirs: Any, seed: int, steps: int) -> List[int]:
    """A random path of tokens that both accept (``differential_walk``'s choice of token)."""
    V, rng = env.vocab.vocab_size, random.Random(seed)
    m, xm = Matcher(ours), xgr.GrammarMatcher(theirs, override_stop_tokens=env.stops)
    path: List[int] = []
    for step in range(steps):
        a = np.zeros((1, (V + 31) // 32), dtype=np.int32)
        b = xgr.allocate_token_bitmask(1, V)
        m.fill_next_token_bitmask(a)
        xm.fill_next_token_bitmask(b)
        both = np.unpackbits((a[0] & b[0].numpy()).view(np.uint8), bitorder="little")[:V].astype(bool)
        if not both.any():
            break
        t = _choose(env, rng, both, step, steps)
        if t in env.stops:
            break
        assert m.accept_token(t) and xm.accept_token(t)
        path.append(t)
    return path


def _token_texts(node: Any) -> List[str]:
    if isinstance(node, list):
        return [t for x in node for t in _token_texts(x)]
    if not isinstance(node, dict):
        return []
    here = [node["token"]] if node.get("type") == "token" and isinstance(node.get("token"), str) else []
    return here + [t for k, v in node.items() if k != "json_schema" for t in _token_texts(v)]


# ---- the check ------------------------------------------------------------------------------


def _check(folder: str, model: str, choice: Any, reasoning: bool, markers: bool, seeds: int) -> None:
    """Compiled here, masks equal to xgrammar's along random walks and each tool's call."""
    env = kit_env(folder)
    tag = _tag(model, choice, reasoning, markers)
    grammar = Grammar.from_structural_tag(tag)  # every tag xgrammar builds compiles here
    try:
        compiler = _marked(folder, env, grammar)  # markers: a vocabulary marked for them
    except VocabularyError:  # the family's markers are no tokens of this vocabulary: xgrammar agrees
        with pytest.raises(Exception, match="not found in vocabulary"):
            env.xcompiler.compile_structural_tag(json.dumps(tag))
        pytest.skip(f"the {folder} vocabulary does not have the family's marker tokens")
    ours = compiler.compile(grammar)
    if compiler is not env.compiler:  # its specials also hold the tokens of a raw 0xFF byte
        env = _marked_env(env, compiler.vocabulary)
    theirs = env.xcompiler.compile_structural_tag(json.dumps(tag))
    label = f"{folder}/{model}/{choice}/reasoning={reasoning}/markers={markers}"
    for seed in range(seeds):
        if compiler is env.compiler:
            differential_walk(env, ours, theirs, seed, steps=40, label=label)
        else:  # marker tokens: xgrammar may also take them as text, which compare_walk allows
            ids = _random_path(env, ours, theirs, seed, steps=40)
            compare_walk(env, Matcher(ours), xgr.GrammarMatcher(theirs, override_stop_tokens=env.stops), ids,
                         f"{label} seed={seed}")  # fmt: skip
    whole, texts = [], set()
    for name in NAMES:
        text = render_call(tag, name)
        if text is None or text in texts:
            continue
        texts.add(text)
        ids, complete = _accepted_prefix(env, theirs, _token_ids(env, text, _token_texts(tag)))
        whole.append(complete)
        xm = xgr.GrammarMatcher(theirs, override_stop_tokens=env.stops)
        compare_walk(env, Matcher(ours), xm, ids, f"{label} call {name}")
    assert whole and all(whole), f"{label}: xgrammar does not accept every rendered call whole: {whole}"


SMALL = [("qwen_3", CHOICES[3], True, True), ("qwen_3", "auto", True, False), ("llama", "required", False, False),
         ("harmony", "auto", True, False), ("kimi", CHOICES[3], True, False), ("kimi_k3", "auto", True, False),
         ("qwen_3_coder", "auto", True, False), ("gemma_4", "required", False, False)]  # fmt: skip


@pytest.mark.parametrize("model, choice, reasoning, markers", SMALL, ids=lambda v: str(v)[:12])
def test_builtin_tags_give_xgrammars_masks(model: str, choice: Any, reasoning: bool, markers: bool) -> None:
    _check("qwen3", model, choice, reasoning, markers, seeds=1)


@pytest.mark.slow
@pytest.mark.parametrize("folder", VOCABULARIES)
@pytest.mark.parametrize("model, choice, reasoning, markers", _cases(), ids=lambda v: str(v)[:12])
def test_every_builtin_tag_gives_xgrammars_masks(
    folder: str, model: str, choice: Any, reasoning: bool, markers: bool
) -> None:
    _check(folder, model, choice, reasoning, markers, seeds=2)


def test_kimi_k3_text_with_angle_brackets_and_near_ends_gives_xgrammars_masks() -> None:
    # Kimi-K3's text ends begin with an exclude ("<|close|>"): masks along text holding "<",
    # "<|", a "<|close" that stops short, then the real ends, compared with xgrammar's.
    env = kit_env("qwen3")
    tag = _tag("kimi_k3", "auto", True, False)
    ours = env.compiler.compile(Grammar.from_structural_tag(tag))
    theirs = env.xcompiler.compile_structural_tag(json.dumps(tag))
    text = (
        "a < b, <b>x</b> and <| or <|clos|> <|close <|close|>think<|sep|>"
        "<|open|>response<|sep|>Sure: x<y <|close|>response<|sep|>"
    )
    ids = _token_ids(env, text, [])
    xm = xgr.GrammarMatcher(theirs, override_stop_tokens=env.stops)
    accepted, complete = _accepted_prefix(env, theirs, ids)
    assert complete, "xgrammar accepts the whole text"
    compare_walk(env, Matcher(ours), xm, accepted, "kimi_k3 text")
    wrong = _token_ids(env, "a <|close|>thought<|sep|>", [])
    m = Matcher(ours)
    assert not m.accept_tokens(wrong)
