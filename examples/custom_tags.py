"""A tool-call layout of your own: ``<call name="...">{json}</call>``.

What it shows: a user-defined ``AgentFormat`` (no preset) whose calls look like
``<call name="get_weather">{"city": "Oslo"}</call>``; the request grammar it builds (a structural
tag, printed as JSON: the same thing ``Grammar.from_structural_tag`` and xgrammar take), and the
same layout written by hand with ``agentgrammar.structural_tag``; a constrained ``generate()``;
then ``fmt.parse`` reads the call back and the registry runs it.

Run::

    python examples/custom_tags.py
    python examples/custom_tags.py --model /path/to/local/model
"""

from __future__ import annotations

import argparse
from typing import Literal

from _model import RANDOM_NOTE, add_model_argument, chat_prompt, generate_constrained, load
from pydantic import Field
from typing_extensions import Annotated

from agentgrammar import AgentFormat, Compiler, Grammar, ToolRegistry, Vocabulary
from agentgrammar import structural_tag as st

registry = ToolRegistry()


@registry.tool
def get_weather(city: Annotated[str, Field(max_length=20)], unit: Literal["c", "f"] = "c") -> str:
    """Get the current weather in a city.

    Args:
        city: The city name.
        unit: Temperature unit.
    """
    return f"18 degrees {unit} and clear in {city}"


@registry.tool
def add(a: Annotated[int, Field(ge=-1000, le=1000)], b: Annotated[int, Field(ge=-1000, le=1000)]) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


# name_then_json: call_begin, the tool name, name_end, the JSON arguments, call_end.
CALL_TAGS = AgentFormat(
    name="call_tags",
    call_layout="name_then_json",
    call_begin='<call name="',
    name_end='">',
    call_end="</call>",
)


def main() -> None:
    parser = argparse.ArgumentParser(description="A custom <call name=...> tool-call format.")
    add_model_argument(parser)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    loaded = load(args.model)
    model, tok = loaded.model, loaded.tokenizer
    vocab = Vocabulary.from_huggingface(tok, vocab_size=model.config.vocab_size)
    compiler = Compiler(vocab)

    # One call, required, nothing around it (fmt.grammar(...) builds this tag and compiles it).
    tag = CALL_TAGS.structural_tag(registry, tool_choice="required", parallel_tool_calls=False)
    print(f"structural tag: {tag.model_dump_json()[:160]}...")
    grammar = Grammar.from_structural_tag(tag)

    # The same layout written by hand with the structural-tag models (xgrammar's JSON format).
    by_hand = st.StructuralTag(
        format=st.TagsWithSeparator(
            tags=[
                st.Tag(
                    begin=f'<call name="{t.name}">',
                    content=st.JSONSchema(json_schema=t.parameters),
                    end="</call>",
                )
                for t in registry
            ],
            separator="",
            at_least_one=True,
            stop_after_first=True,
        )
    )
    sample = '<call name="add">{"a": 1, "b": 2}</call>'
    hand_grammar = Grammar.from_structural_tag(by_hand)
    print(f"both accept {sample}: {grammar.accepts(sample) and hand_grammar.accepts(sample)}")

    system = CALL_TAGS.render_tools(registry)  # the prompt block that describes the tools
    prompt = chat_prompt(tok, "What is the weather in Lisbon?", system=system)
    compiled = compiler.compile(grammar)
    text = generate_constrained(loaded, prompt, compiled, max_new_tokens=args.max_new_tokens, seed=args.seed)
    print(f"generated: {text}")
    if loaded.random:
        print(RANDOM_NOTE)

    parsed = CALL_TAGS.parse(text, tools=registry)  # validates the arguments against the schema
    for call in parsed.tool_calls:
        print(f"tool call: {call.name}({call.arguments}) -> {registry.call(call)!r}")
    print(f"valid: {grammar.accepts(text)}")


if __name__ == "__main__":
    main()
