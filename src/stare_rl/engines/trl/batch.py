"""TRL's completion batch -> the core's :class:`~stare_rl.core.types.TokenBatch`, and the loss-side pieces TRL
adds to a method's output (vLLM's importance-sampling ratio, the entropy bonus)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from stare_rl.core.advantages import broadcast_to_tokens
from stare_rl.core.entropy_bonus import EntropyBonusConfig, add_entropy_bonus
from stare_rl.core.types import LossContext, TokenBatch


def with_is_ratio_and_bonus(out: Any, batch: TokenBatch, is_ratio: torch.Tensor | None,
                            bonus: EntropyBonusConfig | None, ctx: LossContext) -> tuple[Any, torch.Tensor]:
    """The method's output with vLLM's importance-sampling ratio on the policy term, then the entropy bonus.

    TRL multiplies only its policy term by the sampler/trainer mismatch ratio (``importance_sampling_ratio``,
    ``(B, T)`` or ``(B, 1)``); a bonus on the trainer's own entropy is not a sample-based estimate and is added
    unweighted, as TRL adds its KL term after the ratio.

    Returns:
        (output whose ``token_loss`` is ``ratio * policy + bonus``, the ratio-weighted policy term ``(B, T)``).
    """
    if is_ratio is not None:
        out = dataclasses.replace(out, token_loss=out.token_loss * is_ratio)
    policy_token_loss = out.token_loss
    if bonus is not None:
        out = add_entropy_bonus(out, batch, bonus, ctx)
    return out, policy_token_loss


def trl_token_batch(inputs: dict[str, Any], logps: torch.Tensor, entropies: torch.Tensor | None) -> TokenBatch:
    """Translate a TRL completion batch + the policy's per-token log-probs and entropies into a TokenBatch.

    Args:
        inputs: TRL's batch (``completion_mask``, ``advantages`` (B,), ``stare_keep``, optional ``tool_mask``,
            ``stare_rewards`` (B,) and ``old_per_token_logps``; absent = on-policy).
        logps, entropies: ``(B, T)`` of the current policy (TRL's, at the sampling temperature); entropies
            ``None`` when not computed.
    """
    mask = loss_mask(inputs)  # (B, T)
    old = inputs.get("old_per_token_logps")
    old = logps.detach() if old is None else old  # on-policy: TRL skips the old forward
    # the old policy's entropy: from TRL's old log-prob pass when it ran, else the policy has not moved since
    # generation and the current forward's entropy is the old one
    old_entropy = inputs.get("old_entropy")
    if old_entropy is None and entropies is not None:
        old_entropy = entropies.detach()
    adv = inputs["advantages"].unsqueeze(1).to(logps.dtype) * mask  # (B, T) sequence advantage broadcast
    rewards = inputs.get("stare_rewards")
    if rewards is not None:
        rewards = broadcast_to_tokens(rewards.to(logps.dtype), mask)  # (B, T) the response's reward at its tokens
    return TokenBatch(logps, old.to(logps.dtype), adv, mask.to(logps.dtype),
                      None if entropies is None else entropies.to(logps.dtype),
                      old_entropy=None if old_entropy is None else old_entropy.to(logps.dtype), rewards=rewards)


def trl_step_batch(inputs: dict[str, Any], logps: torch.Tensor, entropies: torch.Tensor | None) -> TokenBatch:
    """What the step controller sees: :func:`trl_token_batch`, detached. When DAPO dropped every group on every
    rank, the mask covers all completions instead: the controllers measure the policy, not the loss."""
    batch = trl_token_batch(inputs, logps.detach(), None if entropies is None else entropies.detach())
    if float(inputs["stare_norm_tokens"]) == 0:  # global kept-token count (one reduce, done at generation)
        all_mask = loss_mask({**inputs, "stare_keep": torch.ones_like(inputs["stare_keep"])})  # (B, T)
        batch = dataclasses.replace(batch, mask=all_mask.to(batch.log_prob.dtype))
    return batch


def loss_mask(batch: dict[str, Any]) -> torch.Tensor:
    """``(B, T)`` float mask: completion tokens (minus tool output) of rows kept by dynamic sampling."""
    mask = batch["completion_mask"].float()
    if "tool_mask" in batch:
        mask = mask * batch["tool_mask"].float()
    return mask * batch["stare_keep"].unsqueeze(1).to(mask.dtype)


__all__ = ["loss_mask", "trl_step_batch", "trl_token_batch", "with_is_ratio_and_bonus"]
