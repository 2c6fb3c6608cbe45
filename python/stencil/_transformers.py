"""Vocabularies of Hugging Face tokenizer objects, cached per object (``Vocab.from_transformers``).

transformers itself is imported only to convert a slow tokenizer.
"""

import threading
import weakref

from ._stencil import Vocab

# tokenizer object -> {vocab_size: Vocab}. Weak, so a cached vocabulary goes with its tokenizer.
_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# For tokenizer objects that cannot be weakly referenced: id -> (tokenizer, {vocab_size: Vocab}).
_strong: dict = {}
_lock = threading.Lock()


def _hf_tokenizer(tokenizer):
    """The Hugging Face tokenizer inside a wrapper (mlx-lm's ``TokenizerWrapper``), or itself."""
    inner = getattr(tokenizer, "_tokenizer", None)
    if inner is not None and hasattr(inner, "convert_ids_to_tokens"):
        return inner
    return tokenizer


def _tokenizer_json(hf) -> str:
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is not None:
        return backend.to_str()
    if hasattr(hf, "to_str") and hasattr(hf, "get_vocab"):
        # A `tokenizers.Tokenizer`.
        return hf.to_str()
    try:
        from transformers.convert_slow_tokenizer import convert_slow_tokenizer
    except ImportError as e:
        raise TypeError(
            f"{type(hf).__name__} is not a fast Hugging Face tokenizer, and transformers (needed "
            "to convert a slow one) is not installed"
        ) from e
    try:
        return convert_slow_tokenizer(hf).to_str()
    except Exception as e:
        raise TypeError(
            f"cannot read the vocabulary of {type(hf).__name__}: it is not a fast tokenizer and "
            f"transformers cannot convert it ({e}); load its tokenizer.json with "
            "Vocab.from_tokenizer_json"
        ) from e


def _eos_ids(tokenizer, hf) -> list:
    ids = set()
    for source in (tokenizer, hf):
        for name in ("eos_token_id", "eos_token_ids"):
            value = getattr(source, name, None)
            if isinstance(value, int):
                ids.add(value)
            elif value is not None:
                ids.update(int(i) for i in value)
    return sorted(ids)


def _build(tokenizer, vocab_size):
    hf = _hf_tokenizer(tokenizer)
    eos = getattr(hf, "eos_token", None)
    bos = getattr(hf, "bos_token", None)
    return Vocab.from_tokenizer_json(
        _tokenizer_json(hf),
        vocab_size=vocab_size,
        eos_token=eos if isinstance(eos, str) else None,
        bos_token=bos if isinstance(bos, str) else None,
        eos_token_ids=_eos_ids(tokenizer, hf),
    )


def _entries(tokenizer, create: bool):
    """The cache's {vocab_size: Vocab} of `tokenizer` (None when absent and not `create`)."""
    try:
        per = _cache.get(tokenizer)
        if per is None and create:
            per = _cache[tokenizer] = {}
        return per
    except TypeError:  # not weakly referenceable: kept by id, with the object itself
        entry = _strong.get(id(tokenizer))
        if entry is None and create:
            entry = _strong[id(tokenizer)] = (tokenizer, {})
        return None if entry is None else entry[1]


def vocab_from_transformers(tokenizer, vocab_size=None) -> Vocab:
    """``Vocab.from_transformers``: built once per tokenizer object and ``vocab_size``."""
    with _lock:
        per = _entries(tokenizer, create=False)
        vocab = None if per is None else per.get(vocab_size)
    if vocab is None:
        vocab = _build(tokenizer, vocab_size)
        with _lock:
            vocab = _entries(tokenizer, create=True).setdefault(vocab_size, vocab)
    return vocab
