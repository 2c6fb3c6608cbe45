"""`Vocab.from_transformers`: Hugging Face tokenizer objects, cached per object and width.
Needs transformers only (mlx-lm brings it); skipped, saying so, without it."""

import pytest

transformers = pytest.importorskip("transformers", reason="transformers is not installed")

from stencil import Vocab  # noqa: E402

from conftest import tokenizer_path  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")))


def test_the_bytes_are_those_of_the_tokenizer_json(tokenizer):
    own = Vocab.from_tokenizer_json(tokenizer_path("llama3"))
    hf = Vocab.from_transformers(tokenizer)
    assert len(hf) == len(own)
    assert all(hf.token_bytes(i) == own.token_bytes(i) for i in range(len(own)))
    assert hf.eos_token_ids == own.eos_token_ids


def test_vocabularies_are_cached_per_tokenizer_and_width(tokenizer):
    assert Vocab.from_transformers(tokenizer) is Vocab.from_transformers(tokenizer)
    padded = Vocab.from_transformers(tokenizer, vocab_size=128320)
    assert len(padded) == 128320 and padded is not Vocab.from_transformers(tokenizer)
    assert padded is Vocab.from_transformers(tokenizer, vocab_size=128320)
    other = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")))
    assert Vocab.from_transformers(other) is not Vocab.from_transformers(tokenizer)


def test_the_tokenizer_names_extra_end_of_sequence_tokens(tokenizer):
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")))
    tokenizer.eos_token = "<|eot_id|>"
    vocab = Vocab.from_transformers(tokenizer)
    assert tokenizer.convert_tokens_to_ids("<|eot_id|>") in vocab.eos_token_ids


def test_objects_that_are_not_tokenizers():
    with pytest.raises(TypeError, match="cannot read the vocabulary|not a fast"):
        Vocab.from_transformers(object())
