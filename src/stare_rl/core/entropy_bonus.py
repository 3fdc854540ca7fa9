"""Entropy bonus: a regulariser that composes with any registered method.

The per-token term ``-coef * H_t`` is added to a method's per-token loss, so it is reduced by the same
:func:`stare_rl.core.aggregate.aggregate` mode as the policy loss (verl: ``pg_loss - entropy_coeff *
agg_loss(entropy)``). Minimising it raises the entropy. The coefficient is fixed (:class:`EntropyBonusConfig`)
or, when the engine passes ``entropy_coef`` in ``LossContext.stats``, comes from the adaptive controller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import torch

from stare_rl.core.types import LossContext, LossOutput, TokenBatch


@dataclass(frozen=True)
class EntropyBonusConfig:
    """Fixed entropy-bonus coefficient.

    The default 0.001 is verl's long-standing ``actor.entropy_coeff`` default (verl >= 0.5 defaults to 0 =
    off), the usual fixed-coefficient entropy-regularisation baseline in the entropy-collapse papers.
    """

    coef: float = field(
        default=0.001,
        metadata={
            "help": "Entropy bonus coefficient beta >= 0: the loss gets -beta * H per valid token (0 = off). "
            "LossContext.stats['entropy_coef'], when set by the adaptive controller, overrides it."
        },
    )

    def __post_init__(self) -> None:
        if not (math.isfinite(self.coef) and self.coef >= 0.0):
            raise ValueError(f"coef={self.coef} must be a finite number >= 0")


def entropy_bonus(entropy: torch.Tensor, mask: torch.Tensor, coef: float) -> torch.Tensor:
    """Per-token entropy-bonus loss term ``-coef * H`` (0 on padding); the gradient flows through ``entropy``.

    Args:
        entropy: ``(B, T)`` full-vocabulary entropy, computed with gradient (e.g. by
            :func:`stare_rl.core.tokens.logprobs_and_entropy`).
        mask: ``(B, T)`` 1 on valid tokens.
        coef: the coefficient (>= 0).

    Returns:
        ``(B, T)`` loss term to add to a method's ``token_loss``.
    """
    if entropy.shape != mask.shape:
        raise ValueError(f"entropy has shape {tuple(entropy.shape)}, expected {tuple(mask.shape)} like mask")
    if not (math.isfinite(coef) and coef >= 0.0):
        raise ValueError(f"coef={coef} must be a finite number >= 0")
    valid = (mask > 0).to(entropy.dtype)  # (B, T)
    # torch.where keeps a NaN/inf entropy on padding out of the loss and out of the gradient.
    return torch.where(valid > 0, -coef * entropy, torch.zeros_like(entropy))


def resolve_entropy_coef(cfg: EntropyBonusConfig, ctx: LossContext | None = None) -> float:
    """The coefficient in force: stats ``entropy_coef`` (adaptive controller) if set, else ``cfg.coef``."""
    if ctx is not None and ctx.get("entropy_coef") is not None:
        coef = float(ctx.get("entropy_coef"))
        if not (math.isfinite(coef) and coef >= 0.0):
            raise ValueError(f"entropy_coef={coef} (LossContext) must be a finite number >= 0")
        return coef
    return cfg.coef


def add_entropy_bonus(
    out: LossOutput, batch: TokenBatch, cfg: EntropyBonusConfig | None = None, ctx: LossContext | None = None
) -> LossOutput:
    """Return a copy of ``out`` whose ``token_loss`` includes the entropy bonus of ``batch.entropy``.

    The bonus is not multiplied by the method's token weights (they re-weight the policy-gradient term
    only), and ``token_weights`` are unchanged.

    Args:
        out: a method's output for ``batch``.
        batch: must carry ``entropy`` with gradient for the bonus to act.
        cfg: fixed coefficient (default :class:`EntropyBonusConfig`).
        ctx: stats ``entropy_coef`` overrides ``cfg.coef``.

    Returns:
        A new :class:`LossOutput` with metrics ``entropy`` (token-mean of this batch) and, when the coefficient
        is the config's (no controller handed one in through ``ctx``, which logs its own), ``entropy_coef``;
        float32 whatever the compute dtype.
    """
    if batch.entropy is None:
        raise ValueError("add_entropy_bonus needs batch.entropy (per-token entropy), got entropy=None")
    coef = resolve_entropy_coef(cfg or EntropyBonusConfig(), ctx)
    bonus = entropy_bonus(batch.entropy, batch.mask, coef)  # (B, T)
    valid = batch.mask_f
    metrics = dict(out.metrics)
    if ctx is None or ctx.get("entropy_coef") is None:
        metrics["entropy_coef"] = torch.tensor(coef, dtype=torch.float32, device=out.token_loss.device)
    ent = torch.where(valid > 0, batch.entropy.detach(), torch.zeros_like(valid))  # (B, T)
    metrics["entropy"] = ent.sum(dtype=torch.float32) / valid.sum(dtype=torch.float32).clamp(min=1.0)
    return replace(out, token_loss=out.token_loss + bonus, metrics=metrics)
