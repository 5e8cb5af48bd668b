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

import threading
import time
from typing import (
    Any,
    AsyncIterator,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from ..engine import Compiler, Vocabulary
from ..engine.vocabulary import WELL_KNOWN_STOP_TOKENS
from ..errors import AgentError, AgentGrammarError, ToolError
from ..formats import AgentFormat, AgentOutput, FormatParseError
from ..formats.token_markers import marker_tokens, with_token_markers
from ..registry import Tool, ToolCall, ToolRegistry
from .deltas import call_arguments_texts
from .events import (
    AgentEvent,
    ResponseEvent,
    RunFinished,
    RunStarted,
    TurnFinished,
    TurnStarted,
)
from .kv_cache import ConversationCache, supports_cache_reuse
from .messages import assistant_message
from .output_type import OutputSpec
from .prompt import Prompt, PromptBuilder, opened_token_ids
from .request import (
    EventHandler,
    PromptArg,
    RunRequest,
    ToolsSelection,
    check_run_options,
    detected_format,
    messages_of,
    resolve_format,
    seed_torch,
    select_tools,
)
from .run import AgentRun, AgentStep
from .stream import cancel_criteria, events_from_task, events_from_thread, in_executor
from .streaming import make_streamer
from .tool_runner import SURROGATE, ToolRunner, checked_timeout_s, unicode_safe
from .turn_grammar import checked_budget, turn_budgets, turn_grammar

__all__ = ["Agent", "AgentError"]


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
        tool_timeout_s: how long one tool call may run when its tool sets no ``timeout_s``
            (``None``: no limit); see :mod:`~agentgrammar.agent.tool_runner`.
        reuse_cache: keep a run's key/value cache from turn to turn, so that each turn encodes
            only the tokens its prompt does not share with the turn before
            (:mod:`~agentgrammar.agent.kv_cache`; ``AgentStep.prefill_tokens`` counts them).
            Default: on where ``generate()`` takes a ``DynamicCache``; ``True`` for a model
            that does not is an ``AgentError``.

    The vocabulary is built once per agent and one compiler serves every turn, so the grammar
    of a tool set is compiled once and its mask cache stays warm. When made, the agent warms
    the compiler with its format (``Compiler.warm_up``, unless the compiler was made with
    ``background=False``): the states every turn shares are classified in the background
    before the first turn walks them.

    Prompts: every turn renders the structured conversation (:mod:`~agentgrammar.agent.messages`)
    through the tokenizer's chat template; a tokenizer without one gets the plain layout
    (:func:`~agentgrammar.agent.prompt.render_messages`) with the format's tools block.
    ``reasoning`` maps to the template's own switch (``enable_thinking``, ``thinking``,
    ``reasoning_effort``), and a generation prompt that already opens the think block is the
    start of the turn: its grammar goes on from there and the stored reasoning is the whole block.
    """

    tool_timeout_s: Optional[float] = None

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
        tool_timeout_s: Optional[float] = None,
        reuse_cache: Optional[bool] = None,
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
        self.tool_timeout_s = checked_timeout_s(tool_timeout_s, "tool_timeout_s")
        self.format = (
            resolve_format(format) if format is not None else detected_format(tokenizer, template_kwargs)
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
        if self.compiler.background:  # what every turn's grammar shares, classified before the first
            self.compiler.warm_up(self._grammar_format.warm_up_grammar())
        # generate() stops on every end token, a marker that ends a turn (<|call|>) included.
        marked = vocabulary.token_markers
        for text in WELL_KNOWN_STOP_TOKENS:
            stops.update(marked.get(text, ()))
        self._stop_ids: Tuple[int, ...] = tuple(sorted(stops))
        self._marker_ids = frozenset(i for ids in marked.values() for i in ids)
        self._prompts = PromptBuilder(tokenizer, self.format, template_kwargs)
        supported = supports_cache_reuse(model)
        if reuse_cache and not supported:
            raise AgentError(
                f"reuse_cache=True, but {type(model).__name__}.generate() does not take a DynamicCache "
                "to continue from (an encoder-decoder model, a cache of its own, or a set cache_implementation)"
            )
        self.reuse_cache: bool = supported if reuse_cache is None else bool(reuse_cache)

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
        reasoning_budget: Optional[int] = None,
        parallel_tool_calls: bool = True,
        max_turns: int = 8,
        max_new_tokens: int = 256,
        constrained: bool = True,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: Optional[int] = None,
        output_type: Any = None,
        on_event: Optional[EventHandler] = None,
    ) -> AgentRun:
        """Run the conversation to a response (or ``max_turns`` turns) and return the ``AgentRun``.

        ``prompt_or_messages``: a user prompt, or a list of ``{"role", "content"}`` messages.
        ``tools``: tool names, a ``ToolRegistry`` or ``None`` (all of the agent's tools).
        ``tool_choice``, ``reasoning``, ``parallel_tool_calls``: as for ``AgentFormat.grammar``;
        ``reasoning_budget=N``: at most N tokens of reasoning per turn, then the think block
        must close (counted from the think block the generation prompt may already open);
        ``tool_choice`` applies to the first turn only, later turns use ``"auto"`` (so a
        ``"required"`` run can answer once it has the results). ``constrained=False``
        generates without the grammar: a turn that does not parse is recorded in
        ``step.error`` and ends the run. ``do_sample`` / ``temperature`` / ``top_p`` /
        ``seed`` control sampling (greedy by default). ``output_type``: a Pydantic model (or
        any type Pydantic's ``TypeAdapter`` takes) whose JSON the final response must be
        (:mod:`~agentgrammar.agent.output_type`); the validated value is ``run.output``, and
        ``OutputValidationError`` is raised when it does not validate. ``on_event`` receives
        the :mod:`~agentgrammar.agent.events` as they happen; the run is their fold
        (``AgentRun.from_events``).

        A tool that raises or is called with invalid arguments gives an error result that is
        fed back to the model (``{"error": "..."}``); async handlers run in ``asyncio.run``
        (use :meth:`arun` inside an event loop).
        """
        request = self._request(prompt_or_messages, locals())
        seed_torch(seed)
        self._drive(request)
        return AgentRun.from_events(request.folded)

    async def arun(
        self,
        prompt_or_messages: PromptArg,
        *,
        tools: ToolsSelection = None,
        tool_choice: Any = "auto",
        reasoning: str = "enabled",
        reasoning_budget: Optional[int] = None,
        parallel_tool_calls: bool = True,
        max_turns: int = 8,
        max_new_tokens: int = 256,
        constrained: bool = True,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: Optional[int] = None,
        output_type: Any = None,
        on_event: Optional[EventHandler] = None,
    ) -> AgentRun:
        """:meth:`run` for async code: tool handlers are awaited on the running loop (async ones
        natively) and ``generate()`` runs in the loop's default executor, so ``on_event``
        gets the token events from that worker thread."""
        request = self._request(prompt_or_messages, locals())
        seed_torch(seed)
        await self._adrive(request)
        return AgentRun.from_events(request.folded)

    def stream(
        self,
        prompt_or_messages: PromptArg,
        *,
        tools: ToolsSelection = None,
        tool_choice: Any = "auto",
        reasoning: str = "enabled",
        reasoning_budget: Optional[int] = None,
        parallel_tool_calls: bool = True,
        max_turns: int = 8,
        max_new_tokens: int = 256,
        constrained: bool = True,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: Optional[int] = None,
        output_type: Any = None,
    ) -> Iterator[AgentEvent]:
        """The run's events as they happen (:mod:`~agentgrammar.agent.events`), from a worker
        thread that runs the agent; the arguments are :meth:`run`'s. Fold them with
        ``AgentRun.from_events`` for the run. Stopping early (``close()`` the iterator, or
        leave a ``with contextlib.closing(...)`` block) stops generation at the next token; the
        cut turn's tool calls do not run, nor does a later turn (a tool already running
        finishes first).

        Example (with a model)::

            for event in agent.stream("Weather in Oslo?"):
                if isinstance(event, TextDelta):
                    print(event.text, end="", flush=True)
        """
        request = self._request(prompt_or_messages, {**locals(), "on_event": None})
        seed_torch(seed)

        def drive(emit: EventHandler, cancel: threading.Event) -> None:
            request.on_event, request.cancel = emit, cancel
            self._drive(request)

        return events_from_thread(drive)

    def astream(
        self,
        prompt_or_messages: PromptArg,
        *,
        tools: ToolsSelection = None,
        tool_choice: Any = "auto",
        reasoning: str = "enabled",
        reasoning_budget: Optional[int] = None,
        parallel_tool_calls: bool = True,
        max_turns: int = 8,
        max_new_tokens: int = 256,
        constrained: bool = True,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: Optional[int] = None,
        output_type: Any = None,
    ) -> AsyncIterator[AgentEvent]:
        """:meth:`stream` for async code: the agent runs as a task on the running loop (tool
        handlers awaited there, ``generate()`` in the loop's executor) and its events come
        through an ``asyncio.Queue``. Close it early with ``aclose()`` (``contextlib.aclosing``)
        or by cancelling the consumer: generation stops at the next token, the task is
        cancelled and waited for.

        Example (with a model)::

            async with contextlib.aclosing(agent.astream("Weather in Oslo?")) as events:
                async for event in events:
                    ...
        """
        request = self._request(prompt_or_messages, {**locals(), "on_event": None})
        seed_torch(seed)

        async def drive(emit: EventHandler, cancel: threading.Event) -> None:
            request.on_event, request.cancel = emit, cancel
            await self._adrive(request)

        return events_from_task(drive)

    def run_batch(
        self, prompts: Sequence[PromptArg], *, tools: Any = None, **run_kwargs: Any
    ) -> List[AgentRun]:
        """Run many conversations in lockstep (:mod:`~agentgrammar.agent.batch`): one batched
        ``generate()`` per turn, each row in its own grammar, every row's tool calls run at
        once, finished conversations leaving the batch. Returns the ``AgentRun`` s in the order
        of ``prompts``.

        ``tools``: one selection for all (as for :meth:`run`), or a list with one per prompt
        (each a list of names or tools, a ``ToolRegistry`` or ``None``). ``run_kwargs``:
        :meth:`run`'s options but ``on_event``, the same for every conversation.

        Example (with a model)::

            runs = agent.run_batch(["Weather in Oslo?", "Time in Tokyo?"],
                                   tools=[["get_weather"], ["get_time"]])
        """
        from .batch import run_batch

        return run_batch(self, prompts, tools, run_kwargs)

    # ---- internals: the loop -------------------------------------------------------------------

    def _drive(self, request: RunRequest) -> None:
        """The run, told as events (``request.emit``): the turns, each generated, parsed and
        its calls run, until a turn without calls, an error, ``max_turns`` or a cancel."""
        request.emit(RunStarted(tuple(dict(m) for m in request.messages)))
        for turn in range(request.max_turns):
            request.emit(TurnStarted(turn))
            step = self._generate_turn(request, turn)
            if request.cancelled:
                return
            if step.error is None:
                texts = call_arguments_texts(self.format, step.text, step.tool_calls)
                step.results = self._tool_runner(request).run(step.tool_calls, texts)
            if self._end_turn(request, step):
                break
        self._finish(request)

    async def _adrive(self, request: RunRequest) -> None:
        request.emit(RunStarted(tuple(dict(m) for m in request.messages)))
        for turn in range(request.max_turns):
            request.emit(TurnStarted(turn))
            step = await self._agenerate_turn(request, turn)
            if request.cancelled:
                return
            if step.error is None:
                texts = call_arguments_texts(self.format, step.text, step.tool_calls)
                step.results = await self._tool_runner(request).arun(step.tool_calls, texts)
            if self._end_turn(request, step):
                break
        self._finish(request)

    async def _agenerate_turn(self, request: RunRequest, turn: int) -> AgentStep:
        if request.cancel is None:
            request.cancel = threading.Event()
        return await in_executor(request.cancel, self._generate_turn, request, turn)

    def _tool_runner(self, request: RunRequest) -> ToolRunner:
        """The runner of a turn's calls: concurrent, each under its timeout, events to the run."""
        return ToolRunner(request.registry, timeout_s=self.tool_timeout_s, on_event=request.emit)

    def _finish(self, request: RunRequest) -> None:
        """The run's end: its typed output (with ``output_type``), then ``RunFinished``."""
        output = None
        steps = [e.step for e in request.folded if isinstance(e, TurnFinished)]
        if request.output is not None and request.stopped_reason == "response" and steps:
            text = steps[-1].response or ""
            try:
                output = request.output.validate(text)
            except AgentError as e:
                e.run = AgentRun.from_events([*request.folded, RunFinished(request.stopped_reason)])
                raise
        request.emit(RunFinished(request.stopped_reason, output))

    # ---- internals: setup ------------------------------------------------------------------

    def _request(self, prompt: PromptArg, options: Mapping[str, Any], kv_cache: bool = True) -> RunRequest:
        check_run_options(options)
        return RunRequest(
            messages=messages_of(prompt, self.system_prompt),
            registry=select_tools(self.registry, options["tools"]),
            tool_choice=options["tool_choice"],
            reasoning=options["reasoning"],
            reasoning_budget=checked_budget(self.format, options["reasoning_budget"]),
            parallel_tool_calls=bool(options["parallel_tool_calls"]),
            max_turns=options["max_turns"],
            max_new_tokens=options["max_new_tokens"],
            constrained=bool(options["constrained"]),
            do_sample=bool(options["do_sample"]),
            temperature=float(options["temperature"]),
            top_p=float(options["top_p"]),
            on_event=options["on_event"],
            output=OutputSpec(options["output_type"]) if options["output_type"] is not None else None,
            kv_cache=ConversationCache(self.model) if self.reuse_cache and kv_cache else None,
        )

    # ---- internals: one turn ---------------------------------------------------------------

    def _prefix_ids(self, prompt: Prompt, input_ids: List[int]) -> List[int]:
        """The prompt's last tokens that spell ``prompt.opened`` (``[]`` when it opened nothing)."""
        return opened_token_ids(self.vocabulary, prompt.opened, input_ids) if prompt.opened else []

    def _turn_budgets(self, request: RunRequest, prompt: Prompt) -> List[Any]:
        return turn_budgets(self._grammar_format, request, prompt)

    def _encode(self, prompt: Prompt) -> List[int]:
        """The prompt's token ids (the chat template's text already holds its special tokens)."""
        enc = self.tokenizer(prompt.text, add_special_tokens=not prompt.templated)
        return [int(i) for i in enc["input_ids"]]

    def _compile_turn(self, request: RunRequest, turn: int, prompt: Prompt, step: AgentStep) -> Any:
        """The turn's compiled grammar (``None`` unconstrained); its build time goes to ``step``."""
        if not request.constrained:
            return None
        start = time.perf_counter()
        compiled = self.compiler.compile(turn_grammar(self._grammar_format, request, turn, prompt))
        step.grammar_build_s = time.perf_counter() - start
        return compiled

    def _generate_kwargs(self, request: RunRequest) -> Dict[str, Any]:
        """``generate()``'s decoding options for a turn of ``request`` (the inputs aside)."""
        kwargs: Dict[str, Any] = {"max_new_tokens": request.max_new_tokens, "do_sample": request.do_sample}
        if request.do_sample:
            kwargs.update(temperature=request.temperature, top_p=request.top_p)
        if self._stop_ids:
            kwargs["eos_token_id"] = list(self._stop_ids)
        config = getattr(self.model, "generation_config", None)
        if getattr(config, "pad_token_id", None) is None:
            pad = self._stop_ids[0] if self._stop_ids else getattr(self.tokenizer, "eos_token_id", None)
            if pad is not None:
                kwargs["pad_token_id"] = pad
        return kwargs

    def _generate_turn(self, request: RunRequest, turn: int) -> AgentStep:
        import torch

        from ..hf import GrammarLogitsProcessor

        step = AgentStep()
        prompt = self._prompts.build(request.messages, request.tools, request.reasoning)
        ids = self._encode(prompt)
        prefix = self._prefix_ids(prompt, ids)
        step.n_prompt_tokens = step.prefill_tokens = len(ids)
        device = getattr(self.model, "device", None)
        input_ids = torch.tensor([ids], dtype=torch.long, device=device)
        kwargs = self._generate_kwargs(request)
        kwargs.update(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))
        kv = request.kv_cache
        if kv is not None:  # encode only what the cache does not hold
            cache, reused = kv.prepare(ids)
            kwargs[kv.kwarg] = cache
            step.prefill_tokens = len(ids) - reused
        processor = None
        compiled = self._compile_turn(request, turn, prompt, step)
        if compiled is not None:
            budgets = self._turn_budgets(request, prompt)
            processor = GrammarLogitsProcessor(compiled, prefix_token_ids=prefix, token_budgets=budgets)
            kwargs["logits_processor"] = [processor]
            # the next step's masks are computed while the model runs its forward pass
            kwargs["stopping_criteria"] = [processor.early_masks]
        streamer = None
        if request.on_event is not None:
            first = request.n_calls
            kwargs["streamer"] = streamer = make_streamer(
                self.tokenizer,
                self.format,
                request.on_event,
                stop_token_ids=self._stop_ids,
                kept_stop_ids=self._marker_ids,
                opened=prompt.opened,
                call_id=lambda index, name: self._call_id(first + index, name),
            )
        if request.cancel is not None:
            kwargs["stopping_criteria"] = [
                *kwargs.get("stopping_criteria", ()),
                cancel_criteria(request.cancel),
            ]

        start = time.perf_counter()
        try:
            with torch.no_grad():
                out = self.model.generate(**kwargs)
        except BaseException:
            if kv is not None:  # the cache may hold part of this turn: start afresh next time
                kv.clear()
            raise
        finally:
            if streamer is not None:  # generate() ends it, unless generate() raised
                streamer.end()
        step.generate_s = time.perf_counter() - start
        if processor is not None:
            step.mask_times_s = list(processor.call_times_s)
        sequence = out[0].tolist()
        if kv is not None:
            kv.update(sequence)
        self._read_turn(step, request, prompt, [int(i) for i in sequence[len(ids) :]])
        return step

    def _read_turn(self, step: AgentStep, request: RunRequest, prompt: Prompt, new_ids: List[int]) -> None:
        """Fill ``step`` from the turn's generated ids: its text up to the first stop token
        (kept where it is a marker of the format), then the parsed turn."""
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
            return
        self._parse(step, request.tools, request)

    def _parse(self, step: AgentStep, tools: List[Tool], request: RunRequest) -> None:
        fmt = self.format
        text = step.text
        if SURROGATE.search(text) is not None:  # parse refuses it; the conversation keeps it
            step.text = unicode_safe(text)
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

    def _call_id(self, index: int, name: Optional[str] = None) -> str:
        """The id of the conversation's ``index``-th call (a call to ``name``), in the family's
        shape (Kimi-K2's ids hold the name: ``functions.NAME:IDX``). The streamer asks without
        the name: the formats whose ids hold it write their ids in the text."""
        make = getattr(self.format, "new_call_id", None)
        return make(index, name) if callable(make) else f"call_{index + 1}"

    # ---- internals: after a turn -------------------------------------------------------------

    def _end_turn(self, request: RunRequest, step: AgentStep) -> bool:
        """Record the turn in the conversation and report it; whether the run is over."""
        if step.error is None:
            output = AgentOutput(think=step.think, tool_calls=step.tool_calls, text=step.content)
            message = assistant_message(output, arguments=self._prompts.argument_shape)
        else:  # what was written, so that the conversation shows it
            message = {"role": "assistant", "content": step.text}
        added = [message, *(r.to_message() for r in step.results)]
        request.messages.extend(added)
        if step.response is not None:
            request.emit(ResponseEvent(step.response))
        request.emit(TurnFinished(step, tuple(dict(m) for m in added)))
        if step.error is not None:
            request.stopped_reason = "error"
        elif not step.tool_calls:
            request.stopped_reason = "response"
        return request.stopped_reason != "max_turns"
