"""Running many conversations in lockstep: ``Agent.run_batch``.

Each turn, every conversation still running renders its prompt, and one batched ``generate()``
writes all their turns: the prompts left-padded to one length, one
:class:`~agentgrammar.hf.GrammarLogitsProcessor` with each row's own compiled grammar (its own
tools, its own ``tool_choice``) and its own prefix tokens. Then the tool calls of every row run
at once (each row through the agent's ``ToolRunner``, all rows on one event loop), and a
conversation that is over (a response, an error) leaves the batch; the others go on to the next
turn. The runs come back in input order, each as ``Agent.run`` would return it.

With greedy decoding a batch writes what the single runs write, but for the numerics of
padding: a padded row's attention runs over more (masked) positions, so its floating-point
sums are taken in another order and may differ in the last bits; a near tie between two
tokens can then go the other way (docs/benchmarks.md: "Batched runs").

Each row's key/value cache is not kept between turns here (``prefill_tokens`` equals
``n_prompt_tokens``): a batched cache would have to hold every row's own shared prefix.

Example (with a model)::

    runs = agent.run_batch(["Weather in Oslo?", "Weather in Paris?"], max_turns=4)
    print([run.response for run in runs])
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

from ..errors import AgentError
from ..registry import ToolRegistry
from .deltas import call_arguments_texts
from .events import RunStarted, TurnStarted
from .request import RunRequest, seed_torch
from .run import AgentRun, AgentStep, ToolResult

if TYPE_CHECKING:  # pragma: no cover
    from .agent import Agent

__all__ = ["run_batch", "tools_per_row"]

# run()'s options that a batch cannot take: events are reported per conversation, one at a time
_NOT_IN_BATCH = ("on_event", "prompt_or_messages", "tools")


def tools_per_row(tools: Any, n: int) -> List[Any]:
    """``tools`` as one selection per row: a list or tuple of ``n`` selections (each ``None``,
    a ``ToolRegistry`` or a list of names or tools), else the same selection for every row.

    Example:
        >>> tools_per_row(["weather", "echo"], 3)
        [['weather', 'echo'], ['weather', 'echo'], ['weather', 'echo']]
        >>> tools_per_row([["weather"], None], 2)
        [['weather'], None]
    """
    per_row = isinstance(tools, (list, tuple)) and any(
        t is None or isinstance(t, (list, tuple, ToolRegistry)) for t in tools
    )
    if not per_row:
        return [tools] * n
    if len(tools) != n:
        raise AgentError(f"tools has {len(tools)} per-prompt selections for {n} prompts")
    for k, t in enumerate(tools):
        if not (t is None or isinstance(t, (list, tuple, ToolRegistry))):
            raise AgentError(
                f"tools[{k}] is a {type(t).__name__}: give every prompt a selection (a list of "
                "names or tools, a ToolRegistry or None), or one selection for all"
            )
    return list(tools)


def _options(agent: "Agent", run_kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """``run()``'s options: its defaults, then ``run_kwargs`` (unknown names are an error)."""
    params = inspect.signature(type(agent).run).parameters
    known = {k: p.default for k, p in params.items() if k != "self" and k not in _NOT_IN_BATCH}
    unknown = sorted(set(run_kwargs) - set(known))
    if unknown:
        raise AgentError(f"run_batch takes run()'s options but for on_event; unknown: {', '.join(unknown)}")
    return {**known, **run_kwargs, "on_event": None}


def run_batch(
    agent: "Agent", prompts: Sequence[Any], tools: Any, run_kwargs: Mapping[str, Any]
) -> List[AgentRun]:
    """The body of ``Agent.run_batch`` (see there)."""
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise AgentError(f"run_batch takes a list of prompts, got {type(prompts).__name__}")
    if not prompts:
        return []
    options = _options(agent, run_kwargs)
    requests = [
        agent._request(prompt, {**options, "tools": row_tools}, kv_cache=False)
        for prompt, row_tools in zip(prompts, tools_per_row(tools, len(prompts)))
    ]
    seed_torch(options["seed"])
    for request in requests:
        request.emit(RunStarted(tuple(dict(m) for m in request.messages)))
    live = list(requests)
    for turn in range(options["max_turns"]):
        if not live:
            break
        for request in live:
            request.emit(TurnStarted(turn))
        steps = _generate_turns(agent, live, turn)
        _run_tools(agent, live, steps)
        live = [r for r, step in zip(live, steps) if not agent._end_turn(r, step)]
    failure: Optional[BaseException] = None
    for request in requests:
        try:
            agent._finish(request)
        except AgentError as e:  # an output that does not validate: the other runs still finish
            failure = failure or e
    if failure is not None:
        raise failure
    return [AgentRun.from_events(r.folded) for r in requests]


