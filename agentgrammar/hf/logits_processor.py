"""A ``transformers`` logits processor that keeps ``generate()`` inside a grammar.

Example (runs offline: a five-token vocabulary and random scores, no model):
    >>> import torch
    >>> from agentgrammar import Compiler, Grammar, Vocabulary
    >>> from agentgrammar.hf import GrammarLogitsProcessor
    >>> vocab = Vocabulary(["y", "es", "no", "x", "</s>"], stop_token_ids=[4])
    >>> compiled = Compiler(vocab).compile(Grammar.from_ebnf('root ::= "yes" | "no"'))
    >>> processor = GrammarLogitsProcessor(compiled)
    >>> prompt = torch.tensor([[3, 3]])                  # any prompt; only new tokens are read
    >>> scores = processor(prompt, torch.zeros(1, 8))    # 8 > 5: a padded model vocabulary
    >>> torch.isfinite(scores[0]).nonzero().flatten().tolist()   # "y" or "no"
    [0, 2]
    >>> scores = processor(torch.tensor([[3, 3, 2]]), torch.zeros(1, 8))   # the model chose "no"
    >>> torch.isfinite(scores[0]).nonzero().flatten().tolist()   # only the stop token
    [4]
"""

from __future__ import annotations

import operator
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..engine.batch import BatchMatcher, usable_cpus
from ..engine.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace
from ..engine.compiler import CompiledGrammar
from ..engine.matcher import Matcher
from ..engine.token_budget import TokenBudget
from ..errors import AgentGrammarError, MatcherError
from .early_masks import EarlyMasks, ema

__all__ = ["GrammarLogitsProcessor"]


_BEAM_SEARCH_UNSUPPORTED = (
    "GrammarLogitsProcessor does not support beam search (beam search reorders rows, so a row's "
    "grammar state no longer matches its tokens); generate with num_beams=1 (greedy or sampling)"
)


def _torch() -> Any:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is part of the [hf] extra
        raise ImportError(
            "GrammarLogitsProcessor needs torch; install it with pip install 'agentgrammar[hf]'"
        ) from None
    return torch


def _int32_bit(bit: int) -> int:
    """``1 << bit`` as a signed int32 value (bit 31 is negative)."""
    return (1 << bit) - (1 << 32) if bit == 31 else 1 << bit


