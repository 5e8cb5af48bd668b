"""Vocabulary: construction, kinds, padding, native arguments, Hugging Face tokenizers, errors."""

from __future__ import annotations

import types
import warnings
from array import array

import pytest

from agentgrammar import Compiler, Grammar, Matcher
from agentgrammar.engine.vocabulary import TOKEN_NORMAL, TOKEN_SPECIAL, TOKEN_STOP, Vocabulary
from agentgrammar.errors import TokenIdError, VocabularyError
from tests.hf_tokenizers import (
    llama32_tokenizer,
    llama32_tokenizer_dir,
    tiny_byte_level_tokenizer,
    tiny_sentencepiece_tokenizer,
    tiny_wordlevel_tokenizer,
)

LLAMA32_STOPS = (128001, 128009)  # <|end_of_text|>, <|eot_id|>: what xgrammar detects too


@pytest.fixture(scope="module")
def llama_vocab() -> Vocabulary:
    return Vocabulary.from_huggingface(llama32_tokenizer())


# ---- the Llama-3.2 tokenizer --------------------------------------------------------------------


def test_llama32_bytes_equal_xgrammar_for_every_token(llama_vocab):
    """Acceptance: our bytes for every id are xgrammar's decoded_vocab."""
    xgr = pytest.importorskip("xgrammar")
    info = xgr.TokenizerInfo.from_huggingface(llama32_tokenizer())
    expected = info.decoded_vocab
    assert llama_vocab.num_tokens == len(expected) == 128257
    assert llama_vocab.vocab_size == info.vocab_size
    mismatches = [i for i, (a, b) in enumerate(zip(llama_vocab.token_bytes, expected)) if a != b]
    assert mismatches == []
    assert info.vocab_type == xgr.VocabType.BYTE_LEVEL and llama_vocab.vocab_type == "byte_level"


def test_llama32_stop_tokens_match_xgrammar_autodetection(llama_vocab):
    assert llama_vocab.stop_token_ids == LLAMA32_STOPS
    xgr = pytest.importorskip("xgrammar")
    import transformers

    # Without an EOS in the tokenizer xgrammar auto-detects; it finds the same two.
    bare = transformers.PreTrainedTokenizerFast(tokenizer_file=f"{llama32_tokenizer_dir()}/tokenizer.json")
    assert bare.eos_token_id is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tuple(xgr.TokenizerInfo.from_huggingface(bare).stop_token_ids) == LLAMA32_STOPS
    assert Vocabulary.from_huggingface(bare).stop_token_ids == LLAMA32_STOPS


def test_llama32_kinds(llama_vocab):
    kinds = llama_vocab.token_kinds()
    assert len(kinds) == llama_vocab.num_tokens
    assert set(kinds[:128000]) == {TOKEN_NORMAL}  # the BPE vocabulary is all ordinary text
    for i in LLAMA32_STOPS:
        assert kinds[i] == TOKEN_STOP
    # Unlike xgrammar 0.2.9 (no special tokens), the added special tokens are special.
    special = set(llama_vocab.special_token_ids)
    assert special == set(range(128000, 128257)) - set(LLAMA32_STOPS)
    tb = llama_vocab.token_bytes
    for name in (
        b"<|begin_of_text|>",
        b"<|start_header_id|>",
        b"<|reserved_special_token_0|>",
        b"<|eom_id|>",
        b"<|python_tag|>",
        b"<|image|>",
    ):
        assert kinds[tb.index(name)] == TOKEN_SPECIAL, name


def test_llama32_round_trips_text(llama_vocab):
    tok = llama32_tokenizer()
    text = 'Héllo wörld 中文 🦙\n\t{"name": "get_weather", "arguments": {"city": "Zürich"}}  \r\n end'
    ids = tok.encode(text, add_special_tokens=False)
    assert llama_vocab.decode(ids) == text.encode()
    ids = tok.encode("hi<|eot_id|>", add_special_tokens=False)
    assert llama_vocab.decode(ids) == b"hi<|eot_id|>"
    assert llama_vocab.decode(ids, skip_special_tokens=True) == b"hi"


