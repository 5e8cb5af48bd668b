"""The cached mask of a matcher next to the uncached walk's: the oracle the mask-cache tests share."""

from __future__ import annotations

import os
from typing import Set, Tuple

import numpy as np
from hypothesis import HealthCheck, settings

from agentgrammar import Matcher, allocate_token_bitmask

# Property tests of the mask cache: AG_PROPERTY_EXAMPLES examples each (40 by default).
PROPERTY_SETTINGS = settings(
    deadline=None,
    max_examples=int(os.environ.get("AG_PROPERTY_EXAMPLES", "40")),
    suppress_health_check=[HealthCheck.too_slow],
)


def cached_and_direct(matcher: Matcher, vocab_size: int) -> Tuple[np.ndarray, np.ndarray]:
    """(the mask through the per-state cache, the mask of the direct walk), as copies."""
    cached = allocate_token_bitmask(1, vocab_size, backend="numpy")
    matcher.fill_next_token_bitmask(cached)
    direct = allocate_token_bitmask(1, vocab_size, backend="numpy")
    matcher._fill_next_token_bitmask_direct(direct)
    return cached.copy(), direct.copy()


def allowed_checked(matcher: Matcher, vocab_size: int) -> Set[int]:
    """The token ids the cached mask allows, after asserting it equals the direct walk's."""
    cached, direct = cached_and_direct(matcher, vocab_size)
    np.testing.assert_array_equal(cached, direct)
    bits = np.unpackbits(cached.view(np.uint8), bitorder="little")[:vocab_size]
    return set(np.flatnonzero(bits).tolist())
