"""``vanilla``: the GRPO / DAPO clipped surrogate with no token re-weighting."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from stare_rl.core.registry import register_method
from stare_rl.core.surrogate import SurrogateConfig, clipped_surrogate
from stare_rl.core.types import LossContext, LossOutput, TokenBatch


@dataclass(frozen=True)
class VanillaConfig:
    """No method-specific fields: the clip settings live in :class:`SurrogateConfig`."""


@register_method("vanilla", VanillaConfig)
def vanilla_loss(batch: TokenBatch, cfg: VanillaConfig, surrogate: SurrogateConfig, ctx: LossContext) -> LossOutput:
    """Plain dual-clip PPO / GRPO surrogate (DAPO when ``clip_ratio_high > clip_ratio_low``).

    Returns:
        per-token clipped loss, unit weights, clip metrics.
    """
    token_loss, metrics = clipped_surrogate(
        batch.log_prob, batch.old_log_prob, batch.advantages, batch.mask, surrogate
    )
    return LossOutput(token_loss=token_loss, token_weights=torch.ones_like(token_loss).detach(), metrics=metrics)
