"""What every workload shares: the tokenizer and each engine's vocabulary (``Setup``), a matcher
of any engine behind one ``fill`` / ``accept`` (``Walker``), and the timing of one request."""

from __future__ import annotations

import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

ENGINES = ("ours", "xgr", "xgr-jit", "llg")
PEERS = ENGINES[1:]


class Setup:
    """The tokenizer, our vocabulary, xgrammar's tokenizer info and llguidance's tokenizer."""

    def __init__(self) -> None:
        import llguidance.hf
        import xgrammar as xgr

        from agentgrammar import Vocabulary, allocate_token_bitmask
        from agentgrammar.engine.tokenizers import load_llama32_tokenizer
        from agentgrammar.errors import VocabularyError

        try:
            self.tok = load_llama32_tokenizer()
        except VocabularyError as e:
            raise SystemExit(str(e)) from None
        self.vocab = Vocabulary.from_huggingface(self.tok)
        self.stop_ids = list(self.vocab.stop_token_ids)
        self.stop = self.stop_ids[0]
        self.info = xgr.TokenizerInfo.from_huggingface(
            self.tok, vocab_size=self.vocab.vocab_size, stop_token_ids=self.stop_ids
        )
        self.llg_tok = llguidance.hf.from_tokenizer(
            self.tok, n_vocab=self.vocab.vocab_size, eos_token=self.stop
        )
        self.bitmask = allocate_token_bitmask(1, self.vocab.vocab_size, backend="numpy")
        self.xbitmask = xgr.allocate_token_bitmask(1, self.info.vocab_size)
        import llguidance.numpy

        self.lbitmask = llguidance.numpy.allocate_token_bitmask(1, self.llg_tok.vocab_size)

    def xcompiler(self, jit: bool, cache: bool) -> Any:
        import xgrammar as xgr

        return xgr.GrammarCompiler(
            self.info, max_threads=1, cache_enabled=cache, enable_dynamic_compilation=jit
        )

    def encode(self, text: str) -> List[int]:
        return [*self.tok.encode(text, add_special_tokens=False), self.stop]


class Walker:
    """A matcher of one engine with a uniform ``fill`` / ``accept``."""

    def __init__(self, setup: Setup, engine: str, compiled: Any) -> None:
        self.engine = engine
        self.setup = setup
        if engine == "ours":
            from agentgrammar import Matcher

            self.m = Matcher(compiled)
        elif engine.startswith("xgr"):
            import xgrammar as xgr

            self.m = xgr.GrammarMatcher(compiled)
        else:
            import llguidance

            self.m = llguidance.LLMatcher(setup.llg_tok, compiled)
            if self.m.is_error():
                raise ValueError(self.m.get_error())

    def fill(self) -> None:
        if self.engine == "ours":
            self.m.fill_next_token_bitmask(self.setup.bitmask)
        elif self.engine == "llg":
            import llguidance.numpy

            llguidance.numpy.fill_next_token_bitmask(self.m, self.setup.lbitmask, 0)
        else:
            self.m.fill_next_token_bitmask(self.setup.xbitmask)

    def accept(self, token: int) -> bool:
        if self.engine == "llg":
            return bool(self.m.consume_token(token)) and not self.m.is_error()
        return bool(self.m.accept_token(token))


def walk(
    setup: Setup, engine: str, compiled: Any, ids: Sequence[int], forward_s: float = 0.0
) -> Optional[List[float]]:
    """Seconds of mask + accept per token along ``ids``; None when the engine rejects a token.
    ``forward_s``: an untimed pause before each mask, the model's forward pass."""
    w = Walker(setup, engine, compiled)
    times: List[float] = []
    for token in ids:
        if forward_s:
            time.sleep(forward_s)
        start = time.perf_counter()
        w.fill()
        ok = w.accept(token)
        times.append(time.perf_counter() - start)
        if not ok:
            return None
    return times


def timed_request(setup: Setup, engine: str, build: Callable[[], Any]) -> Tuple[float, float, Any]:
    """(build + compile seconds, + first mask seconds, compiled)."""
    start = time.perf_counter()
    compiled = build()
    if engine == "llg":  # llguidance compiles when the matcher is made: count it in the build
        w = Walker(setup, engine, compiled)
    built = time.perf_counter()
    if engine != "llg":
        w = Walker(setup, engine, compiled)
    w.fill()
    return built - start, time.perf_counter() - start, compiled
