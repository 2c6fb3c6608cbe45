"""The core API on a tiny vocabulary whose masks can be checked by eye, and on Llama 3's."""

import threading

import numpy as np
import pytest

import stencil
from stencil import EmptyMaskError, Grammar, Matcher, SchemaError, Vocab

from conftest import COUNTRIES, model_path, tokenizer_path

# The tiny vocabulary, by id (6 is end of sequence); its trie, children in byte order:
#
#   (root)
#    ├─ "</s>" 6          ├─ "e" 9         ├─ "s" ─ "se" 5     ├─ "x" 7
#    ├─ "a" ─ "al" 4      ├─ "f" 2 ─ "fa" ─ "fal" ─ "fals" ─ "false" 3
#    ├─ "r" ─ "ru" 8      └─ "t" 0 ─ "tr" 10 ─ "tru" ─ "true" 1
TINY = [b"t", b"true", b"f", b"false", b"al", b"se", b"</s>", b"x", b"ru", b"e", b"tr"]
EOS = 6


def tiny_vocab(**kw) -> Vocab:
    return Vocab.from_token_bytes(TINY, eos_token_ids=[EOS], **kw)


def allowed(bitmask, row=0, size=None) -> list:
    """The token ids a bitmask row allows."""
    bits = np.unpackbits(np.ascontiguousarray(bitmask[row]).view(np.uint8), bitorder="little")
    ids = np.flatnonzero(bits).tolist()
    return [i for i in ids if size is None or i < size]


def mask_of(matcher: Matcher) -> list:
    size = len(matcher.grammar.vocab)
    bitmask = stencil.allocate_token_bitmask(1, size)
    matcher.fill_next_token_bitmask(bitmask)
    return allowed(bitmask)


@pytest.fixture
def boolean() -> Matcher:
    return Matcher(Grammar.from_json_schema({"type": "boolean"}, tiny_vocab()))


def test_masks_follow_the_grammar_token_by_token(boolean):
    assert mask_of(boolean) == [0, 1, 2, 3, 10]  # t true f false tr
    assert boolean.accept_token(0)  # "t"
    assert mask_of(boolean) == [8]  # "ru"
    assert boolean.accept_token(8)
    assert mask_of(boolean) == [9]  # "e"
    assert not boolean.is_accepting()
    assert boolean.accept_token(9)
    assert boolean.is_accepting()
    assert mask_of(boolean) == [EOS]
    assert boolean.accept_token(EOS)
    assert boolean.is_terminated()
    assert boolean.num_tokens() == 4


def test_refused_tokens_change_nothing(boolean):
    assert not boolean.accept_token(7)  # "x"
    assert not boolean.accept_token(EOS)  # end of sequence before the document is complete
    assert boolean.num_tokens() == 0
    assert boolean.accept_tokens([2, 4, 7, 5]) == 2  # "f" "al", then "x" is refused
    assert mask_of(boolean) == [5]  # "se"


def test_validate_tokens_does_not_advance(boolean):
    assert boolean.validate_tokens([2, 4, 5, EOS]) == 4
    assert boolean.validate_tokens([2, 5]) == 1
    assert boolean.num_tokens() == 0
    assert mask_of(boolean) == [0, 1, 2, 3, 10]


def test_rollback_and_reset_restore_earlier_masks(boolean):
    assert boolean.accept_tokens([1, EOS]) == 2
    boolean.rollback(1)
    assert not boolean.is_terminated()
    assert mask_of(boolean) == [EOS]
    boolean.rollback(1)
    assert mask_of(boolean) == [0, 1, 2, 3, 10]
    boolean.accept_token(2)
    boolean.reset()
    assert boolean.num_tokens() == 0
    assert mask_of(boolean) == [0, 1, 2, 3, 10]


def test_forced_tokens_spell_the_only_continuation(boolean):
    assert boolean.forced_tokens() == []  # t or f: a choice
    boolean.accept_token(0)
    assert boolean.forced_tokens() == [8, 9]  # "rue" as "ru" "e"
    boolean.accept_tokens([8, 9])
    assert boolean.forced_tokens() == []  # complete: the document may end


def test_padding_ids_are_never_allowed():
    vocab = tiny_vocab(vocab_size=70)
    assert len(vocab) == 70
    assert set(range(11, 70)) <= set(vocab.special_token_ids)
    m = Matcher(Grammar.from_json_schema({"type": "boolean"}, vocab))
    bitmask = stencil.allocate_token_bitmask(1, 70)
    assert bitmask.shape == (1, 3)
    m.fill_next_token_bitmask(bitmask)
    assert allowed(bitmask) == [0, 1, 2, 3, 10]
    assert not m.accept_token(69)


