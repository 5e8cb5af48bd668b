"""Free text in a tag whose excludes reach into its end: the content and end as automata.

A tag around ``any_text`` runs up to the first occurrence of its end, and its excludes apply to
the content only (xgrammar's semantics: with exclude ``"</"`` and end ``"</a>"``, ``<a>x</a>`` is
accepted). The C core's TagDispatch checks excludes on every byte, ends included, and an
exclude that ends on the same byte as an end wins (as in xgrammar's TagDispatch), so an exclude
that can end inside an end or with it (``"</"``, ``"/a"``, ``"x<"``, ``"a>"``, ``"x</a>"`` for
``"</a>"``) would reject every end. An exclude that begins the end (``"</"``; Kimi-K3's
``"<|close|>"`` before ``"<|close|>think<|sep|>"``) keeps the TagDispatch (``stop_at_prefix``):
it stops the text itself, and the rest of the end follows as a literal. Any other such tag is
written here as a byte automaton (``CharDFA`` over ``BYTES``), the rare case paying for a larger
grammar whose masks the parser works out token by token. An exclude that holds an end
(Qwen-3's ``"</think>"`` in its think block ending with ``"</think>"``) can never occur in
content that stops at the first end: it is dropped before (``holds_end``), and the tag stays a
TagDispatch.

Example:
    >>> clashes(b"</", b"</a>"), clashes(b"a>", b"</a>"), clashes(b"</a>x", b"</a>")
    (True, True, False)
    >>> holds_end(b"</a>", [b"</a>"]), holds_end(b"x</a>y", [b"</a>"]), holds_end(b"</", [b"</a>"])
    (True, True, False)
    >>> stop_at_prefix([b"<|c|>t"], [b"<|c|>", b"<|o|>"]), stop_at_prefix([b"</a>"], [b"/a"])
    ((b'<|c|>', b't'), None)
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence, Tuple

from ..char_dfa import BYTES, CharDFA
from ..ir import ByteClass, Choice, Expr, Literal, Repeat, Seq, choice, seq

__all__ = ["clashes", "content_then_end", "holds_end", "stop_at_prefix"]


def holds_end(exclude: bytes, ends: Sequence[bytes]) -> bool:
    """Whether ``exclude`` holds one of ``ends``: content that runs up to the first end never
    holds such an exclude, so excluding it changes nothing."""
    return any(e and e in exclude for e in ends)


def clashes(exclude: bytes, end: bytes) -> bool:
    """Whether an occurrence of ``exclude`` can end inside ``end`` or on its last byte, where a
    TagDispatch would see it before or with the end (and reject the text)."""
    for k in range(1, len(end) + 1):
        n = min(k, len(exclude))
        if exclude[len(exclude) - n :] == end[k - n : k]:
            return True
    return False


def _has_border(word: bytes) -> bool:
    """Whether a proper prefix of ``word`` is also its suffix (``"abab"``: ``"ab"``)."""
    return any(word[:k] == word[len(word) - k :] for k in range(1, len(word)))


def stop_at_prefix(ends: Sequence[bytes], excludes: Sequence[bytes]) -> Optional[Tuple[bytes, bytes]]:
    """For text up to the end ``ends[0]`` whose excludes clash with it only by beginning it:
    ``(prefix, rest)``, where text up to the first ``prefix`` (the shortest such exclude),
    then ``rest``, is the same language; None otherwise.

    The text holds no ``prefix``, and the end begins with one, so the first ``prefix`` is
    where the end begins, unless an occurrence could start in the text and run into the end:
    that needs a proper prefix of ``prefix`` that is also its suffix (a border), so a prefix
    with one is refused. Every other clashing exclude must hold ``prefix`` (text stopping at
    the first ``prefix`` never holds it), and no exclude left may clash with ``prefix``.
    """
    if len(ends) != 1:
        return None
    end = ends[0]
    clashing = [x for x in excludes if clashes(x, end)]
    starts = [x for x in clashing if len(x) < len(end) and end.startswith(x)]
    if not starts:
        return None
    prefix = min(starts, key=len)
    if _has_border(prefix) or not all(prefix in x for x in clashing):
        return None
    if any(clashes(x, prefix) for x in excludes if prefix not in x):
        return None
    return prefix, end[len(prefix) :]


def _containing(words: Sequence[bytes]) -> CharDFA:
    anything = Repeat(ByteClass(BYTES), 0, None)
    return CharDFA.from_expr(Seq((anything, Choice(tuple(Literal(w) for w in words)), anything)), BYTES)


def _run(dfa: CharDFA, state: int, data: bytes) -> Optional[int]:
    """The state after ``data`` from ``state`` (None where a move is missing), stopping early
    at an accepting state (returned)."""
    for b in data:
        if dfa.accepting[state]:
            return state
        nxt = next((t for lo, hi, t in dfa.edges[state] if lo <= b <= hi), None)
        if nxt is None:
            return None
        state = nxt
    return state


def content_then_end(
    ends: Sequence[bytes],
    excludes: Sequence[bytes],
    rules: Dict[str, Expr],
    fresh: Callable[[str], str],
) -> Optional[Expr]:
    """IR for content then one of ``ends``, the end being the first occurrence of any end and
    the content holding none of ``excludes`` (an occurrence running into the end is allowed);
    the automaton's rules go to ``rules``. None when nothing is accepted."""
    ends = [e for e in dict.fromkeys(ends) if e]
    has_end = _containing(ends)
    no_exclude = _containing(excludes).complement() if excludes else None
    alts = []
    for end in ends:
        # content C such that C + end[:-1] holds no end: the first end is this one's last byte
        ok = [
            not has_end.accepting[s]
            and (lambda q: q is not None and not has_end.accepting[q])(_run(has_end, s, end[:-1]))
            for s in range(len(has_end.edges))
        ]
        content = CharDFA([list(r) for r in has_end.edges], ok, BYTES).minimized()
        if no_exclude is not None:
            content = content.intersect(no_exclude)
        if content.is_empty():
            continue
        body = content.to_ir(lambda ranges: ByteClass(tuple(ranges)), rules, fresh, "tag_text")
        if body is not None:
            alts.append(seq([body, Literal(end)]))
    return choice(alts)
