"""The vocabulary a grammar is compiled against: every token's exact bytes and kind.

Each token id has the bytes it stands for (see :mod:`agentgrammar.engine.decoding`) and a kind:

* normal (0): matched byte by byte against the grammar;
* special (1): never allowed by a grammar (control tokens such as ``<|start_header_id|>``,
  reserved tokens, and ids with no bytes);
* stop (2): allowed exactly when the grammar can end (EOS, ``<|eot_id|>``, ``<|im_end|>``, ...).

``vocab_size`` is the size of the token mask (the model's vocabulary, which may be padded past
the tokenizer's); ids from ``num_tokens`` to ``vocab_size`` are padding and always masked off.

Example:
    >>> v = Vocabulary(["a", "b", "Ġab", "</s>"], vocab_type="byte_level", vocab_size=8)
    >>> v.token_bytes[2], v.stop_token_ids, v.num_tokens, v.vocab_size
    (b' ab', (3,), 4, 8)
    >>> v.decode([0, 2])
    b'a ab'
"""

from __future__ import annotations

import operator
import warnings
from array import array
from itertools import accumulate
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from ..errors import TokenIdError, VocabularyError
from ..grammar.token_markers import Marker, marker_bytes
from .decoding import VOCAB_TYPES, decode_tokens, detect_vocab_type

__all__ = ["TOKEN_NORMAL", "TOKEN_SPECIAL", "TOKEN_STOP", "WELL_KNOWN_STOP_TOKENS", "Vocabulary"]

TOKEN_NORMAL = 0
TOKEN_SPECIAL = 1
TOKEN_STOP = 2

#: End-of-text / end-of-turn tokens taken as stop tokens when present (besides the tokenizer's EOS).
#: ``<|eom_id|>`` (Llama-3.1 "end of message, tool result follows") is deliberately absent, as in
#: xgrammar: pass it in ``stop_token_ids`` where a format needs it. ``<|end|>`` is skipped in
#: Harmony (gpt-oss) vocabularies, where it ends one message of several and ``<|return|>`` ends.
WELL_KNOWN_STOP_TOKENS: Tuple[str, ...] = (
    "</s>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|endoftext|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<eos>",
    "<|eos|>",
    "<end_of_turn>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>",  # DeepSeek
)

_IdsArg = Union[Sequence[int], int, None]


def _check_ids(ids: _IdsArg, what: str, n_tokens: int) -> Tuple[int, ...]:
    """Validated, sorted token ids: ints in ``[0, n_tokens)``, no duplicates."""
    if ids is None:
        return ()
    if isinstance(ids, (str, bytes)):
        raise VocabularyError(f"{what} must be a sequence of token ids, got {ids!r}")
    if not isinstance(ids, Iterable):
        ids = [ids]  # a single id
    out: List[int] = []
    for x in ids:
        if isinstance(x, bool):
            raise VocabularyError(f"{what}: token ids must be integers, got {x!r}")
        try:
            i = operator.index(x)
        except TypeError:
            raise VocabularyError(f"{what}: token ids must be integers, got {x!r}") from None
        if i < 0 or i >= n_tokens:
            raise VocabularyError(f"{what}: token id {i} is out of range [0, {n_tokens})")
        out.append(i)
    if len(set(out)) != len(out):
        # one pass (counting each id's copies was quadratic: 80,000 ids took a minute)
        seen: Set[int] = set()
        repeated: Set[int] = set()
        for i in out:
            (repeated if i in seen else seen).add(i)
        dups = sorted(repeated)
        more = f" and {len(dups) - 10} more" if len(dups) > 10 else ""
        raise VocabularyError(f"{what}: duplicate token ids {dups[:10]}{more}")
    return tuple(sorted(out))


def _check_size(vocab_size: Optional[int], n_tokens: int) -> int:
    if vocab_size is None:
        return n_tokens
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise VocabularyError(f"vocab_size must be an int, got {vocab_size!r}")
    if vocab_size < n_tokens:
        raise VocabularyError(
            f"vocab_size {vocab_size} is smaller than the number of tokens ({n_tokens}); "
            "vocab_size is the model's mask size and must cover every token"
        )
    return vocab_size


