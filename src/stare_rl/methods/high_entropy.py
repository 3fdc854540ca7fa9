"""``high_entropy``: the 80/20 forking-token mask (Wang et al. 2025, "Beyond the 80/20 Rule: High-Entropy
Minority Tokens Drive Effective Reinforcement Learning for LLM Reasoning", §5).

Only the top-rho fraction of valid tokens by entropy (the "forking tokens") keep their policy gradient.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from stare_rl.core.registry import GlobalStats, register_method
from stare_rl.core.selection import SCOPE_DEFAULT_NOTE, SELECTION_SCOPES, topk_count
from stare_rl.core.surrogate import SurrogateConfig, clipped_surrogate
from stare_rl.core.types import LossContext, LossOutput, TokenBatch

SCOPES = SELECTION_SCOPES  # micro_batch (= batch, the reference) | global (whole step batch)


@dataclass(frozen=True)
class HighEntropyConfig:
    """80/20 mask hyper-parameters; the default is the paper's rho = 0.2 (Wang et al. 2025, §5)."""

    rho: float = field(
        default=0.2,
        metadata={
            "help": "Fraction of valid tokens (highest entropy first) that keep their gradient, in (0, 1]; "
            "k = ceil(rho * N_valid), at least 1. rho = 1 keeps every token (= vanilla)."
        },
    )

    selection_scope: str = field(
        default="batch",
        metadata={
            "help": "micro_batch (alias batch): the threshold over the batch handed to the loss (per micro-batch). "
            "global: the engine "
            "gathers the entropies of the whole global batch and passes entropy_threshold through LossContext."
            + SCOPE_DEFAULT_NOTE
        },
    )

    def __post_init__(self) -> None:
        if not 0.0 < self.rho <= 1.0:
            raise ValueError(f"rho={self.rho} must be in (0, 1]")
        if self.selection_scope not in SCOPES:
            raise ValueError(f"selection_scope={self.selection_scope!r} is not one of {list(SCOPES)}")


def high_entropy_threshold(entropy_values: torch.Tensor, rho: float) -> float | None:
    """Entropy threshold that keeps the top ``rho`` fraction of ``entropy_values`` (1-D, valid tokens only).

    Engine-side use: gather the valid entropies of the whole global batch (across micro-batches and ranks,
    e.g. with :func:`stare_rl.core.selection.gather_values`), call this once, and pass the result as
    ``LossContext.stats["entropy_threshold"]`` so the mask does not depend on the parallel layout.

    Returns:
        The k-th largest entropy with ``k = ceil(rho * n)`` (at least 1), or ``None`` when there are no values.
    """
    values = entropy_values.detach().reshape(-1)
    k = topk_count(rho, values.numel(), rounding="ceil")
    if k == 0:
        return None
    # kthvalue is a linear-time selection; a sorted top-k of 20% of the tokens costs ~10x more on CPU.
    return float(torch.kthvalue(values, values.numel() - k + 1).values)


def _valid_entropies(batch: TokenBatch, cfg: HighEntropyConfig) -> tuple[torch.Tensor]:
    """1-D entropies of this batch's valid tokens (what the step controller gathers across ranks)."""
    if batch.entropy is None:
        raise ValueError("method 'high_entropy' needs batch.entropy, got entropy=None")
    return (batch.entropy.detach()[batch.valid],)


@register_method(
    "high_entropy",
    HighEntropyConfig,
    needs_entropy=True,
    global_stats=GlobalStats(
        candidates=_valid_entropies,
        reduce=lambda slots, cfg: {"entropy_threshold": high_entropy_threshold(slots[0], cfg.rho)},
        enabled=lambda cfg: cfg.selection_scope == "global",
    ),
)
def high_entropy_loss(
    batch: TokenBatch, cfg: HighEntropyConfig, surrogate: SurrogateConfig, ctx: LossContext
) -> LossOutput:
    """Clipped surrogate restricted to high-entropy (forking) tokens.

    Wang et al. 2025 §5: ``L = sum_t 1[H_t >= tau_rho] * l_t^clip``, where ``tau_rho`` is the entropy of the
    ``ceil(rho * N)``-th highest-entropy valid token. Entropy only selects; no gradient flows through it.

    Args:
        batch: ``(B, T)`` tensors; ``batch.entropy`` is required.
        cfg: ``rho``.
        surrogate: shared clip settings.
        ctx: stats ``entropy_threshold`` (global threshold from :func:`high_entropy_threshold`); ``None`` computes
            it from the valid tokens of this batch.

    Returns:
        token loss ``(B, T)``; weights 1 on kept tokens, 0 elsewhere (padding included);
        ``masks["high_entropy"]``; metrics ``high_entropy_frac`` (kept / valid) and ``entropy_threshold``.

    Notes:
        # DEVIATION: TRL's ``top_entropy_quantile`` thresholds at the linearly interpolated quantile; we take
        the exact k-th largest value (k = ceil(rho * N)), so exactly k tokens are kept when there are no ties.
        Without ``entropy_threshold`` in ``ctx`` the threshold is per batch handed in (per micro-batch).
    """
    if batch.entropy is None:
        raise ValueError("method 'high_entropy' needs batch.entropy (per-token entropy), got entropy=None")
    token_loss, metrics = clipped_surrogate(
        batch.log_prob, batch.old_log_prob, batch.advantages, batch.mask, surrogate
    )
    valid = batch.valid  # (B, T)
    entropy = batch.entropy.detach()  # (B, T)
    threshold = ctx.get("entropy_threshold")
    if threshold is None:
        threshold = high_entropy_threshold(torch.masked_select(entropy, valid), cfg.rho)  # cheaper than [valid]
    if threshold is None:  # no valid tokens: nothing to keep
        keep = torch.zeros_like(valid)
    else:
        keep = valid & (entropy >= threshold)  # (B, T) Wang et al. §5: forking tokens
    weights = keep.to(token_loss.dtype)  # (B, T) in {0, 1}
    token_loss = torch.where(keep, token_loss, 0.0)  # = token_loss * weights, without a multiply in backward
    n = valid.sum().clamp(min=1).to(token_loss.dtype)
    metrics["high_entropy_frac"] = keep.sum() / n
    metrics["entropy_threshold"] = torch.as_tensor(  # 0 when there is no valid token
        0.0 if threshold is None else float(threshold), dtype=token_loss.dtype, device=token_loss.device
    )
    return LossOutput(token_loss=token_loss, token_weights=weights, metrics=metrics, masks={"high_entropy": keep})
