"""The shared PPO-clip surrogate (asymmetric clip-higher + dual clip), used by every clipped method."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from stare_rl.core.aggregate import check_agg_mode

LOG_RATIO_CLAMP = 20.0


@dataclass(frozen=True)
class SurrogateConfig:
    """The clipped surrogate shared by all clipped methods.

    Defaults follow DAPO's clip-higher (Yu et al. 2025, §3.1: eps_low 0.2, eps_high 0.28) and verl's dual
    clip constant c = 3 (Ye et al. 2020). The STARE and STEER papers use these clip values with token-mean.
    """

    clip_ratio_low: float = field(default=0.2, metadata={"help": "eps_low: ratio is clipped below at 1 - eps_low."})
    clip_ratio_high: float = field(
        default=0.28, metadata={"help": "eps_high: ratio is clipped above at 1 + eps_high (DAPO clip-higher)."}
    )
    clip_ratio_c: float = field(
        default=3.0, metadata={"help": "Dual-clip constant c > 1: for A < 0 the loss is capped at -A*c."}
    )
    loss_agg_mode: str = field(
        default="token-mean",
        metadata={"help": "token-mean | token-sum | seq-mean-token-mean | seq-mean-token-sum | seq-mean-token-sum-norm"},
    )

    def __post_init__(self) -> None:
        if not 0.0 <= self.clip_ratio_low < 1.0:
            raise ValueError(f"clip_ratio_low={self.clip_ratio_low} must be in [0, 1)")
        if not self.clip_ratio_high >= 0.0:
            raise ValueError(f"clip_ratio_high={self.clip_ratio_high} must be >= 0")
        if not self.clip_ratio_c > 1.0:
            raise ValueError(f"clip_ratio_c={self.clip_ratio_c} must be > 1 (dual clip)")
        check_agg_mode(self.loss_agg_mode)


class TokenSigns(NamedTuple):
    """Masks of the advantage signs, computed once and shared by a method and the surrogate (all ``(B, T)``)."""

    valid: torch.Tensor  # bool, mask > 0
    positive: torch.Tensor  # bool, valid & A > 0
    negative: torch.Tensor  # bool, valid & A < 0
    adv: torch.Tensor  # float, A on valid tokens, 0 on padding (detached; padding may hold NaN/inf)


def token_signs(advantages: torch.Tensor, mask: torch.Tensor) -> TokenSigns:
    """The :class:`TokenSigns` of a batch (A == 0 is in neither sign set)."""
    valid = mask > 0  # (B, T)
    adv = torch.where(valid, advantages.detach(), 0.0)  # (B, T)
    # sign() and float->bool are vectorised on CPU, a float comparison to bool is ~5x slower
    sign = torch.sign(adv)  # (B, T) in {-1, 0, 1}
    return TokenSigns(valid, sign.clamp(min=0.0).bool(), sign.clamp_(max=0.0).bool(), adv)


def clipped_surrogate(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    cfg: SurrogateConfig,
    *,
    weights: torch.Tensor | None = None,
    signs: TokenSigns | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token dual-clip PPO loss, optionally multiplied by constant per-token weights.

    r = exp(clamp(log_prob - old_log_prob, -20, 20));  l = max(-A r, -A clip(r, 1-eps_low, 1+eps_high));
    for A < 0 additionally l = min(l, -A c). Computed in the equivalent one-clamp form
    ``l = -A * clamp(r, lo, hi)`` with ``(lo, hi) = (1 - eps_low, c)`` for A < 0 and ``(-inf, 1 + eps_high)``
    otherwise (same values; fewer passes forward and backward).

    Args:
        log_prob, old_log_prob, advantages, mask: ``(B, T)``; advantages are constants (no gradient).
        cfg: clip settings.
        weights: optional ``(B, T)`` constant weights, > 0 on valid tokens; the result is ``weights * l``
            (folded into ``-A`` so that it costs no extra pass in the forward or the backward).
        signs: optional precomputed :func:`token_signs` of ``(advantages, mask)``.

    Returns:
        ``(token_loss (B, T), metrics)``; token_loss is 0 on padding. Metrics (token-mean over valid tokens
        of this micro-batch): ``pg_clipfrac``, ``pg_clipfrac_lower`` (dual clip active), ``ppo_kl``.

    Notes:
        # DEVIATION: at a ratio exactly equal to c with A < 0 the gradient is the full one; the reference's
        ``min(-A c, l)`` splits it in half at that tie (a measure-zero set).
    """
    signs = token_signs(advantages, mask) if signs is None else signs
    # Padding may hold anything (NaN/inf): A = 0 and log-ratio = 0 there, so the loss is exactly 0 and neither
    # the loss nor the gradient sees the padding values (no extra multiply by the mask needed).
    log_ratio = torch.where(signs.valid, log_prob - old_log_prob, 0.0)  # (B, T) unclamped, 0 on padding
    ratio = torch.exp(torch.clamp(log_ratio, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))  # (B, T)
    lo, hi = _clip_bounds(signs.negative, cfg)  # (B, T) constants
    neg_adv = torch.neg(signs.adv) if weights is None else torch.mul(signs.adv, weights).neg_()  # (B, T) -A w
    token_loss = neg_adv * torch.clamp(ratio, lo, hi)  # (B, T), 0 on padding
    metrics = _clip_metrics(ratio.detach(), log_ratio.detach(), lo, hi, signs)
    return token_loss, metrics


def _clip_bounds(negative: torch.Tensor, cfg: SurrogateConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token clamp bounds of the ratio: [1 - eps_low, c] for A < 0 (dual clip), [-inf, 1 + eps_high] else.

    A > 0: max(-A r, -A clip(r)) = -A min(r, 1 + eps_high). A < 0: min(-A c, max(-A r, -A clip(r)))
    = -A clamp(r, 1 - eps_low, c). A = 0: the loss is 0 whatever the bound.
    """
    lo = torch.where(negative, 1.0 - cfg.clip_ratio_low, -math.inf)  # (B, T)
    hi = torch.where(negative, cfg.clip_ratio_c, 1.0 + cfg.clip_ratio_high)  # (B, T)
    return lo, hi


@torch.no_grad()
def _clip_metrics(
    ratio: torch.Tensor, log_ratio: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, signs: TokenSigns
) -> dict[str, torch.Tensor]:
    """Clip fractions and the k3-free KL estimate, from tensors the loss already holds (few bool passes).

    float32 whatever the compute dtype: a metric is a logged number, not a training tensor (bf16 would round a
    clip fraction of 1/3 to 0.333984)."""
    n = torch.count_nonzero(signs.valid).clamp(min=1).to(torch.float32)
    count = torch.count_nonzero
    above = ratio > hi  # (B, T) A > 0: clipped at 1 + eps_high; A < 0: dual clip at c
    dual = count(above & signs.negative)
    clipped = count(ratio < lo) + count(above & signs.positive)  # A < 0 below 1 - eps_low, A > 0 above
    return {
        "pg_clipfrac": clipped / n,  # padding: ratio 1, never clipped
        "pg_clipfrac_lower": dual / n,
        "ppo_kl": -log_ratio.sum(dtype=torch.float32) / n,  # unclamped log-ratio, 0 on padding
    }
