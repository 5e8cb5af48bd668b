"""A scripted causal LM for any tokenizer: a tiny random ``LlamaForCausalLM`` whose logits play a
fixed token script through ``generate()``, so the grammar, the logits processor and the agent
loop run for real, with real vocabularies (151k / 200k tokens), and deterministically.

For the k-th ``generate()`` call the model strongly prefers the k-th script's tokens in order
(a bonus of ``SCRIPT_BONUS`` on the scripted token's logit, far above the random logits); once
that script is played out it prefers its end token. Where a logits processor masks the scripted
token off, the best allowed token wins instead (and the script still moves on by position), so a
test sees exactly what the grammar let through. Every prompt is recorded, as ids and as text.

Example (in a test)::

    from tests.kit import canonical_turn, kit_tokenizer, token_ids, KIT_CASES
    from tests.scripted_model import scripted_model

    case = KIT_CASES[0]
    tok = kit_tokenizer(case.folder)
    prompt, turn = canonical_turn(case)
    model = scripted_model(tok, [tok.convert_tokens_to_ids("<|im_end|>")])
    model.script([token_ids(case, turn)])
    out = model.generate(torch.tensor([token_ids(case, prompt)]), max_new_tokens=64, do_sample=False)
    assert model.outputs[0] == token_ids(case, turn)
    assert model.prompt_texts[0] == prompt
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

__all__ = ["SCRIPT_BONUS", "ScriptedLM", "scripted_model"]

SCRIPT_BONUS = 100.0
"""Added to the scripted token's logit (a tiny random model's logits are within about +-1)."""


class ScriptedLM(transformers.LlamaForCausalLM):
    """A tiny random Llama that plays ``script(turns)``: ``turns[k]`` is the list of token ids the
    k-th ``generate()`` call should write, in order. Past the end of its script (or for calls
    beyond ``len(turns)``) it prefers ``end_token_id``.

    Recorded per ``generate()`` call: ``prompts`` (the prompt's ids, row 0), ``prompt_texts``
    (the same, decoded with ``skip_special_tokens=False``) and ``outputs`` (the new token ids of
    row 0, as generate returned them, padding after an early stop removed). Every row of a
    batch gets the same bonus; only row 0 is recorded (the agent generates one row).

    Example (with the kit)::

        model = scripted_model(tok, [tok.eos_token_id]).script([[1, 2, 3], [4]])
    """

    tokenizer: Any = None
    end_token_id: int = 0
    pad_token_id: Optional[int] = None

    def script(self, turns: Sequence[Sequence[int]], *, end_token_id: Optional[int] = None) -> "ScriptedLM":
        """Set the token script (one list of ids per ``generate()`` call) and clear the records;
        ``end_token_id`` replaces the preferred token after a played-out script."""
        vocab = self.config.vocab_size
        self.turns: List[List[int]] = []
        for k, turn in enumerate(turns):
            ids = [int(t) for t in turn]
            bad = [t for t in ids if not 0 <= t < vocab]
            if bad:
                raise ValueError(
                    f"turn {k} of the script has token ids outside the vocabulary (size {vocab}): {bad[:5]}"
                )
            self.turns.append(ids)
        if end_token_id is not None:
            self.end_token_id = int(end_token_id)
        self.prompts: List[List[int]] = []
        self.prompt_texts: List[str] = []
        self.outputs: List[List[int]] = []
        self._call = -1
        self._prompt_len = 0
        return self

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        ids = kwargs.get("input_ids", kwargs.get("inputs", args[0] if args else None))
        if ids is None:
            raise TypeError("ScriptedLM.generate needs the prompt's input_ids")
        self._call += 1
        self._prompt_len = int(ids.shape[-1])
        row = [int(t) for t in ids[0]]
        self.prompts.append(row)
        self.prompt_texts.append(self.tokenizer.decode(row, skip_special_tokens=False))
        out = super().generate(*args, **kwargs)
        sequences = out if isinstance(out, torch.Tensor) else out.sequences
        new = [int(t) for t in sequences[0, self._prompt_len :]]
        # generate pads rows that stopped early; the scripted row is row 0, which stops last
        # only in a batch, so trailing padding after a stop token is dropped
        stops = set(self.generation_config.eos_token_id or [])
        for i, t in enumerate(new):
            if t in stops:
                new = new[: i + 1]
                break
        self.outputs.append(new)
        return out

    def forward(self, input_ids: Any = None, **kwargs: Any) -> Any:
        # the index of the token this step predicts: with the cache on, the cache holds what
        # came before (get_seq_length() is read before the forward pass extends it)
        cache = kwargs.get("past_key_values", kwargs.get("cache"))
        past = int(cache.get_seq_length()) if cache is not None and hasattr(cache, "get_seq_length") else 0
        step = past + int(input_ids.shape[-1]) - self._prompt_len
        out = super().forward(input_ids=input_ids, **kwargs)
        script = self.turns[self._call] if 0 <= self._call < len(self.turns) else []
        target = script[step] if 0 <= step < len(script) else self.end_token_id
        out.logits[:, -1, target] += SCRIPT_BONUS
        return out


def scripted_model(
    tokenizer: Any,
    eos_token_ids: Sequence[int],
    *,
    end_token_id: Optional[int] = None,
    hidden_size: int = 16,
    max_positions: int = 8192,
    seed: int = 0,
) -> ScriptedLM:
    """A ``ScriptedLM`` over ``tokenizer``'s full vocabulary (``len(tokenizer)``, added tokens
    included), one layer of ``hidden_size``, with an empty script. ``generate()`` stops on
    ``eos_token_ids`` and pads with the tokenizer's pad token (else the first stop token), so it
    warns about neither; the cache is on, decoding greedy, ``max_new_tokens`` 256 by default. ``end_token_id`` (default: the first stop token) is
    what a played-out script prefers.

    Example (with the kit)::

        model = scripted_model(tok, [tok.convert_tokens_to_ids("<|im_end|>")])
        model.script([tok.encode("Hi!<|im_end|>", add_special_tokens=False)])
    """
    eos = [int(t) for t in eos_token_ids]
    if not eos:
        raise ValueError("scripted_model needs at least one stop token id")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,  # one 200k x 16 matrix, not two
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=eos[0],
        pad_token_id=pad,
    )
    torch.manual_seed(seed)
    model = ScriptedLM(config).eval()
    model.tokenizer = tokenizer
    gc = model.generation_config
    gc.eos_token_id = eos
    gc.pad_token_id = pad
    gc.bos_token_id = tokenizer.bos_token_id
    gc.use_cache = True
    gc.do_sample = False
    # without it, generate() would stop at max_length 20 (prompts here are hundreds of tokens)
    gc.max_new_tokens = 256
    model.script([], end_token_id=end_token_id if end_token_id is not None else eos[0])
    return model
