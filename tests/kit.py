"""Helpers over the offline model kit (``../shared/data/models/`` next to the repository; its
README.md and each folder's SOURCE.md describe the files): the real tokenizers and chat
templates of Qwen3 / Qwen2.5 / Qwen3-Coder, gpt-oss, Llama-3.1 / 3.2 and DeepSeek-V3.1, for
end-to-end tests.

Nothing of the kit is copied into the repository: everything here reads it from there, and a
test that needs it is skipped, naming the path, when it is absent (``AGENTGRAMMAR_MODEL_KIT``
points elsewhere).

What is here:

* ``kit_dir()``, ``kit_tokenizer(folder)``, ``kit_template(folder, variant)``: the files.
* ``KIT_CASES`` (``KitCase``): the template cases with a tokenizer (issue 36's and DeepSeek-V3.1), with the
  preset expected to serve each one and what each template needs of the messages.
* ``CANONICAL_MESSAGES`` / ``CANONICAL_TOOLS``: the SOURCE.md files' tool-calling conversation
  (system, user "What is the weather in Oslo?", the get_weather call, its result).
* ``render(case, messages, tools)``: the template's prompt; ``canonical_turn(case)``: the
  generation prompt before the tool-call turn and that turn's text as the model writes it;
  ``answer_turn(case)``: the same for the final answer after the tool result;
  ``token_ids(case, text)``: the text's ids with the real tokenizer (special tokens as theirs).

Example (in a test)::

    from tests.kit import KIT_CASES, canonical_turn, token_ids

    @pytest.mark.parametrize("case", KIT_CASES, ids=lambda c: c.id)
    def test_turn(case):
        prompt, turn = canonical_turn(case)     # skips without the kit
        assert turn.endswith(case.end_marker)
        ids = token_ids(case, turn)             # feed these to the turn's grammar
"""

from __future__ import annotations

import copy
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

__all__ = [
    "ANSWER_TEXT",
    "CANONICAL_MESSAGES",
    "CANONICAL_TOOLS",
    "KIT_CASES",
    "KIT_ENV",
    "TOOL_RESULT",
    "KitCase",
    "answer_turn",
    "assistant_turn",
    "canonical_turn",
    "kit_case",
    "kit_dir",
    "kit_template",
    "kit_tokenizer",
    "render",
    "token_ids",
]

KIT_ENV = "AGENTGRAMMAR_MODEL_KIT"
"""Environment variable that overrides the kit's location."""

_DEFAULT_KIT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "models"


# --------------------------------------------------------------------------- files


def kit_dir() -> str:
    """The kit's folder (``$AGENTGRAMMAR_MODEL_KIT``, else ``../shared/data/models`` from the
    repository root); skips the calling test, naming the path, when it is not there."""
    path = Path(os.environ.get(KIT_ENV) or _DEFAULT_KIT)
    if not (path / "README.md").is_file():
        pytest.skip(f"the offline model kit is absent: no {path}/README.md (set {KIT_ENV} to its folder)")
    return str(path)


@functools.lru_cache(maxsize=None)
def _load_tokenizer(path: str) -> Any:
    import transformers

    return transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)


def kit_tokenizer(folder: str) -> Any:
    """The tokenizer of kit folder ``folder`` (``"qwen3"``, ``"gpt-oss"``, ``"llama3"``,
    ``"deepseek"``), loaded offline once per process; shared, so do not change it. Skips when
    transformers, the kit or the folder's tokenizer is missing.

    Example (with the kit)::

        kit_tokenizer("qwen3").eos_token
        '<|im_end|>'
    """
    pytest.importorskip("transformers")
    path = Path(kit_dir()) / folder
    if not (path / "tokenizer.json").is_file():
        pytest.skip(f"no tokenizer in the model kit: {path}/tokenizer.json is absent")
    return _load_tokenizer(str(path))