def test_llama32_model_vocab_size_may_cut_the_image_token():
    # Llama-3.2 text models have vocab_size 128256: the added <|image|> (128256) is left out.
    v = Vocabulary.from_huggingface(llama32_tokenizer(), vocab_size=128256)
    assert v.num_tokens == v.vocab_size == 128256
    assert v.stop_token_ids == LLAMA32_STOPS
    with pytest.raises(VocabularyError, match="would cut regular tokens"):
        Vocabulary.from_huggingface(llama32_tokenizer(), vocab_size=1000)


def test_llama32_padding():
    v = Vocabulary.from_huggingface(llama32_tokenizer(), vocab_size=128320)
    assert (v.num_tokens, v.vocab_size) == (128257, 128320)
    _blob, offsets, kinds, n_tokens, mask_size = v._native_args()
    assert (n_tokens, mask_size, len(offsets), len(kinds)) == (128257, 128320, 128258, 128257)


def test_llama32_explicit_stop_tokens():
    v = Vocabulary.from_huggingface(llama32_tokenizer(), stop_token_ids=[128008, 128009])
    assert v.stop_token_ids == (128008, 128009)
    assert v.token_kinds()[128001] == TOKEN_SPECIAL  # an added special token, no longer a stop
    with pytest.raises(VocabularyError, match="stop_token_ids: token id 999999 is out of range"):
        Vocabulary.from_huggingface(llama32_tokenizer(), stop_token_ids=[999999])


def test_llama32_from_huggingface_is_repeatable():
    # (its speed is a benchmark figure, not a unit-test assertion)
    tok = llama32_tokenizer()
    a, b = Vocabulary.from_huggingface(tok), Vocabulary.from_huggingface(tok)
    assert a.token_bytes == b.token_bytes and a.stop_token_ids == b.stop_token_ids


# ---- tiny tokenizers ----------------------------------------------------------------------------


def test_sentencepiece_byte_fallback_tokenizer():
    tok = tiny_sentencepiece_tokenizer()
    v = Vocabulary.from_huggingface(tok)
    assert v.vocab_type == "byte_fallback"
    assert v.stop_token_ids == (2,)  # </s>
    assert v.special_token_ids == (0, 1)  # <unk>, <s>
    tb = v.token_bytes
    assert tb[3 + 0x0A] == b"\n" and tb[3 + 0xE4] == b"\xe4"
    vocab = tok.get_vocab()
    assert tb[vocab["▁hello"]] == b" hello" and tb[vocab["▁"]] == b" "
    text = "hello world\n中"
    ids = tok.encode(text, add_special_tokens=False)
    assert v.decode(ids) == b" " + text.encode()  # SentencePiece adds the prefix space


def test_byte_level_tokenizer_added_tokens():
    tok = tiny_byte_level_tokenizer()
    v = Vocabulary.from_huggingface(tok)
    vocab = tok.get_vocab()
    assert v.vocab_type == "byte_level"
    assert v.stop_token_ids == (vocab["<|endoftext|>"],)
    assert v.special_token_ids == (vocab["<|im_start|>"],)
    assert v.token_kinds()[vocab["<tool_call>"]] == TOKEN_NORMAL  # added but not special: text
    assert v.token_bytes[vocab["<tool_call>"]] == b"<tool_call>"
    text = "hi there\n\n<tool_call> é"
    assert v.decode(tok.encode(text, add_special_tokens=False)) == text.encode()


def test_raw_tokenizer_without_eos_warns():
    with pytest.warns(UserWarning, match="no stop token"):
        v = Vocabulary.from_huggingface(tiny_wordlevel_tokenizer())
    assert v.vocab_type == "raw" and v.stop_token_ids == ()
    assert v.token_bytes == (b"[UNK]", b"hello", "wörld".encode(), b" ")


def test_holes_are_empty_and_special():
    tok = types.SimpleNamespace(get_vocab=lambda: {"a": 0, "</s>": 3, "c": 2}, eos_token_id=3)
    v = Vocabulary.from_huggingface(tok)
    assert v.token_bytes == (b"a", b"", b"c", b"</s>")
    assert v.token_kinds() == bytes([TOKEN_NORMAL, TOKEN_SPECIAL, TOKEN_NORMAL, TOKEN_STOP])


