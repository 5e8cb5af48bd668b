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
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..engine import Compiler, Vocabulary
from ..engine.vocabulary import WELL_KNOWN_STOP_TOKENS
from ..errors import AgentError, AgentGrammarError, ToolError
from ..formats import AgentFormat, AgentOutput, FormatParseError
from ..formats import get as get_format
from ..formats.detect import FormatDetectError, detect
from ..formats.token_markers import marker_tokens, with_token_markers
from ..registry import Tool, ToolCall, ToolRegistry
from .events import AgentEvent, ResponseEvent, ToolCallFinished, ToolCallStarted, TurnFinished
from .messages import assistant_message
from .prompt import Prompt, PromptBuilder, has_chat_template
from .run import AgentRun, AgentStep, ToolResult
from .streaming import make_streamer

__all__ = ["Agent", "AgentError"]

PromptArg = Union[str, Sequence[Mapping[str, Any]]]
ToolsSelection = Union[None, str, ToolRegistry, Iterable[Union[str, Tool]]]
EventHandler = Callable[[AgentEvent], None]
_SURROGATE = re.compile("[\ud800-\udfff]")


def resolve_format(format: Union[str, AgentFormat]) -> AgentFormat:
    """An ``AgentFormat`` from a preset name (``agentgrammar.formats.names()``) or a format.

    Example:
        >>> resolve_format("tags").name
        'tags'
        >>> resolve_format("nope")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        agentgrammar.errors.AgentError: unknown format 'nope'; the presets are 'hermes', ...
    """
    if isinstance(format, AgentFormat):
        return format
    if isinstance(format, str):
        try:
            return get_format(format)
        except ValueError as e:
            raise AgentError(str(e)) from None
    raise AgentError(f"format must be a preset name or an AgentFormat, got {type(format).__name__}")


def _detected_format(tokenizer: Any, template_kwargs: Optional[Mapping[str, Any]]) -> AgentFormat:
    """The preset the tokenizer's chat template writes (``formats.detect``); ``"tags"`` for a
    tokenizer without one (the plain layout, as the demo model is trained)."""
    if not has_chat_template(tokenizer):
        return get_format("tags")
    try:
        return detect(tokenizer, template_kwargs=template_kwargs)
    except FormatDetectError as e:
        raise AgentError(f"cannot tell the model's format: {e}") from e


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


def _error_text(error: Exception) -> str:
    """What a failed call feeds back: a ``ToolError``'s message, else the exception's type too."""
    return str(error) if isinstance(error, ToolError) else f"{type(error).__name__}: {error}"