@functools.lru_cache(maxsize=None)
def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def kit_template(folder: str, variant: Optional[str] = None) -> str:
    """The text of a chat template of the kit: ``<folder>/chat_template.jinja`` (``variant``
    None), ``<folder>/chat_template.<variant>.jinja``, or for ``folder="templates-only"`` the
    file ``templates-only/<variant>.jinja``. Skips when the file is absent.

    Example (with the kit)::

        "enable_thinking" in kit_template("qwen3"), "enable_thinking" in kit_template("qwen3", "thinking-2507")
        (True, False)
    """
    base = Path(kit_dir()) / folder
    if folder == "templates-only":
        if not variant:
            raise ValueError("templates-only holds one file per family: name it as variant")
        path = base / (variant if variant.endswith(".jinja") else variant + ".jinja")
    else:
        path = base / ("chat_template.jinja" if variant is None else f"chat_template.{variant}.jinja")
    if not path.is_file():
        pytest.skip(f"no such chat template in the model kit: {path}")
    return _read(str(path))


# --------------------------------------------------------------------------- the conversation

CANONICAL_TOOLS: List[Dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name, e.g. Oslo"}},
                "required": ["city"],
            },
        },
    }
]
"""The get_weather tool of the SOURCE.md renders, in OpenAI form."""

TOOL_RESULT = json.dumps({"temperature_c": 3, "condition": "cloudy"})
"""The tool message's content in the SOURCE.md renders: '{"temperature_c": 3, "condition": "cloudy"}'."""

ANSWER_TEXT = "It is 3 °C and cloudy in Oslo."
"""The final answer ``answer_turn`` uses (not part of the SOURCE.md renders)."""

CANONICAL_MESSAGES: List[Dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the weather in Oslo?"},
    {
        "role": "assistant",
        # "content": "" because the Qwen3 default template reads message.content unguarded (and
        # transformers drops None values); every template of KIT_CASES renders it the same
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
        ],
    },
    {"role": "tool", "content": TOOL_RESULT},
]
"""The SOURCE.md files' tool-calling conversation, with the assistant ``"content": ""`` that
makes it render with every template of ``KIT_CASES`` (arguments as a dict; no ids). Copy it
(``copy.deepcopy``) before changing it."""


# --------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class KitCase:
    """One chat template of the kit, with the facts its SOURCE.md documents.

    ``id``: a test id. ``folder`` / ``variant``: the tokenizer folder and the template
    (``kit_template``). ``template_kwargs``: passed to ``apply_chat_template`` (and to be passed
    to the agent's ``template_kwargs``). ``preset``: the ``agentgrammar.formats`` preset that
    should serve the case; ``alt_presets``: others that may. ``reasoning``: the preset
    grammar's ``reasoning=`` under which ``canonical_turn`` text must be accepted (``"enabled"``:
    the turn opens a think block, or, where ``think_in_prompt``, the prompt already opened it;
    ``"disabled"``: no think block; ``"auto"``: optional). ``prompt_suffix``: what
    ``add_generation_prompt=True`` appends. ``end_marker``: the token that ends a tool-call turn;
    ``answer_end``: the one that ends a final answer. ``needs_content``: the assistant tool-call
    message needs ``"content": ""``. ``string_arguments``: whether ``arguments`` may also be a
    JSON string (else only a dict renders right). No template here reads tool-call ids.
    ``reasoning_key``: the message key the template reads the reasoning from (``None``: the
    template drops or never writes reasoning in this turn). ``other_forms``: the canonical
    call as the family's models also write it when the template renders another form.
    ``json_arguments``: the template concatenates ``arguments``, so ``render`` gives them as
    JSON text (as the agent does for such a template). ``tools_in_system``: the template leaves
    the tools out, so ``render`` puts the preset's tools block (``render_tools``) in the system
    message, as the agent does. ``history_drops``: the end of the generation prompt that the
    template leaves out when it renders the same turn as history (DeepSeek-V3.1 with thinking:
    the ``<think>`` it opened); the turn then starts where the two renders part.
    """

    id: str
    folder: str
    variant: Optional[str]
    template_kwargs: Mapping[str, Any]
    preset: str
    reasoning: str
    prompt_suffix: str
    end_marker: str
    answer_end: str
    alt_presets: Tuple[str, ...] = ()
    needs_content: bool = False
    string_arguments: bool = False
    reasoning_key: Optional[str] = None
    think_in_prompt: bool = False
    other_forms: Tuple[str, ...] = ()
    json_arguments: bool = False
    tools_in_system: bool = False
    history_drops: str = ""

    def __str__(self) -> str:
        return self.id


