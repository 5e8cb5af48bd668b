"""The ``format`` s of the JSON Schema specification that a regular grammar can assert (RFC
3339 dates and times, RFC 3986 URIs, RFC 1123 host names, e-mail, IP addresses, UUIDs, JSON
pointers), as regexes over decoded characters."""

from __future__ import annotations

from typing import Dict, Optional

from ..ir import (
    Expr,
)
from ..regex import parse_regex
from .patterns import _anchored_string

_YEAR = r"(?:[1-9]\d{3}|0[1-9]\d{2}|00[1-9]\d|000[1-9])"  # 0001-9999 (Python's date range)


_LEAP_YEAR = r"(?:\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"


_MONTH_DAY = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
    r"|02-(?:0[1-9]|1\d|2[0-8]))"
)


_DATE = rf"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"


_TIME = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)"


_DUR_TIME = r"T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)"


_DURATION = rf"P(?:(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:{_DUR_TIME})?|{_DUR_TIME}|\d+W)"


_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"


_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"


_H16 = r"[0-9A-Fa-f]{1,4}"


_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"


_IPV6 = (
    "(?:"
    + "|".join(
        [
            rf"(?:{_H16}:){{6}}{_LS32}",
            rf"::(?:{_H16}:){{5}}{_LS32}",
            rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
            rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
            rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
            rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
        ]
    )
    + ")"
)


_HEX = "[0-9A-Fa-f]"


_UUID = rf"{_HEX}{{8}}-(?:{_HEX}{{4}}-){{3}}{_HEX}{{12}}"


# RFC 1123 host names: labels of 1-63 letters, digits and inner hyphens, no "--" in positions
# 3-4 (RFC 5891 reserves them), at most 253 characters in all. The total is enforced by tiers
# (<= 3 labels of <= 63 characters, <= 8 of <= 30, <= 32 of <= 6), a safe subset; every tier is
# parsed in parallel (the language is ambiguous), so fewer tiers make faster masks.
def _label(max_len: int) -> str:
    """A host name label of 1..max_len (>= 5) characters without "--" at positions 3-4."""
    a, m = "[A-Za-z0-9]", "[A-Za-z0-9-]"
    return rf"{a}(?:{a}|{m}{a}|{m}{m}{a}|{m}(?:{a}{m}|-{a}){m}{{0,{max_len - 5}}}{a})?"


def _hostname_regex() -> str:
    tiers = []
    for count, length in ((3, 63), (8, 30), (32, 6)):
        lab = _label(length)
        tiers.append(rf"{lab}(?:\.{lab}){{0,{count - 1}}}")
    return "(?:" + "|".join(tiers) + ")"


_HOSTNAME = _hostname_regex()


_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"


_QUOTED_LOCAL = r'"(?:[ !#-\[\]-~]|\\[ -~])*"'


_EMAIL = rf"(?:{_ATEXT}+(?:\.{_ATEXT}+)*|{_QUOTED_LOCAL})@(?:{_HOSTNAME}|\[{_IPV4}\]|\[IPv6:{_IPV6}\])"


_PCT = r"%[0-9A-Fa-f]{2}"


_UNRESERVED_SUB = r"A-Za-z0-9\-._~!$&'()*+,;="


_PCHAR = rf"(?:[{_UNRESERVED_SUB}:@]|{_PCT})"


_SEGMENT_NZ_NC = rf"(?:[{_UNRESERVED_SUB}@]|{_PCT})+"


_AUTHORITY = (
    rf"(?:(?:[{_UNRESERVED_SUB}:]|{_PCT})*@)?"
    rf"(?:\[(?:{_IPV6}|[vV][0-9A-Fa-f]+\.[{_UNRESERVED_SUB}:]+)\]|(?:[{_UNRESERVED_SUB}]|{_PCT})*)"
    r"(?::\d*)?"
)


_PATH_ABEMPTY = rf"(?:/{_PCHAR}*)*"


_PATH_ABSOLUTE = rf"/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"


_PATH_ROOTLESS = rf"{_PCHAR}+(?:/{_PCHAR}*)*"


_PATH_NOSCHEME = rf"{_SEGMENT_NZ_NC}(?:/{_PCHAR}*)*"


_QUERY_FRAGMENT = rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"


_URI = (
    rf"[A-Za-z][A-Za-z0-9+\-.]*:(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_PATH_ROOTLESS}|)"
    + _QUERY_FRAGMENT
)


_RELATIVE_REF = rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_PATH_NOSCHEME}|){_QUERY_FRAGMENT}"


_JSON_POINTER = r"(?:/(?:[^/~]|~[01])*)*"