def test_a_plain_token_spelling_an_end_token_is_text_when_the_end_tokens_are_added():
    # Qwen2/3 have "</s>" among their merges (id 128247) and end with the added <|im_end|>.
    added = {2: types.SimpleNamespace(special=True), 3: types.SimpleNamespace(special=True)}
    vocab = {"a": 0, "</s>": 1, "<|im_end|>": 2, "<|endoftext|>": 3}
    for eos in (2, None):
        tok = types.SimpleNamespace(get_vocab=lambda: vocab, added_tokens_decoder=added, eos_token_id=eos)
        v = Vocabulary.from_huggingface(tok)
        assert v.stop_token_ids == (2, 3)
        assert v.token_kinds()[1] == TOKEN_NORMAL and v.token_bytes[1] == b"</s>"


def test_tiktoken_style_bytes_vocabulary():
    tok = types.SimpleNamespace(get_vocab=lambda: {b"\xe4\xb8": 0, b" a": 1, b"<|endoftext|>": 2})
    v = Vocabulary.from_huggingface(tok)
    assert v.vocab_type == "raw"
    assert v.token_bytes == (b"\xe4\xb8", b" a", b"<|endoftext|>")
    assert v.stop_token_ids == (2,)


def test_slow_sentencepiece_tokenizer_eos_from_the_model():
    sp = types.SimpleNamespace(eos_id=lambda: 2)
    tok = types.SimpleNamespace(
        sp_model=sp,
        eos_token_id=None,
        get_vocab=lambda: {"<unk>": 0, "<s>": 1, "<|eos|>": 2, "▁a": 3, "<0x0A>": 4},
    )
    v = Vocabulary.from_huggingface(tok)
    assert v.vocab_type == "byte_fallback"
    assert v.token_bytes[3:] == (b" a", b"\n")
    assert v.stop_token_ids == (2,)


def test_from_huggingface_errors():
    with pytest.raises(VocabularyError, match="object has no vocabulary"):
        Vocabulary.from_huggingface(object())

    class Broken:
        def get_vocab(self):
            raise OSError("missing vocab file")

    with pytest.raises(VocabularyError, match="cannot read the vocabulary of Broken: OSError: missing vocab"):
        Vocabulary.from_huggingface(Broken())
    with pytest.raises(VocabularyError, match="gave no tokens"):
        Vocabulary.from_huggingface(types.SimpleNamespace(get_vocab=dict))
    with pytest.raises(VocabularyError, match="not non-negative ints"):
        Vocabulary.from_huggingface(types.SimpleNamespace(get_vocab=lambda: {"a": -1}))
    with pytest.raises(VocabularyError, match="not non-negative ints"):
        Vocabulary.from_huggingface(types.SimpleNamespace(get_vocab=lambda: {"a": "0"}))
    with pytest.raises(VocabularyError, match="ids up to"):
        Vocabulary.from_huggingface(types.SimpleNamespace(get_vocab=lambda: {"a": 10**9}))
    with pytest.raises(VocabularyError, match="vocab_size must be a positive int"):
        Vocabulary.from_huggingface(tiny_byte_level_tokenizer(), vocab_size=0)


# ---- the constructor ----------------------------------------------------------------------------


def test_constructor_decodes_str_and_keeps_bytes():
    v = Vocabulary(["Ġa", b"\xff", "Ċ", "</s>"], vocab_type="byte_level")
    assert v.token_bytes == (b" a", b"\xff", b"\n", b"</s>")
    assert v.stop_token_ids == (3,)  # found by name
    assert v.num_tokens == v.vocab_size == len(v) == 4
    assert isinstance(v.token_bytes, tuple)
    assert "byte_level" in repr(v) and "num_tokens=4" in repr(v)


def test_constructor_byte_fallback_and_raw():
    v = Vocabulary(["<0x0A>", "▁hello", "<s>", "</s>"], vocab_type="byte_fallback", special_token_ids=[2])
    assert v.token_bytes == (b"\n", b" hello", b"<s>", b"</s>")
    assert v.token_kinds() == bytes([0, 0, 1, 2])
    raw = Vocabulary(["▁hello", "<0x0A>"], vocab_type="raw", stop_token_ids=[])
    assert raw.token_bytes == ("▁hello".encode(), b"<0x0A>") and raw.stop_token_ids == ()


