"""The ``agentgrammar demo``: demo tools, a tiny model trained on first use, and the live view.

* ``tools``: the demo ``ToolRegistry`` (weather, arithmetic, currency conversion);
* ``corpus``: synthetic agent transcripts of those tools in any preset format;
* ``tokenizer``: a small byte-level BPE tokenizer trained on that corpus;
* ``model``: a tiny Llama trained on it (well under a minute on a laptop CPU), cached under the
  user's cache directory;
* ``runner``: running the agent on N prompts with and without the grammar, and the figures;
* ``view``: the live rich view and the summary table; ``app``: the ``agentgrammar demo`` command.

Example:
    >>> from agentgrammar.demo import demo_registry
    >>> demo_registry().names
    ['get_weather', 'calculate', 'convert_currency']
"""

from .tools import demo_registry

__all__ = ["demo_registry"]
