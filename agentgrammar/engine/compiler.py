"""Compiling grammars against a vocabulary.

Example:
    >>> from agentgrammar import Compiler, Grammar, Vocabulary
    >>> vocab = Vocabulary(["a", "b", "ab", "</s>"], stop_token_ids=[3])
    >>> compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "a"+ "b"'))
    >>> compiled.vocabulary is vocab
    True
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from .._gc_pause import pauses_gc
from ..errors import GrammarError, VocabularyError
from ..grammar import Grammar, json_schema, json_values
from ..grammar import structural_tag as _structural_tag
from ..grammar.first_bounds import first_bounds
from ..grammar.grammar import content_digests
from ..grammar.ir import Choice, CountedText, Literal, Repeat, Rule, Seq, TagDispatch
from ..grammar.memo import (
    clear_memos,
    grammar_bytes,
    memo_size_bytes,
    register_lru,
    trim_memos,
)
from ..grammar.token_markers import markers_in_bytes
from ._native import ffi, lib, new_error, raise_error
from .background import WARM_UP_SECONDS, WARM_UP_STATES, background_pool, classify_in_background
from .build_cache import build_cache
from .deferred import DEFER_MAX_PARTS, DEFER_MAX_SHARE, DEFER_MIN_WORDS, defer, first_mask, first_masks_agree
from .shared_parts import loaded_shared_part
from .token_items import one_token_sets
from .vocabulary import Vocabulary

__all__ = ["CompiledGrammar", "Compiler", "token_markers_of"]

#: The default byte budget for the compiler's caches (``Compiler(cache_limit_bytes=...)``).
DEFAULT_CACHE_LIMIT_BYTES = 512 * 1024 * 1024
#: The share of ``cache_limit_bytes`` the vocabulary's shared cache may hold: its entries
#: (classes of byte automata, dispatch safe-token sets) live as long as the compiler.
SHARED_CACHE_SHARE = 4
#: How many recently compiled grammars a Compiler hands back again for the same grammar.
RECENT_GRAMMARS = 64
#: How many embedded grammars (``ir.Embed``: tool argument grammars, ...) a Compiler keeps
#: compiled as parts, their token-mask caches shared by every grammar that links them.
PART_GRAMMARS = 4096
#: The share of ``cache_limit_bytes`` that the Python-side caches (``grammar.memo``: IR pieces,
#: tool pieces, converted schemas, the converters' caches) may hold; the C caches get the rest.
MEMO_SHARE = 4
#: Bytes counted per entry of a converter's ``functools.lru_cache`` (its entries cannot be
#: seen): IR of a few dozen nodes, or a small grammar.
LRU_ENTRY_BYTES = 2048


def _register_converter_caches() -> None:
    """Count the front-end modules' bounded ``lru_cache`` s, which grow with the schemas seen,
    with the memos, so that ``trim_memos`` bounds them in bytes too (the structural-tag
    converter registers its schema grammars itself). Caches without a bound (constants) are
    not counted."""
    for module in (json_values, json_schema, _structural_tag):
        for name, value in sorted(vars(module).items()):
            info = getattr(value, "cache_info", None)
            if callable(info) and callable(getattr(value, "cache_clear", None)):
                maxsize = info().maxsize
                if maxsize is not None and maxsize >= 256:
                    register_lru(
                        f"{module.__name__.rsplit('.', 1)[-1]}.{name}", value, entry_bytes=LRU_ENTRY_BYTES
                    )


_register_converter_caches()


_TABLES_LOCK = threading.Lock()


def _vocab_tables(vocab: Vocabulary) -> Any:
    """The C vocabulary that holds ``vocab``'s token tables (its tokens sorted, their prefix
    and length indexes, the plain-token sets), built on first use and kept with ``vocab``:
    building them walks the whole vocabulary, some 30 ms for 128k tokens, which every new
    ``Compiler`` paid before."""
    with _TABLES_LOCK:
        tables = vocab._native_tables
        if tables is None:
            blob, offsets, kinds, n_tokens, mask_size = vocab._native_args()
            out = ffi.new("ag_vocab **")
            err = new_error()
            status = lib.ag_vocab_new(
                ffi.from_buffer("uint8_t[]", blob),
                ffi.from_buffer("uint32_t[]", offsets),
                ffi.from_buffer("uint8_t[]", kinds),
                n_tokens,
                mask_size,
                out,
                err,
            )
            if status != lib.AG_OK:
                raise_error(status, err, VocabularyError)
            tables = vocab._native_tables = ffi.gc(out[0], lib.ag_vocab_free)
        return tables


def _grammar_arg(grammar: Union[Grammar, str], method: str) -> Grammar:
    """``grammar`` as ``method`` takes it: a Grammar, or EBNF text parsed."""
    if isinstance(grammar, str):
        return Grammar.from_ebnf(grammar)
    if not isinstance(grammar, Grammar):
        raise TypeError(f"{method}() takes a Grammar or EBNF text, got {type(grammar).__name__}")
    return grammar


def _new_vocab_handle(vocab: Vocabulary) -> Any:
    """A C vocabulary for one compiler: ``vocab``'s shared token tables, caches of its own."""
    out = ffi.new("ag_vocab **")
    err = new_error()
    status = lib.ag_vocab_share_tables(_vocab_tables(vocab), out, err)
    if status != lib.AG_OK:
        raise_error(status, err, VocabularyError)
    return ffi.gc(out[0], lib.ag_vocab_free)


