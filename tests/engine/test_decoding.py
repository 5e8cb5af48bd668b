"""Token decoding (byte-level, byte-fallback, raw) and vocab-type detection."""

from __future__ import annotations

import types

import pytest

from agentgrammar.engine.decoding import (
    byte_level_table,
    decode_byte_fallback,
    decode_byte_level,
    decode_raw,
    decode_token,
    decode_tokens,
    detect_vocab_type,
    detect_vocab_type_from_vocab,
)
from agentgrammar.errors import VocabularyError
from tests.hf_tokenizers import (
    llama32_tokenizer,
    tiny_byte_level_tokenizer,
    tiny_sentencepiece_tokenizer,
    tiny_wordlevel_tokenizer,
)

# ---- byte-level ---------------------------------------------------------------------------------


def test_byte_level_table_is_gpt2s():
    table = byte_level_table()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert table[0x20] == "Ġ" and table[0x0A] == "Ċ" and table[0x00] == "Ā" and table[0xAD] == "\u0143"
    assert all(table[b] == chr(b) for b in range(0x21, 0x7F))


def test_byte_level_table_matches_transformers_and_tokenizers():
    convert = pytest.importorskip("transformers.convert_slow_tokenizer")
    assert byte_level_table() == convert.bytes_to_unicode()
    pre_tokenizers = pytest.importorskip("tokenizers.pre_tokenizers")
    assert set(byte_level_table().values()) == set(pre_tokenizers.ByteLevel.alphabet())


def test_byte_level_every_byte_round_trips():
    table = byte_level_table()
    for b in range(256):
        assert decode_byte_level(table[b]) == bytes([b])
    everything = "".join(table[b] for b in range(256))
    assert decode_byte_level(everything) == bytes(range(256))


@pytest.mark.parametrize(
    "token, expected",
    [
        ("Ġhello", b" hello"),
        ("ĠĊ", b" \n"),
        ("ĠÃ©", b" \xc3\xa9"),  # UTF-8 of "é" spelt byte by byte
        ("Ã", b"\xc3"),  # half a character is a valid token
        ("é", b"\xe9"),
        ("<|eot_id|>", b"<|eot_id|>"),
        ("", b""),
        # a character outside the alphabet: the whole token is its UTF-8 (as xgrammar / HF decode)
        ("a b", b"a b"),
        ("aĠ b", "aĠ b".encode()),
        ("中", "中".encode()),
        ("Ā中", "Ā中".encode()),
        ("\u00ad", "\u00ad".encode()),  # soft hyphen: a Latin-1 byte that the alphabet shifts
    ],
)
def test_decode_byte_level(token, expected):
    assert decode_byte_level(token) == expected
    assert decode_token(token, "byte_level") == expected


# ---- byte-fallback ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token, expected",
    [
        ("<0x0A>", b"\n"),
        ("<0x00>", b"\x00"),
        ("<0xFF>", b"\xff"),
        ("<0xE4>", b"\xe4"),
        ("▁hello", b" hello"),
        ("a▁b", b"a b"),
        ("▁▁", b"  "),
        ("▁", b" "),
        ("<s>", b"<s>"),
        ("</s>", b"</s>"),
        ("中", "中".encode()),
        ("", b""),
        # not a byte piece: the text itself
        ("<0x0a>", b"<0x0a>"),
        ("<0xZZ>", b"<0xZZ>"),
        ("<0xA>", b"<0xA>"),
        ("<0x100>", b"<0x100>"),
        ("x<0x0A>", b"x<0x0A>"),
        ("<0x0A><0x0B>", b"<0x0A><0x0B>"),
    ],
)
def test_decode_byte_fallback(token, expected):
    assert decode_byte_fallback(token) == expected
    assert decode_token(token, "byte_fallback") == expected


def test_every_byte_piece():
    for b in range(256):
        assert decode_byte_fallback(f"<0x{b:02X}>") == bytes([b])


# ---- raw and the generic entry points -----------------------------------------------------------


def test_decode_raw():
    assert decode_raw("▁a") == "▁a".encode()
    assert decode_raw("Ġ") == "Ġ".encode()
    assert decode_token("<0x0A>", "raw") == b"<0x0A>"


