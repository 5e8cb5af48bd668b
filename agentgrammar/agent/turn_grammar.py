"""The grammar of one agent turn and the token budgets of its matchers: the format's request
grammar for the run's tool choice, reasoning (and its budget) and typed output, continued
after whatever the generation prompt already opened.

Example:
    >>> from agentgrammar.formats import get
    >>> checked_budget(get("qwen3"), 64), checked_budget(get("qwen3"), None)
    (64, None)
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..errors import AgentError
from ..formats import AgentFormat
from ..formats.reasoning import check_reasoning_budget, reasoning_budget
from ..grammar import Grammar
from .prompt import Prompt
from .request import RunRequest

__all__ = ["checked_budget", "turn_budgets", "turn_grammar"]


def checked_budget(fmt: AgentFormat, budget: Optional[int]) -> Optional[int]:
    """``reasoning_budget`` checked: a non-negative int, for a format with a think block
    (``AgentError`` else)."""
    if budget is None:
        return None
    try:
        check_reasoning_budget(budget)
    except ValueError as e:
        raise AgentError(str(e)) from None
    if not fmt.has_think:
        raise AgentError(f"reasoning_budget needs a format with a think block; {fmt.name!r} has none")
    return budget


def _budgeted(request: RunRequest, prompt: Prompt) -> bool:
    """Whether this turn's think block has a token budget (reasoning on, or opened)."""
    return request.reasoning_budget is not None and (request.reasoning != "disabled" or bool(prompt.opened))


def turn_grammar(fmt: AgentFormat, request: RunRequest, turn: int, prompt: Prompt) -> Grammar:
    """The grammar of turn ``turn`` in ``fmt`` (the format with the vocabulary's token markers):
    ``tool_choice`` on the first turn only, ``"auto"`` after; a think block the prompt opened is
    the grammar's start."""
    reasoning = request.reasoning
    if prompt.opened:  # the think block is already open (or written): the grammar has it
        reasoning = "enabled"
    choice = request.tool_choice if turn == 0 else "auto"
    options: Dict[str, Any] = dict(
        tool_choice=choice, parallel_tool_calls=request.parallel_tool_calls, reasoning=reasoning
    )
    if _budgeted(request, prompt):
        options["reasoning_budget"] = request.reasoning_budget
    if request.output is None:
        return fmt.grammar(request.tools, **options)
    return request.output.grammar(fmt, request.tools, **options)


def turn_budgets(fmt: AgentFormat, request: RunRequest, prompt: Prompt) -> List[Any]:
    """The token budgets of the turn's matchers: the think block's, with ``reasoning_budget``."""
    if not _budgeted(request, prompt):
        return []
    assert request.reasoning_budget is not None
    return [reasoning_budget(fmt, request.reasoning_budget)]
