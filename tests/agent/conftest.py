"""Fixtures for the agent tests: the real Llama-3.2 tokenizer, a tiny random Llama and a
"scripted" Llama whose logits strongly prefer the next token of a scripted text, so the
grammar, the logits processor and the agent loop all run for real and deterministically."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgrammar import Compiler, ToolRegistry, Vocabulary  # noqa: E402
from tests.hf_models import tiny_llama_config  # noqa: E402
from tests.hf_tokenizers import llama32_tokenizer  # noqa: E402

SCRIPT_BIAS = 100.0


def _config(tok: Any) -> Any:
    return tiny_llama_config(tok, max_positions=2048)


class ScriptedLlama(transformers.LlamaForCausalLM):
    """A tiny random Llama that follows a script: ``turns[k]`` lists, for the k-th
    ``generate()``, the texts it would like to write, most preferred first. At each step the
    next token of every text that the generated text so far is a prefix of gets a large bonus
    (the first text the largest), and a finished text prefers ``<|eot_id|>``; where the grammar
    masks the preferred token off, the next alternative wins. Every prompt is recorded."""

    tok: Any = None

    def script(self, tok: Any, turns: Sequence[Sequence[str]]) -> "ScriptedLlama":
        self.tok = tok
        self.turns = [list(t) for t in turns]
        self.prompts: List[str] = []
        self._turn = -1
        self._generated: Optional[List[int]] = None
        self.eot = tok.convert_tokens_to_ids("<|eot_id|>")
        return self

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        self._turn += 1
        self._generated = None
        self.prompts.append(self.tok.decode(kwargs["input_ids"][0], skip_special_tokens=False))
        return super().generate(*args, **kwargs)

    def forward(self, input_ids: Any = None, **kwargs: Any) -> Any:
        out = super().forward(input_ids=input_ids, **kwargs)
        if self._generated is None:  # the prefill: the prompt
            self._generated = []
        else:  # one new token per step (the cache is on)
            self._generated.append(int(input_ids[0, -1]))
        texts = self.turns[self._turn] if self._turn < len(self.turns) else []
        done = self.tok.decode(self._generated, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        bias: Dict[int, float] = {}
        for rank, text in enumerate(texts):
            if text.startswith(done):
                rest = text[len(done) :]
                target = self.tok(rest, add_special_tokens=False)["input_ids"][0] if rest else self.eot
                bias[target] = max(bias.get(target, 0.0), SCRIPT_BIAS - 10 * rank)
        if not bias:
            bias[self.eot] = SCRIPT_BIAS / 2
        last = out.logits[0, -1]
        for target, value in bias.items():
            last[target] += value
        return out


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Any:
    """Run each agent test on one torch thread: the tiny model's ops are too small to share, and
    on a busy machine threads make them ten times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tok() -> Any:
    return llama32_tokenizer()


@pytest.fixture(scope="session")
def compiler(tok: Any) -> Compiler:
    return Compiler(Vocabulary.from_huggingface(tok, vocab_size=len(tok)))


@pytest.fixture(scope="session")
def tiny_llama(tok: Any) -> Any:
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(_config(tok)).eval()


@pytest.fixture()
def scripted(tok: Any) -> Any:
    """A factory: ``scripted(turns)`` is a fresh ``ScriptedLlama`` (same weights every time)."""

    def make(turns: Sequence[Sequence[str]]) -> ScriptedLlama:
        torch.manual_seed(0)
        return ScriptedLlama(_config(tok)).eval().script(tok, turns)

    return make


@pytest.fixture()
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"18 C and sunny in {city}"

    @reg.tool
    def fail(x: int) -> int:
        """Always fails."""
        raise RuntimeError(f"no luck with {x}")

    @reg.tool
    async def echo(text: str) -> str:
        """Echo the text back (async)."""
        return text.upper()

    return reg
