"""Grammar front-ends (EBNF, regex, built-in JSON) producing the IR that the C core compiles.

Example:
    >>> from agentgrammar.grammar import Grammar
    >>> print(Grammar.from_ebnf('root ::= [0-9]+ ("." [0-9]+)?'))
    root ::= [0-9]+ ("." [0-9]+)?
"""

from .grammar import Grammar

__all__ = ["Grammar"]