_QWEN_PROMPT = "<|im_start|>assistant\n"
_LLAMA_PROMPT = "<|start_header_id|>assistant<|end_header_id|>\n\n"
# Llama templates read date_string (else Llama-3.2 calls strftime_now): fixed as in SOURCE.md
_LLAMA_KW = {"date_string": "26 Jul 2024"}

KIT_CASES: Tuple[KitCase, ...] = (
    # Qwen3 hybrid thinking: the model writes "<think>\n" + reasoning + "\n</think>\n\n" and then
    # the Hermes call; without reasoning the block is empty ("<think>\n\n</think>\n\n"), as the
    # template renders it for the last assistant turn.
    KitCase(
        id="qwen3",
        folder="qwen3",
        variant=None,
        template_kwargs={},
        preset="qwen3",
        reasoning="enabled",
        prompt_suffix=_QWEN_PROMPT,
        end_marker="<|im_end|>",
        answer_end="<|im_end|>",
        needs_content=True,
        string_arguments=True,
        reasoning_key="reasoning_content",
    ),
    # enable_thinking=False: the prompt ends with an empty think block, the model writes the call.
    KitCase(
        id="qwen3-no-thinking",
        folder="qwen3",
        variant=None,
        template_kwargs={"enable_thinking": False},
        preset="qwen3",
        alt_presets=("hermes",),
        reasoning="disabled",
        prompt_suffix=_QWEN_PROMPT + "<think>\n\n</think>\n\n",
        end_marker="<|im_end|>",
        answer_end="<|im_end|>",
        needs_content=True,
        string_arguments=True,
    ),
    # Thinking-2507: the prompt pre-opens "<think>\n"; the model writes its reasoning, then
    # "\n</think>\n\n" and the call (with no reasoning: "\n</think>\n\n<tool_call>...").
    KitCase(
        id="qwen3-thinking-2507",
        folder="qwen3",
        variant="thinking-2507",
        template_kwargs={},
        preset="qwen3",
        reasoning="enabled",
        think_in_prompt=True,
        prompt_suffix=_QWEN_PROMPT + "<think>\n",
        end_marker="<|im_end|>",
        answer_end="<|im_end|>",
        string_arguments=True,
        reasoning_key="reasoning_content",
    ),
    # Qwen2.5-Instruct: Hermes calls, no reasoning; a string `arguments` is rendered quoted.
    KitCase(
        id="qwen2.5-instruct",
        folder="qwen3",
        variant="qwen2.5-instruct",
        template_kwargs={},
        preset="hermes",
        reasoning="disabled",
        prompt_suffix=_QWEN_PROMPT,
        end_marker="<|im_end|>",
        answer_end="<|im_end|>",
    ),
    # Qwen3-Coder: "<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>";
    # a string `arguments` makes the template raise.
    KitCase(
        id="qwen3-coder",
        folder="qwen3",
        variant="qwen3-coder",
        template_kwargs={},
        preset="qwen3_coder",
        reasoning="disabled",
        prompt_suffix=_QWEN_PROMPT,
        end_marker="<|im_end|>",
        answer_end="<|im_end|>",
    ),
    # gpt-oss: after "<|start|>assistant" the model writes an optional analysis message
    # ("<|channel|>analysis<|message|>...<|end|><|start|>assistant"), then the call ending with
    # <|call|>, or a final answer ("<|channel|>final<|message|>...<|return|>").
    KitCase(
        id="gpt-oss",
        folder="gpt-oss",
        variant=None,
        template_kwargs={},
        preset="harmony",
        reasoning="auto",
        prompt_suffix="<|start|>assistant",
        end_marker="<|call|>",
        answer_end="<|return|>",
        reasoning_key="thinking",
        other_forms=(
            '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|>',
        ),
    ),
    KitCase(
        id="gpt-oss-high",
        folder="gpt-oss",
        variant=None,
        template_kwargs={"reasoning_effort": "high"},
        preset="harmony",
        reasoning="auto",
        prompt_suffix="<|start|>assistant",
        end_marker="<|call|>",
        answer_end="<|return|>",
        reasoning_key="thinking",
        other_forms=(
            '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|>',
        ),
    ),
    # Llama-3.2: bare {"name": ..., "parameters": ...} JSON, then <|eot_id|>.
    KitCase(
        id="llama3.2",
        folder="llama3",
        variant=None,
        template_kwargs=_LLAMA_KW,
        preset="llama3",
        reasoning="disabled",
        prompt_suffix=_LLAMA_PROMPT,
        end_marker="<|eot_id|>",
        answer_end="<|eot_id|>",
    ),
    # Llama-3.1 / 3.3: the same for custom (JSON) tools; <|python_tag|> ... <|eom_id|> is for
    # its builtin tools only.
    KitCase(
        id="llama3.1",
        folder="llama3",
        variant="llama3.1",
        template_kwargs=_LLAMA_KW,
        preset="llama3",
        reasoning="disabled",
        prompt_suffix=_LLAMA_PROMPT,
        end_marker="<|eot_id|>",
        answer_end="<|eot_id|>",
    ),
    # DeepSeek-V3.1 (thinking off, the template's default): the prompt ends "<｜Assistant｜></think>",
    # the model writes the calls and <｜end▁of▁sentence｜>. The template concatenates `arguments`
    # (JSON text only) and writes no tools: the model card's tool description goes after the
    # system prompt. After a tool result the generation prompt adds nothing.
    KitCase(
        id="deepseek-v3.1",
        folder="deepseek",
        variant=None,
        template_kwargs={},
        preset="deepseek_v3_1",
        reasoning="disabled",
        prompt_suffix="",
        end_marker="<｜end▁of▁sentence｜>",
        answer_end="<｜end▁of▁sentence｜>",
        needs_content=True,
        string_arguments=True,
        json_arguments=True,
        tools_in_system=True,
    ),
    # thinking=True: the prompt ends "<｜Assistant｜><think>"; the model writes its reasoning,
    # "</think>" and the calls. The template renders that turn as history with "</think>" alone
    # (no "<think>", no reasoning), and the answer after a tool result with no think block, so
    # the grammar's reasoning is "auto" (the agent makes it "enabled" where the prompt opened it).
    KitCase(
        id="deepseek-v3.1-thinking",
        folder="deepseek",
        variant=None,
        template_kwargs={"thinking": True},
        preset="deepseek_v3_1",
        reasoning="auto",
        think_in_prompt=True,
        prompt_suffix="",
        end_marker="<｜end▁of▁sentence｜>",
        answer_end="<｜end▁of▁sentence｜>",
        needs_content=True,
        string_arguments=True,
        json_arguments=True,
        tools_in_system=True,
        history_drops="<think>",
    ),
)
"""The template cases with a tokenizer: issue 36's (Qwen, gpt-oss, Llama) and DeepSeek-V3.1.
Parametrize with ``ids=str``."""


