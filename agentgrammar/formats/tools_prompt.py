"""The prompt block that describes the tools (``AgentFormat.render_tools``): the family's own
(``tools_prompt``) or a generic ``<tools>`` block ending with a schematic call.

Example:
    >>> from agentgrammar.formats import AgentFormat
    >>> call_template(AgentFormat(call_layout="name_then_json", call_begin="<f=", name_end=">", call_end="</f>"))
    '<f=<tool-name>><arguments-json-object></f>'
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional

from ..registry.openai import tool_to_openai
from .styled_call import styled_call_template
from .tools import ToolsArg, tool_list

if TYPE_CHECKING:
    from .format import AgentFormat

__all__ = ["call_template", "render_tools"]


def call_template(fmt: "AgentFormat") -> str:
    """A schematic call, for instructions in prompts: ``AgentFormat.call_template``."""
    if fmt.call_layout == "json_object":
        item, key = fmt.separators
        body = "{" + json.dumps(fmt.name_key) + key + "<tool-name>" + item + json.dumps(fmt.arguments_key)
        call = fmt.call_begin + body + key + "<arguments-json-object>}" + fmt.call_end
    elif fmt.call_layout == "name_then_json":
        name = "<tool-name>"
        if fmt.call_id_form is not None:
            name = fmt.call_id_form.replace("{name}", name).replace("{index}", "<call-index>")
        call = fmt.call_begin + name + fmt.name_end + "<arguments-json-object>" + fmt.call_end
    elif fmt.call_layout == "pythonic":
        call = fmt.call_begin + "<tool-name>" + fmt.name_end + "<name>=<value>, ..." + fmt.call_end
    elif fmt.call_layout == "styled":
        call = styled_call_template(fmt)
    else:
        param = fmt.param_begin + "<name>" + fmt.param_name_end + "<value>" + fmt.param_end
        call = fmt.call_begin + "<tool-name>" + fmt.name_end + param + fmt.call_end
    return fmt.calls_begin + call + fmt.calls_end


def render_tools(fmt: "AgentFormat", tools: Optional[ToolsArg]) -> str:
    """The prompt block that describes ``tools``: ``AgentFormat.render_tools``."""
    offered = tool_list(tools)
    if fmt.tools_prompt is not None:
        return fmt.tools_prompt(offered)
    lines = "\n".join(json.dumps(tool_to_openai(t), ensure_ascii=False) for t in offered)
    return (
        "# Tools\n\nYou may call one or more tools. Their definitions, one JSON object per line:\n"
        f"<tools>\n{lines}\n</tools>\n\nTo call a tool, write:\n{call_template(fmt)}"
    )
