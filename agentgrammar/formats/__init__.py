"""Model formats: how a model family writes reasoning, tool calls and its response, and the
request grammar, prompt block, renderer and parser that follow (``AgentFormat``), with presets
for common families (``get(name)``, ``names()``) and the preset a tokenizer's chat template
writes (``detect(tokenizer)``).

Example:
    >>> from agentgrammar import Tool, ToolCall
    >>> from agentgrammar.formats import AgentOutput, get
    >>> fmt = get("hermes")
    >>> tools = [Tool("now", "The time.", {"type": "object", "properties": {}})]
    >>> text = fmt.render(AgentOutput(tool_calls=[ToolCall("now", {})]))
    >>> print(text)
    <tool_call>
    {"name": "now", "arguments": {}}
    </tool_call>
    >>> fmt.grammar(tools).accepts(text), fmt.parse(text, tools=tools).tool_calls[0].name
    (True, 'now')
"""

from .detect import FormatDetectError, detect
from .errors import FormatParseError, RenderError
from .format import AgentFormat
from .output import AgentOutput
from .presets import get, names
from .reasoning import reasoning_budget

__all__ = [
    "AgentFormat",
    "AgentOutput",
    "FormatDetectError",
    "FormatParseError",
    "RenderError",
    "detect",
    "get",
    "names",
    "reasoning_budget",
]
