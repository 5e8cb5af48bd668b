"""What the preset modules share."""

from __future__ import annotations

import json
from typing import Any

from ...registry import Tool
from ...registry.openai import tool_to_openai


def openai_json(tool: Tool, **kw: Any) -> str:
    """The tool as OpenAI's function-tool JSON, non-ASCII kept as is."""
    return json.dumps(tool_to_openai(tool), ensure_ascii=False, **kw)
