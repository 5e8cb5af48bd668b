"""``formats.detect``: the preset a chat template writes, on the model kit's real templates
(read in place from ``../shared/data/models``; skipped, naming the path, when absent)."""

from __future__ import annotations

import pytest

from agentgrammar import Agent, ToolRegistry
from agentgrammar.errors import AgentError
from agentgrammar.formats import FormatDetectError, detect
from tests.kit import KIT_CASES, KitCase, kit_template, kit_tokenizer


def _kwargs(case: KitCase) -> dict:
    return {"chat_template": kit_template(case.folder, case.variant), **case.template_kwargs}


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_each_kit_template_is_detected_as_its_preset(case: KitCase) -> None:
    tok = kit_tokenizer(case.folder)
    assert detect(tok, template_kwargs=_kwargs(case)).name == case.preset


@pytest.mark.parametrize(
    ("template", "preset"),
    [
        ("mistral-nemo-instruct-2407", "mistral"),
        ("mistral-small-3.1-24b-instruct-2503", "mistral_v7"),
        ("mistral-small-3.2-24b-instruct-2506", "mistral_small_3_2"),
        ("glm-4.6", "glm4"),
        ("glm-4.5.llamacpp", "glm4_5"),
        ("kimi-k2-instruct-0711", "kimi_k2"),
        # MiniMax-M2 writes the think block only for a turn with reasoning: found on the
        # second probe
        ("minimax-m2", "minimax_m2"),
        ("deepseek-v3.2", "deepseek_v3_2"),
    ],
)
def test_template_only_families_are_detected(template: str, preset: str) -> None:
    tok = kit_tokenizer("qwen3")  # any tokenizer renders a template given as chat_template
    assert (
        detect(tok, template_kwargs={"chat_template": kit_template("templates-only", template)}).name
        == preset
    )


def test_a_template_no_preset_reads_names_the_closest() -> None:
    # MiniMax-M2's template with its calls renamed: a layout no preset has
    tok = kit_tokenizer("qwen3")
    renamed = kit_template("templates-only", "minimax-m2").replace("<invoke name=", "<call_tool name=")
    other = {"chat_template": renamed}
    with pytest.raises(FormatDetectError, match="no preset reads the tool call") as err:
        detect(tok, template_kwargs=other)
    assert err.value.closest[0] == "minimax_m2" and "<call_tool name=" in str(err.value)
    with pytest.raises(AgentError, match="cannot tell the model's format"):
        Agent(None, tok, ToolRegistry(), template_kwargs=other)


@pytest.mark.parametrize("thinking", [False, True])
def test_deepseek_v3_2_is_detected_with_thinking_on_and_off(thinking: bool) -> None:
    # thinking off: the prompt writes "<think></think>", the template's turn "</think>" alone
    tok = kit_tokenizer("qwen3")
    kwargs = {"chat_template": kit_template("templates-only", "deepseek-v3.2"), "thinking": thinking}
    assert detect(tok, template_kwargs=kwargs).name == "deepseek_v3_2"


def test_the_agent_uses_the_detected_preset_and_tags_without_a_template() -> None:
    case = next(c for c in KIT_CASES if c.id == "qwen3-thinking-2507")
    agent = Agent(None, kit_tokenizer(case.folder), ToolRegistry(), template_kwargs=_kwargs(case))
    assert agent.format.name == "qwen3"

    class NoTemplate:
        chat_template = None

    with pytest.raises(FormatDetectError, match="no chat template"):
        detect(NoTemplate())
