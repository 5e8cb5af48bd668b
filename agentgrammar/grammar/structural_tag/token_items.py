"""Token-level formats: ``exclude_token``, ``any_tokens``, ``token_triggered_tags`` and
``token_dispatch`` (a ``token`` is a token marker, in ``builder.py``).

Each token these name is a token marker (``token_markers``): a marked vocabulary gives it a
private spelling that no other token writes, so free text of bytes that never holds that
spelling is exactly "any tokens but it", and a trigger on the spelling fires exactly when the
token is written. That is xgrammar's semantics with no token-level machinery in the engine:

* ``any_tokens``: free text excluding the excluded tokens and the token end of the tag around it
  (xgrammar's detected end); ``max_tokens`` as a tag's content is a token budget
  (``budgets.py``), as for ``any_text``.
* ``token_triggered_tags`` / ``token_dispatch``: free text whose triggers are the tokens' spellings.
* ``exclude_token``: "exactly one token" has no byte spelling, so it is a one-token item
  (``grammar/one_token.py``) that the matcher expands (``engine/token_items.py``).

Free text here excludes only what the format names (not the tag's other markers, as xgrammar's
token-level text allows them); a token given by id is known by its id alone, so a trigger and
the begin of its tags must name the token the same way. Token-level free text is exact where a
token follows it (a token end, a trigger), which is how xgrammar's builtin tags use it; followed
by text, a token that runs from the free text into that text is allowed here and not there.

Example:
    >>> from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
    >>> vocab = Vocabulary(["<a>", "</a>", "hi", "</", "a>", "</s>"]).with_token_markers(["<a>", "</a>"])
    >>> g = Grammar.from_structural_tag({"type": "tag", "begin": {"type": "token", "token": "<a>"},
    ...     "content": {"type": "any_tokens"}, "end": {"type": "token", "token": "</a>"}})
    >>> m = Matcher(Compiler(vocab).compile(g))
    >>> m.accept_tokens([0, 2, 3, 4]), m.allowed_token_ids()  # "</a>" as text does not end it
    (True, [0, 1, 2, 3, 4])
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Union

from ...errors import StructuralTagError
from ..ir import EMPTY, Expr, Literal, RuleRef, TagDispatch, choice, seq
from ..one_token import one_token_item
from ..token_markers import marker_bytes, token_marker
from . import models as st
from .base import BuilderBase

__all__ = ["TokenFormats", "token_name"]

Name = Union[int, str]


def token_name(name: Name, path: str) -> Name:
    """A token named by a structural tag, checked: a non-empty text or an id >= 0."""
    if isinstance(name, bool) or (isinstance(name, int) and name < 0) or name == "":
        raise StructuralTagError(f"a token must be a non-empty text or an id >= 0, got {name!r}", path=path)
    return name


class TokenFormats(BuilderBase):
    """The token-level formats, and the token end of the tag around each (xgrammar's
    ``detected_end_token_ids``: the end of the nearest tag, when it is a token)."""

    def tag_after(self, f: st.Tag, opened: str, path: str, mark: bool = True) -> Optional[Expr]:
        if type(f.content) is st.GrammarText:  # no format inside it reads the tag's end or budget
            return super().tag_after(f, opened, path, mark)  # type: ignore[misc]
        ends: List[Optional[Name]] = self.__dict__.setdefault("_tag_ends", [])
        ends.append(f.end.token if isinstance(f.end, st.Token) else None)
        # any_tokens with max_tokens right inside a tag: a token budget (budgets.py)
        outer, self._budget_ok = getattr(self, "_budget_ok", False), isinstance(f.content, st.AnyTokens)
        try:
            return super().tag_after(f, opened, path, mark)  # type: ignore[misc]
        finally:
            ends.pop()
            self._budget_ok = outer

    def _end_token(self) -> List[Name]:
        ends: List[Optional[Name]] = self.__dict__.get("_tag_ends", [])
        return [ends[-1]] if ends and ends[-1] is not None else []

    def _spellings(self, names: Sequence[Name], path: str) -> List[bytes]:
        return [marker_bytes(token_name(n, f"{path}[{i}]")) for i, n in enumerate(names)]

    def fmt_exclude_token(self, f: st.ExcludeToken, path: str) -> Optional[Expr]:
        names = [token_name(n, f"{path}.exclude_tokens[{i}]") for i, n in enumerate(f.exclude_tokens)]
        return Literal(one_token_item([*names, *self._end_token()]))

    def fmt_any_tokens(self, f: st.AnyTokens, path: str) -> Optional[Expr]:
        if f.max_tokens is not None and not getattr(self, "_budget_ok", False):
            raise StructuralTagError(
                "'max_tokens' on any_tokens is supported only as a tag's content", path=f"{path}.max_tokens"
            )
        if f.max_tokens == 0:  # as in xgrammar: a region of no tokens is empty
            return EMPTY
        words = self._spellings(f.exclude_tokens, path + ".exclude_tokens")
        words += [marker_bytes(e) for e in self._end_token()]
        return self.dispatch("any_tokens", TagDispatch(excludes=tuple(dict.fromkeys(words))))

    def fmt_token_triggered_tags(self, f: st.TokenTriggeredTags, path: str) -> Optional[Expr]:
        if not f.tags:
            raise StructuralTagError("token_triggered_tags needs at least one tag", path=path + ".tags")
        triggers = [token_name(t, f"{path}.trigger_tokens[{i}]") for i, t in enumerate(f.trigger_tokens)]
        if not triggers:
            raise StructuralTagError(
                "token_triggered_tags needs a trigger token", path=path + ".trigger_tokens"
            )
        groups: Dict[Name, List[int]] = {t: [] for t in triggers}
        for i, tag in enumerate(f.tags):
            if not isinstance(tag.begin, st.Token):
                raise StructuralTagError(
                    "a tag in token_triggered_tags must begin with a token", path=f"{path}.tags[{i}].begin"
                )
            if tag.begin.token not in groups:
                raise StructuralTagError(
                    f"the tag's begin token {tag.begin.token!r} is none of the trigger tokens {triggers!r}",
                    path=f"{path}.tags[{i}].begin",
                )
            groups[tag.begin.token].append(i)
        whole = [self.tag_after(tag, "", f"{path}.tags[{i}]") for i, tag in enumerate(f.tags)]
        if f.at_least_one and f.stop_after_first:
            return choice(whole)
        rests: Dict[bytes, Optional[RuleRef]] = {}
        for t, idx in groups.items():
            body = choice([self.tag_after(f.tags[i], token_marker(t), f"{path}.tags[{i}]") for i in idx])
            rests[marker_bytes(t)] = None if body is None else self.rule("tag", body)
        excludes = self._spellings(f.exclude_tokens, path + ".exclude_tokens")
        text = self._token_text(
            rests, [*excludes, *map(marker_bytes, self._end_token())], not f.stop_after_first
        )
        if not f.at_least_one:
            return text
        first = choice(whole)
        return None if first is None else seq([self.rule("tag", first), text])

    def fmt_token_dispatch(self, f: st.TokenDispatch, path: str) -> Optional[Expr]:
        names = [token_name(t, f"{path}.rules[{i}][0]") for i, (t, _) in enumerate(f.rules)]
        if not names or len(set(names)) != len(names):
            raise StructuralTagError("token_dispatch needs distinct trigger tokens", path=path + ".rules")
        rests: Dict[bytes, Optional[RuleRef]] = {}
        for i, (t, fmt) in enumerate(f.rules):
            inner = self.convert(fmt, f"{path}.rules[{i}][1]")
            rests[marker_bytes(t)] = None if inner is None else self.rule("dispatch_rule", inner)
        excludes = self._spellings(f.exclude_tokens, path + ".exclude_tokens")
        return self._token_text(rests, excludes, f.loop)

    def _token_text(self, rests: Dict[bytes, Optional[RuleRef]], excludes: List[bytes], loop: bool) -> Expr:
        """Free tokens: each trigger continues with its rule (one whose rule accepts nothing is
        excluded), then free tokens again (``loop``) or the end."""
        text = TagDispatch(
            triggers=tuple((t, r.name) for t, r in rests.items() if r is not None),
            loop_after_dispatch=loop,
            excludes=tuple(dict.fromkeys([*excludes, *(t for t, r in rests.items() if r is None)])),
        )
        return self.dispatch("token_dispatch", text)
