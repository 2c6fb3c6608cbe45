"""Type stubs of the compiled module ``stencil._stencil`` (re-exported by ``stencil``)."""

import os
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

__version__: str

class SchemaError(ValueError):
    """A JSON Schema that does not compile."""

    keyword: Optional[str]
    """The offending keyword (None when there is none, e.g. the schema is not JSON)."""
    pointer: str
    """JSON pointer of the schema object holding the keyword ("" when the schema is not JSON)."""

class EmptyMaskError(RuntimeError):
    """No token can continue the text; a mask is never returned all zeros."""

class Vocab:
    """A tokenizer's exact token bytes and the mask kernel's tables. Immutable, thread-safe."""

    @staticmethod
    def from_tokenizer_json(
        source: Union[str, "os.PathLike[str]"],
        *,
        vocab_size: Optional[int] = None,
        eos_token: Optional[str] = None,
        bos_token: Optional[str] = None,
        eos_token_ids: Sequence[int] = (),
    ) -> "Vocab":
        """A ``tokenizer.json`` path, or its JSON text (a str starting with ``{``)."""
    @staticmethod
    def from_token_bytes(
        tokens: Sequence[bytes],
        *,
        eos_token_ids: Sequence[int] = (),
        special_token_ids: Sequence[int] = (),
        vocab_size: Optional[int] = None,
    ) -> "Vocab":
        """Each id's exact bytes (``tokens[i]`` is id ``i``)."""
    @staticmethod
    def from_gguf(path: Union[str, "os.PathLike[str]"], *, vocab_size: Optional[int] = None) -> "Vocab":
        """The vocabulary in a GGUF file's metadata (``gpt2`` and ``llama`` families)."""
    @staticmethod
    def from_transformers(tokenizer: Any, *, vocab_size: Optional[int] = None) -> "Vocab":
        """A Hugging Face tokenizer object (or mlx-lm's wrapper); cached per object and size."""
    @property
    def size(self) -> int: ...
    @property
    def eos_token_ids(self) -> List[int]: ...
    @property
    def special_token_ids(self) -> List[int]: ...
    def token_bytes(self, id: int) -> bytes: ...
    def __len__(self) -> int: ...

class Relaxation:
    """A keyword lenient compilation ignored."""

    keyword: str
    pointer: str
    detail: str

class Grammar:
    """A JSON Schema compiled for a vocabulary. Immutable and thread-safe."""

    @staticmethod
    def from_json_schema(
        schema: Union[str, dict, bool],
        vocab: Vocab,
        *,
        strict: bool = True,
        whitespace: str = "compact",
        property_order: str = "any",
        cache_bytes: int = 64 << 20,
    ) -> "Grammar":
        """Raises SchemaError; ``whitespace`` is "compact", "pretty" or "flexible";
        ``property_order`` is "any" or "schema" (the order of each object's properties);
        ``cache_bytes`` bounds the mask cache the grammar's matchers share."""
    def cache_stats(self) -> dict:
        """The shared mask cache: hits, misses, evictions, bytes, masks."""
    @property
    def vocab(self) -> Vocab: ...
    @property
    def relaxations(self) -> List[Relaxation]: ...
    @property
    def is_exact(self) -> bool: ...

class Matcher:
    """One document under a grammar."""

    def __init__(self, grammar: Grammar, *, cache_bytes: int = 16 << 20) -> None: ...
    @property
    def grammar(self) -> Grammar: ...
    def accept_token(self, id: int) -> bool:
        """False (no change) when refused; ValueError out of range; RuntimeError when terminated."""
    def accept_tokens(self, ids: Sequence[int]) -> int:
        """How many were accepted, in order, up to the first refused."""
    def validate_tokens(self, ids: Sequence[int]) -> int:
        """How many would be accepted; no change."""
    def rollback(self, n: int = 1) -> None:
        """ValueError when fewer than ``n`` tokens were accepted."""
    def reset(self) -> None: ...
    def is_terminated(self) -> bool: ...
    def is_accepting(self) -> bool: ...
    def num_tokens(self) -> int: ...
    def forced_tokens(self) -> List[int]: ...
    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        """Fills row ``index`` of an int32 ``[rows, ceil(V/32)]`` array in place."""
    def cache_stats(self) -> dict:
        """Its hits and misses in the grammar's cache; its own cache's inside_hits,
        inside_misses and evictions."""
    def _fill_next_token_bitmask_ns(self, bitmask: Any, index: int = 0) -> int:
        """For benchmarks: the fill, returning the nanoseconds the Rust call took."""
    def _allowed_by_trial(self) -> List[int]:
        """For tests: every id accepted and rolled back in turn."""

def fill_next_token_bitmasks(pairs: Iterable[Tuple[Matcher, int]], bitmask: Any) -> None:
    """Fills many rows in parallel with the GIL released."""
