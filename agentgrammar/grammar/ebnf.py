"""Parse EBNF grammars (the GBNF / xgrammar dialect) into grammar IR.

The dialect is xgrammar's, so that grammars written for xgrammar (and most written for
llama.cpp's GBNF) work unchanged and can be checked against xgrammar:

- ``name ::= body`` defines a rule. Names use ``A-Z a-z 0-9 _ - .`` and do not start with a
  digit. A rule ends where the next ``name ::=`` starts, or at the end of the text; newlines are
  otherwise plain whitespace. As in xgrammar, a definition must be the first thing on its line.
- ``"..."`` strings with the escapes ``\\n \\r \\t \\v \\f \\a \\b \\e \\0 \\\\ \\" \\' \\? \\/``,
  ``\\[ \\]`` (GBNF), ``\\xH...`` (hex digits, read greedily as in xgrammar: ``"\\x41B"`` is
  U+041B), ``\\uHHHH`` and ``\\UHHHHHHHH``. ``""`` is the empty string, and so is ``()``.
- ``[...]`` character classes with ranges ``a-z``, negation ``[^...]`` and the same escapes plus
  ``\\- \\^ \\] \\[`` and the other regex metacharacters. A ``-`` that cannot be a range is a
  literal dash; ``[]`` matches nothing and ``[^]`` any character. ``\\d``-style class escapes are
  not supported (as in xgrammar).
- ``.`` (a lone dot, GBNF) is any character.
- Postfix ``*`` ``+`` ``?`` ``{m}`` ``{m,}`` ``{m,n}`` (spaces allowed inside the braces; ``{m,-1}``,
  which xgrammar prints for "unbounded", is accepted too); one quantifier per element.
- ``( )`` grouping, ``|`` alternation, ``#`` comments to the end of the line.
- xgrammar's lookahead assertion ``(= ...)`` after a rule body is parsed (its references are
  checked) and then dropped: it is a hint for xgrammar's engine and does not change the
  language of a well-formed grammar.
- Extension (not in xgrammar, used by the printer for bytes that are not UTF-8): ``%xHH`` is one
  raw byte, ``%xHH.HH.HH`` a raw byte string and ``%xHH-HH`` a raw byte range.

xgrammar's ``TagDispatch(("trigger", rule), ..., loop_after_dispatch=true, excludes=("x"))``
macro is supported (see ``ir.TagDispatch``; ``stop_eos=`` and ``stop_str=(...)`` too), and so
are ``Substring("chunk", ...)`` and ``Regex("pattern", flags="is")`` (``ebnf_macros``). Its other
macros (``Token(...)``, ...) are reported as not supported yet.

xgrammar's ``a & b`` (intersection: binds looser than a sequence, tighter than ``|``), prefix
``~x`` (complement within valid UTF-8 text) and the rule attributes ``name[lazy] ::=`` and
``name[max_chars=N] ::=`` are computed exactly with automata, for regular operands only
(``ebnf_automata``, ``ebnf_attributes``); attributes that do not change the language
(``capture``, ``temperature``, ``no_forcing``) are dropped, and the rest (``max_tokens``, ...)
refused.

Example:
    >>> from agentgrammar.grammar.ebnf import parse_ebnf
    >>> parse_ebnf('root ::= "a" | [0-9]')[0].body
    Choice(items=(Literal(value=b'a'), CharClass(ranges=((48, 57),), negated=False)))
"""

from __future__ import annotations

from typing import Dict, List, NoReturn, Optional, Tuple