def kit_case(case_id: str) -> KitCase:
    """The case of ``KIT_CASES`` with this id (``KeyError`` naming the ids otherwise)."""
    for case in KIT_CASES:
        if case.id == case_id:
            return case
    raise KeyError(f"no kit case {case_id!r}; the cases are {[c.id for c in KIT_CASES]}")


# --------------------------------------------------------------------------- rendering


def render(
    case: KitCase,
    messages: Sequence[Mapping[str, Any]],
    tools: Optional[Sequence[Mapping[str, Any]]] = None,
    add_generation_prompt: bool = True,
    **template_kwargs: Any,
) -> str:
    """``apply_chat_template(messages, tools=tools, add_generation_prompt=...)`` as text, with the
    case's tokenizer, template and ``template_kwargs`` (keyword arguments here override them).

    Example (with the kit)::

        render(kit_case("qwen3"), CANONICAL_MESSAGES, CANONICAL_TOOLS).endswith("<|im_start|>assistant\\n")
        True
    """
    tok = kit_tokenizer(case.folder)
    kwargs = {**case.template_kwargs, **template_kwargs}
    msgs = [_shaped(case, m) for m in messages]
    if case.tools_in_system and tools:
        from agentgrammar.formats import get
        from agentgrammar.registry.openai import tool_from_openai

        # where the agent puts the tools for a template that leaves them out
        block = get(case.preset).render_tools([tool_from_openai(t) for t in tools])
        if msgs and msgs[0].get("role") == "system":
            msgs[0]["content"] = f"{msgs[0].get('content') or ''}\n\n{block}".lstrip()
        else:
            msgs.insert(0, {"role": "system", "content": block})
    return tok.apply_chat_template(
        msgs,
        tools=list(tools) if tools is not None else None,
        add_generation_prompt=add_generation_prompt,
        tokenize=False,
        chat_template=kit_template(case.folder, case.variant),
        **kwargs,
    )


