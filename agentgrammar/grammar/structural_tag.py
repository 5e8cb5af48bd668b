"""Convert a structural tag (``agentgrammar.structural_tag``) into grammar IR.

The semantics are xgrammar's, so that a structural tag written for xgrammar accepts the same
texts here (``tests/grammar/test_structural_tag.py`` checks both engines side by side):

* ``triggered_tags``: free text in which no trigger (and no exclude) occurs; the first
  occurrence of a trigger commits to one of the tags whose ``begin`` starts with it; after the
  tag's end, free text again. ``at_least_one``: the output *starts* with a tag;
  ``stop_after_first``: nothing may follow the first tag. ``dispatch`` is the same with a format
  in place of the rest of a tag.
* ``tag`` whose content is ``any_text``: the content runs up to the first occurrence of an end
  string (it cannot contain one); any other content is followed by one of the ends.
* ``any_text`` elsewhere: any text without the excludes. ``json_schema``: the JSON Schema
  grammar with flexible whitespace and no additional properties (``strict=True``).

Free text is any bytes, as in xgrammar. Each piece of free text (with its triggers, end strings
and excludes) is one ``TagDispatch`` rule, which the C core runs as an Aho–Corasick automaton:
every token is checked exactly, including tokens that run across the start of a trigger, and
tokens that cannot complete any word are accepted without being simulated.

Example:
    >>> rules, root = structural_tag_rules({"type": "structural_tag",
    ...     "format": {"type": "const_string", "value": "hi"}})
    >>> rules[0]
    Rule(name='root', body=Literal(value=b'hi'))
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union, get_args

from pydantic import BaseModel, ValidationError

from .. import structural_tag as st
from ..errors import GrammarError, StructuralTagError
from . import memo, pieces
from .grammar import Grammar
from .ir import (
    EMPTY,
    Choice,
    Embed,
    Expr,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    TagDispatch,
    choice,
    fresh_name,
    seq,
)
from .regex import parse_regex
from .token_markers import MARKER_CLOSE, MARKER_OPEN, encode_text, markers_in_text, token_marker

__all__ = ["compact_schema_grammar", "parse_structural_tag", "structural_tag_rules"]

# The ``type`` of every format model: pydantic puts these tags in error locations.
_FORMAT_TYPES = frozenset(m.model_fields["type"].default for m in get_args(get_args(st.Format)[0]))


def _json_path(loc: Sequence[Union[str, int]]) -> str:
    """A pydantic error location as a JSON path (the union's tag names left out)."""
    out = "$"
    prev: Union[str, int, None] = None
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _FORMAT_TYPES and (prev in ("format", "content") or isinstance(prev, int)):
            pass  # the discriminator pydantic inserts, not a key of the input
        else:
            out += f".{part}"
        prev = part
    return out


#: How deep a structural tag given as a dict or JSON text may nest (objects and arrays, a
#: ``json_schema`` inside counted): twice ``json_schema.MAX_SCHEMA_DEPTH``, so a schema at its
#: own limit fits; checked before pydantic and the builder, which recurse per level, see it.
MAX_TAG_DEPTH = 512


def _check_depth(obj: Any) -> None:
    """``StructuralTagError`` for ``obj`` nested deeper than ``MAX_TAG_DEPTH``, found level by
    level without recursion (a container met twice on a level is walked once, so a cyclic
    dict is too deep rather than an endless walk)."""
    level, depth = [obj], 0
    while level:
        depth += 1
        if depth > MAX_TAG_DEPTH:
            raise StructuralTagError(f"the structural tag nests more than {MAX_TAG_DEPTH} levels")
        below: Dict[int, Any] = {}
        for node in level:
            for child in node.values() if isinstance(node, dict) else node:
                if isinstance(child, (dict, list, tuple)):
                    below.setdefault(id(child), child)
        level = list(below.values())


def parse_structural_tag(obj: Any) -> st.StructuralTag:
    """A ``StructuralTag`` from a model, a dict or JSON text; ``StructuralTagError`` (with the JSON
    path of the first problem) when it is malformed, or nested deeper than ``MAX_TAG_DEPTH``.

    Example:
        >>> parse_structural_tag('{"type": "const_string", "value": "hi"}').format.value
        'hi'
        >>> parse_structural_tag("[" * 5000)
        Traceback (most recent call last):
        ...
        agentgrammar.errors.StructuralTagError: the structural tag nests more than 512 levels
    """
    if isinstance(obj, st.StructuralTag):
        return obj
    if isinstance(obj, BaseModel):  # a bare format, kept as it is (a GrammarText may hold a Grammar)
        obj = {"type": "structural_tag", "format": obj}
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except ValueError as e:
            raise StructuralTagError(f"not valid JSON: {e}") from None
        except RecursionError:  # the decoder recurses per level: far deeper than MAX_TAG_DEPTH
            raise StructuralTagError(f"the structural tag nests more than {MAX_TAG_DEPTH} levels") from None
    if isinstance(obj, (dict, list)):
        _check_depth(obj)
    if (
        isinstance(obj, dict)
        and obj.get("type") != "structural_tag"
        and "format" not in obj
        and "type" in obj
    ):
        obj = {"type": "structural_tag", "format": obj}  # a bare format dict
    try:
        return st.StructuralTag.model_validate(obj)
    except ValidationError as e:
        err = e.errors()[0]
        raise StructuralTagError(err["msg"], path=_json_path(err["loc"])) from None


class _Builder:
    """Collects rules while walking the format tree."""

    def __init__(self, markers: Sequence[str] = ()) -> None:
        self.rules: Dict[str, Expr] = {}
        self.taken: Set[str] = {"root"}
        self.counters: Dict[str, int] = {}
        # Free text never holds a token marker of the tag, as the token or as its text, but
        # where the marker is a trigger or an end (which win over an exclude at the same byte).
        self.marker_words = [w for m in markers for w in (token_marker(m), m)]

    def words(self, excludes: Sequence[str], words: Sequence[str] = ()) -> Tuple[bytes, ...]:
        """The exclude words of a piece of free text: ``excludes`` and the marker words but
        its own ``words`` (triggers and ends)."""
        if not self.marker_words:
            return _words(excludes)
        return _words([*excludes, *(w for w in self.marker_words if w not in words)])

    def fresh(self, base: str) -> str:
        return fresh_name(base, self.taken, self.counters)

    def rule(self, base: str, body: Expr) -> RuleRef:
        name = self.fresh(base)
        self.rules[name] = body
        return RuleRef(name)

    def dispatch(self, base: str, d: TagDispatch) -> RuleRef:
        """Free text as a rule of its own, so that the C core's mask cache recognises it and
        accepts the tokens that cannot complete a word without simulating them. Free text is
        bytes, as in xgrammar: a token may end inside a multi-byte character."""
        return self.rule(base, d)

    # ---- formats ----------------------------------------------------------------------------

    def convert(self, f: Any, path: str) -> Optional[Expr]:
        """IR for format ``f`` at JSON path ``path``; None when it accepts nothing."""
        method = getattr(self, "fmt_" + f.type)
        return method(f, path)

    def fmt_const_string(self, f: st.ConstString, path: str) -> Optional[Expr]:
        return Literal(encode_text(f.value))

    def fmt_token(self, f: st.Token, path: str) -> Optional[Expr]:
        return Literal(encode_text(_tag_text(f, path)))

    def fmt_json_schema(self, f: st.JSONSchema, path: str) -> Optional[Expr]:
        if f.excludes:
            raise StructuralTagError(
                "'excludes' inside json_schema is not supported", path=path + ".excludes"
            )
        try:
            key = json.dumps(f.json_schema)  # key order is property order: not sorted
        except (TypeError, ValueError) as e:
            raise StructuralTagError(f"the schema is not JSON: {e}", path=path + ".json_schema") from None
        try:
            options = (
                ("strict", True),
                ("any_order", f.any_order),
                ("max_whitespace", f.max_whitespace_cnt),
                ("xgrammar_types", True),
            )
            return Embed(_schema_grammars.get(f.json_schema, key, options))
        except GrammarError as e:
            raise StructuralTagError(str(e), path=path + ".json_schema") from None

    def fmt_any_text(self, f: st.AnyText, path: str) -> Optional[Expr]:
        _check_any_text(f, path)
        return self.dispatch("any_text", TagDispatch(excludes=self.words(f.excludes)))

    def fmt_regex(self, f: st.Regex, path: str) -> Optional[Expr]:
        try:
            return self.rule("regex", parse_regex(f.pattern))
        except GrammarError as e:
            raise StructuralTagError(str(e), path=path + ".pattern") from None

    def fmt_grammar(self, f: st.GrammarText, path: str) -> Optional[Expr]:
        try:
            grammar = f.grammar
            return Embed(grammar if isinstance(grammar, Grammar) else _ebnf_grammar(grammar))
        except GrammarError as e:
            raise StructuralTagError(str(e), path=path + ".grammar") from None

    def fmt_sequence(self, f: st.Sequence, path: str) -> Optional[Expr]:
        parts = [self.convert(e, f"{path}.elements[{i}]") for i, e in enumerate(f.elements)]
        return None if any(p is None for p in parts) else seq([p for p in parts if p is not None])

    def fmt_or(self, f: st.Or, path: str) -> Optional[Expr]:
        return choice([self.convert(e, f"{path}.elements[{i}]") for i, e in enumerate(f.elements)])

    def fmt_optional(self, f: st.OptionalFormat, path: str) -> Optional[Expr]:
        inner = self.convert(f.content, path + ".content")
        return EMPTY if inner is None else Repeat(inner, 0, 1)

    def fmt_plus(self, f: st.Plus, path: str) -> Optional[Expr]:
        inner = self.convert(f.content, path + ".content")
        return None if inner is None else Repeat(inner, 1, None)

    def fmt_star(self, f: st.Star, path: str) -> Optional[Expr]:
        inner = self.convert(f.content, path + ".content")
        return EMPTY if inner is None else Repeat(inner, 0, None)

    def fmt_repeat(self, f: st.Repeat, path: str) -> Optional[Expr]:
        if f.min > f.max:
            raise StructuralTagError(f"min {f.min} is larger than max {f.max}", path=path)
        inner = self.convert(f.content, path + ".content")
        if inner is None:
            return EMPTY if f.min == 0 else None
        return Repeat(inner, f.min, f.max)

    def fmt_tag(self, f: st.Tag, path: str) -> Optional[Expr]:
        return self.tag_after(f, "", path)

    def tag_after(self, f: st.Tag, opened: str, path: str) -> Optional[Expr]:
        """Tag ``f`` once the first ``len(opened)`` characters of its begin are written. A tag
        whose conversion makes no rule of its own (a call with JSON arguments) converts to the
        same expression every time: kept per tag object, as a piece (``pieces.mark``), with its
        ``_call_shape``."""
        known = _TAG_IR.get(f)
        if known is not None:
            found = known.get(opened)
            if found is not None:
                return found[0]
        n_rules = len(self.rules)
        out = self._tag_after(f, opened, path)
        if out is not None and len(self.rules) == n_rules and type(out) in (Seq, Choice):
            if known is None:
                known = _TAG_IR.put(f, {})
            known[opened] = (pieces.mark(out), _call_shape(out))
        return out

    def _tag_after(self, f: st.Tag, opened: str, path: str) -> Optional[Expr]:
        ends = [_tag_text(e, path + ".end") for e in ([f.end] if not isinstance(f.end, list) else f.end)]
        if not ends or (isinstance(f.content, st.AnyText) and any(not e for e in ends)):
            raise StructuralTagError("a tag around any_text needs non-empty end strings", path=path + ".end")
        begin = Literal(encode_text(_tag_text(f.begin, path + ".begin")[len(opened) :]))
        if isinstance(f.content, st.AnyText):  # up to the first end (no exclude before it)
            _check_any_text(f.content, path + ".content")
            ends, after = _cut_ends(ends, path + ".end")
            text = TagDispatch(
                stop_eos=False,
                stop_str=_words(ends),
                loop_after_dispatch=False,
                excludes=self.words(f.content.excludes, ends),
            )
            rest = [Literal(encode_text(after))] if after else []
            if not opened:  # a think block, say: the same in every request (_text_tag)
                return seq([Embed(_text_tag(begin.value, text)), *rest])
            return seq([begin, self.dispatch("tag_text", text), *rest])
        content = self.convert(f.content, path + ".content")
        if content is None:
            return None
        end = choice([Literal(encode_text(e)) for e in ends])
        assert end is not None
        return seq([begin, content, end])

    def free_text_loop(
        self,
        triggers: Sequence[str],
        rests: Dict[str, Optional[RuleRef]],
        excludes: Sequence[str],
        *,
        loop: bool,
    ) -> Optional[Expr]:
        """Free text, where each trigger's first occurrence continues with ``rests[trigger]``
        (a rule; a trigger whose rest accepts nothing is excluded); then free text again
        (``loop``) or the end."""
        opens = [(t, rests[t]) for t in dict.fromkeys(triggers)]
        text = TagDispatch(
            triggers=tuple((encode_text(t), r.name) for t, r in opens if r is not None),
            loop_after_dispatch=loop,
            excludes=self.words([*(t for t, r in opens if r is None), *excludes], [t for t, _ in opens]),
        )
        return self.dispatch("dispatch", text)

    def trigger_groups(
        self, triggers: Sequence[str], tags: Sequence[st.Tag], path: str
    ) -> Dict[str, List[int]]:
        """The tags each trigger opens, in the order of their begins (``_in_begin_order``);
        every tag must start with exactly one trigger."""
        if not triggers:
            raise StructuralTagError("triggered_tags needs at least one trigger", path=path + ".triggers")
        for i, tag in enumerate(tags):
            if not isinstance(tag.begin, str):  # as in xgrammar: a trigger is text
                raise StructuralTagError(
                    "a triggered tag's begin must be a string (a token marker may sit inside it)",
                    path=f"{path}.tags[{i}].begin",
                )
        if len(triggers) == 1 and triggers[0] and all([tag.begin.startswith(triggers[0]) for tag in tags]):
            return {triggers[0]: _in_begin_order(tags)}  # the usual case: hundreds of calls, one trigger
        groups: Dict[str, List[int]] = {t: [] for t in triggers}
        starts = tuple(t for t in groups if t)
        # When no trigger begins another, a begin starts with at most one of them, so the first
        # that matches is the tag's (the usual case: one trigger, hundreds of tags).
        unique = not any(a != b and b.startswith(a) for a in starts for b in starts)
        for i, tag in enumerate(tags):
            hit = _first_start(tag.begin, starts) if unique else None
            if hit is not None:
                groups[hit].append(i)
                continue
            hits = [t for t in triggers if t and tag.begin.startswith(t)]
            if not hits:
                raise StructuralTagError(
                    f"the tag's begin {tag.begin!r} starts with none of the triggers {list(triggers)!r}",
                    path=f"{path}.tags[{i}].begin",
                )
            if len(hits) > 1:
                raise StructuralTagError(
                    f"the tag's begin {tag.begin!r} starts with two triggers ({hits[0]!r} and {hits[1]!r})",
                    path=f"{path}.tags[{i}].begin",
                )
            groups[hits[0]].append(i)
        for j, t in enumerate(triggers):
            if not groups[t]:
                raise StructuralTagError(
                    f"the trigger {t!r} begins none of the tags", path=f"{path}.triggers[{j}]"
                )
            groups[t].sort(key=lambda i: tags[i].begin)
        return groups

    def fmt_triggered_tags(self, f: st.TriggeredTags, path: str) -> Optional[Expr]:
        if not f.tags:
            raise StructuralTagError("triggered_tags needs at least one tag", path=path + ".tags")
        if any(MARKER_OPEN in t for t in f.triggers):
            f = f.model_copy(update={"triggers": list(dict.fromkeys(map(_cut_at_marker, f.triggers)))})
        groups = self.trigger_groups(f.triggers, f.tags, path)
        if f.at_least_one:
            any_tag = _group(
                choice([self.tag_after(f.tags[i], "", f"{path}.tags[{i}]") for i in _in_begin_order(f.tags)])
            )
            if any_tag is None:
                return None
            if f.stop_after_first:
                return any_tag
            rests = self.rests(f, groups, path)
            return seq([any_tag, self.free_text_loop(f.triggers, rests, f.excludes, loop=True)])
        rests = self.rests(f, groups, path)
        return self.free_text_loop(f.triggers, rests, f.excludes, loop=not f.stop_after_first)

    def rests(
        self, f: st.TriggeredTags, groups: Dict[str, List[int]], path: str
    ) -> Dict[str, Optional[RuleRef]]:
        out: Dict[str, Optional[RuleRef]] = {}
        for t, idx in groups.items():
            alts, shapes = self.calls_after(f.tags, idx, t, path)
            shared, infos = _share_tails(alts, shapes)
            if infos is not None and len(shared) > 1:  # every item a split call: choice() would keep all
                body: Optional[Expr] = pieces.group(Choice(tuple(shared)), infos)  # type: ignore[arg-type]
            else:
                body = _group(choice(shared), infos)
            out[t] = None if body is None else self.rule("tag", body)
        return out

    def calls_after(
        self, tags: Sequence[st.Tag], idx: Sequence[int], opened: str, path: str
    ) -> Tuple[List[Optional[Expr]], List[Optional["_Split"]]]:
        """``tag_after(tags[i], opened)`` for each i of ``idx``, and its ``_call_shape`` (None for
        a tag that made a rule): a request's hundreds of calls of known tools are found in one
        pass over ``_TAG_IR``."""
        chosen = [tags[i] for i in idx]
        found = [None if k is None else k.get(opened) for k in _TAG_IR.get_many(chosen)]
        for j, hit in enumerate(found):
            if hit is None:
                e = self.tag_after(chosen[j], opened, f"{path}.tags[{idx[j]}]")
                found[j] = (_TAG_IR.get(chosen[j]) or {}).get(opened) or (e, None)
        return [h[0] for h in found], [h[1] for h in found]  # type: ignore[index]

    def fmt_tags_with_separator(self, f: st.TagsWithSeparator, path: str) -> Optional[Expr]:
        any_tag = _group(
            choice([self.tag_after(tag, "", f"{path}.tags[{i}]") for i, tag in enumerate(f.tags)])
        )
        if any_tag is None:
            return None if f.at_least_one else EMPTY
        one = self.rule("tag", any_tag)
        body: Expr = (
            one
            if f.stop_after_first
            else seq([one, Repeat(seq([Literal(encode_text(f.separator)), one]), 0, None)])
        )
        return body if f.at_least_one else Repeat(body, 0, 1)

    def fmt_dispatch(self, f: st.Dispatch, path: str) -> Optional[Expr]:
        triggers = [t for t, _ in f.rules]
        if not triggers or any(not t for t in triggers) or len(set(triggers)) != len(triggers):
            raise StructuralTagError(
                "dispatch needs distinct, non-empty trigger strings", path=path + ".rules"
            )
        rests: Dict[str, Optional[RuleRef]] = {}
        for i, (t, fmt) in enumerate(f.rules):
            inner = self.convert(fmt, f"{path}.rules[{i}][1]")
            rests[t] = None if inner is None else self.rule("dispatch_rule", inner)
        return self.free_text_loop(triggers, rests, f.excludes, loop=f.loop)


def _group(e: Optional[Expr], infos: Optional[List[Optional[pieces.PieceInfo]]] = None) -> Optional[Expr]:
    """A choice of tags, as a ``pieces.group`` when its items are pieces (calls of known tools);
    ``infos``: the items' piece information, when at hand."""
    return pieces.group(e, infos) if type(e) is Choice else e


def _in_begin_order(tags: Sequence[st.Tag]) -> List[int]:
    """The indices of ``tags`` by their begins (stable): the order of a choice's alternatives
    changes nothing it accepts, so the same tools offered in another order (a registry's
    subset, tools listed from a set) make the same grammar, and the Compiler hands back the
    one it compiled, token-mask caches warm."""
    return sorted(range(len(tags)), key=lambda i: tags[i].begin)


def _first_start(text: str, starts: Sequence[str]) -> Optional[str]:
    """The first of ``starts`` that ``text`` starts with, or None."""
    for t in starts:
        if text.startswith(t):
            return t
    return None


def _tag_text(item: Union[str, st.Token], path: str) -> str:
    """A tag's begin or end as grammar text: a ``token`` item is its token marker
    (``token_markers``); a token given by id needs the vocabulary, which a grammar has not."""
    if isinstance(item, str):
        return item
    if isinstance(item.token, str) and item.token:
        return token_marker(item.token)
    raise StructuralTagError(
        "a token given by id needs the vocabulary; give the token's text instead", path=path + ".token"
    )


def _cut_at_marker(word: str) -> str:
    """``word`` up to the end of its first token marker: free text excludes each marker (its
    own words aside), so a word of free text must end where its first marker does. A trigger
    cut there still starts the same tags; what followed is in their begins."""
    start = word.find(MARKER_OPEN)
    end = word.find(MARKER_CLOSE, start + 1) if start >= 0 else -1
    return word if end < 0 else word[: end + 1]


def _cut_ends(ends: List[str], path: str) -> Tuple[List[str], str]:
    """The ends of free text in a tag, each cut after its first token marker
    (``_cut_at_marker``), and what every end then continues with (which must be the same)."""
    cut = [_cut_at_marker(e) for e in ends]
    afters = {e[len(c) :] for e, c in zip(ends, cut)}
    if len(afters) > 1:
        raise StructuralTagError(
            "the ends of a tag around any_text go on differently after their first token marker", path=path
        )
    return list(dict.fromkeys(cut)), afters.pop()


def _check_any_text(f: st.AnyText, path: str) -> None:
    for limit in ("max_tokens", "max_chars"):
        if getattr(f, limit) is not None:
            raise StructuralTagError(f"'{limit}' on any_text is not supported", path=f"{path}.{limit}")


# The expressions of tags that made no rule (``_Builder.tag_after``), each with its
# ``_call_shape`` (whose ``split`` keeps the call's split forms): tag -> {opened -> (IR, shape)}.
_TAG_IR: "memo.IdentityMemo[Dict[str, Tuple[Expr, Optional[_Split]]]]" = memo.IdentityMemo(
    "tag IR", limit=16384
)
# ``_share_tails``: an argument grammar -> {(tail, end) -> the part of a call's tail}.
_TAIL_PARTS: "memo.IdentityMemo[Dict[Tuple[bytes, bytes], Grammar]]" = memo.IdentityMemo(
    "tail parts", limit=16384
)


class _Split:
    """A call piece ``begin Embed(args) end`` (``_share_tails``): its parts, its begin
    reversed (for the common tail), and its split form per tail."""

    __slots__ = ("args", "begin", "end", "nigeb", "split")

    def __init__(self, begin: bytes, args: Grammar, end: bytes) -> None:
        self.begin, self.args, self.end, self.nigeb = begin, args, end, begin[::-1]
        self.split: Dict[bytes, Tuple[Expr, Optional[pieces.PieceInfo]]] = {}  # tail -> (piece, its info)


def _call_shape(e: Expr) -> Optional[_Split]:
    """A new ``_Split`` of a call piece ``begin Embed(arguments) end``, else None (kept with
    the tag's IR in ``_TAG_IR``)."""
    items = e.items if type(e) is Seq else ()  # type: ignore[union-attr]
    if not 2 <= len(items) <= 3 or type(items[0]) is not Literal or type(items[1]) is not Embed:
        return None
    if len(items) == 3 and type(items[2]) is not Literal:
        return None
    end = items[2].value if len(items) == 3 else b""
    return _Split(items[0].value, items[1].grammar, end)  # type: ignore[union-attr]


def _share_tails(
    alts: List[Optional[Expr]], shapes: List[Optional[_Split]]
) -> Tuple[List[Optional[Expr]], Optional[List[Optional[pieces.PieceInfo]]]]:
    """The alternatives of one trigger's tags, with what follows their distinct heads moved
    into a part per call: ``head tail Embed(args) end`` becomes ``head Embed(P)``, P the grammar
    ``tail args end`` (``Grammar._around``: the arguments' rules and a root around them, one
    grammar to compile, not two), where ``tail`` is the end that every call's begin shares (for
    Hermes calls, ``", "arguments": ``). The language is the same; the request's own
    automaton keeps only the heads (the tool names), which is what a request must build, and
    P, the same in every request offering the tool, is compiled once like the arguments.
    Also returns the piece information of each alternative when every one was split (None
    otherwise), kept with the split form so that ``pieces.group`` need not look it up.
    ``shapes``: the ``_call_shape`` of each alternative (None where it is not a call)."""
    calls = [s for s in shapes if s is not None]
    if len(calls) < 2:
        return alts, None
    tail = os.path.commonprefix([c.nigeb for c in calls])[::-1]  # noqa: RUF071 (bytes, byte by byte)
    keep = min(len(tail), min([len(c.begin) for c in calls]) - 1)  # every head keeps a byte
    tail = tail[len(tail) - keep :] if keep > 0 else b""
    if not tail:
        return alts, None
    # The split forms made before, in one pass (a request's hundreds of calls of known tools).
    found = [None if s is None else s.split.get(tail) for s in shapes]
    for j, shape in enumerate(shapes):
        if shape is not None and found[j] is None:
            found[j] = _split(shape, tail)
    if len(calls) < len(shapes):  # calls among other alternatives: those stay as they are
        return [a if f is None else f[0] for a, f in zip(alts, found)], None
    return [f[0] for f in found], [f[1] for f in found]  # type: ignore[index]


def _split(shape: _Split, tail: bytes) -> Tuple[Expr, Optional[pieces.PieceInfo]]:
    """``shape``'s call as its head then its tail part (``_share_tails``), kept per tail."""
    parts = _TAIL_PARTS.get(shape.args) or _TAIL_PARTS.put(shape.args, {})
    part = parts.get((tail, shape.end))
    if part is None:
        part = parts[(tail, shape.end)] = shape.args._around(tail, shape.end)
    head = Literal(shape.begin[: len(shape.begin) - len(tail)])
    piece = pieces.mark(Seq((head, Embed(part))))
    found = shape.split[tail] = (piece, pieces.info(piece))
    return found


class _SchemaGrammars:
    """``Grammar.from_json_schema`` once per schema text and options: the schema object given
    is converted (not the text parsed back), and the oldest of ``limit`` entries goes first.
    Requests reuse the same tools: each piece's grammar is built once, and the compiler links
    the same Grammar object into every request (its automata and token masks are shared)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: "OrderedDict[Tuple[str, Tuple[Tuple[str, Any], ...]], Grammar]" = OrderedDict()

    def get(self, schema: Any, schema_json: str, options: Tuple[Tuple[str, Any], ...]) -> Grammar:
        key = (schema_json, options)
        found = self._entries.get(key)
        if found is None:
            found = Grammar.from_json_schema(schema, **dict(options))
            if len(self._entries) >= self.limit:
                self._entries.popitem(last=False)
            self._entries[key] = found
        else:
            try:
                self._entries.move_to_end(key)
            except KeyError:  # dropped by another thread meanwhile: still a valid grammar
                pass
        return found

    def cache_clear(self) -> None:
        """Forget every grammar."""
        self._entries.clear()


_schema_grammars = _SchemaGrammars(limit=4096)
# Counted with the memos (schema text and options -> Grammar; the key holds the schema's JSON
# text), so that a compiler's cache_limit_bytes bounds it too.
memo.register_mapping(
    "schema grammars", lambda: _schema_grammars._entries, entry_size=lambda key, _: 256 + len(key[0])
)


def compact_schema_grammar(schema: Any, separators: Tuple[str, str]) -> Grammar:
    """The grammar of JSON valid against ``schema`` in the compact layout (``separators``,
    strict), one per distinct schema: tools with equal schemas share it, and with it their
    parts and token masks.

    Example:
        >>> g = compact_schema_grammar({"type": "integer"}, (", ", ": "))
        >>> g is compact_schema_grammar({"type": "integer"}, (", ", ": ")), g.accepts("12")
        (True, True)
    """
    options = (("whitespace", "compact"), ("separators", separators), ("strict", True))
    try:
        key = json.dumps(schema)  # key order is property order: not sorted
    except (TypeError, ValueError):  # not JSON: the converter says what is wrong with it
        return Grammar.from_json_schema(schema, **dict(options))
    return _schema_grammars.get(schema, key, options)


@lru_cache(maxsize=4096)
def _ebnf_grammar(text: str) -> Grammar:
    return Grammar.from_ebnf(text)


@lru_cache(maxsize=256)
def _text_tag(begin: bytes, text: TagDispatch) -> Grammar:
    """A tag around free text that no trigger opens (a think block) as a grammar of its own,
    which a request embeds: its begin, then ``text`` up to the first end. Every request of a
    format has the same one, so the Compiler compiles it once (a part), and the token classes
    of its states, the first masks of every output, are computed by the first request only:
    in the request's own rules they were walked again each time, as a token from them may
    reach rules (the tools) that differ between requests."""
    return Grammar.from_rules(
        [Rule("root", seq([Literal(begin), RuleRef("tag_text")])), Rule("tag_text", text)]
    )


# Formats whose strings cannot hold a token marker: their text is not grammar text.
_NO_MARKERS = (st.JSONSchema, st.GrammarText, st.Regex)
# Tag -> the token markers in it (tags are cached per tool: a request's hundreds are met again).
_TAG_MARKERS: "memo.IdentityMemo[Set[str]]" = memo.IdentityMemo("tag markers", limit=16384)


def _markers_of(item: Any) -> Set[str]:
    """The texts of the token markers written anywhere in a format (``token`` items and
    markers inside strings)."""
    if isinstance(item, str):
        return set(markers_in_text(item)) if MARKER_OPEN in item else set()
    if isinstance(item, st.Token):
        return {item.token} if isinstance(item.token, str) and item.token else set()
    if isinstance(item, (list, tuple)):
        out: Set[str] = set()
        for x in item:
            out |= _markers_of(x)
        return out
    if not isinstance(item, BaseModel) or isinstance(item, _NO_MARKERS):
        return set()
    if isinstance(item, st.Tag):
        found = _TAG_MARKERS.get(item)
        if found is None:
            found = _TAG_MARKERS.put(item, _markers_of([item.begin, item.content, item.end]))
        return found
    return _markers_of([getattr(item, name) for name in type(item).model_fields])


def _words(texts: Sequence[str]) -> Tuple[bytes, ...]:
    """UTF-8 words for a TagDispatch, each once; an empty exclude can never occur as a word and
    is dropped."""
    return tuple(dict.fromkeys(encode_text(t) for t in texts if t))


def structural_tag_rules(obj: Any) -> Tuple[List[Rule], str]:
    """Grammar rules (root first) for a structural tag given as a model, a dict or JSON text."""
    tag = parse_structural_tag(obj)
    try:
        b = _Builder(sorted(_markers_of(tag.format)))
        body = b.convert(tag.format, "$.format")
    except RecursionError:  # models built in Python, nested past what the builder can walk
        raise StructuralTagError("the structural tag nests too deeply", path="$.format") from None
    except UnicodeEncodeError as e:
        bad = e.object[e.start : e.end] if isinstance(e.object, str) else "?"
        raise StructuralTagError(
            f"a string of the tag is not valid Unicode: it holds the lone surrogate {bad!r}", path="$.format"
        ) from None
    if body is None:
        raise StructuralTagError("the structural tag accepts no text", path="$.format")
    return [Rule("root", body), *(Rule(n, x) for n, x in b.rules.items())], "root"
