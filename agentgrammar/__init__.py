"""agentgrammar: grammar-constrained generation for tool-calling agents.

Example:
    >>> from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
    >>> vocab = Vocabulary(["{", "}", "a", "</s>"], stop_token_ids=[3])
    >>> matcher = Matcher(Compiler(vocab).compile(Grammar.from_ebnf('root ::= "{" "a"* "}"')))
    >>> [vocab.token_bytes[i] for i in matcher.allowed_token_ids()]
    [b'{']
"""

from . import formats, structural_tag
from .agent import Agent, AgentRun
from .engine import (
    BatchMatcher,
    CompiledGrammar,
    Compiler,
    MaskCacheStats,
    Matcher,
    Vocabulary,
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    batch_fill_next_token_bitmask,
)
from .engine.accept import accepts as _engine_accepts
from .errors import (
    AgentError,
    AgentGrammarError,
    BitmaskError,
    GrammarError,
    MaskTimeoutError,
    MatcherError,
    SchemaError,
    StructuralTagError,
    TokenIdError,
    ToolError,
    ToolTimeoutError,
    VocabularyError,
)
from .formats import AgentFormat, AgentOutput, FormatDetectError, FormatParseError, RenderError
from .grammar import Grammar
from .grammar.grammar import set_acceptor as _set_acceptor
from .registry import Tool, ToolCall, ToolRegistry

# The grammar layer never imports the engine, which builds on it: the package root, above both,
# gives ``Grammar.accepts`` the engine's check.
_set_acceptor(_engine_accepts)

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentError",
    "AgentFormat",
    "AgentGrammarError",
    "AgentOutput",
    "AgentRun",
    "BatchMatcher",
    "BitmaskError",
    "CompiledGrammar",
    "Compiler",
    "FormatDetectError",
    "FormatParseError",
    "Grammar",
    "GrammarError",
    "MaskCacheStats",
    "MaskTimeoutError",
    "Matcher",
    "MatcherError",
    "RenderError",
    "SchemaError",
    "StructuralTagError",
    "TokenIdError",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolRegistry",
    "ToolTimeoutError",
    "Vocabulary",
    "VocabularyError",
    "__version__",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "batch_fill_next_token_bitmask",
    "formats",
    "structural_tag",
]