def _find_stop_tokens(token_bytes: Sequence[bytes]) -> List[int]:
    """Ids of the well-known end tokens among the tokens (by their bytes)."""
    names = {s.encode("utf-8") for s in WELL_KNOWN_STOP_TOKENS}
    found = {b: i for i, b in enumerate(token_bytes) if b in names}
    if b"<|return|>" in found:  # Harmony: <|end|> ends a message, not the generation
        found.pop(b"<|end|>", None)
    return sorted(set(found.values()))


def _read_attr(obj: Any, attr: str, owner: str) -> Any:
    """``obj.<attr>``, or None when it has none; a ``VocabularyError`` naming the attribute
    when reading it raises (a tokenizer's property may fail in any way)."""
    try:
        return getattr(obj, attr, None)
    except Exception as e:
        raise VocabularyError(f"reading {owner}.{attr} failed: {type(e).__name__}: {e}") from e


def _warn_no_stop() -> None:
    warnings.warn(
        "no stop token was given or found (no EOS and none of the well-known end tokens); "
        "the vocabulary has no stop tokens. Pass stop_token_ids to set them.",
        UserWarning,
        stacklevel=3,
    )


class Vocabulary:
    """Every token's exact bytes and kind, and the model's mask size.

    Args:
        tokens: token ``i`` is ``tokens[i]``; ``str`` tokens are decoded per ``vocab_type``,
            ``bytes`` tokens are taken as they are. An empty token (no bytes) is special.
        vocab_type: ``"raw"`` (UTF-8 of the string), ``"byte_level"`` (GPT-2 / Llama-3 / Qwen
            byte-level BPE) or ``"byte_fallback"`` (SentencePiece: ``<0xNN>``, ``▁``).
        vocab_size: the mask size (the model's vocabulary size); defaults to ``len(tokens)``.
            Larger values add padding ids that are always masked off; smaller is an error.
        stop_token_ids: the stop tokens; ``None`` finds the well-known end tokens
            (``</s>``, ``<|eot_id|>``, ``<|im_end|>``, ...) among the tokens; ``[]`` means none.
        special_token_ids: tokens that a grammar never allows (stop tokens excepted).

    Raises:
        VocabularyError: a token is neither ``str`` nor ``bytes``, an id is out of range,
            negative or repeated, ``vocab_size`` is too small, or ``vocab_type`` is unknown.

    Example:
        >>> v = Vocabulary(["<0x0A>", "▁hi", "<s>", "</s>"], vocab_type="byte_fallback",
        ...                special_token_ids=[2])
        >>> v.token_bytes[:2], v.special_token_ids, v.stop_token_ids, v.token_kinds()
        ((b'\\n', b' hi'), (2,), (3,), b'\\x00\\x00\\x01\\x02')
    """

    __slots__ = (
        "_added",
        "_kinds",
        "_marker_texts",
        "_markers",
        "_native",
        "_native_tables",
        "_special",
        "_stop",
        "_token_bytes",
        "_vocab_size",
        "_vocab_type",
    )

    def __init__(
        self,
        tokens: Sequence[Union[str, bytes]],
        *,
        vocab_type: str = "raw",
        vocab_size: Optional[int] = None,
        stop_token_ids: _IdsArg = None,
        special_token_ids: _IdsArg = None,
    ) -> None:
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
            raise VocabularyError(f"tokens must be a sequence of str or bytes, got {type(tokens).__name__}")
        if vocab_type not in VOCAB_TYPES:
            raise VocabularyError(
                f"unknown vocab_type {vocab_type!r}; expected one of {', '.join(VOCAB_TYPES)}"
            )
        token_bytes = decode_tokens(tokens, vocab_type)
        n = len(token_bytes)
        if n == 0:
            raise VocabularyError("the vocabulary is empty")
        if stop_token_ids is None:
            stop = tuple(_find_stop_tokens(token_bytes))
            if not stop:
                _warn_no_stop()
        else:
            stop = _check_ids(stop_token_ids, "stop_token_ids", n)
        special = _check_ids(special_token_ids, "special_token_ids", n)
        self._init(vocab_type, token_bytes, _check_size(vocab_size, n), stop, special)

    def _init(
        self,
        vocab_type: str,
        token_bytes: List[bytes],
        vocab_size: int,
        stop: Tuple[int, ...],
        special: Iterable[int],
    ) -> None:
        n = len(token_bytes)
        if n > 0x7FFFFFFF or vocab_size > 0x7FFFFFFF:
            raise VocabularyError(f"too many tokens ({max(n, vocab_size)}); at most 2**31 - 1")
        kinds = bytearray(n)
        for i, b in enumerate(token_bytes):
            if not b:
                kinds[i] = TOKEN_SPECIAL
        for i in special:
            kinds[i] = TOKEN_SPECIAL
        for i in stop:
            kinds[i] = TOKEN_STOP
        self._vocab_type = vocab_type
        self._token_bytes: Tuple[bytes, ...] = tuple(token_bytes)
        self._vocab_size = vocab_size
        self._kinds = bytes(kinds)
        self._stop = stop
        self._special = tuple(i for i, k in enumerate(self._kinds) if k == TOKEN_SPECIAL)
        self._native: Optional[Tuple[bytes, array, bytes, int, int]] = None
        self._native_tables: Any = None  # the C token tables every Compiler shares (compiler.py)
        self._added: FrozenSet[int] = frozenset()
        self._markers: Dict[Marker, Tuple[int, ...]] = {}
        self._marker_texts: Dict[bytes, bytes] = {}  # a marker's spelling -> what it decodes to

    # ---- construction from Hugging Face ------------------------------------------------------

    @classmethod
    def from_huggingface(
        cls,
        tokenizer: Any,
        *,
        vocab_size: Optional[int] = None,
        stop_token_ids: _IdsArg = None,
    ) -> "Vocabulary":
        """The vocabulary of a Hugging Face tokenizer (fast, SentencePiece or tiktoken-backed).

        Tokens are placed by id (ids with no token get no bytes and are special); the vocab type
        is detected (:func:`~agentgrammar.engine.decoding.detect_vocab_type`); added tokens
        marked ``special`` are special; stop tokens are ``stop_token_ids`` if given, else the
        tokenizer's EOS plus the well-known end tokens present (:data:`WELL_KNOWN_STOP_TOKENS`).

        ``vocab_size`` is the model's vocabulary size (``model.config.vocab_size``). It may exceed
        the tokenizer's (padding, masked off) or, as with Llama-3.2's ``<|image|>``, fall short of
        it when only added tokens are cut; cutting a regular token is an error.

        Example (with a local copy of the model's tokenizer)::

            from transformers import AutoTokenizer
            tok = AutoTokenizer.from_pretrained("path/to/Llama-3.2-1B-Instruct")
            Vocabulary.from_huggingface(tok).stop_token_ids   # (128001, 128009)
        """
        name = type(tokenizer).__name__
        get_vocab = _read_attr(tokenizer, "get_vocab", name)
        if get_vocab is None:
            raise VocabularyError(f"{name} has no vocabulary (no get_vocab method)")
        try:
            vocab = get_vocab()
            if isinstance(vocab, Mapping) and type(vocab) is not dict:
                vocab = dict(vocab)  # read once here, where a failing mapping is reported
        except Exception as e:
            raise VocabularyError(f"cannot read the vocabulary of {name}: {type(e).__name__}: {e}") from e
        if not isinstance(vocab, Mapping) or not vocab:
            raise VocabularyError(f"{name}.get_vocab() gave no tokens")
        if not set(map(type, vocab.values())) <= {int} or min(vocab.values()) < 0:
            raise VocabularyError(f"{name}.get_vocab() maps tokens to ids that are not non-negative ints")
        max_id = max(vocab.values())
        n = max_id + 1
        if n > 4 * len(vocab) + 65536:
            raise VocabularyError(f"{name}.get_vocab() has {len(vocab)} tokens but ids up to {max_id}")

        for attr in ("backend_tokenizer", "sp_model"):  # what detection reads, named if it fails
            _read_attr(tokenizer, attr, name)
        try:
            vocab_type = detect_vocab_type(tokenizer, vocab)
        except VocabularyError:
            raise
        except Exception as e:
            raise VocabularyError(
                f"cannot detect the vocab type of {name} (its backend_tokenizer or sp_model): "
                f"{type(e).__name__}: {e}"
            ) from e
        placed: List[Union[str, bytes]] = [b""] * n
        for tok, i in vocab.items():
            placed[i] = tok
        token_bytes = decode_tokens(placed, vocab_type)

        added = _added_tokens(tokenizer, name)
        if vocab_size is not None:
            if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
                raise VocabularyError(f"vocab_size must be a positive int, got {vocab_size!r}")
            if vocab_size < n:
                cut = [i for i in range(vocab_size, n) if token_bytes[i] and i not in added]
                if cut:
                    raise VocabularyError(
                        f"vocab_size {vocab_size} is smaller than the tokenizer's {n} tokens and would cut "
                        f"regular tokens (ids {cut[:5]}{' ...' if len(cut) > 5 else ''})"
                    )
                del token_bytes[vocab_size:]
                n = vocab_size
        mask_size = _check_size(vocab_size, n)

        if stop_token_ids is not None:
            stop = _check_ids(stop_token_ids, "stop_token_ids", n)
        else:
            found = set(_find_stop_tokens(token_bytes))
            if added:  # its end tokens are added ones: a plain token spelling one is text (Qwen's "</s>")
                found &= added.keys()
            eos = _read_attr(tokenizer, "eos_token_id", name)
            if eos is None:
                eos_of = _read_attr(_read_attr(tokenizer, "sp_model", name), "eos_id", f"{name}.sp_model")
                try:
                    eos = eos_of() if callable(eos_of) else None
                except Exception as e:
                    raise VocabularyError(f"{name}.sp_model.eos_id() failed: {type(e).__name__}: {e}") from e
            for eos_id in eos if isinstance(eos, (list, tuple)) else [eos]:
                if isinstance(eos_id, int) and not isinstance(eos_id, bool) and 0 <= eos_id < n:
                    found.add(eos_id)
            stop = tuple(sorted(found))
            if not stop:
                _warn_no_stop()
        special = [i for i, is_special in added.items() if is_special and i < n]
        self = cls.__new__(cls)
        self._init(vocab_type, token_bytes, mask_size, stop, special)
        self._added = frozenset(i for i in added if i < n)
        return self

    # ---- properties --------------------------------------------------------------------------

    @property
    def vocab_type(self) -> str:
        """``"raw"``, ``"byte_level"`` or ``"byte_fallback"``."""
        return self._vocab_type

    @property
    def vocab_size(self) -> int:
        """The mask size: the model's vocabulary size (ids past ``num_tokens`` are padding)."""
        return self._vocab_size

    @property
    def num_tokens(self) -> int:
        """The number of token ids that have an entry (``len(token_bytes)``)."""
        return len(self._token_bytes)

    @property
    def token_bytes(self) -> Tuple[bytes, ...]:
        """The bytes of each token, by id."""
        return self._token_bytes

    @property
    def stop_token_ids(self) -> Tuple[int, ...]:
        """The stop tokens (kind 2), ascending."""
        return self._stop

    @property
    def special_token_ids(self) -> Tuple[int, ...]:
        """The special tokens (kind 1, never allowed by a grammar), ascending."""
        return self._special

    @property
    def added_token_ids(self) -> FrozenSet[int]:
        """The tokenizer's added tokens, special or not (``from_huggingface``; empty otherwise):
        the tokens a model family's markers are made of."""
        return self._added

    @property
    def token_markers(self) -> Dict[Marker, Tuple[int, ...]]:
        """The token markers this vocabulary spells (``with_token_markers``): text (or id, for a
        marker by id) -> token ids."""
        return dict(self._markers)

    def token_kinds(self) -> bytes:
        """One byte per token: 0 normal, 1 special, 2 stop."""
        return self._kinds

    def with_text_tokens(self, texts: Iterable[Union[str, bytes]]) -> "Vocabulary":
        """A copy in which the special tokens whose text is one of ``texts`` are ordinary tokens,
        so that a grammar writing that text can emit them as those single tokens: a model
        family's markers such as Llama's ``<|python_tag|>`` (``AgentFormat.markers()``). Stop
        tokens stay stop tokens; ``self`` is returned when nothing changes.

        Example:
            >>> v = Vocabulary(["a", "<|tag|>", "</s>"], stop_token_ids=[2], special_token_ids=[1])
            >>> v.special_token_ids, v.with_text_tokens(["<|tag|>"]).special_token_ids
            ((1,), ())
        """
        wanted = {t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in texts}
        wanted.discard(b"")
        keep = [i for i in self._special if self._token_bytes[i] not in wanted]
        if len(keep) == len(self._special):
            return self
        out = Vocabulary.__new__(Vocabulary)
        out._init(self._vocab_type, list(self._token_bytes), self._vocab_size, self._stop, keep)
        out._added, out._markers, out._marker_texts = self._added, self._markers, self._marker_texts
        return out

    def single_tokens(self, texts: Iterable[str]) -> List[str]:
        """The ``texts`` that are the text of one token of this vocabulary (in order, once).

        Example:
            >>> Vocabulary(["a", "<x>", "</s>"], stop_token_ids=[2]).single_tokens(["<x>", "ab", "</s>"])
            ['<x>', '</s>']
        """
        texts = [t for t in dict.fromkeys(texts) if isinstance(t, str) and t]
        found = self._ids_of(texts)
        return [t for t in texts if t in found]

    def _ids_of(self, texts: Sequence[str]) -> Dict[str, List[int]]:
        """The ids of the tokens whose text is each of ``texts`` (token markers by their text);
        one pass over the vocabulary, a set lookup per token."""
        wanted = {t.encode("utf-8"): t for t in texts}
        wanted.update({marker_bytes(t): t for t in self._markers if t in texts})
        out: Dict[str, List[int]] = {}
        for i, b in enumerate(self._token_bytes):
            text = wanted.get(b)
            if text is not None:
                out.setdefault(text, []).append(i)
        return out

    def with_token_markers(self, texts: Iterable[Marker]) -> "Vocabulary":
        """A copy in which each of ``texts`` is a token marker
        (:mod:`agentgrammar.grammar.token_markers`): the tokens whose text it is (special, stop
        or not) take its private spelling and become ordinary tokens, so a grammar that writes
        the marker allows exactly them there, and every other token holding the byte 0xFF, which
        no UTF-8 text has, is never allowed. ``VocabularyError`` for a text that is no token.
        The stop tokens left stay stop tokens; generation still stops on a marker that was one
        (``generate(eos_token_id=...)`` is the caller's). An int names a token by its id (a
        structural tag's ``{"type": "token", "token": 151657}``); a token can be marked by its
        text or by its id, not both.

        Example:
            >>> v = Vocabulary(["a", "<tool_call>", b"\\xff", "</s>"], stop_token_ids=[3]).with_token_markers(
            ...     ["<tool_call>", "</s>"])
            >>> v.token_bytes[1] == marker_bytes("<tool_call>"), v.stop_token_ids, v.special_token_ids
            (True, (), (2,))
            >>> sorted(v.token_markers), v.decode([0, 1])
            (['</s>', '<tool_call>'], b'a<tool_call>')
            >>> v.with_token_markers([0]).decode([0, 1])  # by id
            b'a<tool_call>'
        """
        wanted = [t for t in dict.fromkeys(texts) if t not in self._markers]
        if not wanted:
            return self
        index = self._ids_of([t for t in wanted if isinstance(t, str) and t])
        markers = dict(self._markers)
        token_bytes = list(self._token_bytes)
        marked = {i: m for m, ids in markers.items() for i in ids}
        for text in wanted:
            if isinstance(text, int) and not isinstance(text, bool):
                ids = [text] if 0 <= text < len(token_bytes) else None
            else:
                ids = index.get(text) if isinstance(text, str) and text else None
            if not ids:
                raise VocabularyError(
                    f"{text!r} is not one token of this vocabulary: it cannot be a token marker"
                )
            for i in ids:
                if i in marked:
                    raise VocabularyError(
                        f"token {i} is marked both as {marked[i]!r} and as {text!r}: name it one way"
                    )
                marked[i] = text
            markers[text] = tuple(ids)
            for i in ids:
                token_bytes[i] = marker_bytes(text)
        special = [i for i in self._special if i not in marked]
        special += [i for i, b in enumerate(token_bytes) if i not in marked and b"\xff" in b]
        stop = tuple(i for i in self._stop if i not in marked)
        out = Vocabulary.__new__(Vocabulary)
        out._init(self._vocab_type, token_bytes, self._vocab_size, stop, special)
        out._added = self._added
        out._markers = markers
        out._marker_texts = {**(self._marker_texts or {}), **{
            marker_bytes(m): (m.encode("utf-8") if isinstance(m, str) else self._token_bytes[m]) for m in wanted
        }}  # fmt: skip
        return out

    def decode(self, ids: Iterable[int], *, skip_special_tokens: bool = False) -> bytes:
        """The bytes of a sequence of token ids (special and stop tokens dropped if asked).

        Example:
            >>> Vocabulary(["Ġa", "Ċ", "<|eot_id|>"], vocab_type="byte_level").decode([0, 1, 2])
            b' a\\n<|eot_id|>'
        """
        tb, kinds, n = self._token_bytes, self._kinds, len(self._token_bytes)
        out = []
        for i in ids:
            try:
                i = operator.index(i)
            except TypeError:
                raise TokenIdError(f"token ids must be integers, got {i!r}") from None
            if not 0 <= i < n:
                raise TokenIdError(f"token id {i} is out of range [0, {n})")
            if skip_special_tokens and kinds[i]:
                continue
            out.append(tb[i])
        text = b"".join(out)
        if self._markers and b"\xff" in text:  # token markers decode to their text
            for spelling, plain in (self._marker_texts or {}).items():
                text = text.replace(spelling, plain)
        return text

    def _native_args(self) -> Tuple[bytes, array, bytes, int, int]:
        """``(blob, offsets, kinds, n_tokens, mask_size)`` for ``ag_vocab_new``.

        Token ``i`` is ``blob[offsets[i]:offsets[i + 1]]``; ``offsets`` is ``array('I')`` of
        ``n_tokens + 1`` entries. Computed once.
        """
        if self._native is None:
            blob = b"".join(self._token_bytes)
            if len(blob) > 0xFFFFFFFF:
                raise VocabularyError("the vocabulary's bytes exceed 4 GiB")
            offsets = array("I", accumulate(map(len, self._token_bytes), initial=0))
            if offsets.itemsize != 4:  # pragma: no cover - every common platform has 4-byte unsigned int
                raise VocabularyError("array('I') is not 32-bit on this platform")
            self._native = (blob, offsets, self._kinds, len(self._token_bytes), self._vocab_size)
        return self._native

    def __getstate__(self) -> Dict[str, Any]:
        """Pickled and copied without the C token tables (``_native_tables``), which a
        ``Compiler`` builds again for the copy on first use."""
        state = {name: getattr(self, name) for name in self.__slots__}
        state["_native_tables"] = None
        return state

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple):  # pickled before __getstate__ existed: (None, slots)
            state = state[1]
        for name in self.__slots__:
            setattr(self, name, state.get(name))
        if self._added is None:  # pickled before these existed
            self._added, self._markers = frozenset(), {}
        if self._marker_texts is None:
            self._marker_texts = {
                marker_bytes(m): m.encode("utf-8") for m in self._markers if isinstance(m, str)
            }

    def __len__(self) -> int:
        return len(self._token_bytes)

    def __repr__(self) -> str:
        return (
            f"Vocabulary(vocab_type={self._vocab_type!r}, num_tokens={self.num_tokens}, "
            f"vocab_size={self._vocab_size}, stop_token_ids={self._stop}, num_special={len(self._special)})"
        )


def _added_tokens(tokenizer: Any, name: str) -> dict:
    """``{id: special}`` for the tokenizer's added tokens (empty when it has none).

    A failure reading them is a ``VocabularyError``, not an empty answer: without them the
    special tokens would be taken for text that a grammar may write."""
    decoder = _read_attr(tokenizer, "added_tokens_decoder", name)
    if not isinstance(decoder, Mapping):
        return {}
    out = {}
    try:
        for i, tok in decoder.items():
            if isinstance(i, int):
                out[i] = bool(getattr(tok, "special", False))
    except Exception as e:
        raise VocabularyError(f"reading {name}.added_tokens_decoder failed: {type(e).__name__}: {e}") from e
    return out