class GrammarLogitsProcessor:
    """Constrains Hugging Face ``generate()`` to a grammar, row by row.

    Pass it in ``logits_processor=[processor]``. At each step it accepts the token each row
    sampled at the previous step into that row's :class:`~agentgrammar.Matcher`, writes the
    allowed next tokens into a bitmask and sets the scores of every other token to ``-inf`` in
    place (torch tensors on any device; float32, float16 or bfloat16; ids at or past the
    vocabulary's ``vocab_size``, as in a model's padded vocabulary, are always masked off).

    Args:
        compiled: one :class:`~agentgrammar.CompiledGrammar` shared by every row, or a sequence
            with one per prompt. The rows ``generate()`` passes (``input_ids.shape[0]``) must
            equal its length or be a multiple of it (``num_return_sequences`` copies of each
            prompt, in order); every grammar must be compiled for the same ``vocab_size``.
        batch_size: the number of rows to expect (prompts × ``num_return_sequences``); the
            matchers are then made up front and the first call checks the count. ``None``: taken
            from the first call.
        eos_token_id: the token forced once a row's grammar has terminated, so that
            ``generate()`` ends the row; default the vocabulary's first stop token.
        jump_forward: where the grammar admits exactly one continuation (``{"name": "`` after
            a call opens), allow only the token that spells its longest prefix, so the forced
            text is written as a tokenizer would write it, in the fewest tokens. Default off.
        max_threads: threads that fill the rows' masks in parallel when there are several rows
            (:class:`~agentgrammar.BatchMatcher`; ``"auto"``: half the CPUs, at most 8).
        prefix_token_ids: tokens at the end of the prompt that belong to the grammar's text
            (a chat template's generation prompt that opens the think block): every row's
            matcher accepts them first, so generation goes on inside the grammar from there.
            With one grammar per prompt, a sequence of such sequences gives each prompt its own
            (prompts whose generation prompts end differently). ``MatcherError`` when the
            grammar rejects them.
        token_budgets: each row's :class:`~agentgrammar.engine.token_budget.TokenBudget` s
            (``structural_tag.token_budgets(tag)``, ``formats.reasoning_budget(fmt, n)``): once a
            region has spent its tokens, only its end. The prefix tokens count: a think block
            the prompt opened has spent what the prompt wrote of it.

    How it follows a generation: the first call after construction or :meth:`reset` records the
    prompt length (padded prompts all have the same length, so left padding is fine) and accepts
    nothing; each later call accepts the tokens appended since the call before (so the token that
    ends a ``generate()`` is never accepted: the matcher is then completed, not terminated). A row
    whose matcher has terminated (it accepted a stop token) is only allowed ``eos_token_id``, and
    any tokens ``generate()`` appends to it afterwards (padding) are ignored. The grammar allows
    every stop token of the vocabulary where it can end, so give ``generate()`` all of them as
    ``eos_token_id`` (``list(vocab.stop_token_ids)``); a row that ends with a stop token
    ``generate()`` does not stop on gets one more token, the forced ``eos_token_id``.

    ``call_times_s`` lists the seconds each call took (accepting, filling and applying the masks)
    since construction or :meth:`reset`.

    Greedy search and sampling are supported; beam search is not: when a row's earlier tokens
    differ from those the processor accepted (what beam search's reordering does), the call
    raises :class:`~agentgrammar.MatcherError`. Reuse the processor for another ``generate()``
    after calling :meth:`reset`.

    Raises:
        MatcherError: (from a call) a sampled token the grammar rejects (naming the row and the
            token), a row count that does not fit the grammars or changed, rows whose earlier
            tokens changed (beam search), ``input_ids`` that did not grow (a new ``generate()``
            without :meth:`reset`), or a row no token can continue. After an error in accepting
            tokens every call raises until :meth:`reset`.

    Example (with a local model; see the module docstring for one that runs anywhere)::

        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path)
        compiler = Compiler(Vocabulary.from_huggingface(tok, vocab_size=model.config.vocab_size))
        processor = GrammarLogitsProcessor(compiler.compile_json_schema(schema))
        out = model.generate(**tok(prompt, return_tensors="pt"), logits_processor=[processor],
                             max_new_tokens=256)
    """

    def __init__(
        self,
        compiled: Union[CompiledGrammar, Sequence[CompiledGrammar]],
        *,
        batch_size: Optional[int] = None,
        eos_token_id: Optional[int] = None,
        jump_forward: bool = False,
        max_threads: Union[int, str] = "auto",
        prefix_token_ids: Sequence[int] = (),
        token_budgets: Sequence[TokenBudget] = (),
    ) -> None:
        self._torch = _torch()
        self._token_budgets = tuple(token_budgets)
        for b in self._token_budgets:
            if not isinstance(b, TokenBudget):
                raise TypeError(f"token_budgets holds a {type(b).__name__}, not a TokenBudget")
        self._prefixes = _prefixes(prefix_token_ids)
        self._jump = bool(jump_forward)
        if max_threads != "auto" and (
            isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads < 1
        ):
            raise ValueError(f"max_threads must be a positive int or 'auto', got {max_threads!r}")
        self._max_threads = max_threads
        self._pool: Optional[BatchMatcher] = None
        self._spellings: Dict[int, Tuple[Dict[bytes, int], int]] = {}
        if isinstance(compiled, CompiledGrammar):
            grammars: List[CompiledGrammar] = [compiled]
            self._shared = True
        elif isinstance(compiled, Sequence) and not isinstance(compiled, (str, bytes)):
            grammars = list(compiled)
            self._shared = False
            if not grammars:
                raise ValueError("GrammarLogitsProcessor needs at least one compiled grammar")
            for k, g in enumerate(grammars):
                if not isinstance(g, CompiledGrammar):
                    raise TypeError(f"compiled[{k}] is a {type(g).__name__}, not a CompiledGrammar")
        else:
            raise TypeError(
                f"compiled must be a CompiledGrammar or a sequence of them, got {type(compiled).__name__}"
            )
        sizes = sorted({g.vocabulary.vocab_size for g in grammars})
        if len(sizes) > 1:
            raise ValueError(f"the grammars are compiled for different vocabulary sizes {sizes}")
        self._grammars = grammars
        if len(self._prefixes) > 1 and (self._shared or len(self._prefixes) != len(grammars)):
            raise ValueError(
                f"{len(self._prefixes)} prefix_token_ids sequences do not fit {len(grammars)} grammar(s): "
                "give one sequence per grammar, or one sequence of ids for all"
            )
        self._vocab_size = sizes[0]
        if eos_token_id is None:
            stops = grammars[0].vocabulary.stop_token_ids
            if not stops:
                raise ValueError(
                    "the vocabulary has no stop token, so a row could never end; build it with "
                    "stop_token_ids=[...] or pass eos_token_id"
                )
            eos_token_id = stops[0]
        try:
            eos = operator.index(eos_token_id)
        except TypeError:
            raise TypeError(f"eos_token_id must be an int, got {eos_token_id!r}") from None
        if not 0 <= eos < self._vocab_size:
            raise ValueError(f"eos_token_id {eos} is outside the vocabulary [0, {self._vocab_size})")
        self._eos = eos
        if batch_size is not None:
            if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
                raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
            misfit = self._rows_misfit(batch_size)
            if misfit:
                raise ValueError(misfit)
        self._batch_size = batch_size

        self._matchers: List[Matcher] = []
        self._done: List[bool] = []  # per row: its matcher has terminated
        self._bitmask: Any = None
        self._bitmask_words: Any = None  # the bitmask's memory seen by NumPy (row checks)
        self._prompt_len: Optional[int] = None
        self._generated: Any = None  # input_ids[:, prompt_len:] as of the last call
        self._failed = False
        self.call_times_s: List[float] = []
        self._worker: Optional[ThreadPoolExecutor] = None
        self._pending: Optional[Tuple[Any, "Future[None]"]] = None
        # running means that EarlyMasks(mode="auto") decides by; kept across reset() (same model)
        self._forward_s: Optional[float] = None
        self._mask_s: Optional[float] = None
        self._step_ended_at: Optional[float] = None  # when EarlyMasks last saw a step end
        self._spare_cpu = True  # whether the last scores left a CPU free of torch's threads
        self._cpus = usable_cpus()
        if batch_size is not None:
            self._make_matchers(batch_size)

    # ---- public --------------------------------------------------------------------------------

    @property
    def eos_token_id(self) -> int:
        """The token a row is forced to once its grammar has terminated."""
        return self._eos

    @property
    def vocab_size(self) -> int:
        """The vocabulary size the grammars were compiled for (wider scores are masked past it)."""
        return self._vocab_size

    @property
    def matchers(self) -> List[Matcher]:
        """One matcher per row (empty before the first call unless ``batch_size`` was given).

        Read them; do not move them between calls (accept, rollback): the processor keeps
        track of which rows have ended from the tokens it accepts, until :meth:`reset`."""
        return list(self._matchers)

    def reset(self) -> None:
        """Forget the current generation so the processor can serve another ``generate()``."""
        pending, self._pending = self._pending, None
        if pending is not None:
            try:
                pending[1].result()
            except AgentGrammarError:
                pass  # the failure belonged to the generation being forgotten
        for i, m in enumerate(self._matchers):
            m.reset()
            self._accept_prefix(m, i)
        self._done = [m.is_terminated() for m in self._matchers]
        self._prompt_len = None
        self._generated = None
        self._failed = False
        self._step_ended_at = None
        self.call_times_s = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """Accept the tokens sampled since the last call, then mask ``scores`` in place and return it."""
        start = time.perf_counter()
        if self._step_ended_at is not None:
            self._forward_s = ema(self._forward_s, start - self._step_ended_at)
            self._step_ended_at = None
        torch = self._torch
        if not isinstance(input_ids, torch.Tensor) or not isinstance(scores, torch.Tensor):
            raise TypeError("input_ids and scores must be torch tensors")
        if input_ids.dim() != 2 or scores.dim() != 2 or input_ids.shape[0] != scores.shape[0]:
            raise MatcherError(
                "input_ids must be (rows, length) and scores (rows, vocab) with the same rows, got "
                f"{tuple(input_ids.shape)} and {tuple(scores.shape)}"
            )
        self._spare_cpu = not scores.is_cpu or torch.get_num_threads() < self._cpus
        if not self._take_prefetched(input_ids):
            self._step(input_ids)
        self._apply(scores)
        self.call_times_s.append(time.perf_counter() - start)
        return scores

    @property
    def early_masks(self) -> "EarlyMasks":
        """A stopping criterion that computes the next step's masks while the model runs its
        next forward pass: pass it to the same ``generate()`` (``stopping_criteria=[...]``) and
        each step waits only for what is left of the mask's work. It never stops generation.

        It decides at each step, from running means it measures (``mode="auto"``, see
        :func:`early_masks_pay`): masks are computed early where there is mask work to hide
        (several rows, states visited for the first time), a forward pass long enough to hide it
        and a CPU that the model's torch threads leave free (or a model on an accelerator), and
        in the processor's call otherwise (masks served from the cache cost less than
        the hand-off to a thread; a tiny model's forward pass is shorter than the mask). Either
        way the masks, and so the tokens, are the same. ``EarlyMasks(processor, mode="always")``
        computes every step's masks early.

        Example::

            model.generate(**inputs, logits_processor=[processor],
                           stopping_criteria=[processor.early_masks])
        """
        return EarlyMasks(self)

    def __repr__(self) -> str:
        kind = "shared grammar" if self._shared else f"{len(self._grammars)} grammars"
        return f"<GrammarLogitsProcessor {kind} rows={len(self._matchers) or None} eos={self._eos}>"

    # ---- internals -----------------------------------------------------------------------------

    def _step(self, input_ids: Any) -> None:
        """Accept the new tokens of ``input_ids`` and fill every row's mask."""
        # the thread's CPU time, not the wall time: on the worker, waits for the GIL held by
        # the forward pass's Python would count as mask work and keep early masks on
        start = time.thread_time()
        self._accept_and_fill(input_ids)
        self._mask_s = ema(self._mask_s, time.thread_time() - start)

    def _accept_and_fill(self, input_ids: Any) -> None:
        if self._failed:
            raise MatcherError(
                "an earlier call failed, so the rows' grammar states are unknown; call reset()"
            )
        rows, length = int(input_ids.shape[0]), int(input_ids.shape[1])
        if self._prompt_len is None:
            self._begin(rows)
            self._prompt_len = length
        else:
            self._failed = True  # until every row has accepted its new tokens
            self._advance(input_ids, rows, length)
            self._failed = False
        self._generated = input_ids[:, self._prompt_len :].clone()
        self._fill_masks()

    def _prefetch(self, input_ids: Any) -> bool:
        """Start ``_step`` for ``input_ids`` on the worker thread (``EarlyMasks``); whether it
        started."""
        if self._prompt_len is None or self._failed or self._pending is not None:
            return False  # nothing begun yet, a failure to report, or one step already under way
        if self._worker is None:
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentgrammar-masks")
        ids = input_ids.detach().clone()
        self._pending = (ids, self._worker.submit(self._step, ids))
        return True

    def _take_prefetched(self, input_ids: Any) -> bool:
        """Wait for a prefetched step; True when it served exactly these ``input_ids`` (its
        masks are then filled), False when there was none. A step begun for other ids (another
        ``generate()`` without ``reset``) is an error, as it would be without prefetching."""
        pending, self._pending = self._pending, None
        if pending is None:
            return False
        ids, future = pending
        future.result()  # re-raises the step's MatcherError here, on the caller's thread
        if ids.shape != input_ids.shape or not self._torch.equal(ids, input_ids.to(ids.device)):
            self._failed = True
            raise MatcherError(
                "input_ids changed between the end of a step and the next call: "
                f"{_BEAM_SEARCH_UNSUPPORTED} (or a new generate() began without reset())"
            )
        return True

    def _fill_masks(self) -> None:
        """Fill every row's mask: terminated rows may only end, the others (several at once on
        the C thread pool when there are more rows than one) follow their grammar."""
        bitmask, words = self._bitmask, self._bitmask_words
        live = []
        for i, done in enumerate(self._done):
            if done:
                words[i] = 0
                words[i, self._eos // 32] = _int32_bit(self._eos % 32)
            else:
                live.append(i)
        if len(live) > 1:
            if self._pool is None:
                self._pool = BatchMatcher(max_threads=self._max_threads)
            needs = self._pool.fill_next_token_bitmask([self._matchers[i] for i in live], bitmask, live)
        else:
            needs = [self._matchers[i].fill_next_token_bitmask(bitmask, i) for i in live]
        for i, need in zip(live, needs):
            if need and not words[i].any():
                raise MatcherError(
                    f"row {i}: no token of the vocabulary can continue the grammar here "
                    "(the grammar needs text that no token spells, or the vocabulary has no stop token)"
                )
            if self._jump:
                self._jump_forward(i, self._matchers[i])

    def _rows_misfit(self, rows: int) -> Optional[str]:
        n = len(self._grammars)
        if self._shared or rows % n == 0:
            return None
        return (
            f"{rows} rows do not fit {n} grammars: give one grammar per prompt (rows = prompts × "
            "num_return_sequences) or one shared CompiledGrammar"
        )

    def _make_matchers(self, rows: int) -> None:
        misfit = self._rows_misfit(rows)
        if misfit:
            raise MatcherError(misfit)
        copies = rows // len(self._grammars)
        budgets = self._token_budgets
        self._matchers = [Matcher(self._grammars[i // copies], token_budgets=budgets) for i in range(rows)]
        for i, m in enumerate(self._matchers):
            self._accept_prefix(m, i)
        self._done = [m.is_terminated() for m in self._matchers]
        self._bitmask = allocate_token_bitmask(rows, self._vocab_size, backend="torch")
        self._bitmask_words = self._bitmask.numpy()

    def _accept_prefix(self, matcher: Matcher, row: int) -> None:
        prefixes = self._prefixes
        prefix = (
            prefixes[row * len(self._grammars) // len(self._matchers)] if len(prefixes) > 1 else prefixes[0]
        )
        for k, token in enumerate(prefix):
            if not matcher.accept_token(token):
                raise MatcherError(
                    f"row {row}: the grammar rejects prefix token {k} (id {token}, "
                    f"{self._token_text(matcher, token)!r}) of {list(prefix)}"
                )

    def _apply(self, scores: Any) -> None:
        """Mask ``scores`` in place with the filled bitmask; ids past ``vocab_size`` get ``-inf``."""
        apply_token_bitmask_inplace(scores, self._bitmask, vocab_size=self._vocab_size)

    def _begin(self, rows: int) -> None:
        if self._batch_size is not None and rows != self._batch_size:
            raise MatcherError(f"expected {self._batch_size} rows (batch_size), got {rows}")
        if len(self._matchers) != rows:
            self._make_matchers(rows)

    def _advance(self, input_ids: Any, rows: int, length: int) -> None:
        assert self._prompt_len is not None
        seen = self._prompt_len + int(self._generated.shape[1])
        if rows != len(self._matchers):
            raise MatcherError(
                f"the number of rows changed from {len(self._matchers)} to {rows}; call reset() "
                "before reusing the processor for another generate()"
            )
        if length <= seen:
            raise MatcherError(
                f"input_ids has {length} tokens per row but the last call saw {seen}; call reset() "
                "before reusing the processor for another generate()"
            )
        if self._generated.shape[1]:
            before = input_ids[:, self._prompt_len : seen]
            if not self._torch.equal(before, self._generated):
                row = int((before != self._generated).any(dim=1).nonzero()[0, 0])
                raise MatcherError(
                    f"row {row}'s earlier tokens changed between calls: {_BEAM_SEARCH_UNSUPPORTED} "
                    "(or a new generate() began without reset())"
                )
        new_tokens = input_ids[:, seen:].tolist()
        done = self._done
        for i, (matcher, tokens) in enumerate(zip(self._matchers, new_tokens)):
            for token in tokens:
                if done[i]:
                    break  # padding that generate() appends to a finished row
                try:
                    accepted = matcher.accept_token(token)
                except AgentGrammarError as e:
                    raise MatcherError(f"row {i}: token {token} cannot be accepted: {e}") from e
                if not accepted:
                    raise MatcherError(
                        f"row {i}: the grammar rejects token {token} ({self._token_text(matcher, token)}; "
                        "the model sampled a token the mask "
                        "disallowed: was the processor given every step, before any sampling warper?)"
                    )
                done[i] = matcher.is_terminated()

    def _spelling_index(self, matcher: Matcher) -> Tuple[Dict[bytes, int], int]:
        """``({token bytes: id}, longest token)`` of the matcher's vocabulary (normal tokens)."""
        vocab = matcher.compiled_grammar.vocabulary
        found = self._spellings.get(id(vocab))
        if found is None:
            kinds, index = vocab.token_kinds(), {}
            for i, b in enumerate(vocab.token_bytes):
                if b and kinds[i] == 0:
                    index.setdefault(b, i)
            found = self._spellings[id(vocab)] = (index, max(map(len, index), default=0))
        return found

    def _jump_forward(self, i: int, matcher: Matcher) -> None:
        """Where the grammar forces a continuation, allow only the token that spells its longest
        prefix, as a tokenizer would write that text (the model's choice there is no choice)."""
        forced = matcher.find_jump_forward_bytes()
        if not forced:
            return
        index, longest = self._spelling_index(matcher)
        row = self._bitmask_words[i]
        for n in range(min(len(forced), longest), 0, -1):
            token = index.get(forced[:n])
            if token is not None and (int(row[token // 32]) >> (token % 32)) & 1:
                row[:] = 0
                row[token // 32] = _int32_bit(token % 32)
                return

    @staticmethod
    def _token_text(matcher: Matcher, token: int) -> str:
        token_bytes = matcher.compiled_grammar.vocabulary.token_bytes
        return repr(token_bytes[token]) if 0 <= token < len(token_bytes) else "no such token"


def _prefixes(prefix_token_ids: Any) -> Tuple[Tuple[int, ...], ...]:
    """``prefix_token_ids`` as one shared sequence, or one per grammar (sequences of ids)."""
    items = list(prefix_token_ids)
    if items and all(isinstance(p, Sequence) and not isinstance(p, (str, bytes)) for p in items):
        return tuple(tuple(operator.index(t) for t in p) for p in items)
    return (tuple(operator.index(t) for t in items),)
