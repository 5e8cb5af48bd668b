"""The agent loop: ``Agent`` runs a model turn by turn inside its format's grammar, calls the
tools it asks for and feeds the results back; ``AgentRun`` records the run.

Modules: ``agent`` (``Agent``), ``run`` (``AgentRun``, ``AgentStep``, ``ToolResult``),
``events`` (the typed events of ``on_event=``), ``messages`` (the structured conversation),
``prompt`` (chat templates and the plain layout, ``render_messages``), ``streaming`` (``RegionTracker`` and the ``generate()`` streamer).

Example:
    >>> from agentgrammar.agent import Agent, AgentRun, RegionTracker, render_messages
    >>> AgentRun().stopped_reason
    'response'
"""

from .agent import Agent, AgentError, resolve_format
from .events import (
    REGIONS,
    AgentEvent,
    ResponseEvent,
    ThinkEvent,
    TokenEvent,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from .messages import assistant_message
from .prompt import Prompt, PromptBuilder, chat_template_renders_tools, render_messages
from .run import AgentRun, AgentStep, ToolResult
from .streaming import RegionTracker, make_streamer

__all__ = [
    "REGIONS",
    "Agent",
    "AgentError",
    "AgentEvent",
    "AgentRun",
    "AgentStep",
    "Prompt",
    "PromptBuilder",
    "RegionTracker",
    "ResponseEvent",
    "ThinkEvent",
    "TokenEvent",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolResult",
    "TurnFinished",
    "assistant_message",
    "chat_template_renders_tools",
    "make_streamer",
    "render_messages",
    "resolve_format",
]
