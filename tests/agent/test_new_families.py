"""The agent with presets of issue 37 on the kit: DeepSeek-V3.2 (its template over the kit's
DeepSeek-V4 tokenizer, whose vocabulary is laid out for DSML) and Kimi-K2 (its template over the
Qwen3 tokenizer, the kit having no Kimi one: its markers are spelled in text tokens, its
``<|im_end|>`` is Qwen's stop token too). A scripted model writes the template's own turns; the
agent runs through the call and the answer, and the tool result's prompt names the call's id."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentgrammar import Agent, ToolRegistry
from agentgrammar.registry.openai import tool_from_openai
from tests.kit import (
    ANSWER_TEXT,
    CANONICAL_MESSAGES,
    CANONICAL_TOOLS,
    TOOL_RESULT,
    kit_template,
    kit_tokenizer,
)
from tests.scripted_model import scripted_model


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.add(tool_from_openai(CANONICAL_TOOLS[0]), handler=lambda city: TOOL_RESULT)
    return registry


@pytest.mark.parametrize(
    ("folder", "template", "preset", "end", "turn1", "answer"),
    [
        (
            "deepseek",
            "deepseek-v3.2",
            "deepseek_v3_2",
            "<｜end▁of▁sentence｜>",
            '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
            '<｜DSML｜parameter name="city" string="true">Oslo</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
            "</｜DSML｜function_calls>",
            "<function_results>",
        ),
        (
            "qwen3",
            "kimi-k2-instruct-0711",
            "kimi_k2",
            "<|im_end|>",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
            '<|tool_call_argument_begin|>{"city": "Oslo"}<|tool_call_end|><|tool_calls_section_end|>',
            "## Return of functions.get_weather:0",
        ),
    ],
    ids=["deepseek_v3_2", "kimi_k2"],
)
def test_a_scripted_model_drives_the_agent(
    folder: str, template: str, preset: str, end: str, turn1: str, answer: str
) -> None:
    tok = kit_tokenizer(folder)
    stop = tok.convert_tokens_to_ids(end)
    model = scripted_model(tok, [stop]).script(
        [
            tok.encode(turn1 + end, add_special_tokens=False),
            tok.encode(ANSWER_TEXT + end, add_special_tokens=False),
        ]
    )
    kwargs = {"chat_template": kit_template("templates-only", template)}
    agent = Agent(model, tok, _registry(), format=preset, template_kwargs=kwargs)
    assert agent.format.name == preset
    # thinking off: DeepSeek-V3.2's prompt closes an empty block, "<think></think>"
    run = agent.run(copy.deepcopy(CANONICAL_MESSAGES[:2]), reasoning="disabled", max_new_tokens=160)
    assert run.stopped_reason == "response", run.summary()
    assert run.valid and run.response == ANSWER_TEXT
    assert [(c.name, c.arguments) for c in run.tool_calls] == [("get_weather", {"city": "Oslo"})]
    assert run.steps[0].results[0].value == TOOL_RESULT
    assert answer in model.prompt_texts[1] and TOOL_RESULT in model.prompt_texts[1]
    if preset == "kimi_k2":
        assert run.tool_calls[0].id == "functions.get_weather:0"