def test_a_dead_end_raises_empty_mask_error():
    # No quote and no "}": after "{" nothing can follow.
    vocab = Vocab.from_token_bytes([b"{", b"</s>"], eos_token_ids=[1])
    m = Matcher(Grammar.from_json_schema({"type": "object"}, vocab))
    assert mask_of(m) == [0]
    assert m.accept_token(0)
    bitmask = stencil.allocate_token_bitmask(1, 2)
    bitmask[:] = 12345
    with pytest.raises(EmptyMaskError, match="empty mask"):
        m.fill_next_token_bitmask(bitmask)


def test_memoryview_bitmasks_need_no_numpy(boolean):
    words = stencil.bitmask_words(len(TINY))
    view = memoryview(bytearray(8 * words)).cast("i", (2, words))
    boolean.fill_next_token_bitmask(view, 1)
    assert view.tolist()[1] == [0b10000001111]
    assert view.tolist()[0] == [0]


def test_one_dimensional_bitmasks_are_one_row(boolean):
    bitmask = np.zeros(1, dtype=np.int32)
    boolean.fill_next_token_bitmask(bitmask)
    assert bitmask[0] == 0b10000001111


def test_the_seed_schema_on_llama3(llama3_vocab):
    grammar = Grammar.from_json_schema(COUNTRIES, llama3_vocab)
    assert grammar.is_exact and grammar.relaxations == []
    m = Matcher(grammar)
    size = len(llama3_vocab)
    assert size == 128256
    bitmask = stencil.allocate_token_bitmask(1, size)
    assert bitmask.shape == (1, 4008)
    m.fill_next_token_bitmask(bitmask)
    first = [llama3_vocab.token_bytes(i) for i in allowed(bitmask)]
    assert b"[" in first and all(t.startswith(b"[") for t in first), first
    text = b'[{"name":"Nigeria","continent":"Africa"}]'
    # Accept the text byte by byte where the vocabulary has single-byte tokens.
    single = {}
    special = set(llama3_vocab.special_token_ids)
    for i in range(size):
        if i not in special and len(llama3_vocab.token_bytes(i)) == 1:
            single.setdefault(llama3_vocab.token_bytes(i), i)
    for byte in text:
        assert m.accept_token(single[bytes([byte])]), chr(byte)
    assert m.is_accepting()
    m.fill_next_token_bitmask(bitmask)
    assert allowed(bitmask) == llama3_vocab.eos_token_ids


def test_schema_property_order_follows_the_dicts_order(llama3_vocab):
    # Not alphabetical: the dict's own order is the schema's.
    schema = {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "answer": {"type": "integer"}},
        "required": ["reasoning", "answer"],
        "additionalProperties": False,
    }
    single = {}
    special = set(llama3_vocab.special_token_ids)
    for i in range(len(llama3_vocab)):
        if i not in special and len(llama3_vocab.token_bytes(i)) == 1:
            single.setdefault(llama3_vocab.token_bytes(i), i)

    def accepts(grammar, text: bytes) -> bool:
        m = Matcher(grammar)
        return m.accept_tokens([single[bytes([b])] for b in text]) == len(text) and m.is_accepting()

    in_order = b'{"reasoning":"2+2","answer":4}'
    reversed_order = b'{"answer":4,"reasoning":"2+2"}'
    ordered = Grammar.from_json_schema(schema, llama3_vocab, property_order="schema")
    assert accepts(ordered, in_order)
    assert not accepts(ordered, reversed_order)
    # After "{", the first required key is the only continuation.
    m = Matcher(ordered)
    assert m.accept_token(single[b"{"])
    assert b"".join(llama3_vocab.token_bytes(t) for t in m.forced_tokens()).startswith(b'"reasoning')
    any_order = Grammar.from_json_schema(schema, llama3_vocab)
    assert accepts(any_order, in_order) and accepts(any_order, reversed_order)


def test_grammars_are_shared_between_threads(llama3_vocab):
    grammar = Grammar.from_json_schema(COUNTRIES, llama3_vocab)
    size = len(llama3_vocab)
    results = []

    def walk():
        m = Matcher(grammar)
        masks = []
        bitmask = stencil.allocate_token_bitmask(1, size)
        for _ in range(20):
            if m.is_terminated():
                break
            m.fill_next_token_bitmask(bitmask)
            ids = allowed(bitmask)
            masks.append(ids)
            # The longest token: a deep, deterministic walk.
            m.accept_token(max(ids, key=lambda t: (len(llama3_vocab.token_bytes(t)), t)))
        results.append(masks)

    threads = [threading.Thread(target=walk) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r == results[0] for r in results)
    assert len(results[0]) >= 3


