"""Property: on random token walks over real grammars, the bitmask a matcher fills through
Python allows exactly the tokens that, tried one by one, the grammar accepts.

The reference (`Matcher._allowed_by_trial`) accepts and rolls back every id of the
vocabulary in turn: none of the mask kernel's trie walk, lexeme split or cache. Grammars are
the seed's schema, a few with strings, numbers and enums, and, when the JSONSchemaBench sample
is beside the repository (as for the schema compiler's conformance tests), some of its schemas.
"""

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import stencil
from stencil import Grammar, Matcher, SchemaError

from conftest import COUNTRIES, load_bench_schemas

OWN = [
    ("countries", COUNTRIES),
    (
        "person",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 12},
                "age": {"type": "integer", "minimum": 0, "maximum": 130},
                "tags": {"type": "array", "items": {"enum": ["a", "bc", "déf"]}, "maxItems": 3},
                "ok": {"type": "boolean"},
            },
            "required": ["name", "age"],
            "additionalProperties": False,
        },
    ),
    ("pattern", {"type": "string", "pattern": "^[a-z0-9_]{1,8}$"}),
    ("number", {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": 100}),
]

SCHEMAS = OWN + load_bench_schemas(per_split=2)


_grammars: dict = {}


def grammar(vocab, index: int):
    """Schema `index` compiled for `vocab`, or None when the (strict) compiler refuses it."""
    if index not in _grammars:
        try:
            _grammars[index] = Grammar.from_json_schema(SCHEMAS[index][1], vocab)
        except SchemaError:
            _grammars[index] = None
    return _grammars[index]


def unpack(bitmask, size):
    bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:size]).tolist()


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    index=st.integers(min_value=0, max_value=len(SCHEMAS) - 1),
    choices=st.lists(st.integers(min_value=0, max_value=1 << 20), min_size=1, max_size=6),
)
def test_filled_masks_equal_token_by_token_trial(llama3_vocab, index, choices):
    g = grammar(llama3_vocab, index)
    assume(g is not None)
    size = len(llama3_vocab)
    m = Matcher(g)
    bitmask = stencil.allocate_token_bitmask(1, size)
    for choice in choices:
        if m.is_terminated():
            break
        bitmask[:] = 0x55555555
        m.fill_next_token_bitmask(bitmask)
        filled = unpack(bitmask, size)
        assert filled == m._allowed_by_trial(), SCHEMAS[index][0]
        # Bits past the vocabulary stay clear.
        assert not np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[size:].any()
        assert m.accept_token(filled[choice % len(filled)])


def test_the_walks_cover_several_grammars(llama3_vocab):
    compiled = [i for i in range(len(SCHEMAS)) if grammar(llama3_vocab, i) is not None]
    assert len(compiled) >= len(OWN)