def _load_grammar(grammar: Grammar, parts: Sequence["CompiledGrammar"]) -> Any:
    """Load ``grammar``; with ``parts`` (its embedded grammars, compiled), link them. A grammar
    that many grammars embed (``Grammar._shared_part``: any JSON value) is loaded once per
    process: its automata depend on no vocabulary, and every compiler binds the same ones."""
    if grammar._shared and not parts:
        return loaded_shared_part(grammar, lambda: _load_grammar_now(grammar, parts))
    return _load_grammar_now(grammar, parts)


def _load_grammar_now(grammar: Grammar, parts: Sequence["CompiledGrammar"]) -> Any:
    words = grammar.to_bytes()
    out = ffi.new("ag_grammar **")
    err = new_error()
    buffer = ffi.from_buffer("int32_t[]", words)
    cache = build_cache()
    if parts:
        handles = ffi.new("ag_grammar *[]", [p._grammar_handle for p in parts])
        status = lib.ag_grammar_link_cached(buffer, len(words) // 4, handles, len(parts), cache, out, err)
    else:
        status = lib.ag_grammar_load_cached(buffer, len(words) // 4, cache, out, err)
    if status != lib.AG_OK:
        own = grammar.normalized_rules
        n_part_rules = sum(p.grammar._linked_rules() for p in parts)

        def rule_name(i: int) -> str:  # own numbering while building, linked numbering after
            j = i if i < len(own) else i - n_part_rules
            return own[j].name if 0 <= j < len(own) else f"#{i}"

        raise_error(status, err, GrammarError, rule_name=rule_name)
    return ffi.gc(out[0], lib.ag_grammar_free)


class MaskCacheStats(NamedTuple):
    """How a compiled grammar's states got their token classes (``CompiledGrammar.cache_stats``).

    Each state the matchers visit is classified once: ``walked`` states by a walk of the whole
    vocabulary, ``derived`` ones from an already classified state that agrees with them on
    every string as long as most tokens (only longer tokens are walked again, as along the
    positions of a length-bounded string), ``shared`` ones found in the vocabulary's cache,
    computed for another grammar of the same ``Compiler``. ``plain`` counts the walks that
    took every plain token (whole characters, no quote, backslash or control byte) at once,
    in states that accept any of them (inside a JSON string, say), near a length bound
    every plain token short enough to fit, or the plain tokens without the few ASCII
    characters a negated class leaves out (a pattern's ``[^&]*``). ``classed`` counts the
    walks that took at once the tokens made only of the bytes their state loops on (an
    email's local part, a hostname's label, a pattern's ``[a-z0-9-]+``), and walked only the
    others.
    """

    walked: int
    derived: int
    shared: int
    plain: int
    classed: int = 0


class CompiledGrammar:
    """A grammar bound to a vocabulary; create matchers from it. Immutable and thread-safe."""

    def __init__(
        self,
        grammar: Grammar,
        vocabulary: Vocabulary,
        handle: Any,
        grammar_handle: Any = None,
        parts: Sequence["CompiledGrammar"] = (),
        one_token_sets: Optional[Dict[bytes, Any]] = None,
    ) -> None:
        self._grammar = grammar
        self._vocabulary = vocabulary
        self._handle = handle
        self._grammar_handle = grammar_handle  # what grammars embedding this one link to
        self._parts = tuple(parts)
        # "one token but a set" items (engine/token_items.py): spelling -> allowed tokens' bitmask
        self._one_token_sets = one_token_sets or {}

    @property
    def grammar(self) -> Grammar:
        """The source grammar."""
        return self._grammar

    @property
    def vocabulary(self) -> Vocabulary:
        """The vocabulary the grammar was compiled for."""
        return self._vocabulary

    @property
    def memory_size_bytes(self) -> int:
        """Approximate bytes held by the compiled grammar."""
        return int(lib.ag_compiled_memory_bytes(self._handle))

    @property
    def cache_stats(self) -> MaskCacheStats:
        """How the states visited so far got their token classes, parts included.

        >>> from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
        >>> compiler = Compiler(Vocabulary(["a", "b", "ab", "</s>"]), background=False)
        >>> compiled = compiler.compile(Grammar.from_regex("ab"))
        >>> Matcher(compiled).allowed_token_ids()
        [0, 2]
        >>> compiled.cache_stats
        MaskCacheStats(walked=1, derived=0, shared=0, plain=0, classed=0)
        """
        out = ffi.new("ag_cache_stats *")
        lib.ag_compiled_cache_stats(self._handle, out)
        return MaskCacheStats(
            int(out.walked), int(out.derived), int(out.shared), int(out.plain), int(out.classed)
        )

    def __repr__(self) -> str:
        return f"<CompiledGrammar root={self._grammar.root!r} rules={len(self._grammar.rules)}>"


class Compiler:
    """Compiles grammars for one vocabulary.

    One compiler should serve a whole process: it owns the token-mask caches, and it hands
    back the same ``CompiledGrammar`` for a grammar it compiled recently (same rules, compared by
    content): an agent asking for the same tools turn after turn keeps that grammar's
    token-mask cache warm. It also keeps every embedded grammar (a tool's arguments) it
    compiled, so their masks serve every request that links them.

    Memory is bounded by ``cache_limit_bytes``, the C caches and the Python-side ones together.
    :attr:`cache_size_bytes` counts the automata and token-mask caches of every live grammar
    this compiler made, plus the vocabulary's shared cache (itself capped at a quarter of the
    limit); :attr:`memo_size_bytes` estimates what the process's Python-side caches keep
    alive (``grammar.memo``: IR pieces, per-tool pieces, converted schemas and the converters'
    caches, grammars counted once), which each compile trims to a quarter of the limit
    (``MEMO_SHARE``; shared by every compiler, so the smallest limit governs them). After each
    compile, the least recently used grammars and parts are dropped until the C count is within
    the limit less what the memos hold (a grammar that a matcher still uses is freed when that
    matcher is). Masks filled between compiles, and background classification, can take the count
    past the limit until the next compile; ``cache_limit_bytes=0`` keeps nothing for reuse. ``reuse_grammars=False`` turns off only the handing back of whole
    grammars (every ``compile`` then builds and links anew, as benchmarks of request compiles
    want); parts and shared classes are still kept. The vocabulary's token tables (its tokens
    sorted, their prefix and length indexes) are built once per ``Vocabulary`` and shared by
    all its compilers, so another compiler costs an allocation; its caches start empty.

    ``background=True`` (the default) has a C worker thread classify, after each ``compile``,
    the states a matcher is likely to reach (``engine/background.py``), while the model writes
    its first tokens; masks never wait for it and are the same without it. ``False`` keeps every
    state's classification for the mask that first needs it.

    A grammar of ``defer_min_words`` serialized words or more (a large schema: hundreds of
    definitions) has its automata built after its first mask, when a matcher first accepts,
    rolls back or jumps forward, if two small grammars bound its first mask exactly
    (``engine/deferred.py``); masks are the same either way. Not a request over many tools,
    whose tools are prebuilt parts. ``None`` builds every grammar in ``compile``.

    Example:
        >>> from agentgrammar import Compiler, Vocabulary
        >>> compiler = Compiler(Vocabulary(["{", "}", "\\"", "a"], stop_token_ids=[]))
        >>> compiled = compiler.compile_regex("a+")
    """

    def __init__(
        self,
        vocab: Vocabulary,
        *,
        cache_limit_bytes: int = DEFAULT_CACHE_LIMIT_BYTES,
        reuse_grammars: bool = True,
        background: bool = True,
        defer_min_words: Optional[int] = DEFER_MIN_WORDS,
    ) -> None:
        if not isinstance(vocab, Vocabulary):
            raise VocabularyError(f"Compiler needs an agentgrammar.Vocabulary, got {type(vocab).__name__}")
        if cache_limit_bytes < 0:
            raise ValueError(f"cache_limit_bytes must be >= 0, got {cache_limit_bytes}")
        self._vocab = vocab
        self._vocab_handle = _new_vocab_handle(vocab)
        self.cache_limit_bytes = cache_limit_bytes
        self.reuse_grammars = bool(reuse_grammars)
        self.background = bool(background)
        self.defer_min_words = defer_min_words
        lib.ag_vocab_set_shared_cache_limit(self._vocab_handle, cache_limit_bytes // SHARED_CACHE_SHARE)
        self._recent: "OrderedDict[bytes, CompiledGrammar]" = OrderedDict()
        self._parts: "OrderedDict[bytes, CompiledGrammar]" = OrderedDict()
        # Both kinds in one use order, oldest first, for eviction by bytes.
        self._lru: "OrderedDict[Tuple[bool, bytes], None]" = OrderedDict()
        self._lock = threading.Lock()
        # what the Python-side caches held at the last trim, up to their share: the C caches
        # get the rest of the limit
        self._memo_bytes = 0
        # kept entry -> the estimated Python bytes of its grammar (``memo.grammar_bytes``): the
        # IR and serialized words that a kept grammar holds count with its automata and masks
        self._kept_py: Dict[Tuple[bool, bytes], int] = {}
        self._kept_py_bytes = 0
        # warm_up's grammars by digest: held while their background work runs (freeing one
        # stops it), and warmed once
        self._warm_ups: Dict[bytes, CompiledGrammar] = {}

    @property
    def vocabulary(self) -> Vocabulary:
        """The vocabulary this compiler compiles for."""
        return self._vocab

    @property
    def cache_size_bytes(self) -> int:
        """Bytes held by the live grammars this compiler made (automata and token-mask
        caches, whoever holds them) and by the vocabulary's shared cache."""
        return int(lib.ag_vocab_cache_bytes(self._vocab_handle))

    @property
    def memo_size_bytes(self) -> int:
        """The estimated bytes that the process's Python-side caches keep alive (shared by
        every compiler: ``grammar.memo.memo_size_bytes``); each compile trims them to
        ``cache_limit_bytes // MEMO_SHARE``.

        Example:
            >>> from agentgrammar import Compiler, Vocabulary
            >>> Compiler(Vocabulary(["a", "</s>"], stop_token_ids=[1])).memo_size_bytes >= 0
            True
        """
        return memo_size_bytes()

    def clear_cache(self) -> None:
        """Forget every grammar and part kept for reuse (those still in use stay alive), and
        what the front-ends derived from tools and tags for reuse (``grammar.memo``)."""
        with self._lock:
            self._recent.clear()
            self._parts.clear()
            self._lru.clear()
            self._kept_py.clear()
            self._kept_py_bytes = 0
        clear_memos()

    @pauses_gc
    def compile(self, grammar: Union[Grammar, str]) -> CompiledGrammar:
        """Compile a Grammar (or EBNF text) for this compiler's vocabulary.

        The grammars it embeds (``ir.Embed``, as structural tags do with each tool's argument
        grammar) are compiled once per compiler and linked, not rebuilt: a request for a new
        subset of known tools builds only its own few rules, and the token masks of a tool's
        states, once computed, serve every request that uses the tool.
        """
        grammar = _grammar_arg(grammar, "compile")
        key = grammar.digest
        found = self._lookup(False, key)
        if found is not None:
            return found
        compiled = self._build_deferred(grammar)
        deferred = compiled is not None  # its whole is classified once built
        if compiled is None:
            compiled = self._build(grammar)
        self._trim_memos()
        self._remember(key, compiled)
        if self.background and not deferred:  # last: the worker's walks would slow the compile's own work
            classify_in_background(compiled._handle)
        return compiled

    @pauses_gc
    def warm_up(self, grammar: Union[Grammar, str]) -> None:
        """Classify the states of ``grammar`` before any request needs them: its first mask at
        once, then every state a matcher can reach (up to ``WARM_UP_STATES`` in
        ``WARM_UP_SECONDS``) on the background worker; returns after the first mask.

        The compiler keeps the token classes of many states for every grammar it compiles,
        under a key of their automaton: a think block, free text and its call markers, the
        strings and numbers of tool arguments. Without a warm-up, a process's first requests
        pay for them on generated tokens (some 0.1-0.3 ms each on a 128k vocabulary); a
        format's ``warm_up_grammar()`` holds them all, and an ``Agent`` warms its compiler with
        it when made. The grammar is not kept for ``compile`` (its tools' parts are); the
        compiler holds it, so that its work runs until done or until the compiler goes, and
        warms a grammar of the same content once. The worker is used whatever ``background``
        says (that flag is about ``compile``); masks are the same either way.

        Example:
            >>> from agentgrammar import Compiler, Vocabulary, formats
            >>> compiler = Compiler(Vocabulary(["{", "}", "<", "a", "</s>"], stop_token_ids=[4]))
            >>> compiler.warm_up(formats.get("qwen3").warm_up_grammar())
        """
        grammar = _grammar_arg(grammar, "warm_up")
        key = grammar.digest
        with self._lock:
            if key in self._warm_ups:
                return
        compiled = self._build(grammar)
        first_mask(compiled)  # the worker leaves the first mask's states to the caller
        with self._lock:
            if key in self._warm_ups:  # another thread's warm-up of it won
                return
            self._warm_ups[key] = compiled
        classify_in_background(compiled._handle, WARM_UP_STATES, WARM_UP_SECONDS)

    def _build_deferred(self, grammar: Grammar) -> Optional["CompiledGrammar"]:
        """A large grammar compiled as the smaller bound of its first masks, standing for it
        until a matcher needs more (``engine/deferred.py``); None when it is not large, when no
        bounds can be made or when theirs differ."""
        limit = self.defer_min_words
        if limit is None or len(grammar.to_bytes()) < 4 * limit or len(grammar.parts) > DEFER_MAX_PARTS:
            return None
        bounds = first_bounds(grammar)
        # bounds that keep much of the grammar would build that much twice, then again whole
        if bounds is None or len(bounds[1].to_bytes()) * DEFER_MAX_SHARE > len(grammar.to_bytes()):
            return None
        # anything wrong with the bounds (a witness that spells a token marker, a mask past a
        # limit) leaves the whole to be compiled at once, which reports its own errors
        try:
            under, over = (self._build(g) for g in bounds)
            if under._one_token_sets or over._one_token_sets or not first_masks_agree(under, over):
                return None
            parts = self._parts_of(grammar.parts)
            if not defer(under, grammar, parts, background_pool() if self.background else None):
                return None
        except GrammarError:
            return None
        return CompiledGrammar(grammar, self._vocab, under._handle, under._grammar_handle, parts)

    def _trim_memos(self) -> None:
        """Trim the Python-side caches to their share of the limit (what building a grammar
        added to them), and note what they hold for the C caches' eviction."""
        share = self.cache_limit_bytes // MEMO_SHARE
        self._memo_bytes = min(trim_memos(share), share)

    def _build(self, grammar: Grammar) -> CompiledGrammar:
        parts = self._parts_of(grammar.parts)
        g = _load_grammar(grammar, parts)
        # The loader saw every byte: a grammar without 0xFF (most) writes no token marker and
        # no one-token item, and its rules need no walk for them.
        chunks = _literal_bytes(grammar.rules) if lib.ag_grammar_holds_ff(g) else []
        if chunks:
            _check_token_markers(chunks, self._vocab)
        out = ffi.new("ag_compiled **")
        err = new_error()
        if parts:
            handles = ffi.new("ag_compiled *[]", [p._handle for p in parts])
            status = lib.ag_compiled_new_linked(g, self._vocab_handle, handles, len(parts), out, err)
        else:
            status = lib.ag_compiled_new(g, self._vocab_handle, out, err)
        if status != lib.AG_OK:
            raise_error(status, err, GrammarError)
        handle = ffi.gc(out[0], lib.ag_compiled_free)
        # the branch of a request's tool names, which every call visits: classified now
        status = lib.ag_compiled_prepare_triggers(handle, err)
        if status != lib.AG_OK:
            raise_error(status, err, GrammarError)
        ones = one_token_sets(chunks, self._vocab) if chunks else None
        return CompiledGrammar(grammar, self._vocab, handle, g, parts, ones)

    def _parts_of(self, grammars: Sequence[Grammar]) -> List[CompiledGrammar]:
        """``_part`` of each grammar; the kept ones are looked up under one lock (a request
        for 500 known tools links 500 parts)."""
        if not grammars:  # (a part, or a grammar that embeds none)
            return []
        keys = content_digests(grammars)
        with self._lock:
            get, touch = self._parts.get, self._lru.move_to_end
            found = [get(key) for key in keys]
            for key, compiled in zip(keys, found):
                if compiled is not None:
                    touch((True, key))
        return [c if c is not None else self._part(g) for c, g in zip(found, grammars)]

    def _part(self, grammar: Grammar) -> CompiledGrammar:
        """An embedded grammar, compiled once and kept (the oldest out past ``PART_GRAMMARS``)."""
        key = grammar.digest
        found = self._lookup(True, key)
        if found is not None:
            return found
        compiled = self._build(grammar)
        if self.cache_limit_bytes == 0:
            return compiled
        with self._lock:
            compiled = self._parts.setdefault(key, compiled)  # another thread may have won
            self._used((True, key))
        return compiled

    def _remember(self, key: bytes, compiled: CompiledGrammar) -> None:
        """Keep ``compiled`` among the recent grammars, then drop the least recently used
        grammars and parts past the bounds."""
        if self.cache_limit_bytes == 0 or not self.reuse_grammars:
            return
        with self._lock:
            self._recent[key] = compiled
            self._used((False, key))

    def _lookup(self, is_part: bool, key: bytes) -> Optional[CompiledGrammar]:
        """A kept part (``is_part``) or recent grammar, marked as just used; None if not kept."""
        with self._lock:
            found = (self._parts if is_part else self._recent).get(key)
            if found is not None:
                self._lru.move_to_end((is_part, key))
            return found

    def _used(self, entry: Tuple[bool, bytes]) -> None:
        """Mark a kept entry as the most recently used, then evict past the bounds (under the lock)."""
        self._lru[entry] = None
        self._lru.move_to_end(entry)
        if entry not in self._kept_py:
            compiled = (self._parts if entry[0] else self._recent)[entry[1]]
            size = self._kept_py[entry] = grammar_bytes(compiled.grammar)
            self._kept_py_bytes += size
        self._evict()

    def _drop(self, entry: Tuple[bool, bytes]) -> None:
        """Forget a kept entry (under the lock; it is already out of ``_lru``)."""
        del (self._parts if entry[0] else self._recent)[entry[1]]  # freed unless still used
        self._kept_py_bytes -= self._kept_py.pop(entry, 0)

    def _evict(self) -> None:
        """Drop least recently used entries (the newest always stays) while a kind passes
        its count or the compiler's bytes (C caches, and the kept grammars' Python objects) pass
        ``cache_limit_bytes`` less the memos' share. Called under the lock."""
        over = {True: len(self._parts) - PART_GRAMMARS, False: len(self._recent) - RECENT_GRAMMARS}
        if over[True] > 0 or over[False] > 0:
            stale = []
            for entry in self._lru:  # oldest first
                if over[entry[0]] > 0:
                    stale.append(entry)
                    over[entry[0]] -= 1
                    if over[True] <= 0 and over[False] <= 0:
                        break
            for entry in stale:
                del self._lru[entry]
                self._drop(entry)
        limit = self.cache_limit_bytes - self._memo_bytes  # the memos' share, as far as they use it
        while len(self._lru) > 1 and self.cache_size_bytes + self._kept_py_bytes > limit:
            entry, _ = self._lru.popitem(last=False)
            self._drop(entry)  # freed now unless a grammar or matcher still uses it

    def compile_grammar(self, grammar: Union[Grammar, str], root: str = "root") -> CompiledGrammar:
        """xgrammar-compatible spelling of :meth:`compile` (EBNF text with a root rule name)."""
        if isinstance(grammar, str):
            grammar = Grammar.from_ebnf(grammar, root=root)
        return self.compile(grammar)

    def compile_regex(self, pattern: str) -> CompiledGrammar:
        """Compile a regular expression (the whole output must match it)."""
        return self.compile(Grammar.from_regex(pattern))

    def compile_json_schema(self, schema: Any, **options: Any) -> CompiledGrammar:
        """Compile a JSON Schema (dict, JSON text or Pydantic model class).

        ``options`` are those of :meth:`Grammar.from_json_schema` (``whitespace``, ``indent``,
        ``separators``, ``strict``, ``any_order``, ``max_whitespace``, ``lenient``).
        """
        return self.compile(Grammar.from_json_schema(schema, **options))

    def compile_builtin_json_grammar(self) -> CompiledGrammar:
        """Compile the grammar of any JSON value."""
        return self.compile(Grammar.builtin_json())


def token_markers_of(grammar: Grammar) -> List[Any]:
    """The token markers ``grammar`` (its own rules) writes: what a vocabulary must mark
    (``Vocabulary.with_token_markers``) to compile it; texts, then ids.

    Example:
        >>> token_markers_of(Grammar.from_structural_tag({"type": "token", "token": 7}))
        [7]
    """
    if b"\xff" not in grammar.to_bytes():
        return []
    return sorted(markers_in_bytes(_literal_bytes(grammar.rules)), key=lambda m: (isinstance(m, int), str(m)))


def _check_token_markers(chunks: Sequence[bytes], vocab: Vocabulary) -> None:
    """``GrammarError`` when a grammar whose own literals are ``chunks`` writes a token marker
    that ``vocab`` does not spell: any token holding 0xFF could then write it byte by byte."""
    missing = sorted(markers_in_bytes(chunks) - set(vocab.token_markers), key=str)
    if missing:
        raise GrammarError(
            f"the grammar writes {', '.join(map(repr, missing))} as single tokens, but the vocabulary "
            "does not mark them: compile it with a Compiler over "
            f"vocabulary.with_token_markers({missing!r})"
        )


def _literal_bytes(rules: Sequence[Rule]) -> List[bytes]:
    """The byte strings of the rules' literals and free-text words (not of embedded grammars)."""
    out: List[bytes] = []
    stack: List[Any] = [r.body for r in rules]
    while stack:
        e = stack.pop()
        kind = type(e)
        if kind is Literal:
            out.append(e.value)
        elif kind is TagDispatch:
            out.extend(e.words())
        elif kind is Seq or kind is Choice:
            stack.extend(e.items)
        elif kind is Repeat:
            stack.append(e.item)
        elif kind is CountedText:
            stack.extend((e.body, e.char))
    return out


@lru_cache(maxsize=1)
def byte_compiler() -> Compiler:
    """A shared compiler over a vocabulary of the 256 single bytes (for ``Grammar.accepts``, which
    accepts at once: nothing is deferred)."""
    vocab = Vocabulary([bytes([b]) for b in range(256)], stop_token_ids=[])
    return Compiler(vocab, background=False, defer_min_words=None)
