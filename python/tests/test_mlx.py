"""The mlx-lm adapter: the seed's countries example (python/examples/country_extract.py) through
`mlx_lm.generate` on the default model converted for MLX (`cargo xtask convert-model`), checked
against the schema with jsonschema; the same seed gives the same text. Skipped when mlx or
mlx-lm is not installed (`cargo xtask python` installs mlx[cpu] and mlx-lm)."""

import importlib.util
import json
from pathlib import Path

import pytest

mx = pytest.importorskip("mlx.core", reason="mlx is not installed (pip install 'mlx[cpu]')")
mlx_lm = pytest.importorskip("mlx_lm", reason="mlx-lm is not installed (pip install mlx-lm)")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "country_extract.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("country_extract", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def loaded(example):
    path = example.DEFAULT_MODEL
    if not (path / "config.json").is_file():
        pytest.fail(f"{path} is missing: run `cargo xtask convert-model`")
    return mlx_lm.load(str(path))


def test_the_countries_example_writes_schema_valid_json(example, loaded):
    model, tokenizer = loaded
    text = example.extract(model, tokenizer, example.SENTENCE, seed=42)
    jsonschema.validate(json.loads(text), example.SCHEMA)
    assert example.extract(model, tokenizer, example.SENTENCE, seed=42) == text


def test_masks_are_applied_with_an_mlx_op(loaded):
    from stencil.mlx import JsonSchemaLogitsProcessor

    model, tokenizer = loaded
    processor = JsonSchemaLogitsProcessor({"enum": ["yes", "no"]}, tokenizer)
    prompt = mx.array(tokenizer.encode("Answer:"))
    logits = model(prompt[None])[:, -1, :]
    out = processor(prompt, logits)
    assert isinstance(out, mx.array) and out.shape == logits.shape
    finite = [i for i, ok in enumerate(mx.isfinite(out)[0].tolist()) if ok]
    assert finite == processor.matcher._allowed_by_trial()
    # A string opens with a quote; `"\u0079es"` spells "yes" too, so `"\` may start it.
    starts = [processor.grammar.vocab.token_bytes(i) for i in finite]
    assert b'"' in starts and all(t.startswith(b'"') for t in starts), starts
