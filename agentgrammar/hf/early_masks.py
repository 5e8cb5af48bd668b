"""Masks computed while the model runs its forward pass: a ``generate()`` stopping criterion.

``generate()`` calls its stopping criteria right after sampling a step's tokens, before the next
forward pass; :class:`EarlyMasks` starts the processor's next step there, on a worker thread (the
C engine releases the GIL while it fills masks), so a step waits only for what is left of the
mask work when the forward pass ends. :func:`early_masks_pay` decides, step by step, whether
that pays.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # pragma: no cover - the processor imports this module
    from .logits_processor import GrammarLogitsProcessor

__all__ = ["EARLY_MIN_FORWARD_S", "EARLY_MIN_MASK_S", "EarlyMasks", "early_masks_pay"]

#: Early masks start a step's mask work on a worker thread only where it is worth the hand-off
#: (waking the thread, copying ``input_ids``, the GIL passed back and forth: tens of
#: microseconds) and the forward pass is long enough to hide it. docs/benchmarks.md has the
#: measurements behind these values.
EARLY_MIN_MASK_S = 100e-6
EARLY_MIN_FORWARD_S = 2e-3
#: weight of the newest sample in the running means of the forward pass and the mask work
_EMA_WEIGHT = 0.25


def early_masks_pay(forward_s: Optional[float], mask_s: Optional[float], *, spare_cpu: bool = True) -> bool:
    """Whether computing masks during the forward pass should pay, given the running means of
    the forward pass (``forward_s``: from the end of a step to the next processor call) and of
    the processor's mask work (``mask_s``: the CPU time of accepting the new tokens and filling
    the masks), and whether a CPU is left to the worker thread (``spare_cpu``: False where the
    model runs on the CPU with as many torch threads as the process has CPUs, so the worker
    would slow the forward pass by what it hides).

    Example:
        >>> early_masks_pay(0.040, 0.0004)   # a 40 ms forward pass, 0.4 ms of masks
        True
        >>> early_masks_pay(0.040, 0.00002)  # masks from the cache: not worth a thread hand-off
        False
        >>> early_masks_pay(0.001, 0.0004)   # a tiny model: too short a forward pass to hide it
        False
        >>> early_masks_pay(0.040, 0.0004, spare_cpu=False)  # every CPU runs the forward pass
        False
    """
    if forward_s is None or mask_s is None or not spare_cpu:
        return False
    return mask_s >= EARLY_MIN_MASK_S and forward_s >= max(EARLY_MIN_FORWARD_S, 2 * mask_s)


def ema(mean: Optional[float], sample: float) -> float:
    """``mean`` moved toward ``sample`` (``sample`` itself when there is no mean yet)."""
    return sample if mean is None else mean + _EMA_WEIGHT * (sample - mean)


class EarlyMasks:
    """A ``generate()`` stopping criterion that never stops: called after each step's tokens
    are sampled, before the next forward pass, it starts the processor's next masks on a worker
    thread (the C engine releases the GIL), so the mask work overlaps the forward pass. Get one
    from :attr:`GrammarLogitsProcessor.early_masks`.

    ``mode="auto"`` (the default) starts a step's masks early only where
    :func:`early_masks_pay` says so, from the processor's running means of its forward passes
    and mask work (measured over the steps so far, kept across ``reset()``); ``"always"``
    starts every step's. ``prefetched`` counts the steps it started early.

    Example:
        >>> import torch
        >>> from agentgrammar import Compiler, Grammar, Vocabulary
        >>> from agentgrammar.hf import EarlyMasks, GrammarLogitsProcessor
        >>> vocab = Vocabulary(["y", "es", "no", "</s>"], stop_token_ids=[3])
        >>> processor = GrammarLogitsProcessor(Compiler(vocab).compile(Grammar.from_ebnf('root ::= "yes"')))
        >>> early = EarlyMasks(processor, mode="always")
        >>> _ = processor(torch.tensor([[2]]), torch.zeros(1, 4))       # first step
        >>> early(torch.tensor([[2, 0]]), None).tolist()  # "y" sampled: never stops
        [False]
        >>> scores = processor(torch.tensor([[2, 0]]), torch.zeros(1, 4))  # the masks were ready
        >>> torch.isfinite(scores[0]).nonzero().flatten().tolist(), early.prefetched
        ([1], 1)
    """

    def __init__(self, processor: "GrammarLogitsProcessor", mode: str = "auto") -> None:
        if mode not in ("auto", "always"):
            raise ValueError(f"mode must be 'auto' or 'always', got {mode!r}")
        self.processor = processor
        self.mode = mode
        self.prefetched = 0

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        p = self.processor
        pays = early_masks_pay(p._forward_s, p._mask_s, spare_cpu=p._spare_cpu)
        if (self.mode == "always" or pays) and p._prefetch(input_ids):
            self.prefetched += 1
        p._step_ended_at = time.perf_counter()
        torch = p._torch
        return torch.zeros(int(input_ids.shape[0]), dtype=torch.bool, device=input_ids.device)
