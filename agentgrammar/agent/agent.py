"""``Agent``: the tool-calling loop. Each turn renders the conversation, generates one
assistant turn inside the format's grammar, parses it, runs the tool calls and feeds their
results back, until a turn makes no call (its response ends the run) or ``max_turns``.

Example (with a local chat model; see ``tests/agent`` for a run on a tiny random model)::

    from transformers import AutoModelForCausalLM, AutoTokenizer
    from agentgrammar import Agent, ToolRegistry

    registry = ToolRegistry()

    @registry.tool
    def get_weather(city: str) -> str:
        '''The weather in a city.'''
        return f"18 C and sunny in {city}"

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    agent = Agent(model, tok, registry, format="qwen3")
    run = agent.run("What's the weather in Oslo?", on_event=print)
    print(run.response, run.summary())
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..engine import Compiler, Vocabulary
from ..errors import AgentGrammarError, ToolError
from ..formats import AgentFormat, FormatParseError
from ..formats import get as get_format
from ..registry import Tool, ToolCall, ToolRegistry
from ..registry.openai import tool_call_to_openai
from .events import AgentEvent, ResponseEvent, ToolCallFinished, ToolCallStarted, TurnFinished
from .prompt import build_prompt, chat_template_renders_tools
from .run import AgentRun, AgentStep, ToolResult
from .streaming import make_streamer

__all__ = ["Agent", "AgentError"]

PromptArg = Union[str, Sequence[Mapping[str, Any]]]
ToolsSelection = Union[None, str, ToolRegistry, Iterable[Union[str, Tool]]]
EventHandler = Callable[[AgentEvent], None]


class AgentError(AgentGrammarError, ValueError):
    """An agent cannot be built or run as asked: an unknown format, a batch of prompts, a
    malformed message or option.

    Example:
        >>> isinstance(AgentError("no"), ValueError)
        True
    """


def resolve_format(format: Union[str, AgentFormat]) -> AgentFormat:
    """An ``AgentFormat`` from a preset name (``agentgrammar.formats.names()``) or a format.

    Example:
        >>> resolve_format("tags").name
        'tags'
        >>> resolve_format("nope")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        agentgrammar.agent.agent.AgentError: unknown format 'nope'; the presets are 'hermes', ...
    """
    if isinstance(format, AgentFormat):
        return format
    if isinstance(format, str):
        try:
            return get_format(format)
        except ValueError as e:
            raise AgentError(str(e)) from None
    raise AgentError(f"format must be a preset name or an AgentFormat, got {type(format).__name__}")


def _messages_of(prompt: PromptArg, system_prompt: Optional[str]) -> List[Dict[str, Any]]:
    if isinstance(prompt, str):
        messages: List[Dict[str, Any]] = [{"role": "user", "content": prompt}]
    elif isinstance(prompt, Sequence) and not isinstance(prompt, (bytes, bytearray)):
        messages = []
        for k, m in enumerate(prompt):
            if isinstance(m, (str, bytes)) or (isinstance(m, Sequence) and not isinstance(m, Mapping)):
                raise AgentError(
                    "a batch of prompts is not supported: an Agent runs one conversation at a time "
                    f"(give a str or a list of message dicts; item {k} is a {type(m).__name__})"
                )
            if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
                raise AgentError(f"message {k} must be a dict with a 'role' string, got {m!r}")
            messages.append(dict(m))
        if not messages:
            raise AgentError("the conversation is empty: give a prompt or at least one message")
    else:
        raise AgentError(f"expected a prompt str or a list of message dicts, got {type(prompt).__name__}")
    if system_prompt is not None and messages[0].get("role") != "system":
        messages.insert(0, {"role": "system", "content": system_prompt})
    return messages


@dataclass
class _Request:
    """One run's settings and conversation."""

    messages: List[Dict[str, Any]]
    registry: ToolRegistry
    tool_choice: Any
    reasoning: str
    parallel_tool_calls: bool
    max_turns: int
    max_new_tokens: int
    constrained: bool
    do_sample: bool
    temperature: float
    top_p: float
    on_event: Optional[EventHandler]

    @property
    def tools(self) -> List[Tool]:
        return list(self.registry)

    def emit(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)


