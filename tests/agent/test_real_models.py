"""The agent and the presets on the model kit's real tokenizers and official chat templates.

For each template case of ``tests.kit`` (Qwen3 with and without thinking, Thinking-2507,
Qwen2.5, Qwen3-Coder, gpt-oss, Llama-3.2 and 3.1): the turn the template renders for an
assistant tool call is accepted token by token, with the real token ids (special tokens and
stop tokens as themselves), by the turn's grammar after the template's generation prompt, and
parses back to the call; a scripted model drives ``Agent.run`` through the tool call and the
answer with every prompt equal to the template's rendering; random walks under each grammar
parse. Skipped, naming the path, without the kit.
"""

from __future__ import annotations

import copy
import random
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentgrammar import Agent, Compiler, Matcher, ToolCall, ToolRegistry, Vocabulary  # noqa: E402
from agentgrammar.agent.prompt import PromptBuilder  # noqa: E402
from agentgrammar.formats import FormatParseError, get  # noqa: E402
from agentgrammar.formats.token_markers import marker_tokens, with_token_markers  # noqa: E402
from agentgrammar.registry.openai import tool_from_openai  # noqa: E402
from tests.kit import (  # noqa: E402
    ANSWER_TEXT,
    CANONICAL_MESSAGES,
    CANONICAL_TOOLS,
    KIT_CASES,
    TOOL_RESULT,
    KitCase,
    answer_turn,
    canonical_turn,
    kit_template,
    kit_tokenizer,
    render,
    token_ids,
)
from tests.scripted_model import scripted_model  # noqa: E402

REASONING = "The user wants the weather in Oslo, so I call get_weather."
OSLO = ToolCall("get_weather", {"city": "Oslo"})


def _registry() -> ToolRegistry:
    """The kit conversation's get_weather tool (its OpenAI definition, so prompts match the
    SOURCE.md renders), answering with the kit's tool result."""
    registry = ToolRegistry()
    registry.add(tool_from_openai(CANONICAL_TOOLS[0]), handler=lambda city: TOOL_RESULT)
    return registry


def _template_kwargs(case: KitCase) -> Dict[str, Any]:
    return {"chat_template": kit_template(case.folder, case.variant), **case.template_kwargs}


class _Turn:
    """The turn's grammar as the agent builds it: the format's markers as tokens of a marked
    vocabulary, the generation prompt's opened part accepted first."""

    def __init__(self, case: KitCase, reasoning: str) -> None:
        self.tok = kit_tokenizer(case.folder)
        self.fmt = get(case.preset)
        vocab = Vocabulary.from_huggingface(self.tok)
        markers = marker_tokens(self.fmt, vocab)
        self.vocab = vocab.with_token_markers(markers)
        self.grammar_format = with_token_markers(self.fmt, markers)
        builder = PromptBuilder(self.tok, self.fmt, _template_kwargs(case))
        self.prompt = builder.build(copy.deepcopy(CANONICAL_MESSAGES[:2]), self.tools(), reasoning)
        self.reasoning = "enabled" if self.prompt.opened else reasoning
        self.prefix = token_ids(case, self.prompt.opened) if self.prompt.opened else []
        grammar = self.grammar_format.grammar(self.tools(), reasoning=self.reasoning)
        self.compiled = Compiler(self.vocab).compile(grammar)

    @staticmethod
    def tools() -> List[Any]:
        return list(_registry())

    def matcher(self) -> Matcher:
        m = Matcher(self.compiled)
        for t in self.prefix:
            assert m.accept_token(t), f"the grammar rejects the generation prompt's token {t}"
        return m


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_the_canonical_turn_is_accepted_token_by_token_and_parsed(case: KitCase) -> None:
    prompt, turn = canonical_turn(case)
    t = _Turn(case, case.reasoning)
    assert t.prompt.text == prompt  # our messages render exactly as the template's
    forms = [turn, *case.other_forms]
    for form in forms:
        m = t.matcher()
        ids = token_ids(case, form)
        for k, token in enumerate(ids):
            assert m.accept_token(token), f"token {k} ({t.tok.decode([token])!r}) of {form!r}"
        assert m.is_completed() or m.is_terminated()
        out = t.fmt.parse(
            t.prompt.opened + form[: -len(case.end_marker)] + _kept_end(t, case), tools=t.tools()
        )
        assert [(c.name, c.arguments) for c in out.tool_calls] == [("get_weather", {"city": "Oslo"})]


