"""One shared loss aggregation, so every method and engine reduces the per-token loss the same way.

Split invariance: pass ``global_tokens`` (valid tokens of the whole global batch) or ``global_seqs``
(sequences with at least one valid token) and the sum of micro-batch losses equals the loss of the whole
batch, whatever the micro-batch or rank layout.
"""

from __future__ import annotations

import torch

AGG_MODES = (
    "token-mean",
    "token-sum",
    "seq-mean-token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-sum-norm",
)


def check_agg_mode(mode: str) -> None:
    if mode not in AGG_MODES:
        raise ValueError(f"loss_agg_mode={mode!r} is not one of {list(AGG_MODES)}")


def aggregate(
    token_loss: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "token-mean",
    *,
    global_tokens: float | None = None,
    global_seqs: float | None = None,
    norm_length: float | None = None,
) -> torch.Tensor:
    """Reduce a ``(B, T)`` per-token loss to a scalar.

    Args:
        token_loss: ``(B, T)`` per-token loss.
        mask: ``(B, T)`` 1 on valid tokens.
        mode: one of :data:`AGG_MODES`.
            ``token-mean``: sum over valid tokens / number of valid tokens.
            ``token-sum``: sum over valid tokens.
            ``seq-mean-token-mean``: mean over non-empty rows of (row sum / row count).
            ``seq-mean-token-sum``: mean over non-empty rows of row sums.
            ``seq-mean-token-sum-norm``: sum over valid tokens / (non-empty rows * norm_length) (Dr.GRPO).
        global_tokens: if given, the token-mean denominator (valid tokens of the global batch).
        global_seqs: if given, the seq-mean denominator (non-empty rows of the global batch).
        norm_length: constant length for ``seq-mean-token-sum-norm`` (default: T).

    Returns:
        A 0-dim tensor; 0 (with a zero gradient) when nothing is valid, never NaN.

    Notes:
        Rows without valid tokens are not counted as sequences (newer verl ``agg_loss`` semantics).
    """
    check_agg_mode(mode)
    valid = (mask > 0).to(token_loss.dtype)  # (B, T)
    masked = torch.where(valid > 0, token_loss, torch.zeros_like(token_loss))  # (B, T); padding -> exactly 0
    row_count = valid.sum(-1)  # (B,)
    row_present = (row_count > 0).to(token_loss.dtype)  # (B,)
    if mode == "token-sum":
        return masked.sum()
    if mode == "token-mean":
        denom = global_tokens if global_tokens is not None else valid.sum()
        return masked.sum() / _safe(denom, token_loss)
    n_seq = global_seqs if global_seqs is not None else row_present.sum()
    if mode == "seq-mean-token-mean":
        row_mean = masked.sum(-1) / row_count.clamp(min=1)  # (B,)
        return (row_mean * row_present).sum() / _safe(n_seq, token_loss)
    if mode == "seq-mean-token-sum":
        return masked.sum(-1).sum() / _safe(n_seq, token_loss)
    # seq-mean-token-sum-norm
    length = float(norm_length) if norm_length is not None else float(token_loss.shape[-1])
    return masked.sum() / (_safe(n_seq, token_loss) * length)


def _safe(denom: float | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Denominator clamped to >= 1 so that an empty batch yields 0, not 0/0."""
    d = torch.as_tensor(denom, dtype=like.dtype, device=like.device)
    return d.clamp(min=1.0)
