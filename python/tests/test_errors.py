"""Bad input raises a clear Python exception, never a crash, and changes nothing."""

import numpy as np
import pytest

import stencil
from stencil import Grammar, Matcher, SchemaError, Vocab

from test_core import EOS, TINY, mask_of, tiny_vocab

BOOLEAN = {"type": "boolean"}


@pytest.fixture
def matcher() -> Matcher:
    return Matcher(Grammar.from_json_schema(BOOLEAN, tiny_vocab()))


def test_a_schema_that_is_not_json():
    with pytest.raises(SchemaError, match="not JSON") as e:
        Grammar.from_json_schema('{"type": "object",', tiny_vocab())
    assert e.value.keyword is None and e.value.pointer == ""
    assert isinstance(e.value, ValueError)
    with pytest.raises(SchemaError, match="cannot be written as JSON"):
        Grammar.from_json_schema({"const": float("nan")}, tiny_vocab())
    with pytest.raises(TypeError, match="schema must be JSON text"):
        Grammar.from_json_schema(42, tiny_vocab())


def test_a_number_with_more_digits_than_a_float_keeps():
    # A Python int keeps every digit, and the compiler reads the schema's JSON text: in `enum`
    # the number is refused (as a float it would stand for 1e29), as a bound it is kept.
    with pytest.raises(SchemaError, match="more significant digits than such a float keeps") as e:
        Grammar.from_json_schema({"enum": [10**29 + 1]}, tiny_vocab())
    assert (e.value.keyword, e.value.pointer) == ("enum", "#")
    assert Grammar.from_json_schema({"exclusiveMaximum": 10**29 + 1}, tiny_vocab()).is_exact


LOOKAHEAD = {
    "type": "object",
    "properties": {"name": {"type": "string", "pattern": "^a(?=b)"}},
}
IDN_EMAIL = {
    "type": "object",
    "properties": {"email": {"type": "string", "format": "idn-email"}},
}


@pytest.mark.parametrize(
    "schema, keyword, pointer",
    [(LOOKAHEAD, "pattern", "#/properties/name"), (IDN_EMAIL, "format", "#/properties/email")],
)
def test_an_unsupported_keyword_names_itself_and_where_it_is(schema, keyword, pointer):
    with pytest.raises(SchemaError) as e:
        Grammar.from_json_schema(schema, tiny_vocab())
    assert (e.value.keyword, e.value.pointer) == (keyword, pointer)
    assert f"unsupported keyword `{keyword}` at {pointer}" in str(e.value)


def test_lenient_mode_lists_what_it_relaxed():
    grammar = Grammar.from_json_schema(IDN_EMAIL, tiny_vocab(), strict=False)
    assert not grammar.is_exact
    [r] = grammar.relaxations
    assert (r.keyword, r.pointer) == ("format", "#/properties/email")
    assert "not enforced" in r.detail
    assert Grammar.from_json_schema(IDN_EMAIL["properties"], tiny_vocab()).relaxations == []


def test_an_unknown_whitespace_policy():
    with pytest.raises(ValueError, match="whitespace must be"):
        Grammar.from_json_schema(BOOLEAN, tiny_vocab(), whitespace="loose")


def test_an_unknown_property_order():
    with pytest.raises(ValueError, match="property_order must be"):
        Grammar.from_json_schema(BOOLEAN, tiny_vocab(), property_order="alphabetical")


@pytest.mark.parametrize(
    "bitmask, error, message",
    [
        (np.zeros((1, 2), dtype=np.int32), ValueError, r"needs 1 words per row"),
        (np.zeros((1, 1), dtype=np.int64), TypeError, "dtype int32"),
        (np.zeros((1, 1), dtype=np.float32), TypeError, "dtype int32"),
        (np.zeros((1, 1), dtype=np.uint32), TypeError, "dtype int32"),
        (np.zeros((1, 1, 1), dtype=np.int32), ValueError, "3 dimensions"),
        (np.zeros((3, 2), dtype=np.int32)[:, :1], ValueError, "C-contiguous"),
        ([[0]], TypeError, "buffer protocol"),
        (b"\x00\x00\x00\x00", TypeError, "buffer protocol"),
    ],
)
def test_a_bitmask_of_the_wrong_shape_dtype_or_layout(matcher, bitmask, error, message):
    with pytest.raises(error, match=message):
        matcher.fill_next_token_bitmask(bitmask)


def test_a_bitmask_of_the_wrong_layout_in_two_dimensions():
    vocab = Vocab.from_token_bytes(TINY, eos_token_ids=[EOS], vocab_size=64)
    m = Matcher(Grammar.from_json_schema(BOOLEAN, vocab))
    fortran = np.zeros((3, 2), dtype=np.int32, order="F")
    with pytest.raises(ValueError, match="C-contiguous"):
        m.fill_next_token_bitmask(fortran)
    with pytest.raises(ValueError, match="C-contiguous"):
        stencil.fill_next_token_bitmasks([(m, 0)], fortran)


