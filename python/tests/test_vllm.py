"""The vLLM plugin against vLLM's own classes (`SamplingParams`, `BatchUpdate`,
`MoveDirectionality`, the `LogitsProcessor` base), applied to CPU tensors. The engine's
config is stood in for (it would load a model); the tokenizer is Llama 3's. Skipped when vLLM is
not installed: it pulls in CUDA torch, too heavy for CI (`pip install vllm` runs this)."""

import json
from types import SimpleNamespace

import pytest

vllm = pytest.importorskip(
    "vllm", reason="vllm is not installed (too heavy for CI; `pip install vllm` to run this)"
)
torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")

from vllm import SamplingParams  # noqa: E402
from vllm.v1.sample.logits_processor import (  # noqa: E402
    BatchUpdate,
    LogitsProcessor,
    MoveDirectionality,
)

import stencil  # noqa: E402
import stencil.vllm as plugin  # noqa: E402
from stencil import Grammar, Matcher, Vocab  # noqa: E402

from conftest import tokenizer_path  # noqa: E402

V = 128256
FLAG = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
        "additionalProperties": False}
COLOR = {"enum": ["red", "green", "blue"]}


@pytest.fixture(scope="module")
def tokenizer():
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")))


@pytest.fixture
def processor(tokenizer, monkeypatch):
    monkeypatch.setattr(plugin, "_load_tokenizer", lambda config: tokenizer)
    config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: V))
    p = plugin.JsonSchemaLogitsProcessor(config, torch.device("cpu"), False)
    assert isinstance(p, LogitsProcessor) and not p.is_argmax_invariant()
    return p


def params(schema=None) -> SamplingParams:
    return SamplingParams(extra_args=None if schema is None else {"json_schema": schema})


def expected(tokenizer, schema, tokens) -> torch.Tensor:
    m = Matcher(Grammar.from_json_schema(schema, Vocab.from_transformers(tokenizer, vocab_size=V)))
    assert m.accept_tokens(tokens) == len(tokens)
    bitmask = stencil.allocate_token_bitmask(1, V)
    m.fill_next_token_bitmask(bitmask)
    from stencil._torch import allowed_tokens

    return allowed_tokens(torch.from_numpy(bitmask), V)[0]


def test_validate_params():
    plugin.JsonSchemaLogitsProcessor.validate_params(params())
    plugin.JsonSchemaLogitsProcessor.validate_params(params(FLAG))
    with pytest.raises(ValueError, match="not JSON"):
        plugin.JsonSchemaLogitsProcessor.validate_params(params("{"))
    with pytest.raises(stencil.SchemaError) as e:
        plugin.JsonSchemaLogitsProcessor.validate_params(
            params({"type": "string", "pattern": "(?=a)a"})
        )
    assert e.value.keyword == "pattern"


def test_added_moved_and_removed_requests(processor, tokenizer):
    outputs = [[], [], []]
    processor.update_state(BatchUpdate(
        batch_size=3,
        removed=[],
        added=[(0, params(FLAG), [1, 2], outputs[0]), (1, params(COLOR), [3], outputs[1]),
               (2, params(), [4], outputs[2])],
        moved=[],
    ))
    logits = torch.zeros(3, V)
    out = processor.apply(logits)
    assert torch.equal(torch.isfinite(out[0]), expected(tokenizer, FLAG, []))
    assert torch.equal(torch.isfinite(out[1]), expected(tokenizer, COLOR, []))
    assert torch.isfinite(out[2]).all(), "a request without a schema is left alone"

    # The engine appends sampled tokens to its own output lists.
    quote = Vocab.from_transformers(tokenizer).token_bytes
    opening = [t for t in torch.nonzero(torch.isfinite(out[1])).flatten().tolist()
               if quote(t) == b'"']
    outputs[1].append(opening[0])
    processor.update_state(None)
    out = processor.apply(torch.zeros(3, V))
    assert torch.equal(torch.isfinite(out[1]), expected(tokenizer, COLOR, outputs[1]))

    # Swap rows 0 and 1; then move row 2 to row 0.
    processor.update_state(BatchUpdate(batch_size=3, removed=[], added=[],
                                       moved=[(0, 1, MoveDirectionality.SWAP)]))
    out = processor.apply(torch.zeros(3, V))
    assert torch.equal(torch.isfinite(out[0]), expected(tokenizer, COLOR, outputs[1]))
    assert torch.equal(torch.isfinite(out[1]), expected(tokenizer, FLAG, []))
    processor.update_state(BatchUpdate(batch_size=2, removed=[0], added=[],
                                       moved=[(2, 0, MoveDirectionality.UNIDIRECTIONAL)]))
    out = processor.apply(torch.zeros(2, V))
    assert torch.isfinite(out[0]).all()
    assert torch.equal(torch.isfinite(out[1]), expected(tokenizer, FLAG, []))


def test_a_request_runs_to_a_valid_document(processor, tokenizer):
    output = []
    processor.update_state(BatchUpdate(batch_size=1, removed=[], added=[(0, params(FLAG), [1], output)],
                                       moved=[]))
    vocab = Vocab.from_transformers(tokenizer, vocab_size=V)
    gen = torch.Generator().manual_seed(3)
    for _ in range(40):
        out = processor.apply(torch.randn(1, V, generator=gen))
        token = int(out[0].argmax())
        output.append(token)
        processor.update_state(None)
        if token in vocab.eos_token_ids:
            break
    assert output[-1] in vocab.eos_token_ids
    text = b"".join(vocab.token_bytes(t) for t in output[:-1]).decode()
    assert json.loads(text) in ({"ok": True}, {"ok": False})
    # One step past the end: the row is no longer masked.
    assert torch.isfinite(processor.apply(torch.zeros(1, V))).all()


def test_the_wheel_registers_the_entry_point():
    from importlib.metadata import entry_points

    found = [e for e in entry_points(group="vllm.logits_processors") if e.value.startswith("stencil")]
    assert [e.load() for e in found] == [plugin.JsonSchemaLogitsProcessor]