def _pad_id(agent: "Agent", kwargs: Mapping[str, Any]) -> int:
    if kwargs.get("pad_token_id") is not None:
        return int(kwargs["pad_token_id"])
    config = getattr(agent.model, "generation_config", None)
    pad = getattr(config, "pad_token_id", None)
    if isinstance(pad, (list, tuple)):
        pad = pad[0] if pad else None
    if pad is None:
        pad = getattr(agent.tokenizer, "pad_token_id", None)
    return int(pad) if pad is not None else 0  # masked off: any id will do


def _generate_turns(agent: "Agent", requests: List[RunRequest], turn: int) -> List[AgentStep]:
    """One turn of every conversation in ``requests``, from one batched ``generate()``."""
    import torch

    from ..hf import GrammarLogitsProcessor

    steps, prompts, rows, prefixes, grammars = [], [], [], [], []
    for request in requests:
        step = AgentStep()
        prompt = agent._prompts.build(request.messages, request.tools, request.reasoning)
        ids = agent._encode(prompt)
        prefixes.append(agent._prefix_ids(prompt, ids))
        step.n_prompt_tokens = step.prefill_tokens = len(ids)
        grammars.append(agent._compile_turn(request, turn, prompt, step))
        steps.append(step)
        prompts.append(prompt)
        rows.append(ids)
    kwargs = agent._generate_kwargs(requests[0])
    width, pad = max(len(ids) for ids in rows), _pad_id(agent, kwargs)
    device = getattr(agent.model, "device", None)
    input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in rows], device=device)
    mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in rows], device=device)
    kwargs.update(input_ids=input_ids, attention_mask=mask)
    processor = None
    if requests[0].constrained:
        shared = all(p == prefixes[0] for p in prefixes)
        # the run options are the same for every row: so is the think block's budget, if any
        budgets = next((b for b in map(agent._turn_budgets, requests, prompts) if b), [])
        processor = GrammarLogitsProcessor(
            grammars, prefix_token_ids=prefixes[0] if shared else prefixes, token_budgets=budgets
        )
        kwargs["logits_processor"] = [processor]
        kwargs["stopping_criteria"] = [processor.early_masks]
    start = time.perf_counter()
    with torch.no_grad():
        out = agent.model.generate(**kwargs)
    elapsed = time.perf_counter() - start
    for k, (step, request, prompt) in enumerate(zip(steps, requests, prompts)):
        step.generate_s = elapsed  # the batch's generate(), which every row shared
        agent._read_turn(step, request, prompt, [int(i) for i in out[k, width:].tolist()])
        if processor is not None:  # the steps this row took part in
            step.mask_times_s = list(processor.call_times_s[: step.n_new_tokens])
    return steps


def _run_tools(agent: "Agent", requests: List[RunRequest], steps: List[AgentStep]) -> None:
    """Run the tool calls of every row's turn at once, each row through the agent's runner."""
    work = [(r, s) for r, s in zip(requests, steps) if s.error is None and s.tool_calls]
    if not work:
        return

    async def all_rows() -> List[List[ToolResult]]:
        return await asyncio.gather(
            *(
                agent._tool_runner(r).arun(
                    s.tool_calls, call_arguments_texts(agent.format, s.text, s.tool_calls)
                )
                for r, s in work
            )
        )

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        results = asyncio.run(all_rows())
    else:  # this thread runs a loop (a notebook): run ours in a helper thread
        context = contextvars.copy_context()
        with ThreadPoolExecutor(1, thread_name_prefix="agentgrammar-tool-loop") as helper:
            results = helper.submit(context.run, asyncio.run, all_rows()).result()
    for (_, step), row_results in zip(work, results):
        step.results = list(row_results)
