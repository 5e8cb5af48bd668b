"""The contract every input must keep, and the harness that states it for one API.

An input either succeeds or raises an ``AgentGrammarError``; anything else is a finding.

>>> h = Harness("demo", lambda rng: 0, lambda inp: None)
>>> execute(h, 0)
('ok', '')
"""

from __future__ import annotations

import random
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Tuple


class Finding(Exception):
    """A harness's contract broken in a way that is not an exception escaping (an invariant)."""


@dataclass
class Harness:
    name: str
    generate: Callable[[random.Random], Any]
    run: Callable[[Any], None]
    #: Exception types (besides AgentGrammarError) that the API documents for bad arguments.
    allowed: Tuple[str, ...] = ()
    doc: str = ""


def execute(harness: Harness, inp: Any) -> Tuple[str, str]:
    """Run one input: ``("ok" | "error", "")`` when the contract holds, else ``(kind, detail)``."""
    from agentgrammar import AgentGrammarError

    try:
        harness.run(inp)
    except AgentGrammarError:
        return "error", ""
    except Finding as e:
        return "invariant", f"{e}\n{traceback.format_exc()}"
    except Exception as e:
        if type(e).__name__ in harness.allowed:
            return "error", ""
        return "exception", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    return "ok", ""
