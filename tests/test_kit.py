"""Tests of the model-kit helpers (tests/kit.py) and the scripted model (tests/scripted_model.py).
Those that read the kit skip, naming its path, when ``../shared/data/models`` is absent."""

from __future__ import annotations

import copy
import json
import logging
import re
import warnings
from typing import Any, Iterator, List

import pytest

from tests.kit import (
    ANSWER_TEXT,
    CANONICAL_MESSAGES,
    CANONICAL_TOOLS,
    KIT_CASES,
    KIT_ENV,
    TOOL_RESULT,
    KitCase,
    answer_turn,
    canonical_turn,
    kit_case,
    kit_dir,
    kit_template,
    kit_tokenizer,
    render,
    token_ids,
)

# What each template renders for the get_weather call, after its generation prompt (see
# canonical_turn's docstring for why each one is also what the model writes there).
_HERMES_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>'
_LLAMA_CALL = '{"name": "get_weather", "parameters": {"city": "Oslo"}}<|eot_id|>'
_HARMONY_CALL = ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}<|call|>'
_DEEPSEEK_CALL = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
    '{"city": "Oslo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>'
)
EXPECTED_TURNS = {
    "qwen3": "<think>\n\n</think>\n\n" + _HERMES_CALL,
    "qwen3-no-thinking": _HERMES_CALL,
    "qwen3-thinking-2507": "\n</think>\n\n" + _HERMES_CALL,
    "qwen2.5-instruct": _HERMES_CALL,
    "qwen3-coder": "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call><|im_end|>",
    "gpt-oss": _HARMONY_CALL,
    "gpt-oss-high": _HARMONY_CALL,
    "llama3.2": _LLAMA_CALL,
    "llama3.1": _LLAMA_CALL,
    "deepseek-v3.1": _DEEPSEEK_CALL,
    "deepseek-v3.1-thinking": "</think>" + _DEEPSEEK_CALL,
}


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """One torch thread: the tiny model's ops are too small to share (and the machine is busy)."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# --------------------------------------------------------------------------- the table


def test_cases_are_unique_and_name_existing_presets() -> None:
    from agentgrammar.formats import names

    assert len({c.id for c in KIT_CASES}) == len(KIT_CASES)
    assert set(EXPECTED_TURNS) == {c.id for c in KIT_CASES}
    for case in KIT_CASES:
        assert case.preset in names(), case.id
        assert set(case.alt_presets) <= set(names()), case.id
        assert case.reasoning in ("enabled", "disabled", "auto"), case.id
    assert kit_case("gpt-oss").end_marker == "<|call|>"
    with pytest.raises(KeyError, match="qwen3-coder"):
        kit_case("nope")


def test_kit_dir_skips_naming_the_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    missing = tmp_path / "no-kit-here"
    monkeypatch.setenv(KIT_ENV, str(missing))
    with pytest.raises(pytest.skip.Exception, match="no-kit-here"):
        kit_dir()
    with pytest.raises(pytest.skip.Exception, match="no-kit-here"):
        kit_tokenizer("qwen3")


def test_kit_files() -> None:
    root = kit_dir()
    assert root.endswith("models")
    assert "enable_thinking" in kit_template("qwen3")
    assert "enable_thinking" not in kit_template("qwen3", "thinking-2507")
    assert "[TOOL_CALLS]" in kit_template("templates-only", "mistral-nemo-instruct-2407")
    with pytest.raises(pytest.skip.Exception, match=re.escape("chat_template.nope.jinja")):
        kit_template("qwen3", "nope")
    with pytest.raises(pytest.skip.Exception, match=re.escape("templates-only/tokenizer.json")):
        kit_tokenizer("templates-only")
    tok = kit_tokenizer("qwen3")
    assert tok is kit_tokenizer("qwen3")  # loaded once
    assert len(tok) == 151669


# --------------------------------------------------------------------------- rendering


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_renders_the_canonical_conversation(case: KitCase) -> None:
    text = render(case, CANONICAL_MESSAGES, CANONICAL_TOOLS)
    assert text.endswith(case.prompt_suffix)
    assert "What is the weather in Oslo?" in text
    assert TOOL_RESULT in text or json.dumps(TOOL_RESULT) in text  # gpt-oss quotes it
    # the call itself, after the user's question
    assert "get_weather" in text.split("What is the weather in Oslo?")[-1]


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_message_shape_needs_are_as_documented(case: KitCase) -> None:
    messages = CANONICAL_MESSAGES[:3]
    base = render(case, messages, CANONICAL_TOOLS, add_generation_prompt=False)

    no_content = copy.deepcopy(messages)
    del no_content[2]["content"]
    if case.needs_content:
        with pytest.raises(Exception, match="content"):
            render(case, no_content, CANONICAL_TOOLS, add_generation_prompt=False)
    else:
        assert render(case, no_content, CANONICAL_TOOLS, add_generation_prompt=False) == base

    as_string = copy.deepcopy(messages)
    as_string[2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"city": "Oslo"})
    try:
        same = render(case, as_string, CANONICAL_TOOLS, add_generation_prompt=False) == base
    except Exception:  # Qwen3-Coder's template raises on a string
        same = False
    assert same == case.string_arguments
    if case.json_arguments:  # render gives JSON text; the template itself fails on a dict
        tok = kit_tokenizer(case.folder)
        with pytest.raises(TypeError, match="concatenate"):
            tok.apply_chat_template(
                copy.deepcopy(messages),
                tokenize=False,
                chat_template=kit_template(case.folder, case.variant),
                **case.template_kwargs,
            )

    with_ids = copy.deepcopy(messages)
    with_ids[2]["tool_calls"][0]["id"] = "call_0"
    assert render(case, with_ids, CANONICAL_TOOLS, add_generation_prompt=False) == base


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_canonical_turn(case: KitCase) -> None:
    prompt, turn = canonical_turn(case)
    assert prompt.endswith(case.prompt_suffix)
    assert prompt == render(case, CANONICAL_MESSAGES[:2], CANONICAL_TOOLS)
    assert turn == EXPECTED_TURNS[case.id]
    assert "get_weather" in turn and "Oslo" in turn
    assert turn.endswith(case.end_marker) and turn.count(case.end_marker) == 1
    # what the template renders for the call as the conversation's last message
    full = render(case, CANONICAL_MESSAGES[:3], CANONICAL_TOOLS, add_generation_prompt=False)
    assert full.startswith(prompt[: len(prompt) - len(case.history_drops)] + turn)
    assert prompt.endswith(case.history_drops)
    # the end marker is one token (the model's own), and the ids give the text back
    tok = kit_tokenizer(case.folder)
    ids = token_ids(case, turn)
    assert ids[-1] == tok.convert_tokens_to_ids(case.end_marker)
    assert ids.count(ids[-1]) == 1
    assert tok.decode(ids, skip_special_tokens=False) == turn


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_canonical_turn_with_reasoning(case: KitCase) -> None:
    thought = "The user wants the weather in Oslo, so I call get_weather."
    if case.reasoning_key is None:
        with pytest.raises(ValueError, match="no reasoning"):
            canonical_turn(case, reasoning=thought)
        return
    prompt, turn = canonical_turn(case, reasoning=thought)
    assert prompt == canonical_turn(case)[0]
    expected = {
        "qwen3": "<think>\n" + thought + "\n</think>\n\n" + _HERMES_CALL,
        "qwen3-thinking-2507": thought + "\n</think>\n\n" + _HERMES_CALL,
        "gpt-oss": "<|channel|>analysis<|message|>" + thought + "<|end|><|start|>assistant" + _HARMONY_CALL,
    }
    assert turn == expected[case.id.replace("-high", "")]


@pytest.mark.parametrize("case", KIT_CASES, ids=str)
def test_answer_turn(case: KitCase) -> None:
    prompt, turn = answer_turn(case)
    assert prompt == render(case, CANONICAL_MESSAGES, CANONICAL_TOOLS)
    assert prompt.endswith(case.prompt_suffix)
    assert turn.endswith(ANSWER_TEXT + case.answer_end)
    assert "get_weather" not in turn
    assert token_ids(case, turn)[-1] == kit_tokenizer(case.folder).convert_tokens_to_ids(case.answer_end)


def test_token_ids_take_special_tokens_as_theirs() -> None:
    case = kit_case("qwen3")
    tok = kit_tokenizer("qwen3")
    ids = token_ids(case, "<think>\n\n</think>\n\n<tool_call><|im_end|>")
    assert [tok.convert_ids_to_tokens(i) for i in ids] == [
        "<think>",
        "ĊĊ",
        "</think>",
        "ĊĊ",
        "<tool_call>",
        "<|im_end|>",
    ]
    # no BOS added (Llama's tokenizer adds <|begin_of_text|> with add_special_tokens=True)
    assert token_ids(kit_case("llama3.2"), "Hi") == kit_tokenizer("llama3").encode(
        "Hi", add_special_tokens=False
    )
    assert token_ids(kit_case("llama3.2"), "Hi")[0] != kit_tokenizer("llama3").bos_token_id


# --------------------------------------------------------------------------- the scripted model


def _generate(model: Any, prompt_ids: List[int], **kwargs: Any) -> Any:
    import torch

    ids = torch.tensor([prompt_ids])
    return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, **kwargs)


def test_scripted_model_plays_a_script_through_generate(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("torch")
    from tests.scripted_model import scripted_model

    case = kit_case("qwen3")
    tok = kit_tokenizer(case.folder)
    prompt1, turn1 = canonical_turn(case)
    prompt2, turn2 = answer_turn(case)
    script = [token_ids(case, turn1), token_ids(case, turn2)]
    model = scripted_model(tok, [tok.convert_tokens_to_ids("<|im_end|>")])
    assert model.config.vocab_size == len(tok) == 151669
    model.script(script)
    hf_logger = logging.getLogger("transformers")  # it does not propagate to the root logger
    hf_logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.WARNING, logger="transformers"), warnings.catch_warnings():
            warnings.simplefilter("error")  # generate() must not warn (pad / eos / generation config)
            _generate(model, token_ids(case, prompt1), max_new_tokens=64)
            _generate(model, token_ids(case, prompt2), max_new_tokens=64)
    finally:
        hf_logger.removeHandler(caplog.handler)
    assert not [r for r in caplog.records if r.name.startswith("transformers")], caplog.text
    assert model.outputs == script  # each ends with <|im_end|>, which stops generate()
    assert model.prompts == [token_ids(case, prompt1), token_ids(case, prompt2)]
    assert model.prompt_texts == [prompt1, prompt2]
    assert tok.decode(model.outputs[0], skip_special_tokens=False) == turn1


def test_scripted_model_ends_played_out_scripts_with_its_end_token() -> None:
    pytest.importorskip("torch")
    from tests.scripted_model import scripted_model

    tok = kit_tokenizer("qwen3")
    im_end, eot = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    hello = tok.encode("Hello there", add_special_tokens=False)
    model = scripted_model(tok, [im_end, eot], end_token_id=eot).script([hello])
    prompt = tok.encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)
    _generate(model, prompt, max_new_tokens=20)
    _generate(model, prompt, max_new_tokens=20)  # past the script: the end token at once
    assert model.outputs == [[*hello, eot], [eot]]
    # script() resets the records and may change the end token; without the cache the
    # script is followed by position just the same
    model.script([hello], end_token_id=im_end)
    _generate(model, prompt, max_new_tokens=20, use_cache=False)
    assert model.outputs == [[*hello, im_end]]
    # the default max_new_tokens lets a script longer than transformers' max_length 20 play out
    long = tok.encode(" word" * 40, add_special_tokens=False)
    model.script([long])
    _generate(model, prompt)
    assert model.outputs == [[*long, im_end]]
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model.script([[len(tok)]])


def test_scripted_model_yields_to_a_logits_processor() -> None:
    pytest.importorskip("torch")
    from tests.scripted_model import scripted_model

    tok = kit_tokenizer("qwen3")
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    words = tok.encode(" one two three", add_special_tokens=False)
    banned = words[1]

    class Ban:
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            scores[:, banned] = -float("inf")
            return scores

    from transformers import LogitsProcessorList

    model = scripted_model(tok, [im_end]).script([words])
    _generate(model, [im_end], max_new_tokens=10, logits_processor=LogitsProcessorList([Ban()]))
    out = model.outputs[0]
    assert out[0] == words[0] and out[1] != banned  # the best allowed token instead
    assert out[2:] == [words[2], im_end]  # and the script goes on by position


def test_scripted_model_on_gpt_oss_stops_at_call() -> None:
    pytest.importorskip("torch")
    from tests.scripted_model import scripted_model

    case = kit_case("gpt-oss")
    tok = kit_tokenizer(case.folder)
    prompt, turn = canonical_turn(case, reasoning="Call get_weather.")
    stops = [tok.convert_tokens_to_ids(t) for t in ("<|return|>", "<|call|>")]
    model = scripted_model(tok, stops)
    assert model.config.vocab_size == len(tok) == 200019
    script = token_ids(case, turn)
    model.script([script])
    _generate(model, token_ids(case, prompt), max_new_tokens=64)
    assert model.outputs == [script]
    assert model.prompt_texts == [prompt]