# RFC 6570 URI templates (all levels): literals (ASCII, the apostrophe included as the
# JSON-Schema-Test-Suite reads it; ucschar, iprivate, %-escapes) and expressions "{" [operator] varspec *("," varspec) "}".
_UCSCHAR = (
    "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    + "".join(f"{chr(plane << 16)}-{chr((plane << 16) | 0xFFFD)}" for plane in range(1, 14))
    + f"{chr(0xE1000)}-{chr(0xEFFFD)}"
)
_IPRIVATE = f"\ue000-\uf8ff{chr(0xF0000)}-{chr(0xFFFFD)}{chr(0x100000)}-{chr(0x10FFFD)}"
_TEMPLATE_LITERAL = rf"(?:[!#$&-;=?-\[\]_a-z~{_UCSCHAR}{_IPRIVATE}]|{_PCT})"
_VARCHAR = rf"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\*)?"
_URI_TEMPLATE = rf"(?:{_TEMPLATE_LITERAL}|\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\}})*"

_FORMAT_REGEX: Dict[str, str] = {
    "date": _DATE,
    "time": _TIME,
    "date-time": rf"{_DATE}[Tt]{_TIME}",
    "duration": _DURATION,
    "email": _EMAIL,
    "hostname": _HOSTNAME,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "uuid": _UUID,
    "uri": _URI,
    "uri-reference": f"(?:{_URI}|{_RELATIVE_REF})",
    "json-pointer": _JSON_POINTER,
    "uri-template": _URI_TEMPLATE,
    "relative-json-pointer": rf"(?:0|[1-9]\d*)(?:#|{_JSON_POINTER})",
    # Every URI is an IRI: ASCII-only IRIs are a sound subset.
    "iri": _URI,
    "iri-reference": f"(?:{_URI}|{_RELATIVE_REF})",
}


#: Formats the JSON Schema specification defines that :func:`format_string` does not support:
#: asserting them is beyond a regular grammar (``regex``) or not done yet. Other unknown
#: formats are annotations and constrain nothing.
UNSUPPORTED_SPEC_FORMATS = ("idn-email", "idn-hostname", "regex")


_format_cache: Dict[str, Expr] = {}


#: The formats :func:`format_string` supports.
SUPPORTED_FORMATS = tuple(sorted(_FORMAT_REGEX))

#: The JSON Schema keywords that constrain a string's characters, which one automaton enforces.
STRING_CONSTRAINTS = ("pattern", "format", "minLength", "maxLength")


def format_chars(name: str) -> Optional[Expr]:
    """Regex IR over decoded characters for format ``name``; None when it is not supported."""
    regex = _FORMAT_REGEX.get(name)
    return None if regex is None else parse_regex(regex)


def format_string(name: str) -> Optional[Expr]:
    """A quoted JSON string in format ``name``, or None for a format not supported.

    Each character may be spelled any way JSON allows. Sound (never accepts an invalid value)
    and exact except where noted:

    * ``date``, ``date-time``, ``time`` (RFC 3339): exact month lengths and leap years;
      years 0001-9999 (year 0000 rejected, as Python's ``date`` does); ``T``/``Z`` in either
      case; no leap seconds (``:60``) — as Python's ``rfc3339-validator``;
    * ``duration``: the RFC 3339 appendix A grammar (``P1Y2M``, ``PT1H``, ``P2W``);
    * ``email``: a practical subset of RFC 5321: a dot-atom or quoted (ASCII) local part (no
      length limits), ``@``, and a ``hostname`` (below), ``[IPv4]`` or ``[IPv6:...]``;
    * ``hostname``: RFC 1123 labels (1-63 chars, alphanumerics and inner hyphens, no ``--`` at
      positions 3-4, so no punycode ``xn--`` labels), no trailing dot, and a safe subset of the
      253-character limit (at most 3 labels of <= 63 characters, 8 of <= 30 or 32 of <= 6);
    * ``ipv4`` (dotted decimal, no leading zeros), ``ipv6`` (RFC 4291 text form, ``::``
      compression and embedded IPv4; no zone id), ``uuid`` (8-4-4-4-12 hex, either case): exact;
    * ``uri``, ``uri-reference``: the RFC 3986 grammar (ASCII only); ``iri``, ``iri-reference``:
      the same (ASCII IRIs only, a sound subset);
    * ``json-pointer`` (RFC 6901), ``relative-json-pointer``: exact;
    * ``uri-template``: the RFC 6570 grammar (all four levels): exact.

    Example:
        >>> format_string("regex") is None
        True
    """
    regex = _FORMAT_REGEX.get(name)
    if regex is None:
        return None
    expr = _format_cache.get(name)
    if expr is None:
        expr = _format_cache[name] = _anchored_string(regex)
    return expr
