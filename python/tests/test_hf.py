"""The transformers adapter, on a tiny randomly initialised Llama built from a config (no
download) with the Llama 3 tokenizer, a batch of 2. Skipped when torch or transformers is not
installed: torch is too heavy for CI's cold install (`pip install torch transformers` runs it)."""

import json

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (too heavy for CI; `pip install torch` to run this)"
)
transformers = pytest.importorskip("transformers", reason="transformers is not installed")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed")

from stencil import Vocab  # noqa: E402
from stencil.hf import JsonSchemaLogitsProcessor  # noqa: E402

from conftest import tokenizer_path  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {"color": {"enum": ["red", "green", "blue"]}, "ok": {"type": "boolean"}},
    "required": ["color", "ok"],
    "additionalProperties": False,
}

# The model's embedding is padded past the tokenizer's 128256 ids, as real models' often are.
MODEL_VOCAB = 128320


@pytest.fixture(scope="module")
def tokenizer():
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")))
    tok.pad_token = "<|end_of_text|>"
    tok.padding_side = "left"
    return tok


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=MODEL_VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    return transformers.LlamaForCausalLM(config).eval()


@pytest.mark.parametrize("sample", [False, True])
def test_a_batch_of_two_writes_schema_valid_json(tokenizer, model, sample):
    processor = JsonSchemaLogitsProcessor(SCHEMA, tokenizer)
    eos = Vocab.from_transformers(tokenizer).eos_token_ids
    inputs = tokenizer(["Pick a colour:", "A JSON object, please, with a colour in it:"],
                       return_tensors="pt", padding=True)
    torch.manual_seed(1)
    out = model.generate(
        **inputs,
        logits_processor=transformers.LogitsProcessorList([processor]),
        max_new_tokens=48,
        do_sample=sample,
        eos_token_id=eos,
        pad_token_id=tokenizer.pad_token_id,
    )
    vocab = Vocab.from_transformers(tokenizer, vocab_size=MODEL_VOCAB)
    prompt = inputs["input_ids"].shape[1]
    for row in out[:, prompt:].tolist():
        assert any(t in eos for t in row), f"no end of sequence in {row}"
        body = row[: min(row.index(t) for t in eos if t in row)]
        text = b"".join(vocab.token_bytes(t) for t in body).decode()
        jsonschema.validate(json.loads(text), SCHEMA)
