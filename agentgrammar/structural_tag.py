"""The structural-tag models, under their public name: ``agentgrammar.structural_tag.Tag`` and
the rest are those of :mod:`agentgrammar.grammar.structural_tag.models`.

Example:
    >>> from agentgrammar import structural_tag as st
    >>> st.ConstString(value="hi").model_dump()
    {'type': 'const_string', 'value': 'hi'}
"""

from .grammar.structural_tag.models import *  # noqa: F403
from .grammar.structural_tag.models import __all__  # noqa: F401