def test_kinds_stop_wins_and_empty_is_special():
    v = Vocabulary(["a", "", "b", "<|im_end|>", ""], special_token_ids=[2, 4], stop_token_ids=[3, 4])
    assert v.token_kinds() == bytes([TOKEN_NORMAL, TOKEN_SPECIAL, TOKEN_SPECIAL, TOKEN_STOP, TOKEN_STOP])
    assert v.special_token_ids == (1, 2) and v.stop_token_ids == (3, 4)


def test_well_known_stop_tokens_and_harmony_end():
    v = Vocabulary(["x", "<|im_end|>", "<|endoftext|>", "<|end|>"])
    assert v.stop_token_ids == (1, 2, 3)
    # gpt-oss: <|end|> ends one message, <|return|> / <|call|> end the generation
    v = Vocabulary(["x", "<|end|>", "<|return|>", "<|call|>", "<|endoftext|>"])
    assert v.stop_token_ids == (2, 3, 4)
    # <|eom_id|> is not a default stop (as in xgrammar); pass it explicitly when a format needs it
    v = Vocabulary(["x", "<|eom_id|>", "<|eot_id|>"])
    assert v.stop_token_ids == (2,)


def test_no_stop_token_warns_unless_explicitly_empty():
    with pytest.warns(UserWarning, match="no stop token"):
        Vocabulary(["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Vocabulary(["a", "b"], stop_token_ids=[]).stop_token_ids == ()


def test_padding_vocab_size():
    v = Vocabulary(["a", "bc", "</s>"], vocab_size=64)
    assert (v.num_tokens, v.vocab_size) == (3, 64)
    assert len(v.token_kinds()) == 3
    with pytest.raises(TokenIdError, match="token id 5 is out of range"):
        v.decode([0, 5])
    with pytest.raises(TokenIdError):
        v.decode([-1])


def test_native_args():
    v = Vocabulary(["ab", "", "Ġc", "</s>"], vocab_type="byte_level", vocab_size=8)
    blob, offsets, kinds, n_tokens, mask_size = v._native_args()
    assert isinstance(blob, bytes) and isinstance(offsets, array) and offsets.typecode == "I"
    assert offsets.itemsize == 4 and isinstance(kinds, bytes)
    assert (n_tokens, mask_size) == (4, 8)
    assert list(offsets) == [0, 2, 2, 4, 8] and blob == b"ab c</s>"
    assert [blob[offsets[i] : offsets[i + 1]] for i in range(n_tokens)] == list(v.token_bytes)
    assert kinds == bytes([0, 1, 0, 2]) == v.token_kinds()
    assert v._native_args() is v._native_args()


def test_decode_skip_special_tokens():
    v = Vocabulary(["a", "<s>", "b", "</s>"], special_token_ids=[1])
    assert v.decode([1, 0, 2, 3]) == b"<s>ab</s>"
    assert v.decode([1, 0, 2, 3], skip_special_tokens=True) == b"ab"
    assert v.decode([]) == b""
    with pytest.raises(TokenIdError, match="must be integers"):
        v.decode(["a"])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(tokens=[]), "the vocabulary is empty"),
        (dict(tokens=["a", 3]), "token 1 must be str or bytes, got int"),
        (dict(tokens=["a", None]), "token 1 must be str or bytes, got NoneType"),
        (dict(tokens="abc"), "tokens must be a sequence of str or bytes"),
        (dict(tokens=["a"], vocab_type="bpe"), "unknown vocab_type 'bpe'"),
        (dict(tokens=["a", "b"], vocab_size=1), "vocab_size 1 is smaller than the number of tokens \\(2\\)"),
        (dict(tokens=["a"], vocab_size=True), "vocab_size must be an int"),
        (dict(tokens=["a"], vocab_size="8"), "vocab_size must be an int"),
        (
            dict(tokens=["a", "b"], stop_token_ids=[2]),
            "stop_token_ids: token id 2 is out of range \\[0, 2\\)",
        ),
        (dict(tokens=["a", "b"], vocab_size=9, stop_token_ids=[5]), "token id 5 is out of range \\[0, 2\\)"),
        (dict(tokens=["a", "b"], stop_token_ids=[-1]), "stop_token_ids: token id -1 is out of range"),
        (dict(tokens=["a", "b"], stop_token_ids=[1, 1]), "stop_token_ids: duplicate token ids \\[1\\]"),
        (dict(tokens=["a", "b"], stop_token_ids=["b"]), "stop_token_ids: token ids must be integers"),
        (dict(tokens=["a", "b"], stop_token_ids="b"), "stop_token_ids must be a sequence of token ids"),
        (dict(tokens=["a", "b"], stop_token_ids=[True]), "token ids must be integers"),
        (dict(tokens=["a", "b"], special_token_ids=[0, 0]), "special_token_ids: duplicate token ids \\[0\\]"),
        (dict(tokens=["a", "b"], special_token_ids=[7]), "special_token_ids: token id 7 is out of range"),
    ],
)
def test_constructor_errors(kwargs, message):
    tokens = kwargs.pop("tokens")
    kwargs.setdefault("stop_token_ids", kwargs.get("stop_token_ids", []))
    with pytest.raises(VocabularyError, match=message):
        Vocabulary(tokens, **kwargs)


