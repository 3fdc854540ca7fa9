"""``ce_gppo``: bounded gradients from the tokens PPO clips (Su et al. 2025, "CE-GPPO: Coordinating Entropy via
Gradient-Preserving Clipping Policy Optimization in Reinforcement Learning", arXiv 2509.20712, method section: the CE-GPPO objective).

PPO's clip zeroes the gradient of a token once its ratio leaves the trust interval. CE-GPPO keeps the
clipped *value* but lets a scaled gradient through, with the stop-gradient form ``r / sg(r)`` (value 1,
gradient ``grad log pi``). Two coefficients decide how much: beta1 for negative low-probability tokens
(``A < 0, r < 1 - eps_low``: their gradient raises entropy), beta2 for positive high-ratio tokens
(``A > 0, r > 1 + eps_high``: their gradient lowers entropy). Per token, with ``sg`` = stop-gradient:

    l = -beta1 (1 - eps_low)  * A * r / sg(r)   if A < 0 and r < 1 - eps_low
    l = -beta2 (1 + eps_high) * A * r / sg(r)   if A > 0 and r > 1 + eps_high
    l = -A r                                    otherwise (the PPO surrogate there)
    and for A < 0 the dual clip:  l = min(l, -A c).

So the gradient on an out-of-interval token is ``-beta (1 -/+ eps) A grad log pi``: bounded by the clip
bound, never zero. beta1 = beta2 = 0 gives PPO's gradient (not its value: the clipped tokens' constant is
dropped); beta1 = beta2 = 1 gives PPO's value with the GPPO gradient.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from stare_rl.core.registry import register_method
from stare_rl.core.surrogate import LOG_RATIO_CLAMP, SurrogateConfig, clipped_surrogate, token_signs
from stare_rl.core.types import LossContext, LossOutput, TokenBatch


@dataclass(frozen=True)
class CEGPPOConfig:
    """CE-GPPO coefficients. Defaults: beta1 = 0.75, beta2 = 1 (the authors' 7B recipe
    ``7B_perf_run_gppo_v1_beta1_075_beta2_1_ours_math.sh`` and the default of ``compute_gppo_loss_general_beta``
    in their README; their 1.5B recipe uses beta1 = 0.5). The clip interval and dual-clip constant are the
    shared :class:`~stare_rl.core.surrogate.SurrogateConfig`'s (the paper's recipes: eps 0.2 / 0.2, c = 10).
    """

    beta1: float = field(
        default=0.75,
        metadata={
            "help": "beta1 >= 0: gradient scale of negative tokens below 1 - eps_low (A < 0), the entropy-raising "
            "side. Paper 7B recipe: 0.75 (1.5B: 0.5)."
        },
    )
    beta2: float = field(
        default=1.0,
        metadata={
            "help": "beta2 >= 0: gradient scale of positive tokens above 1 + eps_high (A > 0), the entropy-lowering "
            "side. Paper: 1.0."
        },
    )

    def __post_init__(self) -> None:
        for name in ("beta1", "beta2"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name}={value} must be a finite value >= 0")


@register_method("ce_gppo", CEGPPOConfig)
def ce_gppo_loss(batch: TokenBatch, cfg: CEGPPOConfig, surrogate: SurrogateConfig, ctx: LossContext) -> LossOutput:
    """CE-GPPO per-token loss (Su et al. 2025, method section; the objective in the module docstring).

    Args:
        batch: ``(B, T)`` tensors (no entropy needed).
        cfg: beta1, beta2.
        surrogate: eps_low, eps_high, dual-clip c and the aggregation mode.
        ctx: unused (no controller, no global statistic).

    Returns:
        per-token loss (0 on padding), unit weights, masks ``clipped_low`` (A < 0, r < 1 - eps_low) and
        ``clipped_high`` (A > 0, r > 1 + eps_high), metrics: the surrogate's plus ``ce_gppo_low_frac`` and
        ``ce_gppo_high_frac`` (fractions of valid tokens).

    Notes:
        Everything is per token: no batch statistic. ``pg_clipfrac`` is the surrogate's (tokens whose PPO
        gradient is clipped), i.e. exactly the tokens CE-GPPO gives a bounded gradient back to (plus A < 0
        tokens above the dual-clip constant, which stay clipped).
        # DEVIATION: the log-ratio is clamped at +-20 as in the shared surrogate (the reference does not clamp);
        beyond that the stop-gradient factor has no gradient, where the reference's ratio would overflow.
    """
    signs = token_signs(batch.advantages, batch.mask)
    ppo_loss, metrics = clipped_surrogate(
        batch.log_prob, batch.old_log_prob, batch.advantages, batch.mask, surrogate, signs=signs
    )
    log_ratio = torch.where(signs.valid, batch.log_prob - batch.old_log_prob, 0.0)  # (B, T), 0 on padding
    log_ratio = torch.clamp(log_ratio, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    ratio = torch.exp(log_ratio.detach())  # (B, T) no gradient: only selects
    low = signs.negative & (ratio < 1.0 - surrogate.clip_ratio_low)  # (B, T) CE-GPPO: negative low-probability tokens
    high = signs.positive & (ratio > 1.0 + surrogate.clip_ratio_high)  # (B, T) PA&LP-side tokens above the clip
    unit = torch.exp(log_ratio - log_ratio.detach())  # (B, T) r / sg(r): value 1, gradient grad log pi
    bound = torch.where(low, cfg.beta1 * (1.0 - surrogate.clip_ratio_low), cfg.beta2 * (1.0 + surrogate.clip_ratio_high))
    preserved = -signs.adv * bound * unit  # (B, T) clipped value (times beta), gradient kept
    # dual clip for A < 0 as in the reference (only binds when beta1 (1 - eps_low) > c)
    preserved = torch.where(low, torch.minimum(preserved, -signs.adv * surrogate.clip_ratio_c), preserved)
    token_loss = torch.where(low | high, preserved, ppo_loss)  # (B, T), 0 on padding (A = 0 there)
    n = signs.valid.sum().clamp(min=1).to(token_loss.dtype)
    metrics["ce_gppo_low_frac"] = low.sum() / n
    metrics["ce_gppo_high_frac"] = high.sum() / n
    return LossOutput(
        token_loss=token_loss,
        token_weights=torch.ones_like(token_loss).detach(),
        metrics=metrics,
        masks={"clipped_low": low, "clipped_high": high},
    )