from ..errors import GrammarError
from .ebnf_attributes import parse_rule_attributes
from .ebnf_automata import AutomatonRule, resolve_automaton_rules
from .ebnf_lexer import (  # the lexer: tokens and their kinds
    _AMP,
    _ASSIGN,
    _BYTES,
    _CLASS,
    _COMMA,
    _EOF,
    _EQ,
    _INT,
    _LBRACE,
    _LOOKAHEAD,
    _LPAREN,
    _NAME,
    _PIPE,
    _PLUS,
    _QUANTIFIERS,
    _QUESTION,
    _RBRACE,
    _RPAREN,
    _RULENAME,
    _STAR,
    _STRING,
    _TILDE,
    _Lexer,
    _Token,
)
from .ebnf_macros import regex_macro, substring_rules
from .ir import (
    EMPTY,
    ByteClass,
    CharClass,
    Choice,
    Expr,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    TagDispatch,
    fresh_name,
)
from .source_text import (
    MAX_NESTING,
    MAX_REPEAT,
    SURROGATES,
    is_surrogate,
    quote_names,
    surrogate_message,
)

__all__ = [
    "MAX_NESTING",
    "MAX_REPEAT",
    "SURROGATES",
    "XGRAMMAR_MACROS",
    "is_surrogate",
    "parse_ebnf",
    "surrogate_message",
]

#: Names that xgrammar parses as macro calls, not as rule references.
XGRAMMAR_MACROS = frozenset(
    {"TagDispatch", "TokenTagDispatch", "Token", "ExcludeToken", "Regex", "Substring"}
)


