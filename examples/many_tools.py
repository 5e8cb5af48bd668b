"""Many tools: a 500-tool registry, a different 10-tool subset on every request.

What it shows: tools made programmatically (OpenAI tool dicts, as an API request carries them)
into a ``ToolRegistry``; per request, ``registry.select(...)`` of 10 random tools, the request
grammar (``fmt.grammar``) and its compilation, each timed. A tool's piece of the grammar is
built once and cached on the ``Tool``, and the ``Compiler`` hands back a grammar it compiled
recently, so requests get cheaper as tools repeat, and a repeated request costs almost nothing.
Finally one request is generated with the model and its tool call validated.

Run::

    python examples/many_tools.py
    python examples/many_tools.py --requests 20 --format qwen3_coder --model /path/to/local/model
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any, Dict, List, Set

from _model import RANDOM_NOTE, add_model_argument, chat_prompt, generate_constrained, load

from agentgrammar import Compiler, ToolRegistry, Vocabulary, formats

VERBS = ["get", "list", "create", "update", "delete", "search", "count", "export", "archive", "sync"]
NOUNS = ["user", "order", "invoice", "ticket", "file", "event", "report", "device", "repo", "note"]


def make_tool(index: int, rng: random.Random) -> Dict[str, Any]:
    """One OpenAI tool dict with 1-4 parameters: strings, integers, enums and booleans."""
    verb, noun = VERBS[index % len(VERBS)], NOUNS[(index // len(VERBS)) % len(NOUNS)]
    name = f"{verb}_{noun}_{index:03d}"
    kinds = {
        "id": {"type": "string", "maxLength": 12, "description": f"The {noun} id."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "At most this many."},
        "status": {"enum": ["open", "closed", "pending"], "description": "Filter by status."},
        "dry_run": {"type": "boolean", "description": "Only report what would change."},
    }
    chosen = rng.sample(sorted(kinds), rng.randint(1, len(kinds)))
    properties = {key: kinds[key] for key in chosen}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{verb.capitalize()} {noun}s (tool {index}).",
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": chosen[:1],
                "additionalProperties": False,
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="A 500-tool registry, 10 tools per request.")
    add_model_argument(parser)
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--per-request", type=int, default=10)
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--format", default="hermes", choices=formats.names())
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    registry = ToolRegistry.from_openai([make_tool(i, rng) for i in range(args.tools)])
    print(f"registry: {len(registry)} tools, e.g. {registry.names[:3]}")

    loaded = load(args.model)
    model, tok = loaded.model, loaded.tokenizer
    vocab = Vocabulary.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiler = Compiler(vocab)
    fmt = formats.get(args.format)

    requests: List[List[str]] = [rng.sample(registry.names, args.per_request) for _ in range(args.requests)]
    requests.append(requests[0])  # the first request again: everything is cached by now
    seen: Set[str] = set()
    print(f"{'request':>8} {'new tools':>9} {'build ms':>9} {'compile ms':>10}")
    for k, names in enumerate(requests):
        tools = registry.select(names)
        start = time.perf_counter()
        grammar = fmt.grammar(tools, tool_choice="required", parallel_tool_calls=False)
        built = time.perf_counter()
        compiled = compiler.compile(grammar)
        done = time.perf_counter()
        label = "repeat 1" if k == len(requests) - 1 else str(k + 1)
        new = len(set(names) - seen)
        seen.update(names)
        print(f"{label:>8} {new:>9} {1e3 * (built - start):>9.2f} {1e3 * (done - built):>10.2f}")

    # Generate the last request (tools = the first subset) and check the call.
    prompt = chat_prompt(tok, "Close the pending tickets.", system=fmt.render_tools(tools))
    text = generate_constrained(loaded, prompt, compiled, max_new_tokens=args.max_new_tokens, seed=args.seed)
    print(f"generated: {text}")
    if loaded.random:
        print(RANDOM_NOTE)
    parsed = fmt.parse(text, tools=tools)  # unknown tools or invalid arguments raise ToolError
    for call in parsed.tool_calls:
        print(f"validated call: {call.name}({call.arguments})")
    print(f"valid: {grammar.accepts(text) and len(parsed.tool_calls) == 1}")


if __name__ == "__main__":
    main()