def test_single_int_stop_token_id():
    assert Vocabulary(["a", "b"], stop_token_ids=1).stop_token_ids == (1,)


def test_with_text_tokens_lets_only_named_special_tokens_in():
    v = Vocabulary(["a", "<|tag|>", "<|other|>", "", "</s>"], stop_token_ids=[4], special_token_ids=[1, 2])
    marked = v.with_text_tokens(["<|tag|>", b"</s>", ""])
    assert marked.special_token_ids == (2, 3)  # <|other|> and the empty token stay special
    assert marked.stop_token_ids == (4,)
    assert marked.token_bytes == v.token_bytes
    assert v.with_text_tokens(["nothing"]) is v
    m = Matcher(Compiler(marked).compile(Grammar.from_ebnf('root ::= "<|tag|>" "a"')))
    assert m.allowed_token_ids() == [1]


@pytest.mark.parametrize("copy_kind", ["pickle", "deepcopy", "copy"])
def test_a_vocabulary_in_use_by_a_compiler_still_pickles_and_copies(copy_kind: str) -> None:
    import copy
    import pickle

    vocab = Vocabulary(["a", "b", "ab", "</s>"])
    grammar = Grammar.from_regex("ab?")
    expected = Matcher(Compiler(vocab).compile(grammar)).allowed_token_ids()
    assert vocab._native_tables is not None  # the compiler built the shared C tables
    if copy_kind == "pickle":
        again = pickle.loads(pickle.dumps(vocab))
    else:
        again = copy.deepcopy(vocab) if copy_kind == "deepcopy" else copy.copy(vocab)
    assert again._native_tables is None  # not carried over: built again on first use
    assert again.token_bytes == vocab.token_bytes and again.stop_token_ids == vocab.stop_token_ids
    assert Matcher(Compiler(again).compile(grammar)).allowed_token_ids() == expected


def test_a_vocabulary_pickled_as_slots_alone_still_loads() -> None:
    vocab = Vocabulary(["a", "</s>"])
    old_state = (
        None,
        {name: getattr(vocab, name) for name in Vocabulary.__slots__ if name != "_native_tables"},
    )
    again = Vocabulary.__new__(Vocabulary)
    again.__setstate__(old_state)
    assert again.token_bytes == vocab.token_bytes and again._native_tables is None
    assert Matcher(Compiler(again).compile(Grammar.from_regex("a"))).allowed_token_ids() == [0]


def test_qwen3_and_o200k_stop_tokens_are_their_added_end_tokens():
    from tests.kit import kit_tokenizer

    qwen = kit_tokenizer("qwen3")
    v = Vocabulary.from_huggingface(qwen)
    ids = qwen.convert_tokens_to_ids(["<|endoftext|>", "<|im_end|>"])
    assert v.stop_token_ids == tuple(ids)
    plain = qwen.convert_tokens_to_ids("</s>")  # one of the merges, not an added token
    assert plain not in qwen.get_added_vocab().values() and v.token_kinds()[plain] == TOKEN_NORMAL
    oss = kit_tokenizer("gpt-oss")
    ends = oss.convert_tokens_to_ids(["<|endoftext|>", "<|return|>", "<|call|>"])
    assert Vocabulary.from_huggingface(oss).stop_token_ids == tuple(ends)
