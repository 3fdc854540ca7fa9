"""The shared PPO-clip surrogate (asymmetric clip-higher + dual clip), used by every clipped method."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from stare_rl.aggregate import check_agg_mode

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


def clipped_surrogate(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    cfg: SurrogateConfig,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token dual-clip PPO loss.

    r = exp(clamp(log_prob - old_log_prob, -20, 20));  l = max(-A r, -A clip(r, 1-eps_low, 1+eps_high));
    for A < 0 additionally l = min(l, -A c).

    Args:
        log_prob, old_log_prob, advantages, mask: ``(B, T)``.
        cfg: clip settings.

    Returns:
        ``(token_loss (B, T), metrics)``; token_loss is 0 on padding. Metrics (token-mean over valid tokens
        of this micro-batch): ``pg_clipfrac``, ``pg_clipfrac_lower`` (dual clip active), ``ppo_kl``.
    """
    valid_b = mask > 0  # (B, T)
    # Padding may hold anything (NaN/inf): A = 0 and log-ratio = 0 there, so the loss is exactly 0 and neither
    # the loss nor the gradient sees the padding values (no extra multiply by the mask needed).
    log_ratio = torch.clamp(log_prob - old_log_prob, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    log_ratio = torch.where(valid_b, log_ratio, 0.0)  # (B, T)
    neg_adv = -torch.where(valid_b, advantages, 0.0)  # (B, T) constant, -A
    ratio = torch.exp(log_ratio)  # (B, T)
    loss1 = neg_adv * ratio
    loss2 = neg_adv * torch.clamp(ratio, 1.0 - cfg.clip_ratio_low, 1.0 + cfg.clip_ratio_high)
    clip1 = torch.maximum(loss1, loss2)  # (B, T) standard PPO clip
    loss3 = neg_adv * cfg.clip_ratio_c
    clip2 = torch.minimum(loss3, clip1)  # dual clip, only for A < 0
    negative = neg_adv > 0  # (B, T) A < 0 (never on padding)
    token_loss = torch.where(negative, clip2, clip1)  # (B, T), 0 on padding
    with torch.no_grad():
        n = valid_b.sum().clamp(min=1).to(log_prob.dtype)
        neg_log_ratio = torch.where(valid_b, old_log_prob.detach() - log_prob.detach(), 0.0)  # unclamped
        metrics = {
            "pg_clipfrac": (loss2 > loss1).sum() / n,  # padding: ratio 1, never clipped
            "pg_clipfrac_lower": ((clip1 > loss3) & negative).sum() / n,
            "ppo_kl": neg_log_ratio.sum() / n,
        }
    return token_loss, metrics