def test_the_matchers_of_a_grammar_share_its_mask_cache(llama3_vocab):
    size = len(llama3_vocab)

    def walk(grammar):
        """The masks of a deterministic walk (the longest token each time), and the matcher."""
        m = Matcher(grammar)
        masks = []
        bitmask = stencil.allocate_token_bitmask(1, size)
        while not m.is_terminated() and len(masks) < 40:
            m.fill_next_token_bitmask(bitmask)
            ids = allowed(bitmask)
            masks.append(ids)
            m.accept_token(max(ids, key=lambda t: (len(llama3_vocab.token_bytes(t)), t)))
        return masks, m

    grammar = Grammar.from_json_schema(COUNTRIES, llama3_vocab)
    first, m1 = walk(grammar)
    assert len(first) >= 10
    before = grammar.cache_stats()
    assert before["misses"] == m1.cache_stats()["misses"] > 0
    assert before["masks"] > 0 and before["bytes"] > 0
    second, m2 = walk(grammar)
    assert second == first
    assert m2.cache_stats()["misses"] == 0, "every state was met by the first matcher"
    assert m2.cache_stats()["hits"] == len(second)
    assert grammar.cache_stats()["hits"] == before["hits"] + len(second)
    # Another grammar (of the same schema) has a cache of its own; a cache of no bytes keeps
    # nothing.
    other = Grammar.from_json_schema(COUNTRIES, llama3_vocab, cache_bytes=0)
    third, m3 = walk(other)
    assert third == first
    assert m3.cache_stats()["hits"] == 0 and other.cache_stats()["masks"] == 0


def test_batch_fill_equals_one_by_one(llama3_vocab):
    grammar = Grammar.from_json_schema(COUNTRIES, llama3_vocab)
    size = len(llama3_vocab)
    matchers = []
    for steps in range(5):
        m = Matcher(grammar)
        for _ in range(steps):
            bitmask = stencil.allocate_token_bitmask(1, size)
            m.fill_next_token_bitmask(bitmask)
            m.accept_token(allowed(bitmask)[-1])
        matchers.append(m)
    batch = stencil.allocate_token_bitmask(7, size)
    batch[:] = 0
    pairs = [(m, row) for m, row in zip(matchers, [6, 0, 3, 1, 5])]
    stencil.fill_next_token_bitmasks(pairs, batch)
    for m, row in pairs:
        one = stencil.allocate_token_bitmask(1, size)
        m.fill_next_token_bitmask(one)
        assert np.array_equal(batch[row], one[0])
    assert not batch[2].any() and not batch[4].any()
    stencil.fill_next_token_bitmasks([], batch)


def test_from_tokenizer_json_reads_a_path_or_the_text(llama3_vocab):
    path = tokenizer_path("llama3")
    from_text = Vocab.from_tokenizer_json(path.read_text())
    from_str_path = Vocab.from_tokenizer_json(str(path))
    for v in (from_text, from_str_path):
        assert len(v) == len(llama3_vocab)
        assert all(v.token_bytes(i) == llama3_vocab.token_bytes(i) for i in range(0, len(v), 997))
    # The config beside the file names the end of sequence; the text alone finds it by name.
    assert llama3_vocab.eos_token_ids
    padded = Vocab.from_tokenizer_json(path, vocab_size=128320)
    assert len(padded) == 128320 and padded.eos_token_ids == llama3_vocab.eos_token_ids


def test_from_gguf_reads_the_files_own_vocabulary():
    # Gemma 3's GGUF against its tokenizer.json: the same bytes for every id the model has
    # (tokenizer.json has one more, the multimodal models' image token).
    gguf = Vocab.from_gguf(model_path("gemma-3-270m-q4_k_m.gguf"))
    json_vocab = Vocab.from_tokenizer_json(tokenizer_path("gemma3"))
    assert (gguf.size, json_vocab.size) == (262_144, 262_145)
    differ = [i for i in range(gguf.size) if gguf.token_bytes(i) != json_vocab.token_bytes(i)]
    assert differ == []
    assert set(json_vocab.eos_token_ids) <= set(gguf.eos_token_ids)
    # A byte-level BPE file: constrained masks work on it directly.
    smol = Vocab.from_gguf(model_path("smollm2-135m-instruct-q4_1.gguf"), vocab_size=49_216)
    assert smol.size == 49_216  # 49,152 tokens, padded to a model's logits width
    by_bytes = {}
    for t in range(smol.size):
        by_bytes.setdefault(smol.token_bytes(t), t)
    assert by_bytes[b" the"] != by_bytes[b"the"]  # the byte-level map is undone
    matcher = Matcher(Grammar.from_json_schema(COUNTRIES, smol))
    text = b'[{"name":"Nigeria","continent":"Africa"}]'
    # One single-byte token per byte: each is allowed, and the document completes.
    for i in range(len(text)):
        assert matcher.accept_token(by_bytes[text[i : i + 1]])
    assert matcher.is_accepting()


