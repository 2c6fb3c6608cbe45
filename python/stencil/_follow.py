"""A matcher that follows a growing token sequence, for the adapters."""

from typing import Any, Dict, Optional, Sequence, Union

from ._stencil import Grammar, Matcher, Vocab


class Grammars:
    """One schema compiled for a tokenizer, once per logits width (a model may pad its
    embedding past the tokenizer's ids). Compiled for the tokenizer's own width at once, so
    that a bad schema fails when an adapter is made rather than in the middle of generation."""

    def __init__(self, schema: Any, tokenizer: Any, *, strict: bool, whitespace: str):
        self._schema = schema
        self._tokenizer = tokenizer
        self._options = {"strict": strict, "whitespace": whitespace}
        self._by_size: Dict[Optional[int], Grammar] = {}
        self.default = self.for_width(None)

    def for_width(self, vocab_size: Optional[int]) -> Grammar:
        """The grammar for logits of ``vocab_size`` entries (None: the tokenizer's ids)."""
        grammar = self._by_size.get(vocab_size)
        if grammar is None:
            vocab = Vocab.from_transformers(self._tokenizer, vocab_size=vocab_size)
            grammar = self._by_size.get(len(vocab))
            if grammar is None:
                grammar = Grammar.from_json_schema(self._schema, vocab, **self._options)
                self._by_size[len(vocab)] = grammar
            self._by_size[vocab_size] = grammar
        return grammar


class Follower:
    """Accepts, at each step, the tokens a host appended to a sequence since the last step.

    ``seen`` is how many tokens of the sequence are already accounted for (the prompt, at the
    start). Tokens after an accepted end of sequence (hosts pad finished rows) are ignored.
    """

    __slots__ = ("matcher", "seen")

    def __init__(self, matcher: Matcher, seen: int = 0):
        self.matcher = matcher
        self.seen = seen

    def update(self, tokens: Sequence[int]) -> None:
        new = list(tokens[self.seen :])
        self.seen = len(tokens)
        if not new or self.matcher.is_terminated():
            return
        n = self.matcher.accept_tokens(new)
        if n < len(new) and not self.matcher.is_terminated():
            raise RuntimeError(
                f"token {new[n]} was generated but the schema does not allow it here: was the "
                "mask applied to the logits it was sampled from? (beam search and speculative "
                "decoding reorder or skip steps and are not supported)"
            )

    def active(self) -> bool:
        """Whether the document is still being written (a mask is due)."""
        return not self.matcher.is_terminated()


class SchemaProcessor:
    """What the mlx-lm and transformers processors share: the schema compiled for the
    tokenizer (``grammar``; a bad schema raises ``SchemaError`` here, not during generation)
    and, per logits width, on demand."""

    def __init__(
        self,
        schema: Union[str, dict, bool],
        tokenizer: Any,
        *,
        strict: bool = True,
        whitespace: str = "compact",
    ):
        self._grammars = Grammars(schema, tokenizer, strict=strict, whitespace=whitespace)
        self.grammar = self._grammars.default
