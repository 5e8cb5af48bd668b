"""Tags and free text: ``tag``, ``triggered_tags``, ``tags_with_separator`` and ``dispatch``.

Example:
    >>> from agentgrammar import Grammar
    >>> Grammar.from_structural_tag({"type": "dispatch", "rules": [["<a>", {"type": "const_string",
    ...     "value": "1"}]]}).accepts("x<a>1y")
    True
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from ...errors import StructuralTagError
from .. import pieces
from ..grammar import Grammar
from ..ir import EMPTY, Choice, Embed, Expr, Literal, Repeat, RuleRef, Seq, TagDispatch, choice, seq
from ..token_markers import MARKER_OPEN, encode_text
from . import models as st
from .base import BuilderBase
from .calls import _TAG_IR, _call_shape, _first_start, _group, _in_begin_order, _share_tails, _Split
from .end_clash import clashes, content_then_end, holds_end, stop_at_prefix
from .schemas import _text_tag
from .text import _check_any_text, _cut_at_marker, _cut_ends, _tag_text, _words

__all__ = ["TagFormats"]


class TagFormats(BuilderBase):
    """The formats around tags and free text."""

    def fmt_tag(self, f: st.Tag, path: str) -> Optional[Expr]:
        return self.tag_after(f, "", path)

    def tag_after(self, f: st.Tag, opened: str, path: str, mark: bool = True) -> Optional[Expr]:
        """Tag ``f`` once the first ``len(opened)`` characters of its begin are written. A tag
        whose conversion makes no rule of its own (a call with JSON arguments) converts to the
        same expression every time: kept per tag object, with its ``_call_shape``, and marked
        as a piece (``pieces.mark``) when returned with ``mark`` (``calls_after`` leaves the
        calls that ``_share_tails`` splits unmarked: only their split forms reach a grammar)."""
        known = _TAG_IR.get(f)
        if known is not None:
            found = known.get(opened)
            if found is not None:
                return pieces.mark(found[0]) if mark else found[0]
        n_rules = len(self.rules)
        out = self._tag_after(f, opened, path)
        if out is not None and len(self.rules) == n_rules and type(out) in (Seq, Choice):
            if known is None:
                known = _TAG_IR.put(f, {})
            known[opened] = (out, _call_shape(out))
            if mark:
                pieces.mark(out)
        return out

    def _tag_after(self, f: st.Tag, opened: str, path: str) -> Optional[Expr]:
        content = f.content
        if type(content) is st.GrammarText and type(f.begin) is str and type(f.end) is str:
            grammar = content.grammar
            if isinstance(grammar, Grammar):  # a call: what the general path below makes, directly
                head, tail = encode_text(f.begin[len(opened) :]), encode_text(f.end)
                if head and tail:
                    return Seq((Literal(head), Embed(grammar), Literal(tail)))
        ends = [_tag_text(e, path + ".end") for e in ([f.end] if not isinstance(f.end, list) else f.end)]
        begin = Literal(encode_text(_tag_text(f.begin, path + ".begin")[len(opened) :]))
        if isinstance(f.content, st.AnyText) and ends == [""] and f.content.excludes:
            # as in xgrammar: free text with excludes may end a tag whose end is "" (a token
            # budget then runs to the end of the output: budgets.py)
            _check_any_text(f.content, path + ".content", in_tag=True)
            text = TagDispatch(excludes=self.words(f.content.excludes))
            return seq([begin, self.dispatch("any_text", text)])
        if not ends or (isinstance(f.content, st.AnyText) and any(not e for e in ends)):
            raise StructuralTagError(
                'a tag around any_text needs non-empty end strings (or the end "" and excludes)',
                path=path + ".end",
            )
        if isinstance(f.content, st.AnyText) and f.content.max_chars is not None:
            raise StructuralTagError(
                "'max_chars' on any_text before an end string is not supported",
                path=path + ".content.max_chars",
            )
        if isinstance(f.content, st.AnyText):  # up to the first end (no exclude before it)
            _check_any_text(f.content, path + ".content", in_tag=True)
            ends, after = _cut_ends(ends, path + ".end")
            stops = _words(ends)
            text = TagDispatch(
                stop_eos=False,
                stop_str=stops,
                loop_after_dispatch=False,
                excludes=tuple(x for x in self.words(f.content.excludes, ends) if not holds_end(x, stops)),
            )
            rest = [Literal(encode_text(after))] if after else []
            if any(clashes(x, e) for x in text.excludes for e in text.stop_str):
                cut = stop_at_prefix(text.stop_str, text.excludes)
                if cut is None:
                    body = content_then_end(text.stop_str, text.excludes, self.rules, self.fresh)
                    return None if body is None else seq([begin, body, *rest])
                prefix, tail = cut
                text = TagDispatch(
                    stop_eos=False,
                    stop_str=(prefix,),
                    loop_after_dispatch=False,
                    excludes=tuple(x for x in text.excludes if prefix not in x),
                )
                rest.insert(0, Literal(tail))
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
        alts: List[Optional[Expr]] = []
        shapes: List[Optional[_Split]] = []
        for j, hit in enumerate(found):
            if hit is None:
                e = self.tag_after(chosen[j], opened, f"{path}.tags[{idx[j]}]", mark=False)
                hit = (_TAG_IR.get(chosen[j]) or {}).get(opened)
                if hit is None:  # it made a rule, or is no sequence or choice: not kept
                    alts.append(e)
                    shapes.append(None)
                    continue
            if hit[1] is None:  # kept, not a call: a piece as it is
                pieces.mark(hit[0])
            alts.append(hit[0])
            shapes.append(hit[1])
        return alts, shapes

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
