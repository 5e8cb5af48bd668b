"""JSON text of Python values, with the standard library's C encoder made once.

Converters key schemas and sub-schemas by their JSON text, hundreds of times per tool
registry; ``json.dumps`` makes a new encoder at every call, most of the cost of encoding a
small schema.

Example:
    >>> compact = json_encoder(",", ":")
    >>> compact({"a": [1, "é"]}) == '{"a":[1,"\\\\u00e9"]}'
    True
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _json_str  # json.dumps of a str, unwrapped
from typing import Any, Callable

__all__ = ["json_encoder"]


def json_encoder(item_separator: str = ", ", key_separator: str = ": ") -> Callable[[Any], str]:
    """``json.dumps(x, separators=(item_separator, key_separator))``, its C encoder made once.
    Without the circular-reference check: a value that contains itself recurses until
    ``RecursionError`` (the converters refuse such documents first, or take that error as
    they took ``json.dumps``'s ``ValueError``)."""
    encoder = json.JSONEncoder(separators=(item_separator, key_separator))
    make = getattr(json.encoder, "c_make_encoder", None)
    try:  # the arguments JSONEncoder.iterencode passes it
        c_encode = make(
            None, encoder.default, _json_str, None, key_separator, item_separator, False, False, True
        )  # type: ignore[misc]
    except TypeError:  # no C accelerator (None), or one of another signature
        return encoder.encode
    return lambda x: "".join(c_encode(x, 0))
