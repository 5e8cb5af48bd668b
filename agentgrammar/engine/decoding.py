"""Decoding a tokenizer's vocabulary to the exact bytes each token stands for.

Three encodings are in use:

``byte_level``
    GPT-2 style byte-level BPE (GPT-2, Llama-3, Qwen, DeepSeek, ...). Every byte is spelled by one
    printable character (``Ġ`` is a space, ``Ċ`` a newline); decoding inverts that table.
``byte_fallback``
    SentencePiece (Llama-2, Mistral, Gemma, ...): ``▁`` is a space and a token ``<0xNN>`` is the
    single byte ``0xNN``.
``raw``
    The token string is the text itself; its bytes are its UTF-8 encoding.

Example:
    >>> decode_token("Ġhello", "byte_level")
    b' hello'
    >>> decode_token("<0x0A>", "byte_fallback"), decode_token("▁hi", "byte_fallback")
    (b'\\n', b' hi')
    >>> decode_token("héllo", "raw")
    b'h\\xc3\\xa9llo'
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ..errors import VocabularyError

__all__ = [
    "VOCAB_TYPES",
    "byte_level_table",
    "decode_byte_fallback",
    "decode_byte_level",
    "decode_raw",
    "decode_token",
    "decode_tokens",
    "detect_vocab_type",
    "detect_vocab_type_from_vocab",
]

#: The vocabulary types, as accepted by ``Vocabulary(vocab_type=...)``.
VOCAB_TYPES: Tuple[str, ...] = ("raw", "byte_level", "byte_fallback")


def byte_level_table() -> Dict[int, str]:
    """GPT-2's ``bytes_to_unicode``: the character that spells each byte in byte-level BPE.

    Printable Latin-1 bytes (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) stand for themselves; the
    other 68 bytes are shifted, in order, to U+0100 onwards (so byte 0x20, space, is ``Ġ`` U+0120).

    Example:
        >>> t = byte_level_table()
        >>> t[ord(" ")], t[ord("\\n")], t[ord("a")], len(t)
        ('Ġ', 'Ċ', 'a', 256)
    """
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in kept}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(0x100 + shifted)
            shifted += 1
    return table


_BYTE_LEVEL_TABLE = byte_level_table()
#: The byte-level alphabet: character -> byte.
_BYTE_LEVEL_INVERSE: Dict[str, int] = {c: b for b, c in _BYTE_LEVEL_TABLE.items()}
# A ``str.translate`` table indexed by code point (all alphabet characters are < U+0144): alphabet
# characters map to the Latin-1 character of their byte; every other code point below the table's
# end maps to a sentinel that Latin-1 cannot encode, and code points past its end are left as they
# are (also not Latin-1 encodable). So ``token.translate(T).encode("latin-1")`` either gives the
# decoded bytes or raises because the token has a character outside the alphabet.
_SENTINEL = "\U0010ffff"
_TRANSLATE: List[str] = [_SENTINEL] * (max(map(ord, _BYTE_LEVEL_INVERSE)) + 1)
for _c, _b in _BYTE_LEVEL_INVERSE.items():
    _TRANSLATE[ord(_c)] = chr(_b)
del _c, _b

_HEX = "0123456789ABCDEF"


def decode_byte_level(token: str) -> bytes:
    """The bytes of a byte-level BPE token.

    A token with a character outside the byte-level alphabet (an added token such as
    ``"<| im start |>"`` with real spaces) is not byte-level encoded; its bytes are its UTF-8
    encoding, whole (as xgrammar does).

    Example:
        >>> decode_byte_level("ĠÃ©t"), decode_byte_level("<|eot_id|>"), decode_byte_level("a b")
        (b' \\xc3\\xa9t', b'<|eot_id|>', b'a b')
    """
    try:
        return token.translate(_TRANSLATE).encode("latin-1")
    except UnicodeEncodeError:
        return token.encode("utf-8")


def decode_byte_fallback(token: str) -> bytes:
    """The bytes of a SentencePiece token: ``<0xNN>`` (upper-case hex) is one byte, ``▁`` a space.

    Example:
        >>> decode_byte_fallback("<0xE4>"), decode_byte_fallback("▁the▁end")
        (b'\\xe4', b' the end')
    """
    if len(token) == 6 and token[:3] == "<0x" and token[5] == ">":
        hi, lo = _HEX.find(token[3]), _HEX.find(token[4])
        if hi >= 0 and lo >= 0:
            return bytes((hi * 16 + lo,))
    return token.replace("\u2581", " ").encode("utf-8")


def decode_raw(token: str) -> bytes:
    """The UTF-8 bytes of the token string.

    Example:
        >>> decode_raw("▁a")
        b'\\xe2\\x96\\x81a'
    """
    return token.encode("utf-8")


_DECODERS = {"raw": decode_raw, "byte_level": decode_byte_level, "byte_fallback": decode_byte_fallback}


def _check_vocab_type(vocab_type: str) -> None:
    if vocab_type not in _DECODERS:
        raise VocabularyError(f"unknown vocab_type {vocab_type!r}; expected one of {', '.join(VOCAB_TYPES)}")


def decode_token(token: Union[str, bytes], vocab_type: str) -> bytes:
    """The bytes of one token: ``str`` tokens are decoded per ``vocab_type``, ``bytes`` kept as-is.

    Example:
        >>> decode_token("Ċ", "byte_level"), decode_token(b"\\xff", "byte_level")
        (b'\\n', b'\\xff')
    """
    _check_vocab_type(vocab_type)
    if isinstance(token, (bytes, bytearray)):
        return bytes(token)
    if not isinstance(token, str):
        raise VocabularyError(f"a token must be str or bytes, got {type(token).__name__}")
    return _DECODERS[vocab_type](token)


def decode_tokens(tokens: Iterable[Union[str, bytes]], vocab_type: str) -> List[bytes]:
    """The bytes of every token, in order (``str`` decoded per ``vocab_type``, ``bytes`` as-is).

    Raises :class:`VocabularyError` naming the id of the first token that is neither.

    Example:
        >>> decode_tokens(["Ġa", b"\\xe4", "Ċ"], "byte_level")
        [b' a', b'\\xe4', b'\\n']
    """
    _check_vocab_type(vocab_type)
    decode = _DECODERS[vocab_type]
    out: List[bytes] = []
    append = out.append
    i, tok = -1, None
    try:
        for i, tok in enumerate(tokens):
            if type(tok) is str:
                append(decode(tok))
            elif type(tok) is bytes:
                append(tok)
            elif isinstance(tok, str):
                append(decode(str(tok)))
            elif isinstance(tok, (bytes, bytearray)):
                append(bytes(tok))
            else:
                raise VocabularyError(f"token {i} must be str or bytes, got {type(tok).__name__}: {tok!r}")
    except UnicodeEncodeError:
        raise VocabularyError(
            f"token {i} ({tok!r}) is not valid Unicode: it holds a lone surrogate"
        ) from None
    return out


# ---------------------------------------------------------------------------------------------
# Detection


def detect_vocab_type_from_vocab(vocab: Mapping[Any, int]) -> Optional[str]:
    """Guess the encoding from the token strings alone; ``None`` when they match neither byte encoding.

    A SentencePiece byte-fallback vocabulary has the pieces ``<0x00>``..``<0xFF>``; a byte-level
    one spells (almost) every token with the 256-character byte-level alphabet and has most of that
    alphabet as single-character tokens.

    Example:
        >>> detect_vocab_type_from_vocab({f"<0x{b:02X}>": b for b in range(256)})
        'byte_fallback'
    """
    if sum(f"<0x{b:02X}>" in vocab for b in range(256)) >= 128:
        return "byte_fallback"
    if sum(c in vocab for c in _BYTE_LEVEL_INVERSE) < 128:
        return None
    alphabet = _BYTE_LEVEL_INVERSE
    n_in = 0
    for tok in vocab:
        if isinstance(tok, str) and all(c in alphabet for c in tok):
            n_in += 1
    # Added tokens (chat markers) may use other characters: tolerate a few.
    return "byte_level" if n_in >= 0.99 * len(vocab) else None


def _json_state(component: Any) -> Optional[dict]:
    """The JSON description of a ``tokenizers`` component (decoder, normalizer, pre-tokenizer)."""
    if component is None:
        return None
    try:
        state = component.__getstate__()
        return json.loads(state)
    except Exception:  # pragma: no cover - depends on the tokenizers version
        return None


def _json_types(node: Any) -> List[dict]:
    """Every JSON object with a ``type`` inside ``node`` (depth first, ``Sequence``s flattened)."""
    found: List[dict] = []
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if "type" in x:
                found.append(x)
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return found


def _type_from_backend(backend: Any) -> Optional[str]:
    """The encoding that a ``tokenizers.Tokenizer``'s decoder (else pre-tokenizer, normalizer) implies."""
    components = []
    for name in ("decoder", "pre_tokenizer", "normalizer"):
        try:
            components.append(_json_state(getattr(backend, name, None)))
        except Exception:  # pragma: no cover
            components.append(None)
    if all(c is None for c in components):  # no access to the components: read the whole JSON
        try:
            full = json.loads(backend.to_str())
            components = [full.get("decoder"), full.get("pre_tokenizer"), full.get("normalizer")]
        except Exception:
            return None
    decoder, pre_tokenizer, normalizer = components
    dec_types = {n.get("type") for n in _json_types(decoder)}
    if "ByteLevel" in dec_types:
        return "byte_level"
    if "ByteFallback" in dec_types or "Metaspace" in dec_types:
        return "byte_fallback"
    for n in _json_types(decoder):
        if n.get("type") == "Replace" and n.get("pattern", {}).get("String") == "\u2581":
            return "byte_fallback"
    if "ByteLevel" in {n.get("type") for n in _json_types(pre_tokenizer)}:
        return "byte_level"
    if "Metaspace" in {n.get("type") for n in _json_types(pre_tokenizer)}:
        return "byte_fallback"
    for n in _json_types(normalizer):
        if n.get("type") == "Replace" and n.get("content") == "\u2581":
            return "byte_fallback"
    return None