def _unicode_safe(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a surrogate pair, which a str may
    hold as two code points, becomes its character): text that encodes as UTF-8."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _safe_result(result: ToolResult) -> ToolResult:
    """``result`` made safe to put into the conversation: its message must render (a value
    that ``json.dumps`` cannot write, such as a cyclic list, becomes an error result) and
    encode as UTF-8 (a lone surrogate that a tool returned would make the next turn's
    tokenizer raise): a str value or an error with lone surrogates has them replaced, and any
    other value whose JSON text has some is replaced by that text, made safe.

    Example:
        >>> from agentgrammar import ToolCall
        >>> _safe_result(ToolResult(ToolCall("echo", {}), "a\\ud800b")).value == "a\\ufffdb"
        True
    """
    try:
        content = result.content
    except Exception as e:  # json.dumps refused the value (a cycle, a failing __str__, ...)
        return ToolResult(
            result.call,
            error=_unicode_safe(
                f"the result of tool {result.call.name!r} cannot be written as text: {type(e).__name__}: {e}"
            ),
            invalid=result.invalid,
        )
    if _SURROGATE.search(content) is None:
        return result
    if result.error is not None:
        return ToolResult(result.call, error=_unicode_safe(result.error), invalid=result.invalid)
    return ToolResult(
        result.call, _unicode_safe(content if not isinstance(result.value, str) else result.value)
    )


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
    n_calls: int = 0  # calls made so far in the conversation (call ids count them)

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
        format: an ``AgentFormat`` or a preset name (``"tags"``, ``"hermes"``, ``"qwen3"``, ...);
            default: the preset the tokenizer's chat template writes (``formats.detect``), or
            ``"tags"`` for a tokenizer without a template.
        compiler: a ``Compiler`` to reuse (its vocabulary is used; the format's markers are
            written as tokens only where that vocabulary marks them).
        vocabulary: the ``Vocabulary`` to compile for; default
            ``Vocabulary.from_huggingface(tokenizer, vocab_size=model.config.vocab_size)``. The
            format's markers that are tokens of it are made token markers
            (``Vocabulary.with_token_markers``), so the grammar writes each as that token.
        system_prompt: a system message put first when the conversation has none.
        template_kwargs: variables for the chat template (``apply_chat_template(**kwargs)``),
            over the reasoning switch that ``run(reasoning=...)`` sets.

    The vocabulary is built once per agent and one compiler serves every turn, so the grammar
    of a tool set is compiled once and its mask cache stays warm.

    Prompts: every turn renders the structured conversation (:mod:`~agentgrammar.agent.messages`)
    through the tokenizer's chat template; a tokenizer without one gets the plain layout
    (:func:`~agentgrammar.agent.prompt.render_messages`) with the format's tools block.
    ``reasoning`` maps to the template's own switch (``enable_thinking``, ``thinking``,
    ``reasoning_effort``), and a generation prompt that already opens the think block is the
    start of the turn: its grammar goes on from there and the stored reasoning is the whole block.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        registry: ToolRegistry,
        *,
        format: Union[str, AgentFormat, None] = None,
        compiler: Optional[Compiler] = None,
        vocabulary: Optional[Vocabulary] = None,
        system_prompt: Optional[str] = None,
        template_kwargs: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if not isinstance(registry, ToolRegistry):
            raise AgentError(f"registry must be a ToolRegistry, got {type(registry).__name__}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise AgentError(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        if template_kwargs is not None and not isinstance(template_kwargs, Mapping):
            raise AgentError(f"template_kwargs must be a dict, got {type(template_kwargs).__name__}")
        self.model = model
        self.tokenizer = tokenizer
        self.registry = registry
        self.format = (
            resolve_format(format) if format is not None else _detected_format(tokenizer, template_kwargs)
        )
        self.system_prompt = system_prompt
        if compiler is not None:
            if vocabulary is not None and vocabulary is not compiler.vocabulary:
                raise AgentError("give a compiler or a vocabulary, not both (the compiler has its own)")
            vocabulary = compiler.vocabulary
            markers = [m for m in marker_tokens(self.format, vocabulary) if m in vocabulary.token_markers]
            stops = set(vocabulary.stop_token_ids)
        else:
            if vocabulary is None:
                vocab_size = getattr(getattr(model, "config", None), "vocab_size", None)
                vocabulary = Vocabulary.from_huggingface(tokenizer, vocab_size=vocab_size)
            markers = marker_tokens(self.format, vocabulary)
            stops = set(vocabulary.stop_token_ids)
            vocabulary = vocabulary.with_token_markers(markers)
        self.vocabulary: Vocabulary = vocabulary
        self.compiler: Compiler = compiler if compiler is not None else Compiler(vocabulary)
        # The format as the grammar writes it: its markers as the model's own tokens.
        self._grammar_format = with_token_markers(self.format, markers)
        # generate() stops on every end token, a marker that ends a turn (<|call|>) included.
        marked = vocabulary.token_markers
        for text in WELL_KNOWN_STOP_TOKENS:
            stops.update(marked.get(text, ()))
        self._stop_ids: Tuple[int, ...] = tuple(sorted(stops))
        self._marker_ids = frozenset(i for ids in marked.values() for i in ids)
        self._prompts = PromptBuilder(tokenizer, self.format, template_kwargs)

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

    # ---- internals: one turn ---------------------------------------------------------------

    def _prefix_ids(self, prompt: Prompt, input_ids: List[int]) -> List[int]:
        """The prompt's last tokens that spell ``prompt.opened`` (the turn's start that the
        generation prompt wrote)."""
        want = prompt.opened.encode("utf-8")
        got = b""
        k = len(input_ids)
        while k > 0 and len(got) < len(want):
            k -= 1
            got = self.vocabulary.decode([input_ids[k]]) + got
        if got != want:
            raise AgentError(
                f"the generation prompt opens the turn with {prompt.opened!r}, but its tokens do not "
                "end there; cannot start the turn's grammar after it"
            )
        return input_ids[k:]

    def _turn_grammar(self, request: _Request, turn: int, prompt: Prompt) -> Any:
        reasoning = request.reasoning
        if prompt.opened:  # the think block is already open (or written): the grammar has it
            reasoning = "enabled"
        return self._grammar_format.grammar(
            request.tools,
            tool_choice=request.tool_choice if turn == 0 else "auto",
            parallel_tool_calls=request.parallel_tool_calls,
            reasoning=reasoning,
        )

    def _generate_turn(self, request: _Request, turn: int) -> AgentStep:
        import torch

        from ..hf import GrammarLogitsProcessor

        tools = request.tools
        step = AgentStep()
        prompt = self._prompts.build(request.messages, tools, request.reasoning)
        enc = self.tokenizer(prompt.text, return_tensors="pt", add_special_tokens=not prompt.templated)
        input_ids = enc["input_ids"]
        attention_mask = enc.get("attention_mask")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        prefix = self._prefix_ids(prompt, input_ids[0].tolist()) if prompt.opened else []
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
            compiled = self.compiler.compile(self._turn_grammar(request, turn, prompt))
            step.grammar_build_s = time.perf_counter() - start
            processor = GrammarLogitsProcessor(compiled, prefix_token_ids=prefix)
            kwargs["logits_processor"] = [processor]
        if request.on_event is not None:
            kwargs["streamer"] = make_streamer(
                self.tokenizer,
                self.format,
                request.on_event,
                stop_token_ids=self._stop_ids,
                kept_stop_ids=self._marker_ids,
                opened=prompt.opened,
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
        # A stop token that is one of the format's markers (<|call|>) is part of the turn's text.
        kept = new_ids if cut is None else new_ids[: cut + (new_ids[cut] in self._marker_ids)]
        step.n_new_tokens = len(new_ids) if cut is None else cut + 1
        written = self.tokenizer.decode(kept, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        step.text = prompt.opened + written
        if cut is None and step.n_new_tokens >= request.max_new_tokens:
            step.error = (
                f"the turn was cut at max_new_tokens={request.max_new_tokens} before it ended "
                "(raise max_new_tokens)"
            )
            return step
        self._parse(step, tools, request)
        return step

    def _parse(self, step: AgentStep, tools: List[Tool], request: _Request) -> None:
        fmt = self.format
        text = step.text
        if _SURROGATE.search(text) is not None:  # parse refuses it; the conversation keeps it
            step.text = _unicode_safe(text)
        try:
            try:
                out = fmt.parse(text, tools=tools)
            except ToolError:  # an unknown tool or invalid arguments: reported per call below
                out = fmt.parse(text)
        except FormatParseError as e:
            step.error = str(e)
            return
        except Exception as e:  # parse raises only the above; the turn fails, never the run
            step.error = f"the turn cannot be read: {type(e).__name__}: {e}"
            return
        try:  # the next prompt writes the turn back (the plain layout renders it): it must render
            fmt.render(out, tools=tools)
        except AgentGrammarError as e:  # e.g. free text that spells a call opener: a broken call
            step.error = f"the turn cannot be written back: {e}"
            return
        step.think = out.think or None
        calls = []
        for c in out.tool_calls:
            if c.id is None:
                c = ToolCall(c.name, c.arguments, self._call_id(request.n_calls, c.name))
            request.n_calls += 1
            calls.append(c)
        step.tool_calls = calls
        if fmt.has_response:
            step.response = out.response
            step.content = out.response
        else:
            step.content = out.text
            if not out.tool_calls:
                step.response = out.text or ""

    def _call_id(self, index: int, name: str) -> str:
        """The id of the conversation's ``index``-th call (a call to ``name``), in the family's
        shape (Kimi-K2's ids hold the name: ``functions.NAME:IDX``)."""
        make = getattr(self.format, "new_call_id", None)
        return make(index, name) if callable(make) else f"call_{index + 1}"

    # ---- internals: tools ------------------------------------------------------------------

    @staticmethod
    def _precheck(request: _Request, call: ToolCall) -> Optional[ToolResult]:
        """An error result for a call to an unknown tool or with invalid arguments (whatever
        validation raises: a model's own validator may raise anything)."""
        try:
            request.registry[call.name].validate(call.arguments)
        except Exception as e:
            return _safe_result(ToolResult(call, error=_error_text(e), invalid=True))
        return None

    def _execute(self, request: _Request, call: ToolCall) -> ToolResult:
        rejected = self._precheck(request, call)
        if rejected is not None:
            return rejected
        try:
            result = ToolResult(call, request.registry.call(call))
        except Exception as e:  # ToolError for a handler that raised; anything else the same way
            result = ToolResult(call, error=_error_text(e))
        return _safe_result(result)

    async def _aexecute(self, request: _Request, call: ToolCall) -> ToolResult:
        rejected = self._precheck(request, call)
        if rejected is not None:
            return rejected
        try:
            result = ToolResult(call, await request.registry.acall(call))
        except Exception as e:
            result = ToolResult(call, error=_error_text(e))
        return _safe_result(result)

    @staticmethod
    def _finish_call(request: _Request, call: ToolCall, result: ToolResult) -> ToolResult:
        request.emit(ToolCallFinished(call, result.value, result.error))
        return result

    # ---- internals: after a turn -------------------------------------------------------------

    def _end_turn(self, request: _Request, run: AgentRun, step: AgentStep) -> bool:
        """Record the turn; whether the run is over."""
        if step.error is None:
            output = AgentOutput(think=step.think, tool_calls=step.tool_calls, text=step.content)
            message = assistant_message(output, arguments=self._prompts.argument_shape)
        else:  # what was written, so that the conversation shows it
            message = {"role": "assistant", "content": step.text}
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
