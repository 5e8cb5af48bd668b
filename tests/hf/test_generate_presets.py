"""Every preset format through a real ``model.generate()`` with ``GrammarLogitsProcessor``.

A tiny random ``LlamaForCausalLM`` and the real Llama-3.2 tokenizer, all offline. The model's text
is nonsense, but every row must stay inside the request grammar: each new token is accepted by a
fresh Matcher, a row that terminated (it ended with a stop token) parses with ``fmt.parse`` and
its tool calls validate, and a row cut off at ``max_new_tokens`` is a valid prefix. After a row
terminates it only gets EOS / padding.

A random model spells the format's fixed markers in many short tokens, so it rarely finishes a
call within a few dozen tokens. The default run therefore adds ``LongTokenBias`` before the
grammar processor (a trained model writes markers in few tokens; this one prefers long tokens) and
uses a "bounded" request (one required call, no reasoning, short arguments): most rows terminate
and parse. The unbiased model, the open request (tool choice ``auto``, reasoning enabled, free
text) and more seeds are ``slow`` (all rows checked as valid prefixes or parsed outputs).
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Literal, Optional, Tuple

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from pydantic import Field  # noqa: E402
from typing_extensions import Annotated  # noqa: E402

from agentgrammar import Compiler, Grammar, Matcher, ToolError, ToolRegistry, Vocabulary  # noqa: E402
from agentgrammar.formats import AgentFormat, get, names  # noqa: E402
from agentgrammar.hf import GrammarLogitsProcessor  # noqa: E402
from tests.hf_models import tiny_llama  # noqa: E402

PRESETS = names()
PROMPTS = [
    "What is the weather in Paris?",
    "Set a timer.",
    "Search the web for grammar engines, please, and give me the top results.",
    "Hi",
]
MAX_NEW = 40
# DeepSeek's markers are full-width characters the Llama-3.2 vocabulary spells in pieces; a GLM
# call writes its name and each argument inside <arg_key>/<arg_value> tags; the DSML, Kimi-K2
# and MiniMax markers are long in that vocabulary too.
BUDGET = {"deepseek_r1": 72, "deepseek_v3_1": 72, "glm4": 72, "glm4_5": 72, "glm_4_7": 72}
BUDGET.update(
    dict.fromkeys(["deepseek_v3_2", "deepseek_v4", "deepseek_v4_1", "kimi_k2", "kimi_k2_thinking"], 128)
)
BUDGET["minimax_m2"] = 96
# The styled layouts' calls are XML elements around every argument, in markers of many tokens.
BUDGET.update(dict.fromkeys(["gemma_4", "cohere", "kimi_k3", "minimax_m3"], 160))
# The styled layouts follow xgrammar's XML parameter styles, whose grammars ignore string length
# bounds and allow white space around raw values: a long-token-biased random model writes
# arguments the tool then refuses, as a typed ToolError, and may not close its call in the budget.
LOOSE_ARGUMENTS = {"gemma_4", "cohere", "kimi_k3", "minimax_m3"}
# Formats that allow free text after the required call (tags: an optional <response> block),
# which the long-token bias happily writes until the budget runs out.
NO_END_AFTER_CALL = {"tags"}
# The bounded request: exactly one call, nothing before or after it, short arguments.
BOUNDED: Dict[str, Any] = dict(tool_choice="required", parallel_tool_calls=False, reasoning="disabled")
OPEN: Dict[str, Any] = dict(tool_choice="auto", reasoning="enabled")


def _registry() -> ToolRegistry:
    """Three tools: a string, an integer and an enum parameter (bounded, so calls end soon)."""
    registry = ToolRegistry()

    @registry.tool
    def get_weather(
        city: Annotated[str, Field(max_length=10)], unit: Literal["celsius", "fahrenheit"] = "celsius"
    ) -> str:
        """Get the current weather.

        Args:
            city: The city name.
            unit: Temperature unit.
        """
        return f"20 degrees {unit} in {city}"

    @registry.tool
    def set_timer(minutes: Annotated[int, Field(ge=1, le=99)]) -> str:
        """Start a timer.

        Args:
            minutes: How long.
        """
        return f"timer set for {minutes} min"

    @registry.tool
    def search(query: Annotated[str, Field(max_length=12)], mode: Literal["web", "news"]) -> str:
        """Search.

        Args:
            query: What to look for.
            mode: Where to look.
        """
        return f"results for {query} ({mode})"

    return registry


REGISTRY = _registry()


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread: the tiny model gains nothing from more, and a busy machine loses a lot."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model(tok: Any, vocab: Vocabulary) -> Any:
    # a padded model vocabulary, wider than the tokenizer's
    return tiny_llama(tok, vocab, vocab_size=len(tok) + 63, layers=1, heads=2)


class LongTokenBias(transformers.LogitsProcessor):  # type: ignore[misc]
    """Adds ``per_byte`` × the token's length in bytes (up to 16) to its score, and the most
    (16 bytes' worth) to the stop tokens.

    With a random model's near-zero logits this makes greedy search pick the longest token the
    grammar allows, and end as soon as the grammar can; sampling prefers both.
    """

    def __init__(self, vocab: Vocabulary, width: int, per_byte: float = 3.0) -> None:
        lengths = [min(len(b), 16) for b in vocab.token_bytes]
        for stop in vocab.stop_token_ids:
            lengths[stop] = 16
        self.bias = torch.zeros(width)
        self.bias[: len(lengths)] = torch.tensor(lengths, dtype=torch.float32) * per_byte

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        return scores + self.bias.to(scores.dtype)


@pytest.fixture(scope="module")
def long_bias(vocab: Vocabulary, model: Any) -> LongTokenBias:
    return LongTokenBias(vocab, model.config.vocab_size)


def _generate(
    model: Any,
    tok: Any,
    processor: GrammarLogitsProcessor,
    prompts: List[str],
    bias: Optional[LongTokenBias] = None,
    **kwargs: Any,
) -> Any:
    inputs = tok(prompts, return_tensors="pt", padding=True)
    kwargs.setdefault("max_new_tokens", MAX_NEW)
    kwargs.setdefault("pad_token_id", tok.eos_token_id)
    with torch.no_grad():
        out = model.generate(**inputs, logits_processor=[bias, processor] if bias else [processor], **kwargs)
    return out[:, inputs["input_ids"].shape[1] :]


def _check_row(
    tok: Any,
    fmt: AgentFormat,
    grammar: Grammar,
    compiled: Any,
    row: List[int],
    *,
    after_stop: Tuple[int, ...],
) -> Optional[str]:
    """Asserts the row is in the grammar; returns its text when it terminated, else ``None``.

    Every token up to and including the first stop token must be accepted by a fresh Matcher;
    after that the row may only hold ``after_stop`` tokens (EOS / padding).
    """
    stops = set(compiled.vocabulary.stop_token_ids)
    matcher = Matcher(compiled)
    cut = next((k for k, t in enumerate(row) if t in stops), None)
    body = row if cut is None else row[:cut]
    for k, token in enumerate(body):
        assert matcher.accept_token(token), f"token {k} ({token}) of {row} rejected"
    text = tok.decode(body, clean_up_tokenization_spaces=False)
    if cut is None:
        assert not matcher.is_terminated()
        return None  # cut off by max_new_tokens: a valid prefix is all we can ask
    assert matcher.accept_token(row[cut]) and matcher.is_terminated(), text
    assert all(t in after_stop for t in row[cut + 1 :]), row
    assert grammar.accepts(text), text
    if fmt.name in LOOSE_ARGUMENTS:  # read back; the arguments may be ones the tool refuses
        fmt.parse(text)
        return text
    out = fmt.parse(text, tools=REGISTRY)  # raises on text it cannot read or invalid arguments
    for call in out.tool_calls:
        REGISTRY.call(call)  # validates the arguments again and runs the tool
    return text


def _run_preset(
    model: Any,
    tok: Any,
    compiler: Compiler,
    name: str,
    request: Dict[str, Any],
    *,
    batch: int,
    sample: bool,
    seed: int = 0,
    max_new_tokens: int = MAX_NEW,
    bias: Optional[LongTokenBias] = None,
) -> List[Optional[str]]:
    fmt = get(name)
    grammar = fmt.grammar(REGISTRY, **request)
    compiled = compiler.compile(grammar)
    processor = GrammarLogitsProcessor(compiled)
    torch.manual_seed(seed)
    kwargs: Dict[str, Any] = dict(do_sample=True, top_k=0, temperature=1.0) if sample else {}
    new = _generate(model, tok, processor, PROMPTS[:batch], bias, max_new_tokens=max_new_tokens, **kwargs)
    assert new.shape[0] == batch and len(processor.matchers) == batch
    assert processor.call_times_s and len(processor.call_times_s) <= max_new_tokens
    after = (tok.eos_token_id, processor.eos_token_id)
    return [_check_row(tok, fmt, grammar, compiled, row.tolist(), after_stop=after) for row in new]


@pytest.mark.parametrize(
    ("batch", "sample"),
    [
        pytest.param(1, False, id="1-greedy"),
        pytest.param(4, True, id="4-sample"),
        pytest.param(1, True, id="1-sample", marks=pytest.mark.slow),
        pytest.param(4, False, id="4-greedy", marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("name", PRESETS)
def test_bounded_request(model, tok, compiler, long_bias, name, batch, sample):
    budget = BUDGET.get(name, MAX_NEW)
    texts = _run_preset(
        model,
        tok,
        compiler,
        name,
        BOUNDED,
        batch=batch,
        sample=sample,
        seed=batch,
        bias=long_bias,
        max_new_tokens=budget,
    )
    for text in texts:
        if text is not None and name in LOOSE_ARGUMENTS:  # one call, its arguments maybe refused
            assert len(get(name).parse(text).tool_calls) == 1
            try:
                get(name).parse(text, tools=REGISTRY)
            except ToolError:
                pass
        elif text is not None:  # a required call, and nothing else
            out = get(name).parse(text, tools=REGISTRY)
            assert len(out.tool_calls) == 1 and out.response is None and out.text is None
    if name not in NO_END_AFTER_CALL | LOOSE_ARGUMENTS:
        assert any(t is not None for t in texts), f"no row terminated within {budget} tokens"


@pytest.mark.parametrize("name", ["hermes", "qwen3_coder", "harmony"])
def test_unbiased_rows_are_valid_prefixes(model, tok, compiler, name):
    _run_preset(model, tok, compiler, name, BOUNDED, batch=4, sample=True, seed=3, max_new_tokens=24)


@pytest.mark.slow
@pytest.mark.parametrize("biased", [False, True], ids=["plain", "long_tokens"])
@pytest.mark.parametrize("sample", [False, True], ids=["greedy", "sample"])
@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("name", PRESETS)
def test_open_request(model, tok, compiler, long_bias, name, batch, sample, biased):
    bias = long_bias if biased else None
    _run_preset(model, tok, compiler, name, OPEN, batch=batch, sample=sample, seed=10 + batch, bias=bias)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", PRESETS)
def test_bounded_request_more_seeds(model, tok, compiler, long_bias, name, seed):
    for bias in (None, long_bias):
        _run_preset(
            model, tok, compiler, name, BOUNDED, batch=4, sample=True, seed=seed, max_new_tokens=96, bias=bias
        )


@pytest.mark.parametrize("name", ["hermes", "mistral"])
def test_eos_forced_after_termination(model, tok, compiler, vocab, long_bias, name):
    """generate() is told to stop on no token the grammar allows, so it runs every row to
    max_new_tokens: after a row's stop token the processor only lets its EOS through."""
    fmt = get(name)
    grammar = fmt.grammar(REGISTRY, **BOUNDED)
    compiled = compiler.compile(grammar)
    processor = GrammarLogitsProcessor(compiled)
    never = tok.convert_tokens_to_ids("<|reserved_special_token_5|>")
    assert never not in vocab.stop_token_ids
    torch.manual_seed(5)
    new = _generate(
        model,
        tok,
        processor,
        PROMPTS,
        long_bias,
        max_new_tokens=MAX_NEW,
        do_sample=True,
        eos_token_id=never,
        pad_token_id=never,
    )
    assert new.shape[1] == MAX_NEW  # nobody stopped generate()
    early = 0
    for matcher, row in zip(processor.matchers, new.tolist()):
        text = _check_row(tok, fmt, grammar, compiled, row, after_stop=(processor.eos_token_id,))
        stop_at = next((k for k, t in enumerate(row) if t in vocab.stop_token_ids), len(row))
        if text is not None and stop_at < len(row) - 1:  # the processor saw the stop token
            early += 1
            assert matcher.is_terminated()
            assert row[stop_at + 1 :] == [processor.eos_token_id] * (len(row) - stop_at - 1)
    assert early, "no row terminated early; raise max_new_tokens"
