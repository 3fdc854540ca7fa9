"""``archer``: Archer's dual-token clip constraints (Wang et al. 2025, "Stabilizing Knowledge, Promoting
Reasoning: Dual-Token Constraints for RLVR", arXiv 2507.15778, method section: dual-token constraints).

Within each response, tokens whose entropy is above the response's rho-quantile are "reasoning" tokens and
get a looser trust region; the rest are "knowledge" tokens and keep the tight one:

    q_i   = quantile_rho({H_{i,t} : t valid in response i})     (linear interpolation, per response)
    high  = H_{i,t} > q_i
    l_t   = PPO-clip(r_t, A_t; eps_high_entropy)   if high      (paper: eps = 0.5 on both sides)
            PPO-clip(r_t, A_t; eps_surrogate)      otherwise    (paper: eps = 0.2 on both sides)

with the shared dual clip c for A < 0 in both cases. The quantile is per response, as in the reference code
(``nanquantile(..., dim=-1)`` over the response's valid tokens), so the selection never depends on how a batch
is split into micro-batches or ranks, and no global statistic is needed.

Not implemented: Archer's second constraint, a KL penalty ``k3(pi || pi_ref)`` against the *reference*
policy with coefficient 0.001 on low-entropy tokens and 0 on high-entropy tokens (reference run script
``run_archer_qwen2.5_1.5b_code.sh``: ``kl_loss_coef=0.001``, ``high_entropy_kl_loss_scale_coef=0.0``).
:class:`~stare_rl.core.types.TokenBatch` carries no reference log-probs, so this method is Archer's clip
constraint only (equal to the reference with ``use_kl_loss=False``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from stare_rl.core.registry import register_method
from stare_rl.core.surrogate import SurrogateConfig, clipped_surrogate
from stare_rl.core.types import LossContext, LossOutput, TokenBatch


@dataclass(frozen=True)
class ArcherConfig:
    """Archer's dual-token clip settings. Defaults are the reference run script's
    (``scripts/train/run_archer_qwen2.5_1.5b_code.sh``: ``token_entropy_quantile=0.8``,
    ``high_entropy_clip_ratio_low/high=0.5``); the low-entropy tokens use the shared surrogate's clip,
    which the paper sets to 0.2 / 0.2 (pass ``SurrogateConfig(clip_ratio_high=0.2)`` to match).
    """

    token_entropy_quantile: float = field(
        default=0.8,
        metadata={
            "help": "rho in [0, 1]: per-response entropy quantile; tokens strictly above it get the high-entropy "
            "clip (paper: 0.8, i.e. the top 20%). 1 puts every token in the low-entropy class (= vanilla)."
        },
    )
    high_entropy_clip_ratio_low: float = field(
        default=0.5, metadata={"help": "eps_low in [0, 1) for high-entropy tokens (paper: 0.5)."}
    )
    high_entropy_clip_ratio_high: float = field(
        default=0.5, metadata={"help": "eps_high >= 0 for high-entropy tokens (paper: 0.5)."}
    )

    def __post_init__(self) -> None:
        if not 0.0 <= self.token_entropy_quantile <= 1.0:
            raise ValueError(f"token_entropy_quantile={self.token_entropy_quantile} must be in [0, 1]")
        if not 0.0 <= self.high_entropy_clip_ratio_low < 1.0:
            raise ValueError(f"high_entropy_clip_ratio_low={self.high_entropy_clip_ratio_low} must be in [0, 1)")
        if not self.high_entropy_clip_ratio_high >= 0.0:
            raise ValueError(f"high_entropy_clip_ratio_high={self.high_entropy_clip_ratio_high} must be >= 0")


def row_entropy_quantile(entropy: torch.Tensor, valid: torch.Tensor, q: float) -> torch.Tensor:
    """``(B, 1)`` per-row q-quantile of the valid entries (linear interpolation, like ``torch.nanquantile``).

    Rows without valid entries get ``+inf`` (nothing is above it). Sort-based, so there is no size limit.
    """
    values = torch.where(valid, entropy.detach(), torch.inf)  # (B, T) padding sorts last
    ordered = torch.sort(values, dim=-1).values  # (B, T)
    n = valid.sum(-1, keepdim=True)  # (B, 1)
    pos = q * (n - 1).clamp(min=0).to(values.dtype)  # (B, 1) fractional rank among the valid entries
    lo = pos.floor().long()
    hi = pos.ceil().long()
    v_lo, v_hi = ordered.gather(-1, lo), ordered.gather(-1, hi)  # (B, 1)
    frac = pos - lo.to(values.dtype)
    # torch.lerp, not v_lo + (v_hi - v_lo) * frac: equal values give exactly that value (no inf - inf)
    quantile = torch.where(hi > lo, torch.lerp(v_lo, v_hi, frac), v_lo)
    return torch.where(n > 0, quantile, torch.inf)


@register_method("archer", ArcherConfig, needs_entropy=True)
def archer_loss(batch: TokenBatch, cfg: ArcherConfig, surrogate: SurrogateConfig, ctx: LossContext) -> LossOutput:
    """Archer dual-token clip: a looser interval for each response's high-entropy tokens.

    Args:
        batch: ``(B, T)`` tensors; ``batch.entropy`` (current policy, full vocabulary) is required. One row is
            one response.
        cfg: quantile and the high-entropy clip interval.
        surrogate: clip interval of the low-entropy tokens, dual-clip c, aggregation mode.
        ctx: unused (per-response statistic only).

    Returns:
        per-token loss (0 on padding), unit weights, mask ``high_entropy``, metrics ``high_entropy_frac``,
        ``pg_clipfrac`` / ``pg_clipfrac_lower`` / ``ppo_kl`` over all valid tokens and
        ``pg_clipfrac_high_entropy`` / ``pg_clipfrac_low_entropy`` (fractions of each class).
    """
    if batch.entropy is None:
        raise ValueError("method 'archer' needs batch.entropy (per-token entropy), got entropy=None")
    valid = batch.valid  # (B, T)
    threshold = row_entropy_quantile(batch.entropy, valid, cfg.token_entropy_quantile)  # (B, 1)
    high = valid & (batch.entropy.detach() > threshold)  # (B, T) Archer: high-entropy (reasoning) tokens
    low = valid & ~high  # (B, T) knowledge tokens
    loose = dataclasses.replace(
        surrogate,
        clip_ratio_low=cfg.high_entropy_clip_ratio_low,
        clip_ratio_high=cfg.high_entropy_clip_ratio_high,
    )
    args = (batch.log_prob, batch.old_log_prob, batch.advantages)
    loss_high, m_high = clipped_surrogate(*args, high, loose)  # (B, T), 0 outside `high`
    loss_low, m_low = clipped_surrogate(*args, low, surrogate)  # (B, T), 0 outside `low`
    token_loss = loss_high + loss_low  # disjoint supports
    n_high = high.sum().to(token_loss.dtype)
    n_low = low.sum().to(token_loss.dtype)
    n = (n_high + n_low).clamp(min=1)
    metrics = {k: (m_high[k] * n_high + m_low[k] * n_low) / n for k in m_low}  # each is a mean over its class
    metrics["pg_clipfrac_high_entropy"] = m_high["pg_clipfrac"]
    metrics["pg_clipfrac_low_entropy"] = m_low["pg_clipfrac"]
    metrics["high_entropy_frac"] = n_high / n
    return LossOutput(
        token_loss=token_loss,
        token_weights=torch.ones_like(token_loss).detach(),
        metrics=metrics,
        masks={"high_entropy": high},
    )