class _Parser:
    def __init__(self, text: str, root: str) -> None:
        self.text = text
        self.root = root
        self.lexer = _Lexer(text)
        self.toks = self.lexer.tokens()
        self.i = 0
        self.depth = 0
        self.rule_name = ""
        # (referenced name, referencing rule, token) of every reference, checked once all rules are known.
        self.refs: List[Tuple[str, str, _Token]] = []
        # Rules that macros add (Substring), after the defined ones, named apart from them.
        self.extra: List[Rule] = []
        self.taken = {t.value for t in self.toks if t.kind == _NAME}
        self.counters: Dict[str, int] = {}
        # Rules computed with automata (`&`, `~`, [lazy], [max_chars]), resolved once all are parsed.
        self.computed: Dict[str, AutomatonRule] = {}

    def fail(self, offset: int, message: str) -> NoReturn:
        self.lexer.fail(offset, message)

    def peek(self, delta: int = 0) -> _Token:
        return self.toks[min(self.i + delta, len(self.toks) - 1)]

    def describe(self, tok: _Token) -> str:
        if tok.kind == _EOF:
            return "end of input"
        if tok.kind == _RULENAME:
            return f"the start of rule '{tok.value}'"
        return repr(self.text[tok.start : tok.end])

    def missing_at(self) -> Optional[int]:
        """Where to report something missing: just after the previous token when the next one
        is on a later line (or is the end), else None (report at the next token)."""
        tok = self.peek()
        prev = self.toks[self.i - 1] if self.i > 0 else None
        if prev is not None and (
            tok.kind == _EOF or self.lexer.line_of(tok.start) != self.lexer.line_of(prev.end)
        ):
            return prev.end
        return None

    def missing(self, what: str) -> NoReturn:
        """Fail because ``what`` was expected before the next token."""
        at = self.missing_at()
        if at is not None:
            self.fail(at, f"expected {what}")
        tok = self.peek()
        self.fail(tok.start, f"expected {what} but found {self.describe(tok)}")

    # -- rules

    def parse(self) -> List[Rule]:
        self.mark_rule_names()
        if self.peek().kind == _EOF:
            raise GrammarError("the grammar is empty: expected at least one rule such as 'root ::= \"a\"'")
        rules: List[Rule] = []
        where: Dict[str, _Token] = {}
        while self.peek().kind != _EOF:
            name_tok = self.peek()
            if name_tok.kind != _RULENAME:
                self.fail(name_tok.start, "expected a rule definition such as 'name ::= ...'")
            name = name_tok.value
            assert isinstance(name, str)
            if name == ".":
                self.fail(name_tok.start, "'.' cannot be a rule name: it means any character")
            if name in where:
                first = where[name]
                line = self.lexer.line_of(first.start)
                col = first.start - self.lexer.starts[line - 1] + 1
                self.fail(
                    name_tok.start, f"rule '{name}' is defined twice (first at line {line}, column {col})"
                )
            where[name] = name_tok
            self.i += 2  # name and ::=
            self.rule_name = name
            body = self.choices()
            if self.peek().kind == _LOOKAHEAD:
                # Parsed and checked, then dropped: it does not change the language.
                open_tok = self.peek()
                self.i += 1
                self.choices()
                self.expect_rparen(open_tok)
            tok = self.peek()
            if tok.kind == _RPAREN:
                self.fail(tok.start, "unmatched ')'")
            if tok.kind == _LOOKAHEAD:
                self.fail(tok.start, "a rule can have only one lookahead assertion '(= ...)'")
            rules.append(Rule(name, body))
            self.rule_attributes(name_tok, body)
        if self.root not in where:
            defined = quote_names(r.name for r in rules)
            raise GrammarError(f"the root rule '{self.root}' is not defined (defined rules: {defined})")
        for ref, in_rule, tok in self.refs:
            if ref not in where:
                self.fail(tok.start, f"rule '{ref}' is not defined (referenced in rule '{in_rule}')")
        if self.computed:
            return resolve_automaton_rules(
                rules + self.extra, self.computed, self.taken, self.counters, self.fail
            )
        return rules + self.extra

    def rule_attributes(self, name_tok: _Token, body: Expr) -> None:
        """Record the attributes of the rule ``name_tok`` defines, where they change its language."""
        found = self.lexer.attributes.get(name_tok.start)
        if found is None:
            return
        text, at = found
        try:
            attributes = parse_rule_attributes(text)
        except GrammarError as e:
            self.fail(at, str(e))
        if attributes.changes_language:
            assert isinstance(name_tok.value, str)
            self.computed[name_tok.value] = AutomatonRule("attributes", (body,), at, attributes)

    def automaton_rule(self, op: str, operands: Tuple[Expr, ...], at: int) -> Expr:
        """A reference to a new rule computed from ``operands`` (``&`` or ``~``)."""
        name = fresh_name(
            f"{self.rule_name}_{'intersection' if op == 'and' else 'complement'}", self.taken, self.counters
        )
        self.extra.append(Rule(name, EMPTY))  # its body is computed at the end
        self.computed[name] = AutomatonRule(op, operands, at)
        return RuleRef(name)

    def mark_rule_names(self) -> None:
        toks = self.toks
        macro_parens: List[bool] = []  # per open parenthesis: whether it holds a macro's arguments
        for k, tok in enumerate(toks):
            if tok.kind in (_LPAREN, _LOOKAHEAD):
                prev = toks[k - 1] if k else None
                macro_parens.append(
                    tok.kind == _LPAREN
                    and prev is not None
                    and prev.kind == _NAME
                    and prev.value in XGRAMMAR_MACROS
                )
            elif tok.kind == _RPAREN and macro_parens:
                macro_parens.pop()
            elif tok.kind == _EQ and not (macro_parens and macro_parens[-1]):
                self.fail(tok.start, "unexpected '=' (a rule is defined with '::=')")
        for k, tok in enumerate(toks):
            if tok.kind != _ASSIGN:
                continue
            if k == 0 or toks[k - 1].kind != _NAME:
                self.fail(tok.start, "expected a rule name before '::='")
            name_tok = toks[k - 1]
            if k >= 2 and self.lexer.line_of(toks[k - 2].start) == self.lexer.line_of(name_tok.start):
                self.fail(
                    name_tok.start,
                    f"the definition of rule '{name_tok.value}' must start on a new line "
                    "(a rule body runs until the next 'name ::=')",
                )
            name_tok.kind = _RULENAME

    # -- expressions

    def choices(self) -> Expr:
        """Alternatives of sequences joined by ``&`` (looser than a sequence, tighter than ``|``,
        as in xgrammar); one function for both keeps the Python stack shallow."""
        items = []
        while True:
            first = self.peek()
            parts = [self.sequence()]
            while self.peek().kind == _AMP:
                self.i += 1
                parts.append(self.sequence())
            items.append(
                parts[0] if len(parts) == 1 else self.automaton_rule("and", tuple(parts), first.start)
            )
            if self.peek().kind != _PIPE:
                break
            self.i += 1
        return items[0] if len(items) == 1 else Choice(tuple(items))

    def sequence(self) -> Expr:
        items: List[Expr] = []
        while True:
            items.append(self.quantified())
            if self.peek().kind in (_PIPE, _AMP, _RPAREN, _LOOKAHEAD, _RULENAME, _EOF):
                break
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def quantified(self) -> Expr:
        tilde = self.peek()
        if tilde.kind == _TILDE:  # ~x: the complement of one element; a quantifier follows it
            self.i += 1
            item = self.automaton_rule("not", (self.element(),), tilde.start)
        else:
            item = self.element()
        tok = self.peek()
        if tok.kind == _STAR:
            self.i += 1
            item = Repeat(item, 0, None)
        elif tok.kind == _PLUS:
            self.i += 1
            item = Repeat(item, 1, None)
        elif tok.kind == _QUESTION:
            self.i += 1
            item = Repeat(item, 0, 1)
        elif tok.kind == _LBRACE:
            lo, hi = self.braces()
            item = Repeat(item, lo, hi)
        else:
            return item
        nxt = self.peek()
        if nxt.kind in _QUANTIFIERS:
            self.fail(
                nxt.start,
                f"{self.describe(nxt)} cannot follow another quantifier; use parentheses, e.g. (x*)?",
            )
        return item

    def number(self) -> Tuple[int, _Token]:
        tok = self.peek()
        if tok.kind != _INT:
            self.missing("a number")
        assert isinstance(tok.value, int)
        if tok.value > MAX_REPEAT:
            self.fail(tok.start, f"repetition bound {tok.value} is too large (the limit is {MAX_REPEAT})")
        self.i += 1
        return tok.value, tok

    def braces(self) -> Tuple[int, Optional[int]]:
        self.i += 1  # {
        lo, _ = self.number()
        if self.peek().kind == _RBRACE:
            self.i += 1
            return lo, lo
        if self.peek().kind != _COMMA:
            self.missing("',' or '}' in a repetition range")
        self.i += 1
        tok = self.peek()
        hi: Optional[int]
        if tok.kind == _RBRACE:
            hi = None
        elif tok.kind == _NAME and tok.value == "-1":  # xgrammar prints {m, -1} for "unbounded"
            hi = None
            self.i += 1
        else:
            hi, hi_tok = self.number()
            if hi < lo:
                self.fail(
                    hi_tok.start,
                    f"invalid repetition range: the minimum {lo} is larger than the maximum {hi}",
                )
        if self.peek().kind != _RBRACE:
            self.missing("'}' to close the repetition range")
        self.i += 1
        return lo, hi

    def expect_rparen(self, open_tok: _Token) -> None:
        if self.peek().kind == _LOOKAHEAD:
            self.fail(self.peek().start, "a lookahead assertion '(= ...)' may only follow a whole rule body")
        if self.peek().kind != _RPAREN:
            line = self.lexer.line_of(open_tok.start)
            col = open_tok.start - self.lexer.starts[line - 1] + 1
            at = self.missing_at()
            here = self.peek().start if at is None else at
            where = f"column {col}" if self.lexer.line_of(here) == line else f"line {line}"
            self.missing(f"')' to close the '{open_tok.kind}' from {where}")
        self.i += 1

    def element(self) -> Expr:
        tok = self.peek()
        kind = tok.kind
        if kind == _LPAREN:
            self.depth += 1
            if self.depth > MAX_NESTING:
                self.fail(tok.start, f"parentheses are nested more than {MAX_NESTING} levels deep")
            self.i += 1
            if self.peek().kind == _RPAREN:
                self.i += 1
                self.depth -= 1
                return EMPTY
            inner = self.choices()
            self.expect_rparen(tok)
            self.depth -= 1
            return inner
        if kind == _STRING:
            self.i += 1
            assert isinstance(tok.value, bytes)
            return Literal(tok.value)
        if kind in (_CLASS, _BYTES):
            self.i += 1
            assert isinstance(tok.value, (CharClass, ByteClass, Literal))
            return tok.value
        if kind == _NAME:
            name = tok.value
            assert isinstance(name, str)
            self.i += 1
            if name == ".":
                return CharClass((), negated=True)
            if name == "TagDispatch" and self.peek().kind == _LPAREN:
                return self.tag_dispatch()
            if name == "Substring" and self.peek().kind == _LPAREN:
                return self.substring()
            if name == "Regex" and self.peek().kind == _LPAREN:
                return self.regex()
            if name in XGRAMMAR_MACROS and self.peek().kind == _LPAREN:
                self.fail(tok.start, f"the xgrammar macro {name}(...) is not supported yet")
            self.refs.append((name, self.rule_name, tok))
            return RuleRef(name)
        if kind in _QUANTIFIERS:
            self.fail(tok.start, f"{self.describe(tok)} has nothing to repeat")
        if kind == _LOOKAHEAD:
            self.fail(tok.start, "a lookahead assertion '(= ...)' may only follow a whole rule body")
        if kind == _PIPE:
            self.fail(tok.start, "empty alternative before '|': write \"\" for the empty string")
        if kind == _RPAREN:
            prev = self.toks[self.i - 1]
            if prev.kind == _PIPE:
                self.fail(tok.start, "empty alternative before ')': write \"\" for the empty string")
            self.fail(tok.start, "unmatched ')'")
        if kind in (_EOF, _RULENAME):
            prev = self.toks[self.i - 1]
            if prev.kind == _PIPE:
                self.fail(prev.start, "empty alternative after '|': write \"\" for the empty string")
            if prev.kind == _ASSIGN:
                self.fail(prev.end, 'empty rule body: write "" for the empty string')
        self.missing("a string, character class, rule name or '('")

    # -- macros

    def expect(self, kind: str, what: str) -> _Token:
        tok = self.peek()
        if tok.kind != kind:
            self.missing(what)
        self.i += 1
        return tok

    def word(self, what: str) -> bytes:
        tok = self.expect(_STRING, what)
        assert isinstance(tok.value, bytes)
        if not tok.value:
            self.fail(tok.start, f"{what} must not be empty")
        return tok.value

    def words(self, what: str) -> Tuple[bytes, ...]:
        """``("a", "b")``, ``("a")`` or ``()``."""
        open_tok = self.expect(_LPAREN, f"'(' to start the {what}")
        out: List[bytes] = []
        while self.peek().kind != _RPAREN:
            out.append(self.word(f"a string in the {what}"))
            if self.peek().kind != _COMMA:
                break
            self.i += 1
        self.expect_rparen(open_tok)
        return tuple(out)

    def substring(self) -> Expr:
        """``Substring("chunk", ...)``: its rules join the grammar's (``ebnf_macros``)."""
        open_tok = self.expect(_LPAREN, "'('")
        chunks: List[bytes] = []
        while self.peek().kind != _RPAREN:
            tok = self.expect(_STRING, "a string chunk of Substring(...)")
            assert isinstance(tok.value, bytes)
            chunks.append(tok.value)
            if self.peek().kind != _COMMA:
                break
            self.i += 1
        self.expect_rparen(open_tok)
        expr, rules = substring_rules(chunks, f"{self.rule_name}_substring", self.taken, self.counters)
        self.extra.extend(rules)
        return expr

    def regex(self) -> Expr:
        """``Regex("pattern")``, with ``flags="isu"`` and ``json_string=true``."""
        open_tok = self.expect(_LPAREN, "'('")
        tok = self.expect(_STRING, "the pattern of Regex(...)")
        assert isinstance(tok.value, bytes)
        flags: Optional[str] = None
        json_string = False
        while self.peek().kind == _COMMA and self.peek(1).kind == _NAME and self.peek(2).kind == _EQ:
            key = self.peek(1)
            self.i += 3
            if key.value == "flags":
                flags = self.expect(_STRING, "the flags string").value.decode()  # type: ignore[union-attr]
            elif key.value == "json_string":
                flag = self.expect(_NAME, "true or false")
                if flag.value not in ("true", "false"):
                    self.fail(flag.start, "json_string must be true or false")
                json_string = flag.value == "true"
            else:
                self.fail(key.start, f"unknown Regex argument {key.value!r}")
        self.expect_rparen(open_tok)
        try:
            return regex_macro(tok.value.decode("utf-8"), flags, json_string)
        except GrammarError as e:
            self.fail(tok.start, f"in Regex(...): {e}")

    def trigger(self) -> Tuple[bytes, str]:
        """``("trigger", rule)``."""
        open_tok = self.expect(_LPAREN, "'('")
        word = self.word("a TagDispatch trigger")
        self.expect(_COMMA, "',' after the trigger")
        rule = self.expect(_NAME, "the name of the rule the trigger opens")
        assert isinstance(rule.value, str)
        self.refs.append((rule.value, self.rule_name, rule))
        self.expect_rparen(open_tok)
        return word, rule.value

    def tag_dispatch(self) -> Expr:
        """``TagDispatch(("trigger", rule), ..., loop_after_dispatch=true, excludes=(...))``, as
        xgrammar writes it; ``stop_eos=`` and ``stop_str=(...)`` are accepted too."""
        open_tok = self.expect(_LPAREN, "'('")
        triggers: List[Tuple[bytes, str]] = []
        options: Dict[str, object] = {}
        while self.peek().kind != _RPAREN:
            tok = self.peek()
            if tok.kind == _LPAREN:
                triggers.append(self.trigger())
            elif tok.kind == _NAME and self.peek(1).kind == _EQ:
                key = tok.value
                if key not in ("loop_after_dispatch", "stop_eos", "excludes", "stop_str"):
                    self.fail(tok.start, f"unknown TagDispatch argument {key!r}")
                if key in options:
                    self.fail(tok.start, f"TagDispatch argument {key!r} is given twice")
                self.i += 2
                if key in ("excludes", "stop_str"):
                    options[key] = self.words(str(key))
                else:
                    flag = self.expect(_NAME, "true or false")
                    if flag.value not in ("true", "false"):
                        self.fail(flag.start, f"{key} must be true or false")
                    options[key] = flag.value == "true"
            else:
                self.missing('a ("trigger", rule) pair or a named argument of TagDispatch')
            if self.peek().kind != _COMMA:
                break
            self.i += 1
        self.expect_rparen(open_tok)
        return TagDispatch(
            triggers=tuple(triggers),
            stop_eos=bool(options.get("stop_eos", True)),
            stop_str=options.get("stop_str", ()),  # type: ignore[arg-type]
            loop_after_dispatch=bool(options.get("loop_after_dispatch", True)),
            excludes=options.get("excludes", ()),  # type: ignore[arg-type]
        )


def parse_ebnf(text: str, root: str = "root") -> List[Rule]:
    """Parse EBNF ``text`` into rules, in the order they are defined.

    Checks syntax, duplicate definitions, undefined references and that ``root`` is defined;
    errors are ``GrammarError`` with the 1-based line and column and an excerpt. Further checks
    (rules that can never finish) are done by ``Grammar.from_ebnf``.

    Example:
        >>> parse_ebnf('root ::= "a" | b\\nb ::= [x-z]+')[0]
        Rule(name='root', body=Choice(items=(Literal(value=b'a'), RuleRef(name='b'))))
    """
    if not isinstance(text, str):
        raise TypeError(f"EBNF text must be a str, not {type(text).__name__}")
    try:
        return _Parser(text, root).parse()
    except RecursionError:  # the nesting limit assumes a shallow caller; a deep one runs out first
        raise GrammarError("the grammar nests too deeply for the Python stack here") from None