def _shaped(case: KitCase, message: Mapping[str, Any]) -> Dict[str, Any]:
    """A copy of ``message`` with its tool-call arguments as JSON text where the case's
    template concatenates them."""
    out = copy.deepcopy(dict(message))
    if case.json_arguments:
        for call in out.get("tool_calls") or ():
            fn = call.get("function", call)
            if not isinstance(fn.get("arguments"), str):
                fn["arguments"] = json.dumps(fn.get("arguments", {}), ensure_ascii=False)
    return out


def token_ids(case: KitCase, text: str) -> List[int]:
    """``text`` encoded with the case's tokenizer, ``add_special_tokens=False``: no BOS is added,
    and special / added tokens written in the text (``<|im_end|>``, ``<think>``) become their ids.

    Encode a prompt and a turn separately (as a model sees and writes them): for Thinking-2507
    the prompt's last "\\n" and the turn's first "\\n" are two tokens, one "\\n\\n" together.

    Example (with the kit)::

        token_ids(kit_case("qwen3"), "<tool_call><|im_end|>")
        [151657, 151645]
    """
    return list(kit_tokenizer(case.folder).encode(text, add_special_tokens=False))


def assistant_turn(
    case: KitCase,
    history: Sequence[Mapping[str, Any]],
    message: Mapping[str, Any],
    end: str,
    tools: Optional[Sequence[Mapping[str, Any]]] = CANONICAL_TOOLS,
) -> Tuple[str, str]:
    """The generation prompt after ``history`` and the text of the assistant ``message`` that
    follows it, as the template renders it, cut right after the first ``end`` (kept).

    The turn is the render of ``history + [message]`` (no generation prompt) minus the prompt,
    which must be a prefix of it: where a template re-renders earlier turns differently once a
    turn follows them, the turn's text is not what a model writes after the prompt, and this
    raises ``AssertionError`` instead of guessing.
    """
    prompt = render(case, history, tools, add_generation_prompt=True)
    full = render(case, [*history, message], tools, add_generation_prompt=False)
    drop = case.history_drops
    if drop and prompt.endswith(drop) and not full.startswith(prompt):
        # the template renders the turn without what the prompt opened: the model's turn
        # follows the prompt, from where the renders part
        base = prompt[: -len(drop)]
        if full.startswith(base):
            turn = full[len(base) :]
            cut = turn.find(end)
            if cut < 0:
                raise AssertionError(f"{case.id}: the rendered turn {turn!r} has no end marker {end!r}")
            return prompt, turn[: cut + len(end)]
    if not full.startswith(prompt):
        at = next((i for i, (a, b) in enumerate(zip(prompt, full)) if a != b), min(len(prompt), len(full)))
        raise AssertionError(
            f"{case.id}: the template does not render the assistant turn after its generation prompt "
            f"(they differ at {at}: prompt {prompt[at : at + 40]!r}, full render {full[at : at + 40]!r})"
        )
    turn = full[len(prompt) :]
    cut = turn.find(end)
    if cut < 0:
        raise AssertionError(f"{case.id}: the rendered turn {turn!r} has no end marker {end!r}")
    return prompt, turn[: cut + len(end)]


