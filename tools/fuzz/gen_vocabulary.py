"""Generator of vocabularies: token lists with odd pieces and bad arguments, fake HF tokenizers.

>>> import random
>>> gen_vocabulary_input(random.Random(0))["kind"] in ("plain", "hf")
True
"""

from __future__ import annotations

import random
from typing import Any, Dict

from . import rand
from .rand import rand_text

VOCAB_PIECES = [
    "",
    "a",
    "b",
    "ab",
    "<0x0A>",
    "<0x00>",
    "<0xFF>",
    "<0xZZ>",
    "<0x0>",
    "▁",
    "▁a",
    "Ġ",
    "Ġa",
    "Ċ",
    "</s>",
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "\ud800",
    "😀",
    "\x00",
    "{",
    '"',
    b"",
    b"\xff",
    b"\xc3",
    b"a",
    b"\x00\x01",
]


def gen_ids(rng: random.Random, n: int) -> Any:
    r = rng.random()
    if r < 0.3:
        return None
    if r < 0.5:
        return []
    if r < 0.8:
        return [rng.randint(0, max(0, n - 1)) for _ in range(rng.randint(1, 3))]
    return rng.choice(
        [[-1], [n], [n + 5], [True], ["1"], [1.0], 0, "0", [0, 0], [[0]], (0,), {0}, [None], [2**70]]
    )


def gen_vocabulary_input(rng: random.Random) -> Dict[str, Any]:
    if rng.random() < 0.65:
        n = rng.choice([0, 1, 2, 5, 20, 300])
        tokens: Any = [rng.choice(VOCAB_PIECES) for _ in range(n)]
        if rng.random() < 0.1:
            tokens = rng.choice(
                ["abc", b"abc", None, 5, [1, 2], [None], ["a", 3], [bytearray(b"a")], iter(["a"])]
            )
            if not isinstance(tokens, (str, bytes, type(None), int, list)):
                tokens = ["a"]
        elif rng.random() < 0.05 and not rand.TAME:
            tokens = [bytes([i % 256]) * (1 + i // 256) for i in range(rng.choice([70_000, 200_000]))]
        kwargs: Dict[str, Any] = {}
        if rng.random() < 0.5:
            kwargs["vocab_type"] = rng.choice(["raw", "byte_level", "byte_fallback", "bogus", None])
        if rng.random() < 0.4:
            kwargs["vocab_size"] = rng.choice(
                [None, 0, -1, n, n + 1, n + 100, True, 1.5, "10", 2**31 - 1, 2**31, 2**20]
            )
        kwargs["stop_token_ids"] = gen_ids(rng, n if isinstance(tokens, list) else 3)
        if rng.random() < 0.4:
            kwargs["special_token_ids"] = gen_ids(rng, n if isinstance(tokens, list) else 3)
        return {"kind": "plain", "tokens": tokens, "kwargs": kwargs}
    # a fake Hugging Face tokenizer
    r = rng.random()
    n = rng.choice([1, 3, 10, 300])
    if r < 0.5:
        vocab: Any = {rng.choice(VOCAB_PIECES[:20]) + str(i): i for i in range(n)}
        op = rng.randrange(8)
        if op == 0:
            vocab[rand_text(rng, 2)] = rng.choice([-1, 2**31, 2**40, n * 1000, True, 1.5, "3", None])
        elif op == 1:
            vocab["dup"] = 0
        elif op == 2:
            vocab = {k: v + rng.choice([1, 1000, 70_000]) for k, v in vocab.items()}
        elif op == 3:
            vocab = {f"<0x{b:02X}>": b for b in range(256)}
        elif op == 4:
            vocab = {bytes([b]): b for b in range(rng.randint(1, 256))}
        elif op == 5:
            vocab = {chr(0x100 + i) if i < 200 else chr(0x21 + i % 90): i for i in range(n)}
    else:
        vocab = rng.choice(["raise", None, [], "abc", {}, {1: 0}, {None: 0}, {"a": 0, b"a": 1}, 5, {"a": -1}])
    spec = {
        "vocab": vocab,
        "eos": rng.choice([None, 0, 1, -1, 2**40, [0, 1], "x", True, (0,), [None]]),
        "added": rng.choice([None, "raise", {0: True}, {0: "special"}, {"x": True}, {10**9: True}, [1]]),
        "backend": rng.choice([None, "raise", "byte_level", "garbage"]),
        "has_get_vocab": rng.random() < 0.95,
        "sp_model": rng.random() < 0.1,
    }
    kwargs = {}
    if rng.random() < 0.3:
        kwargs["vocab_size"] = rng.choice([None, 0, -5, 1, n, n + 3, True, 2**31])
    if rng.random() < 0.3:
        kwargs["stop_token_ids"] = gen_ids(rng, n)
    return {"kind": "hf", "spec": spec, "kwargs": kwargs}