def _kept_end(t: _Turn, case: KitCase) -> str:
    """The end marker when the format holds it (``<|call|>``), as the agent keeps it."""
    return case.end_marker if case.end_marker in t.vocab.token_markers else ""


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_a_marker_is_only_ever_its_token(case: KitCase) -> None:
    # Where the turn writes its first marker (or, in a turn without one, at its start), the
    # marker's token is allowed and its text spelled with ordinary tokens is refused: "<" may
    # be allowed (text), the rest of the marker then is not.
    t = _Turn(case, case.reasoning)
    _, turn = canonical_turn(case)
    markers = t.vocab.token_markers
    inside = [m for m in markers if m in turn and m != case.end_marker]
    first = min(inside, key=turn.find) if inside else None
    m = t.matcher()
    for token in token_ids(case, turn[: turn.find(first)] if first else ""):
        assert m.accept_token(token)
    if first is None:  # at the start: a marker the grammar allows there (Llama's <|python_tag|>)
        first = next(x for x in markers if markers[x][0] in m.allowed_token_ids())
    assert markers[first][0] in m.allowed_token_ids()
    lt = t.vocab.token_bytes.index(first[0].encode())
    assert not (m.accept_token(lt) and m.accept_string(first[1:]))


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_a_scripted_model_drives_the_agent_through_call_and_answer(case: KitCase) -> None:
    tok = kit_tokenizer(case.folder)
    with_reasoning = case.reasoning == "enabled" and case.id in ("qwen3", "qwen3-thinking-2507", "gpt-oss")
    prompt1, turn1 = canonical_turn(case, reasoning=REASONING) if with_reasoning else canonical_turn(case)
    prompt2, turn2 = answer_turn(case)
    stops = [tok.convert_tokens_to_ids(case.end_marker), tok.convert_tokens_to_ids(case.answer_end)]
    model = scripted_model(tok, stops).script([token_ids(case, turn1), token_ids(case, turn2)])
    agent = Agent(model, tok, _registry(), format=case.preset, template_kwargs=_template_kwargs(case))
    run = agent.run(copy.deepcopy(CANONICAL_MESSAGES[:2]), reasoning=case.reasoning, max_new_tokens=120)
    assert run.stopped_reason == "response", run.summary()
    assert run.valid and run.response == ANSWER_TEXT
    assert [(c.name, c.arguments) for c in run.tool_calls] == [(OSLO.name, OSLO.arguments)]
    assert run.steps[0].results[0].value == TOOL_RESULT
    if with_reasoning:
        assert run.steps[0].think == REASONING  # the whole block, also when the prompt opened it
    # Every prompt is the template's rendering of the conversation.
    assert model.prompt_texts[0] == prompt1
    expected = copy.deepcopy(CANONICAL_MESSAGES)
    expected[2]["tool_calls"][0]["id"] = run.tool_calls[0].id
    if with_reasoning and case.reasoning_key:
        expected[2][case.reasoning_key] = REASONING
    expected[3].update(tool_call_id=run.tool_calls[0].id, name="get_weather")
    assert model.prompt_texts[1] == render(case, expected, CANONICAL_TOOLS)
    if not with_reasoning:
        assert model.prompt_texts[1] == prompt2


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_random_walks_under_the_grammar_parse(case: KitCase) -> None:
    # Random allowed tokens, drawn often among the markers and stop tokens and among the
    # shortest tokens (quotes, brackets), so that walks close their blocks and end.
    t = _Turn(case, case.reasoning)
    rng = random.Random(7)
    stops = set(t.vocab.stop_token_ids)
    special = stops | {i for ids in t.vocab.token_markers.values() for i in ids}
    short = {i for i, b in enumerate(t.vocab.token_bytes) if 0 < len(b) <= 1}
    ended = 0
    for _ in range(10):
        m, ids = t.matcher(), []
        for _ in range(300):
            allowed = m.allowed_token_ids()
            r = rng.random()
            pool = [i for i in allowed if i in special] if r < 0.3 else []
            pool = pool or ([i for i in allowed if i in short] if r < 0.7 else [])
            token = rng.choice(pool or allowed)
            assert m.accept_token(token)
            if token in stops:
                break
            ids.append(token)
            if m.is_completed() and all(i in stops for i in m.allowed_token_ids()):
                break
        else:
            continue
        text = t.prompt.opened + t.tok.decode(ids, skip_special_tokens=False)
        try:
            t.fmt.parse(text, tools=t.tools())
        except FormatParseError as e:  # pragma: no cover - the failure message
            pytest.fail(f"a walk the grammar allowed does not parse: {text!r}: {e}")
        ended += 1
    assert ended >= 2, "fewer than 2 of 10 walks ended within 300 tokens"