def test_a_read_only_bitmask(matcher):
    bitmask = np.zeros((1, 1), dtype=np.int32)
    bitmask.setflags(write=False)
    with pytest.raises(TypeError, match="writable"):
        matcher.fill_next_token_bitmask(bitmask)


def test_a_row_out_of_range(matcher):
    bitmask = stencil.allocate_token_bitmask(2, len(TINY))
    for index in (2, -1):
        with pytest.raises(IndexError, match=f"row {index} is out of range"):
            matcher.fill_next_token_bitmask(bitmask, index)
    with pytest.raises(IndexError):
        stencil.fill_next_token_bitmasks([(matcher, 5)], bitmask)


def test_batch_fill_refuses_shared_rows_and_mixed_vocabularies(matcher):
    bitmask = stencil.allocate_token_bitmask(2, len(TINY))
    other = Matcher(Grammar.from_json_schema(BOOLEAN, tiny_vocab()))
    with pytest.raises(ValueError, match="row 1 appears twice"):
        stencil.fill_next_token_bitmasks([(matcher, 1), (other, 1)], bitmask)
    wide = Matcher(Grammar.from_json_schema(BOOLEAN, tiny_vocab(vocab_size=40)))
    with pytest.raises(ValueError, match="vocabularies of 11 and 40"):
        stencil.fill_next_token_bitmasks([(matcher, 0), (wide, 1)], bitmask)
    with pytest.raises(ValueError, match=r"\(Matcher, row index\)"):
        stencil.fill_next_token_bitmasks([(matcher,)], bitmask)


def test_a_batch_error_names_its_row():
    vocab = Vocab.from_token_bytes([b"{", b"</s>"], eos_token_ids=[1])
    grammar = Grammar.from_json_schema({"type": "object"}, vocab)
    fine, stuck = Matcher(grammar), Matcher(grammar)
    stuck.accept_token(0)
    bitmask = stencil.allocate_token_bitmask(2, 2)
    with pytest.raises(stencil.EmptyMaskError, match="row 1: empty mask"):
        stencil.fill_next_token_bitmasks([(fine, 0), (stuck, 1)], bitmask)


@pytest.mark.parametrize("bad", [len(TINY), 1 << 40, -1])
def test_a_token_id_out_of_range(matcher, bad):
    with pytest.raises(ValueError, match=f"token id {bad} is out of range"):
        matcher.accept_token(bad)
    with pytest.raises(ValueError, match="out of range"):
        matcher.accept_tokens([0, bad])
    with pytest.raises(ValueError, match="out of range"):
        matcher.validate_tokens([bad])
    assert matcher.num_tokens() == 0


def test_accepting_after_termination(matcher):
    assert matcher.accept_tokens([1, EOS]) == 2
    with pytest.raises(RuntimeError, match="terminated"):
        matcher.accept_token(0)
    with pytest.raises(RuntimeError, match="terminated"):
        matcher.accept_tokens([EOS])
    with pytest.raises(RuntimeError, match="terminated"):
        matcher.fill_next_token_bitmask(stencil.allocate_token_bitmask(1, len(TINY)))
    assert matcher.num_tokens() == 2 and matcher.is_terminated()


def test_a_rollback_deeper_than_the_history(matcher):
    matcher.accept_tokens([2, 4])
    with pytest.raises(ValueError, match="cannot roll back 3 tokens: only 2 committed"):
        matcher.rollback(3)
    with pytest.raises(ValueError, match="n must be >= 0"):
        matcher.rollback(-1)
    assert matcher.num_tokens() == 2
    assert mask_of(matcher) == [5]


def test_vocabulary_sources_that_do_not_work(tmp_path):
    with pytest.raises(FileNotFoundError, match="no tokenizer.json"):
        Vocab.from_tokenizer_json(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="not a tokenizer.json"):
        Vocab.from_tokenizer_json('{"model": 1}')
    with pytest.raises(TypeError, match="expected a path"):
        Vocab.from_tokenizer_json(3)
    with pytest.raises(FileNotFoundError, match="no GGUF file"):
        Vocab.from_gguf(tmp_path / "model.gguf")
    (tmp_path / "model.gguf").write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(ValueError, match="not a GGUF file"):
        Vocab.from_gguf(tmp_path / "model.gguf")
    with pytest.raises(ValueError, match="out of range"):
        Vocab.from_token_bytes([b"a"], eos_token_ids=[1])
    with pytest.raises(ValueError, match="ordinary token"):
        tiny_vocab(vocab_size=5)
    with pytest.raises(ValueError, match="positive int"):
        stencil.allocate_token_bitmask(0, 10)
