"""``Vocabulary.from_huggingface`` on tokenizers whose attributes fail (issue 38): every failure
is a ``VocabularyError`` naming the attribute, never the tokenizer's own exception.

Example:
    python -m pytest -q tests/engine/test_vocabulary_reliability.py -p no:cacheprovider
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict

import pytest

from agentgrammar import Vocabulary, VocabularyError

_VOCAB: Dict[str, int] = {"a": 0, "b": 1, "ab": 2, "</s>": 3, "<x>": 4}


class _Added:
    special = True


def _tokenizer(broken: str) -> Any:
    """A tokenizer whose attribute ``broken`` raises RuntimeError when read (or called)."""

    def fail(self: Any) -> Any:
        raise RuntimeError(f"{broken} is broken")

    attrs: Dict[str, Any] = {
        "get_vocab": lambda self: dict(_VOCAB),
        "eos_token_id": 3,
        "added_tokens_decoder": {4: _Added()},
    }
    if broken == "sp_model.eos_id":
        attrs["eos_token_id"] = None
        attrs["sp_model"] = type("SP", (), {"eos_id": fail})()
    elif broken == "added_tokens_decoder.special":
        attrs["added_tokens_decoder"] = {4: type("Bad", (), {"special": property(fail)})()}
    elif broken == "get_vocab.items":
        mapping = type(
            "BadMap", (Mapping,), {"__iter__": fail, "__len__": lambda self: 5, "__getitem__": fail}
        )
        attrs["get_vocab"] = lambda self: mapping()
    else:
        attrs[broken] = property(fail)
    return type("BrokenTokenizer", (), attrs)()


@pytest.mark.parametrize(
    "broken, named",
    [
        ("eos_token_id", "BrokenTokenizer.eos_token_id"),
        ("added_tokens_decoder", "BrokenTokenizer.added_tokens_decoder"),
        ("added_tokens_decoder.special", "BrokenTokenizer.added_tokens_decoder"),
        ("backend_tokenizer", "BrokenTokenizer.backend_tokenizer"),
        ("sp_model", "BrokenTokenizer.sp_model"),
        ("sp_model.eos_id", "BrokenTokenizer.sp_model.eos_id"),
        ("get_vocab", "BrokenTokenizer.get_vocab"),
        ("get_vocab.items", "the vocabulary of BrokenTokenizer"),
    ],
)
def test_a_failing_tokenizer_attribute_is_a_vocabulary_error_naming_it(broken: str, named: str) -> None:
    with pytest.raises(VocabularyError, match=named.replace(".", r"\.")) as info:
        Vocabulary.from_huggingface(_tokenizer(broken))
    assert "RuntimeError" in str(info.value) and "is broken" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_sound_tokenizer_still_loads() -> None:
    vocab = Vocabulary.from_huggingface(_tokenizer("nothing"))
    assert vocab.stop_token_ids == (3,) and vocab.special_token_ids == (4,)