def test_bytes_tokens_are_kept_as_they_are():
    for vt in ("raw", "byte_level", "byte_fallback"):
        assert decode_token(b"\xff\xc4\xa0", vt) == b"\xff\xc4\xa0"
        assert decode_token(bytearray(b"\x00"), vt) == b"\x00"
    assert decode_tokens(["Ġa", "Ġa".encode(), bytearray(b"x")], "byte_level") == [b" a", "Ġa".encode(), b"x"]


def test_decode_tokens_errors():
    with pytest.raises(VocabularyError, match="unknown vocab_type 'bpe'"):
        decode_tokens(["a"], "bpe")
    with pytest.raises(VocabularyError, match="token 1 must be str or bytes, got int"):
        decode_tokens(["a", 7], "raw")
    with pytest.raises(VocabularyError, match="got NoneType"):
        decode_token(None, "raw")  # type: ignore[arg-type]


def test_decoding_matches_xgrammar_on_tricky_tokens():
    xgr = pytest.importorskip("xgrammar")
    cases = {
        "byte_level": ["Ġhi", "ĠÃ©", "a b", "aĠ b", "中", "Ā", "Ā中", "<|x|>", "ĠĊ", "\u00ad", "é"],
        "byte_fallback": ["<0x0A>", "▁hello", "a▁b", "▁▁", "<0xE4>", "<s>", "x<0x0A>", "<0xA>", "中"],
        "raw": ["▁a", "<0x0A>", "a b", "Ġ"],
    }
    kinds = {
        "byte_level": xgr.VocabType.BYTE_LEVEL,
        "byte_fallback": xgr.VocabType.BYTE_FALLBACK,
        "raw": xgr.VocabType.RAW,
    }
    for vt, toks in cases.items():
        info = xgr.TokenizerInfo(toks, kinds[vt], stop_token_ids=[0])
        assert decode_tokens(toks, vt) == info.decoded_vocab, vt


# ---- detection ----------------------------------------------------------------------------------


def test_detect_llama32_is_byte_level():
    assert detect_vocab_type(llama32_tokenizer()) == "byte_level"


def test_detect_tiny_tokenizers():
    assert detect_vocab_type(tiny_sentencepiece_tokenizer()) == "byte_fallback"
    assert detect_vocab_type(tiny_byte_level_tokenizer()) == "byte_level"
    assert detect_vocab_type(tiny_wordlevel_tokenizer()) == "raw"


def test_detect_without_decoder_falls_back_on_the_vocabulary():
    # transformers sometimes rebuilds a tokenizer without its decoder: the byte pieces decide.
    tok = tiny_sentencepiece_tokenizer()
    tok.backend_tokenizer.decoder = None
    tok.backend_tokenizer.normalizer = None
    assert detect_vocab_type(tok) == "byte_fallback"
    tok = tiny_byte_level_tokenizer()
    tok.backend_tokenizer.decoder = None
    tok.backend_tokenizer.pre_tokenizer = None
    assert detect_vocab_type(tok) == "byte_level"


def test_detect_slow_sentencepiece_and_tiktoken_style():
    slow = types.SimpleNamespace(sp_model=object(), get_vocab=lambda: {"<unk>": 0, "▁a": 1})
    assert detect_vocab_type(slow) == "byte_fallback"
    tiktoken_like = types.SimpleNamespace(get_vocab=lambda: {b"\xe4": 0, b" a": 1})
    assert detect_vocab_type(tiktoken_like) == "raw"
    plain = types.SimpleNamespace(get_vocab=lambda: {"a": 0, "b c": 1})
    assert detect_vocab_type(plain) == "raw"


def test_detect_from_vocab():
    table = byte_level_table()
    assert detect_vocab_type_from_vocab({f"<0x{b:02X}>": b for b in range(256)}) == "byte_fallback"
    byte_level = {c: b for b, c in table.items()}
    byte_level["Ġthe"] = 256
    byte_level["<|im end|>"] = 257  # one token outside the alphabet is tolerated
    assert detect_vocab_type_from_vocab(byte_level) == "byte_level"
    assert detect_vocab_type_from_vocab({"hello": 0, "world": 1}) is None


def test_detect_unreadable_tokenizer():
    class Broken:
        def get_vocab(self):
            raise RuntimeError("boom")

    with pytest.raises(VocabularyError, match="cannot read the vocabulary of Broken"):
        detect_vocab_type(Broken())
