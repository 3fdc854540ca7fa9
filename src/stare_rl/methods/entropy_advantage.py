"""``entropy_advantage``: the entropy-based advantage term of Cheng et al. 2025, "Reasoning with Exploration:
An Entropy Perspective on Reinforcement Learning for LLMs" (arXiv 2506.14758, method section:
"entropy-based advantage shaping").

Every token's advantage gets a bonus that grows with the policy's entropy at that position, gradient-detached
and clipped so that it can never exceed a fraction 1/kappa of the original advantage's magnitude:

    psi_t = min(alpha * sg(H_t), |A_t| / kappa)          (alpha > 0, kappa > 1)
    A'_t  = A_t + psi_t

and the shaped advantage replaces A in the clipped surrogate. Since ``psi >= 0`` and ``psi <= |A| / kappa <
|A|``, the bonus never flips the sign of an advantage (negative tokens are only penalised less), and a token
with ``A = 0`` gets no bonus. The entropy enters only through the advantage (no entropy gradient), unlike an
entropy bonus in the loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from stare_rl.core.registry import register_method
from stare_rl.core.surrogate import SurrogateConfig, clipped_surrogate
from stare_rl.core.types import LossContext, LossOutput, TokenBatch


@dataclass(frozen=True)
class EntropyAdvantageConfig:
    """Entropy-based advantage shaping (Cheng et al. 2025, method section). Defaults alpha = 0.4, kappa = 2:
    the setting of the paper's experiments; there is no public reference code to cross-check them."""

    alpha: float = field(
        default=0.4,
        metadata={"help": "alpha >= 0: scale of the detached entropy bonus alpha * H_t (paper: 0.4). 0 = vanilla."},
    )
    kappa: float = field(
        default=2.0,
        metadata={
            "help": "kappa > 1: the bonus is capped at |A_t| / kappa, so it never reverses the sign of A_t "
            "(paper: 2)."
        },
    )

    def __post_init__(self) -> None:
        if not (math.isfinite(self.alpha) and self.alpha >= 0.0):
            raise ValueError(f"alpha={self.alpha} must be a finite value >= 0")
        if not (math.isfinite(self.kappa) and self.kappa > 1.0):
            raise ValueError(f"kappa={self.kappa} must be a finite value > 1 (the bonus must stay below |A|)")


def entropy_advantage_bonus(
    advantages: torch.Tensor, entropy: torch.Tensor, valid: torch.Tensor, cfg: EntropyAdvantageConfig
) -> torch.Tensor:
    """``(B, T)`` bonus ``psi = min(alpha * H, |A| / kappa)``, detached, 0 on padding (Cheng et al. 2025)."""
    a = torch.where(valid, advantages.detach(), 0.0)  # (B, T) padding may hold NaN
    h = torch.where(valid, entropy.detach(), 0.0)  # (B, T)
    psi = torch.minimum(cfg.alpha * h, a.abs() / cfg.kappa)  # (B, T) >= 0: entropy >= 0
    return psi


@register_method("entropy_advantage", EntropyAdvantageConfig, needs_entropy=True)
def entropy_advantage_loss(
    batch: TokenBatch, cfg: EntropyAdvantageConfig, surrogate: SurrogateConfig, ctx: LossContext
) -> LossOutput:
    """Clipped surrogate on the shaped advantage ``A + min(alpha sg(H), |A| / kappa)`` (Cheng et al. 2025).

    Args:
        batch: ``(B, T)`` tensors; ``batch.entropy`` (current policy, full vocabulary) is required.
        cfg: alpha, kappa.
        surrogate: the shared clip settings (the dual clip applies to the shaped A < 0 tokens).
        ctx: unused (no controller, no global statistic).

    Returns:
        per-token loss (0 on padding), unit weights, the surrogate's metrics plus ``entropy_bonus_mean``
        (mean psi over valid tokens) and ``entropy_bonus_capped_frac`` (valid tokens with A != 0 where the
        cap |A| / kappa binds, as a fraction of valid tokens).

    Notes:
        Per token only: no batch statistic. ``batch.entropy`` must be the entropy of the policy whose log-probs
        are in ``log_prob`` (the paper computes it in the actor's forward pass and detaches it).
    """
    if batch.entropy is None:
        raise ValueError("method 'entropy_advantage' needs batch.entropy (per-token entropy), got entropy=None")
    valid = batch.valid  # (B, T)
    psi = entropy_advantage_bonus(batch.advantages, batch.entropy, valid, cfg)  # (B, T)
    shaped = torch.where(valid, batch.advantages.detach() + psi, 0.0)  # (B, T) Cheng et al.: A + psi
    token_loss, metrics = clipped_surrogate(batch.log_prob, batch.old_log_prob, shaped, batch.mask, surrogate)
    with torch.no_grad():
        n = valid.sum().clamp(min=1).to(token_loss.dtype)
        capped = valid & (batch.advantages.detach() != 0) & (cfg.alpha * batch.entropy.detach() > psi)
        metrics["entropy_bonus_mean"] = psi.sum() / n
        metrics["entropy_bonus_capped_frac"] = capped.sum() / n
    return LossOutput(token_loss=token_loss, token_weights=torch.ones_like(token_loss).detach(), metrics=metrics)