class Agent:
    """A tool-calling agent over a Hugging Face causal LM, its tokenizer and a ``ToolRegistry``.

    Args:
        model: a ``transformers`` model with ``generate()`` (batch size 1 is used).
        tokenizer: its tokenizer.
        registry: the tools the agent may call.
        format: an ``AgentFormat`` or a preset name (``"tags"``, ``"hermes"``, ``"qwen3"``, ...).
        compiler: a ``Compiler`` to reuse (its vocabulary is used); default one made here.
        vocabulary: the ``Vocabulary`` to compile for; default
            ``Vocabulary.from_huggingface(tokenizer, vocab_size=model.config.vocab_size)`` with the
            format's markers let in as text (``Vocabulary.with_text_tokens``).
        system_prompt: a system message put first when the conversation has none.

    The vocabulary is built once per agent and one compiler serves every turn, so the grammar
    of a tool set is compiled once and its mask cache stays warm.

    Prompts: when the tokenizer has a chat template that renders tools (checked once per tool
    set), the conversation goes through ``apply_chat_template(messages, tools=...)``; otherwise
    through :func:`~agentgrammar.agent.prompt.render_messages` with the format's tools block.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        registry: ToolRegistry,
        *,
        format: Union[str, AgentFormat] = "tags",
        compiler: Optional[Compiler] = None,
        vocabulary: Optional[Vocabulary] = None,
        system_prompt: Optional[str] = None,
    ) -> None:
        if not isinstance(registry, ToolRegistry):
            raise AgentError(f"registry must be a ToolRegistry, got {type(registry).__name__}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise AgentError(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        self.model = model
        self.tokenizer = tokenizer
        self.registry = registry
        self.format = resolve_format(format)
        self.system_prompt = system_prompt
        if compiler is not None:
            if vocabulary is not None and vocabulary is not compiler.vocabulary:
                raise AgentError("give a compiler or a vocabulary, not both (the compiler has its own)")
            vocabulary = compiler.vocabulary
        elif vocabulary is None:
            vocab_size = getattr(getattr(model, "config", None), "vocab_size", None)
            # The format's markers that are special tokens (<|python_tag|>, ...) become
            # ordinary tokens, so the grammar can emit each as that single token.
            vocabulary = Vocabulary.from_huggingface(tokenizer, vocab_size=vocab_size).with_text_tokens(
                self.format.markers()
            )
        self.vocabulary: Vocabulary = vocabulary
        self.compiler: Compiler = compiler if compiler is not None else Compiler(vocabulary)
        self._stop_ids: Tuple[int, ...] = tuple(vocabulary.stop_token_ids)
        self._template_ok: Dict[Tuple[str, ...], bool] = {}

    def __repr__(self) -> str:
        return (
            f"Agent(model={type(self.model).__name__}, format={self.format.name!r}, "
            f"tools={self.registry.names!r})"
        )

    # ---- running ---------------------------------------------------------------------------

    def run(
        self,
        prompt_or_messages: PromptArg,
        *,
        tools: ToolsSelection = None,
        tool_choice: Any = "auto",
        reasoning: str = "enabled",
        parallel_tool_calls: bool = True,
        max_turns: int = 8,
        max_new_tokens: int = 256,
        constrained: bool = True,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: Optional[int] = None,
        on_event: Optional[EventHandler] = None,
    ) -> AgentRun:
        """Run the conversation to a response (or ``max_turns`` turns) and return the ``AgentRun``.

        ``prompt_or_messages``: a user prompt, or a list of ``{"role", "content"}`` messages.
        ``tools``: tool names, a ``ToolRegistry`` or ``None`` (all of the agent's tools).
        ``tool_choice``, ``reasoning``, ``parallel_tool_calls``: as for ``AgentFormat.grammar``;
        ``tool_choice`` applies to the first turn only, later turns use ``"auto"`` (so a
        ``"required"`` run can answer once it has the results). ``constrained=False``
        generates without the grammar: a turn that does not parse is recorded in
        ``step.error`` and ends the run. ``do_sample`` / ``temperature`` / ``top_p`` /
        ``seed`` control sampling (greedy by default). ``on_event`` receives the
        :mod:`~agentgrammar.agent.events` as they happen.

        A tool that raises or is called with invalid arguments gives an error result that is
        fed back to the model (``{"error": "..."}``); async handlers run in ``asyncio.run``
        (use :meth:`arun` inside an event loop).
        """
        request = self._request(prompt_or_messages, locals())
        self._seed(seed)
        run = AgentRun(messages=request.messages)
        for turn in range(request.max_turns):
            step = self._generate_turn(request, turn)
            if step.error is None:
                for call in step.tool_calls:
                    request.emit(ToolCallStarted(call))
                    step.results.append(self._finish_call(request, call, self._execute(request, call)))
            if self._end_turn(request, run, step):
                return run
        run.stopped_reason = "max_turns"
        return run

    async def arun(
        self,
        prompt_or_messages: PromptArg,
        *,
        tools: ToolsSelection = None,
        tool_choice: Any = "auto",
        reasoning: str = "enabled",
        parallel_tool_calls: bool = True,
        max_turns: int = 8,
        max_new_tokens: int = 256,
        constrained: bool = True,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: Optional[int] = None,
        on_event: Optional[EventHandler] = None,
    ) -> AgentRun:
        """:meth:`run` for async code: tool handlers are awaited on the running loop (async ones
        natively) and ``generate()`` runs in the loop's default executor, so ``on_event``
        gets the token events from that worker thread."""
        request = self._request(prompt_or_messages, locals())
        self._seed(seed)
        loop = asyncio.get_running_loop()
        run = AgentRun(messages=request.messages)
        for turn in range(request.max_turns):
            step = await loop.run_in_executor(None, self._generate_turn, request, turn)
            if step.error is None:
                for call in step.tool_calls:
                    request.emit(ToolCallStarted(call))
                    result = await self._aexecute(request, call)
                    step.results.append(self._finish_call(request, call, result))
            if self._end_turn(request, run, step):
                return run
        run.stopped_reason = "max_turns"
        return run

    # ---- internals: setup ------------------------------------------------------------------

    def _request(self, prompt: PromptArg, options: Mapping[str, Any]) -> _Request:
        for name in ("max_turns", "max_new_tokens"):
            value = options[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise AgentError(f"{name} must be a positive int, got {value!r}")
        on_event = options["on_event"]
        if on_event is not None and not callable(on_event):
            raise AgentError(f"on_event must be callable, got {type(on_event).__name__}")
        return _Request(
            messages=_messages_of(prompt, self.system_prompt),
            registry=self._select(options["tools"]),
            tool_choice=options["tool_choice"],
            reasoning=options["reasoning"],
            parallel_tool_calls=bool(options["parallel_tool_calls"]),
            max_turns=options["max_turns"],
            max_new_tokens=options["max_new_tokens"],
            constrained=bool(options["constrained"]),
            do_sample=bool(options["do_sample"]),
            temperature=float(options["temperature"]),
            top_p=float(options["top_p"]),
            on_event=on_event,
        )

    def _select(self, tools: ToolsSelection) -> ToolRegistry:
        if tools is None:
            return self.registry
        if isinstance(tools, ToolRegistry):
            return tools
        if isinstance(tools, (str, Tool)):
            tools = [tools]
        items = list(tools)
        if all(isinstance(t, str) for t in items):
            return self.registry.select(items)  # ToolError for unknown names
        if all(isinstance(t, Tool) for t in items):
            return ToolRegistry(items)
        raise AgentError("tools must be tool names, Tool objects, a ToolRegistry or None")

    @staticmethod
    def _seed(seed: Optional[int]) -> None:
        if seed is not None:
            import torch

            torch.manual_seed(seed)

    def _uses_template(self, tools: List[Tool]) -> bool:
        key = tuple(t.name for t in tools)
        found = self._template_ok.get(key)
        if found is None:
            found = self._template_ok[key] = chat_template_renders_tools(self.tokenizer, tools)
        return found

    # ---- internals: one turn ---------------------------------------------------------------

    def _generate_turn(self, request: _Request, turn: int) -> AgentStep:
        import torch

        from ..hf import GrammarLogitsProcessor

        fmt, tools = self.format, request.tools
        step = AgentStep()
        prompt, templated = build_prompt(
            self.tokenizer, request.messages, fmt, tools, use_template=self._uses_template(tools)
        )
        enc = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=not templated)
        input_ids = enc["input_ids"]
        attention_mask = enc.get("attention_mask")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        device = getattr(self.model, "device", None)
        if device is not None:
            input_ids, attention_mask = input_ids.to(device), attention_mask.to(device)
        step.n_prompt_tokens = int(input_ids.shape[1])

        kwargs: Dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "max_new_tokens": request.max_new_tokens,
            "do_sample": request.do_sample,
        }
        if request.do_sample:
            kwargs.update(temperature=request.temperature, top_p=request.top_p)
        if self._stop_ids:
            kwargs["eos_token_id"] = list(self._stop_ids)
        config = getattr(self.model, "generation_config", None)
        if getattr(config, "pad_token_id", None) is None:
            pad = self._stop_ids[0] if self._stop_ids else getattr(self.tokenizer, "eos_token_id", None)
            if pad is not None:
                kwargs["pad_token_id"] = pad
        processor = None
        if request.constrained:
            start = time.perf_counter()
            grammar = fmt.grammar(
                tools,
                tool_choice=request.tool_choice if turn == 0 else "auto",
                parallel_tool_calls=request.parallel_tool_calls,
                reasoning=request.reasoning,
            )
            compiled = self.compiler.compile(grammar)
            step.grammar_build_s = time.perf_counter() - start
            processor = GrammarLogitsProcessor(compiled)
            kwargs["logits_processor"] = [processor]
        if request.on_event is not None:
            kwargs["streamer"] = make_streamer(
                self.tokenizer, fmt, request.on_event, stop_token_ids=self._stop_ids
            )

        start = time.perf_counter()
        with torch.no_grad():
            out = self.model.generate(**kwargs)
        step.generate_s = time.perf_counter() - start
        if processor is not None:
            step.mask_times_s = list(processor.call_times_s)

        new_ids = [int(i) for i in out[0, step.n_prompt_tokens :].tolist()]
        stops = set(self._stop_ids)
        cut = next((k for k, i in enumerate(new_ids) if i in stops), None)
        kept = new_ids if cut is None else new_ids[:cut]
        step.n_new_tokens = len(kept) + (0 if cut is None else 1)
        step.text = self.tokenizer.decode(kept, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        self._parse(step, tools, turn)
        return step

    def _parse(self, step: AgentStep, tools: List[Tool], turn: int) -> None:
        fmt = self.format
        try:
            try:
                out = fmt.parse(step.text, tools=tools)
            except ToolError:  # an unknown tool or invalid arguments: reported per call below
                out = fmt.parse(step.text)
        except FormatParseError as e:
            step.error = str(e)
            return
        step.think = out.think
        step.tool_calls = [
            c if c.id is not None else ToolCall(c.name, c.arguments, f"call_{turn + 1}_{k + 1}")
            for k, c in enumerate(out.tool_calls)
        ]
        if fmt.has_response:
            step.response = out.response
        elif not out.tool_calls:
            step.response = out.text or ""

    # ---- internals: tools ------------------------------------------------------------------

    @staticmethod
    def _precheck(request: _Request, call: ToolCall) -> Optional[ToolResult]:
        """An error result for a call to an unknown tool or with invalid arguments."""
        try:
            request.registry[call.name].validate(call.arguments)
        except ToolError as e:
            return ToolResult(call, error=str(e), invalid=True)
        return None

    def _execute(self, request: _Request, call: ToolCall) -> ToolResult:
        rejected = self._precheck(request, call)
        if rejected is not None:
            return rejected
        try:
            return ToolResult(call, request.registry.call(call))
        except Exception as e:  # ToolError for a handler that raised; anything else the same way
            return ToolResult(call, error=str(e) if isinstance(e, ToolError) else f"{type(e).__name__}: {e}")

    async def _aexecute(self, request: _Request, call: ToolCall) -> ToolResult:
        rejected = self._precheck(request, call)
        if rejected is not None:
            return rejected
        try:
            return ToolResult(call, await request.registry.acall(call))
        except Exception as e:
            return ToolResult(call, error=str(e) if isinstance(e, ToolError) else f"{type(e).__name__}: {e}")

    @staticmethod
    def _finish_call(request: _Request, call: ToolCall, result: ToolResult) -> ToolResult:
        request.emit(ToolCallFinished(call, result.value, result.error))
        return result

    # ---- internals: after a turn -------------------------------------------------------------

    @staticmethod
    def _end_turn(request: _Request, run: AgentRun, step: AgentStep) -> bool:
        """Record the turn; whether the run is over."""
        message: Dict[str, Any] = {"role": "assistant", "content": step.text}
        if step.tool_calls:
            message["tool_calls"] = [tool_call_to_openai(c) for c in step.tool_calls]
        request.messages.append(message)
        request.messages.extend(r.to_message() for r in step.results)
        run.steps.append(step)
        if step.response is not None:
            request.emit(ResponseEvent(step.response))
        request.emit(TurnFinished(step))
        if step.error is not None:
            run.stopped_reason = "error"
            return True
        if not step.tool_calls:
            run.stopped_reason = "response"
            return True
        return False
