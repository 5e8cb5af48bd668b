"""The strings of a structural tag as grammar text: token items and token markers, the words
of free text, the ends of a tag around free text.

Example:
    >>> _words(["a", "", "a", "b"])
    (b'a', b'b')
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Set, Tuple, Union

from pydantic import BaseModel

from ...errors import StructuralTagError
from .. import memo
from ..token_markers import MARKER_CLOSE, MARKER_OPEN, encode_text, markers_in_text, token_marker
from . import models as st


def _tag_text(item: Union[str, st.Token], path: str) -> str:
    """A tag's begin or end as grammar text: a ``token`` item is its token marker
    (``token_markers``), by text or by id."""
    if isinstance(item, str):
        return item
    if _is_name(item.token):
        return token_marker(item.token)  # an id is a marker by id: Vocabulary.with_token_markers takes ids
    raise StructuralTagError("a token must be a non-empty text or an id >= 0", path=path + ".token")


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


def _check_any_text(f: st.AnyText, path: str, *, in_tag: bool = False) -> None:
    """``StructuralTagError`` for what ``any_text`` here does not support: ``max_chars`` with
    excludes (or, in ``tags.py``, before an end string), and ``max_tokens`` outside a tag (a
    token budget runs from a tag's begin to its end)."""
    if f.max_chars is not None and f.excludes:
        raise StructuralTagError(
            "'max_chars' on any_text with excludes is not supported", path=f"{path}.max_chars"
        )
    if f.max_tokens is not None and not in_tag:
        raise StructuralTagError(
            "'max_tokens' on any_text is supported only as a tag's content", path=f"{path}.max_tokens"
        )


# Formats whose strings cannot hold a token marker: their text is not grammar text.
_NO_MARKERS = (st.JSONSchema, st.GrammarText, st.Regex)
# Tag -> [the token markers in it, every token it names (``_named_tokens``) or None until
# asked]: tags are cached per tool, so a request's hundreds are met again, and walking each
# one's fields was most of a 500-tool request for known tools. One entry per tag for both: a
# cold request adds an entry per tool, not two.
_TAG_TOKENS: "memo.IdentityMemo[List[Any]]" = memo.IdentityMemo("tag markers", limit=16384)


def _is_name(tok: Any) -> bool:
    """Whether ``tok`` can name a token: a non-empty text or an id >= 0 (else refused where used)."""
    return (isinstance(tok, str) and tok != "") or (type(tok) is int and tok >= 0)


def _markers_of(item: Any) -> Set[Any]:
    """The texts of the token markers written anywhere in a format (``token`` items and
    markers inside strings)."""
    if type(item) is st.Tag:  # first: a request's hundreds of calls
        plain = _plain_tag_markers(item)
        return plain if plain is not None else _tag_tokens(item)[0]  # type: ignore[no-any-return]
    if isinstance(item, str):
        return set(markers_in_text(item)) if MARKER_OPEN in item else set()
    if isinstance(item, st.Token):
        return {item.token} if _is_name(item.token) else set()
    if isinstance(item, st.TokenDispatch):  # its tokens are triggers, like a token begin
        return {t for t, _ in item.rules if _is_name(t)} | _markers_of([f for _, f in item.rules])
    if isinstance(item, (st.ExcludeToken, st.AnyTokens)):
        return set()  # excluded tokens are marked but stay allowed in other free text, as in xgrammar
    if isinstance(item, (list, tuple)):
        out: Set[Any] = set()
        for x in item:
            out |= _markers_of(x)
        return out
    if not isinstance(item, BaseModel) or isinstance(item, _NO_MARKERS):
        return set()
    if isinstance(item, st.Tag):
        plain = _plain_tag_markers(item)
        return plain if plain is not None else _tag_tokens(item)[0]  # type: ignore[no-any-return]
    return _markers_of([getattr(item, name) for name in type(item).model_fields])


# Contents whose fields name no token (no list, no model): a tag around one names only the
# markers in its begin and end.
_PLAIN_CONTENTS = (st.GrammarText, st.Regex)


def _plain_tag_markers(tag: st.Tag) -> Optional[Set[Any]]:
    """The markers of a call's tag (text begin and end, arguments a grammar), which are also
    every token it names; None for other tags. Two substring tests: cheaper than keeping an
    entry per tag in ``_TAG_TOKENS`` (a cold request's hundred tags made a hundred entries)."""
    begin, end = tag.begin, tag.end
    if type(tag) is not st.Tag or type(begin) is not str or type(end) is not str:
        return None
    if type(tag.content) not in _PLAIN_CONTENTS:
        return None
    if MARKER_OPEN not in begin and MARKER_OPEN not in end:
        return set()
    return {*markers_in_text(begin), *markers_in_text(end)}


def _tag_tokens(tag: st.Tag) -> List[Any]:
    """The entry of ``tag`` in ``_TAG_TOKENS``, made with its markers where there is none."""
    found = _TAG_TOKENS.get(tag)
    if found is None:
        found = _TAG_TOKENS.put(tag, [_markers_of([tag.begin, tag.content, tag.end]), None])
    return found


def _named_tokens(item: Any) -> Set[Any]:
    """Every token a format names (``_markers_of``, and the excluded and trigger tokens): the
    tokens a vocabulary marks for it."""
    if isinstance(item, st.Tag):
        plain = _plain_tag_markers(item)
        if plain is not None:
            return plain
        entry = _tag_tokens(item)
        if entry[1] is None:
            entry[1] = _named_fields(item)
        return set(entry[1])
    return _named_fields(item)


# Formats whose ``_markers_of`` is not the union of their fields' (see ``_markers_of``).
_OWN_MARKERS = (st.Tag, st.Token, st.TokenDispatch, st.ExcludeToken, st.AnyTokens, *_NO_MARKERS)


def _named_fields(item: Any) -> Set[Any]:
    """``_named_tokens`` of ``item`` found from its own fields: ``_markers_of(item)`` and, in
    the lists and models below it, ``_named_tokens`` of each (a superset of its markers).

    A plain model's markers are its fields' markers, and its lists and models are walked here
    anyway: only its other fields' markers (its strings) are added. Taking ``_markers_of`` of
    the whole model would walk its subtree once more per level (a request's every tag again
    at each level above them)."""
    if isinstance(item, (list, tuple)):
        found: Set[Any] = set()
        for x in item:
            found |= _named_tokens(x)
        return found
    if not isinstance(item, BaseModel):
        return set(_markers_of(item))
    own = isinstance(item, _OWN_MARKERS)
    found = set(_markers_of(item)) if own else set()
    for name in type(item).model_fields:
        value = getattr(item, name)
        if name in ("exclude_tokens", "trigger_tokens"):
            found |= {t for t in value if _is_name(t)}
            if not own:
                found |= _markers_of(value)
        elif isinstance(value, (BaseModel, list, tuple)):
            found |= _named_tokens(value)
        elif not own:
            found |= _markers_of(value)
    return found


def _words(texts: Sequence[str]) -> Tuple[bytes, ...]:
    """UTF-8 words for a TagDispatch, each once; an empty exclude can never occur as a word and
    is dropped."""
    return tuple(dict.fromkeys(encode_text(t) for t in texts if t))
