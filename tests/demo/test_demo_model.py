"""The demo model: the cache location and key, and a tiny training run saved and reloaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgrammar.demo.model import TrainConfig, cache_dir, load_demo_model, model_dir


def test_cache_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache_dir({"AGENTGRAMMAR_CACHE": "/a", "XDG_CACHE_HOME": "/b"}) == Path("/a")
    assert cache_dir({"XDG_CACHE_HOME": "/b"}) == Path("/b/agentgrammar")
    monkeypatch.setenv("HOME", "/home/someone")
    assert cache_dir({}) == Path("/home/someone/.cache/agentgrammar")


def test_cache_key_depends_on_format_and_recipe() -> None:
    base = TrainConfig()
    assert base.key("tags") == TrainConfig().key("tags")
    assert base.key("tags") != base.key("qwen3")
    assert base.key("tags") != TrainConfig(steps=base.steps + 1).key("tags")


def test_train_save_and_reload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTGRAMMAR_CACHE", str(tmp_path))
    config = TrainConfig(episodes=60, steps=4, vocab_size=400)
    steps = []
    model, tokenizer, info = load_demo_model(
        "hermes", config, progress=lambda s, n, loss: steps.append((s, n))
    )
    assert steps[-1] == (4, 4) and not info["cached"]
    assert Path(info["path"]) == model_dir("hermes", config) and (tmp_path / "demo-models").is_dir()
    assert model.config.vocab_size == len(tokenizer) and model.config.eos_token_id == tokenizer.eos_token_id
    again, tok2, info2 = load_demo_model("hermes", config, on_train=lambda: pytest.fail("trained twice"))
    assert info2["cached"] and tok2.get_vocab() == tokenizer.get_vocab()
    assert all((a == b).all() for a, b in zip(model.state_dict().values(), again.state_dict().values()))
