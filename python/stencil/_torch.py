"""Applying a bitmask to torch logits, for the transformers and vLLM adapters."""

import torch

_bits_cache: dict = {}


def _unpack_index(vocab_size: int, device):
    key = (vocab_size, str(device))
    idx = _bits_cache.get(key)
    if idx is None:
        ids = torch.arange(vocab_size, device=device, dtype=torch.int64)
        idx = (ids >> 5, (ids & 31).to(torch.int32))
        _bits_cache[key] = idx
    return idx


def allowed_tokens(bitmask_rows: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Bool ``[rows, vocab_size]``: the bits of int32 ``[rows, ceil(V/32)]`` rows."""
    words, shifts = _unpack_index(vocab_size, bitmask_rows.device)
    return ((bitmask_rows[:, words] >> shifts) & 1).bool()


def apply_bitmask_(logits: torch.Tensor, bitmask, rows) -> torch.Tensor:
    """Sets to -inf, in place, the logits of the tokens that row ``rows[k]`` of ``bitmask`` (a
    numpy int32 array) does not allow, for each ``k``; other rows are left alone."""
    if not rows:
        return logits
    index = torch.tensor(rows, dtype=torch.int64)
    masks = torch.from_numpy(bitmask)[index].to(logits.device, non_blocking=True)
    allowed = allowed_tokens(masks, logits.shape[-1])
    index = index.to(logits.device)
    logits[index] = logits[index].masked_fill(~allowed, float("-inf"))
    return logits