def test_a_real_sized_vocabularys_tables_are_kept_and_read_back(tmp_path, monkeypatch):
    # Tables of a vocabulary a real tokenizer's size are kept in $STENCIL_CACHE/tables and read
    # back by the next vocabulary of the same tokens; the masks are the same either way.
    monkeypatch.setenv("STENCIL_CACHE", str(tmp_path))
    tables = tmp_path / "tables"
    tokens = TINY + [str(i).encode() for i in range(20_000)]

    def vocab():
        return Vocab.from_token_bytes(tokens, eos_token_ids=[EOS])

    def masks(v):
        matcher = Matcher(Grammar.from_json_schema({"type": "integer", "maximum": 1999}, v))
        seen = [mask_of(matcher)]
        assert matcher.accept_token(tokens.index(b"12"))
        seen.append(mask_of(matcher))
        return seen

    built = masks(vocab())
    assert len(built[0]) > 1000 and tokens.index(b"1999") in built[0]
    assert tokens.index(b"2000") not in built[0]
    kept = sorted(p.name for p in tables.iterdir())
    assert len(kept) == 1 and kept[0].startswith("kernel-"), kept
    written = (tables / kept[0]).stat().st_mtime_ns
    assert masks(vocab()) == built
    assert (tables / kept[0]).stat().st_mtime_ns == written  # read, not written again
    # A small vocabulary leaves nothing behind.
    tiny_vocab()
    assert sorted(p.name for p in tables.iterdir()) == kept
    # A cache that cannot be written costs only the time: the tables are built in memory.
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would be")
    monkeypatch.setenv("STENCIL_CACHE", str(blocked))
    assert masks(vocab()) == built


def test_a_tokenizers_vocabulary_is_kept_under_the_hash_of_its_files(tmp_path, monkeypatch):
    # The vocabulary of a tokenizer.json is kept in $STENCIL_CACHE/tables under a hash of the
    # file, its config and the tokens given, and read back by the next process; other contents
    # or other tokens given are another vocabulary, never the kept one.
    monkeypatch.setenv("STENCIL_CACHE", str(tmp_path))
    tables = tmp_path / "tables"
    source = tokenizer_path("llama3")
    folder = tmp_path / "llama3"
    folder.mkdir()
    path = folder / "tokenizer.json"
    path.write_bytes(source.read_bytes())
    config = source.with_name("tokenizer_config.json")
    if config.is_file():
        (folder / "tokenizer_config.json").write_bytes(config.read_bytes())

    def kept():
        return sorted(p.name for p in tables.iterdir() if p.name.startswith("vocab-"))

    def same(a, b):
        assert (len(a), a.eos_token_ids) == (len(b), b.eos_token_ids)
        assert all(a.token_bytes(i) == b.token_bytes(i) for i in range(len(a)))

    first = Vocab.from_tokenizer_json(path)
    assert len(kept()) == 1
    written = (tables / kept()[0]).stat().st_mtime_ns
    again = Vocab.from_tokenizer_json(path)
    same(again, first)
    assert (tables / kept()[0]).stat().st_mtime_ns == written  # read, not written again

    # Other tokens given: another vocabulary (the end of sequence differs), kept apart.
    text = path.read_text()
    given = Vocab.from_tokenizer_json(text, eos_token="<|eot_id|>")
    assert len(kept()) == 2
    same(Vocab.from_tokenizer_json(text, eos_token="<|eot_id|>"), given)
    assert len(kept()) == 2

    # The same file with one token's text changed: derived, not read.
    changed = text.replace("<|reserved_special_token_0|>", "<|reserved_special_token_Z|>", 1)
    assert changed != text
    path.write_text(changed)
    edited = Vocab.from_tokenizer_json(path)
    differ = [i for i in range(len(first)) if edited.token_bytes(i) != first.token_bytes(i)]
    assert [edited.token_bytes(i) for i in differ] == [b"<|reserved_special_token_Z|>"]
    assert len(kept()) == 3