def canonical_turn(case: KitCase, reasoning: Optional[str] = None) -> Tuple[str, str]:
    """``(prompt, turn)``: the generation prompt after [system, user] of ``CANONICAL_MESSAGES``
    and the assistant's get_weather call turn exactly as the model writes it after that prompt,
    ending with ``case.end_marker`` (``<|im_end|>``, ``<|call|>``, ``<|eot_id|>``), which is kept.

    ``reasoning``: the turn's reasoning (``case.reasoning_key`` of the message), for the cases
    whose models write it in this turn (``ValueError`` for the others).

    Per case (``reasoning=None``), the turn is:

    * qwen3: ``<think>\\n\\n</think>\\n\\n<tool_call>\\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\\n</tool_call><|im_end|>``
      (the empty think block: the template renders it so for the last assistant turn; the model
      writes reasoning inside it);
    * qwen3-no-thinking, qwen2.5-instruct: the ``<tool_call>`` ... ``<|im_end|>`` part only
      (the empty think block is already in the prompt for the first);
    * qwen3-thinking-2507: ``\\n</think>\\n\\n<tool_call>`` ... ``<|im_end|>``: the prompt
      ends with ``<think>\\n``, so the model's text starts inside the block (reasoning, if any,
      comes first, without a "\\n" of its own before it);
    * qwen3-coder: ``<tool_call>\\n<function=get_weather>\\n<parameter=city>\\nOslo\\n</parameter>\\n</function>\\n</tool_call><|im_end|>``;
    * gpt-oss: `` to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}<|call|>``
      (with reasoning, ``<|channel|>analysis<|message|>...<|end|><|start|>assistant`` first). This
      is the template's form (recipient in the role header, ``json`` without ``<|constrain|>``,
      ``tojson`` spacing). gpt-oss models also write the channel-header form of OpenAI's harmony
      documentation, ``<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|>``
      (``case.other_forms``); a grammar for gpt-oss should accept both;
    * llama3.2, llama3.1: ``{"name": "get_weather", "parameters": {"city": "Oslo"}}<|eot_id|>``;
    * deepseek-v3.1: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Oslo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>``;
      deepseek-v3.1-thinking: ``</think>`` then the same (the prompt opened ``<think>``; the
      template renders this turn as history without it, ``case.history_drops``).

    Every one of these is also the model's own text: the template renders this turn, as the
    last message, exactly as a model continues the prompt (tests/test_kit.py checks that the
    prompt is a prefix of the full render).

    Example (with the kit)::

        prompt, turn = canonical_turn(kit_case("llama3.2"))
        turn
        '{"name": "get_weather", "parameters": {"city": "Oslo"}}<|eot_id|>'
    """
    message = copy.deepcopy(CANONICAL_MESSAGES[2])
    if reasoning is not None:
        if case.reasoning_key is None:
            raise ValueError(f"{case.id}: the model writes no reasoning in this turn")
        message[case.reasoning_key] = reasoning
    return assistant_turn(case, CANONICAL_MESSAGES[:2], message, case.end_marker)


def answer_turn(case: KitCase, text: str = ANSWER_TEXT) -> Tuple[str, str]:
    """``(prompt, turn)`` of the second turn: the generation prompt after the whole of
    ``CANONICAL_MESSAGES`` (the call and its result) and the final answer ``text`` as the model
    writes it, ending with ``case.answer_end`` (kept).

    Per case: qwen3 ``<think>\\n\\n</think>\\n\\n`` + text + ``<|im_end|>``; qwen3-no-thinking,
    qwen2.5-instruct, qwen3-coder text + ``<|im_end|>``; qwen3-thinking-2507
    ``\\n</think>\\n\\n`` + text + ``<|im_end|>``; gpt-oss ``<|channel|>final<|message|>`` + text
    + ``<|return|>`` (the template writes ``<|end|>`` instead once a later turn follows, never in
    the model's own turn); llama text + ``<|eot_id|>``.
    """
    return assistant_turn(case, CANONICAL_MESSAGES, {"role": "assistant", "content": text}, case.answer_end)
