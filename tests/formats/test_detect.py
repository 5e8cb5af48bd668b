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
    ],
)
def test_template_only_families_are_detected(template: str, preset: str) -> None:
    tok = kit_tokenizer("qwen3")  # any tokenizer renders a template given as chat_template
    assert (
        detect(tok, template_kwargs={"chat_template": kit_template("templates-only", template)}).name
        == preset
    )


def test_a_template_no_preset_reads_names_the_closest() -> None:
    tok = kit_tokenizer("qwen3")
    minimax = {"chat_template": kit_template("templates-only", "minimax-m2")}
    with pytest.raises(FormatDetectError, match="no preset reads the tool call") as err:
        detect(tok, template_kwargs=minimax)
    assert err.value.closest and "<minimax:tool_call>" in str(err.value)
    with pytest.raises(AgentError, match="cannot tell the model's format"):
        Agent(None, tok, ToolRegistry(), template_kwargs=minimax)


def test_glm_4_5s_llama_cpp_copy_is_not_read_but_named_closest_to_glm4() -> None:
    # llama.cpp's adapted GLM-4.5 template drops the newlines after the name and after each
    # </arg_value> that the GLM-4.6 template (the glm4 preset's form) writes
    tok = kit_tokenizer("qwen3")
    glm45 = {"chat_template": kit_template("templates-only", "glm-4.5.llamacpp")}
    with pytest.raises(FormatDetectError, match="get_weather<arg_key>") as err:
        detect(tok, template_kwargs=glm45)
    assert err.value.closest[0] == "glm4"


def test_the_agent_uses_the_detected_preset_and_tags_without_a_template() -> None:
    case = next(c for c in KIT_CASES if c.id == "qwen3-thinking-2507")
    agent = Agent(None, kit_tokenizer(case.folder), ToolRegistry(), template_kwargs=_kwargs(case))
    assert agent.format.name == "qwen3"

    class NoTemplate:
        chat_template = None

    with pytest.raises(FormatDetectError, match="no chat template"):
        detect(NoTemplate())
