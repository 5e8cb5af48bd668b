"""The agent loop: ``Agent`` runs a model turn by turn inside its format's grammar, calls the
tools it asks for and feeds the results back; ``AgentRun`` records the run.

Modules: ``agent`` (``Agent``), ``run`` (``AgentRun``, ``AgentStep``, ``ToolResult``),
``events`` (the typed events of ``on_event=`` and ``Agent.stream``), ``deltas`` (a streamed
turn's structured deltas), ``stream`` (events from a worker thread or task, cancellation-safe),
``openai_chunks`` (events as OpenAI Chat Completions stream chunks), ``output_type`` (typed
final output), ``tool_runner`` (running the calls concurrently), ``request`` (one run's settings),
``messages`` (the structured conversation), ``prompt`` (chat templates and the plain layout,
``render_messages``), ``turn_grammar`` (a turn's grammar and token budgets), ``kv_cache`` (the
key/value cache kept across turns), ``batch`` (``Agent.run_batch``), ``regions``
(``RegionTracker``), ``nesting`` (bracket and string state of streamed arguments), ``streaming``
(the ``generate()`` streamer).

Example:
    >>> from agentgrammar.agent import Agent, AgentRun, RegionTracker, render_messages
    >>> AgentRun().stopped_reason
    'response'
"""

from .agent import Agent, AgentError, resolve_format
from .deltas import TurnDeltas
from .events import (
    REGIONS,
    AgentEvent,
    ReasoningDelta,
    ResponseEvent,
    RunFinished,
    RunStarted,
    TextDelta,
    ThinkEvent,
    TokenEvent,
    ToolCallArgumentsDelta,
    ToolCallFinished,
    ToolCallNamed,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from .messages import assistant_message
from .openai_chunks import OpenAIChunker, to_openai_chunks
from .output_type import OutputValidationError
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
    "OpenAIChunker",
    "OutputValidationError",
    "Prompt",
    "PromptBuilder",
    "ReasoningDelta",
    "RegionTracker",
    "ResponseEvent",
    "RunFinished",
    "RunStarted",
    "TextDelta",
    "ThinkEvent",
    "TokenEvent",
    "ToolCallArgumentsDelta",
    "ToolCallFinished",
    "ToolCallNamed",
    "ToolCallStarted",
    "ToolResult",
    "TurnDeltas",
    "TurnFinished",
    "TurnStarted",
    "assistant_message",
    "chat_template_renders_tools",
    "make_streamer",
    "render_messages",
    "resolve_format",
    "to_openai_chunks",
]
