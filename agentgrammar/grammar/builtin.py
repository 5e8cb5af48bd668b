"""Built-in grammars.

``json_rules()`` accepts the strings that xgrammar's built-in JSON grammar
(``xgrammar.Grammar.builtin_json_grammar()``) accepts: an object or an array at the top level
(as in xgrammar, a bare scalar such as ``1`` or ``"a"`` is not accepted unless
``any_value=True``), no whitespace before or after it, JSON whitespace (space, ``\\n``, ``\\r``,
``\\t``) between tokens, standard JSON numbers, strings whose characters are anything but ``"``,
``\\`` and U+0000..U+001F, and the JSON escapes, with one deliberate difference: a surrogate
escape must be a high one followed by a low one (``\\ud83d\\ude00``, one character). A lone
surrogate escape (``"\\ud800"``), which xgrammar accepts, is not Unicode text: no JSON decoder
gives a string that encodes as UTF-8, and ``AgentFormat.parse`` refuses it.

Example:
    >>> [r.name for r in json_rules()]
    ['root', 'value', 'object', 'member', 'array', 'string', 'char', 'escape', 'number', 'ws']
"""

from __future__ import annotations

from typing import List

from .ebnf import parse_ebnf
from .ir import Rule, RuleRef

__all__ = ["JSON_EBNF", "json_rules"]

#: The JSON grammar (any JSON value at the top level comes from ``json_rules(any_value=True)``).
JSON_EBNF = r"""
root ::= object | array
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (member (ws "," ws member)* ws)? "}"
member ::= string ws ":" ws value
array ::= "[" ws (value (ws "," ws value)* ws)? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" escape
escape ::= ["\\/bfnrt] | "u" ([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2})
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
ws ::= [ \n\r\t]*
"""


def json_rules(*, any_value: bool = False) -> List[Rule]:
    """Rules for JSON text; the root is ``"root"``.

    By default the root is an object or an array, exactly as in xgrammar's built-in JSON
    grammar; ``any_value=True`` also allows a string, number, ``true``, ``false`` or ``null``.

    Example:
        >>> json_rules(any_value=True)[0]
        Rule(name='root', body=RuleRef(name='value'))
    """
    rules = parse_ebnf(JSON_EBNF)
    if any_value:
        rules[0] = Rule("root", RuleRef("value"))
    return rules