def detect_vocab_type(tokenizer: Any, vocab: Optional[Mapping[Any, int]] = None) -> str:
    """The vocab type of a Hugging Face tokenizer: ``"byte_level"``, ``"byte_fallback"`` or ``"raw"``.

    Fast tokenizers are read from their ``tokenizers`` backend (a ``ByteLevel`` decoder means
    byte-level; ``ByteFallback`` / ``▁`` replacement means SentencePiece); slow SentencePiece
    tokenizers (``sp_model``) are byte-fallback (``▁`` is a space even without byte pieces); a
    vocabulary of ``bytes`` (tiktoken style) is raw. When the backend says nothing, or contradicts
    the vocabulary itself (a tokenizer rebuilt without its decoder), the vocabulary decides.

    Example:
        >>> detect_vocab_type(object(), {"a": 0, "b": 1})
        'raw'
    """
    if vocab is None:
        try:
            vocab = tokenizer.get_vocab()
        except Exception as e:
            raise VocabularyError(f"cannot read the vocabulary of {type(tokenizer).__name__}: {e}") from e
    if vocab and not isinstance(next(iter(vocab)), str):
        return "raw"  # tiktoken-style: the tokens are their bytes
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        found = _type_from_backend(backend)
        if found == "byte_level":
            # Cheap contradiction check only: a byte-fallback vocabulary has its byte pieces.
            if sum(f"<0x{b:02X}>" in vocab for b in range(256)) >= 128:
                return "byte_fallback"
            return found
        from_vocab = detect_vocab_type_from_vocab(vocab)
        return from_vocab or found or "raw"
    if getattr(tokenizer, "sp_model", None) is not None:
        # SentencePiece: "▁" is always a space, with or without byte pieces.
        return "byte_fallback"
    return detect_vocab_type_from_vocab(vocab) or "raw"
