"""Outcome-reward advantage estimators, registered by name, and DAPO's dynamic-sampling filter.

Every estimator maps one scalar reward per response and its prompt group to one advantage per response;
:func:`broadcast_to_tokens` spreads it over the response tokens. Groups whose rewards all agree carry no
learning signal: their advantages are exactly 0 (never NaN), and DAPO drops them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

GRPO_EPS = 1e-6


@dataclass(frozen=True)
class Groups:
    """Per-group statistics of a reward vector (float64).

    Args:
        index: ``(N,)`` group of each response, 0..G-1.
        count: ``(G,)`` responses per group.
        mean: ``(G,)`` group mean reward.
        std: ``(G,)`` unbiased group std (0 for single-response groups).
        constant: ``(G,)`` bool, True where every reward of the group is equal.
    """

    index: torch.Tensor
    count: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor
    constant: torch.Tensor


AdvantageFn = Callable[[torch.Tensor, Groups, float], torch.Tensor]
_ADVANTAGES: dict[str, AdvantageFn] = {}


def register_advantage(name: str) -> Callable[[AdvantageFn], AdvantageFn]:
    """Decorator: register ``fn(rewards (N,) float64, groups, eps) -> (N,)`` under ``name``."""

    def deco(fn: AdvantageFn) -> AdvantageFn:
        if name in _ADVANTAGES and _ADVANTAGES[name] is not fn:
            raise ValueError(f"advantage estimator {name!r} is already registered")
        _ADVANTAGES[name] = fn
        return fn

    return deco


def list_advantages() -> list[str]:
    """Names of the registered advantage estimators, sorted."""
    return sorted(_ADVANTAGES)


def group_index(n: int, group_ids: Any = None, group_size: int | None = None) -> tuple[torch.Tensor, int]:
    """``(index (N,) long in 0..G-1, G)`` from explicit group ids or contiguous groups of ``group_size``.

    ``group_ids`` may be a 1-D tensor or any sequence of hashable labels (e.g. verl's uid strings); groups need
    not be contiguous. Exactly one of ``group_ids`` / ``group_size`` must be given.
    """
    if (group_ids is None) == (group_size is None):
        raise ValueError(f"give exactly one of group_ids / group_size (got group_size={group_size})")
    if group_size is not None:
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1 or n % group_size:
            raise ValueError(f"group_size={group_size} must be a positive int dividing the {n} rewards")
        return torch.arange(n) // group_size, n // group_size
    if isinstance(group_ids, torch.Tensor):
        if group_ids.dim() != 1 or group_ids.numel() != n:
            raise ValueError(f"group_ids has shape {tuple(group_ids.shape)}, expected ({n},) like rewards")
        uniq, inverse = torch.unique(group_ids.cpu(), return_inverse=True)
        return inverse.long(), int(uniq.numel())
    labels: Sequence[Any] = list(group_ids)
    if len(labels) != n:
        raise ValueError(f"group_ids has length {len(labels)}, expected {n} like rewards")
    ids: dict[Any, int] = {}
    index = [ids.setdefault(label, len(ids)) for label in labels]
    return torch.tensor(index, dtype=torch.long), len(ids)


def group_stats(rewards: torch.Tensor, index: torch.Tensor, n_groups: int) -> Groups:
    """Group means, unbiased stds and agreement flags of ``rewards`` ``(N,)`` (computed in float64)."""
    r = rewards.detach().to(torch.float64).cpu()  # (N,)
    count = torch.bincount(index, minlength=n_groups).to(torch.float64)  # (G,)
    mean = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, index, r) / count.clamp(min=1)
    sq = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, index, (r - mean[index]) ** 2)
    std = torch.sqrt(sq / (count - 1).clamp(min=1))  # (G,) unbiased; 0 for singletons
    hi = torch.full((n_groups,), -torch.inf, dtype=torch.float64).scatter_reduce(0, index, r, "amax")
    lo = torch.full((n_groups,), torch.inf, dtype=torch.float64).scatter_reduce(0, index, r, "amin")
    return Groups(index=index, count=count, mean=mean, std=std, constant=hi == lo)


def _check_rewards(rewards: torch.Tensor) -> None:
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 1:
        shape = tuple(rewards.shape) if isinstance(rewards, torch.Tensor) else type(rewards).__name__
        raise ValueError(f"rewards must be a 1-D tensor (one scalar per response), got {shape}")
    if not bool(torch.isfinite(rewards.detach().double()).all()):
        raise ValueError("rewards contains NaN or inf")


def compute_advantages(
    name: str,
    rewards: torch.Tensor,
    group_ids: Any = None,
    group_size: int | None = None,
    *,
    eps: float = GRPO_EPS,
) -> torch.Tensor:
    """Advantages ``(N,)`` of estimator ``name`` for ``rewards`` ``(N,)`` grouped by prompt.

    Args:
        name: a registered estimator (``grpo``, ``drgrpo``, ``rloo``); unknown names list the known ones.
        rewards: ``(N,)`` one scalar reward per response.
        group_ids: ``(N,)`` prompt id of each response, or
        group_size: responses per prompt, stored contiguously.
        eps: GRPO's std epsilon.

    Returns:
        ``(N,)`` advantages, the dtype of ``rewards`` (float32 for integer/bool rewards), on its device.
        Responses of constant-reward groups (including single-response groups) get exactly 0.
    """
    if name not in _ADVANTAGES:
        raise ValueError(f"advantage estimator {name!r} is not registered; known: {list_advantages()}")
    if not eps >= 0.0:
        raise ValueError(f"eps={eps} must be >= 0")
    _check_rewards(rewards)
    index, n_groups = group_index(rewards.numel(), group_ids, group_size)
    groups = group_stats(rewards, index, n_groups)
    adv = _ADVANTAGES[name](rewards.detach().to(torch.float64).cpu(), groups, eps)  # (N,) float64
    adv = torch.where(groups.constant[index], torch.zeros_like(adv), adv)  # no signal -> exactly 0
    out_dtype = rewards.dtype if rewards.is_floating_point() else torch.float32
    return adv.to(dtype=out_dtype, device=rewards.device)


@register_advantage("grpo")
def grpo_advantage(rewards: torch.Tensor, groups: Groups, eps: float) -> torch.Tensor:
    """GRPO (Shao et al. 2024, §4.1.2): ``(r - mean_g) / (std_g + eps)``, unbiased std, eps = 1e-6.

    # DEVIATION: verl gives a single-response group mean 0 / std 1 (A = r / (1 + eps)); here it has no
    # baseline, so it is a constant group and gets A = 0.
    """
    i = groups.index
    return (rewards - groups.mean[i]) / (groups.std[i] + eps)


@register_advantage("drgrpo")
def drgrpo_advantage(rewards: torch.Tensor, groups: Groups, eps: float) -> torch.Tensor:
    """Dr.GRPO (Liu et al. 2025, "Understanding R1-Zero-Like Training", §3.2): ``r - mean_g`` (no std)."""
    return rewards - groups.mean[groups.index]


@register_advantage("rloo")
def rloo_advantage(rewards: torch.Tensor, groups: Groups, eps: float) -> torch.Tensor:
    """RLOO (Ahmadian et al. 2024): ``r_i - mean_{j != i} r_j = n / (n - 1) * (r_i - mean_g)``; n = 1 -> 0."""
    n = groups.count[groups.index]  # (N,)
    return (rewards - groups.mean[groups.index]) * n / (n - 1).clamp(min=1)


def dynamic_sampling_mask(rewards: torch.Tensor, group_ids: Any = None, group_size: int | None = None) -> torch.Tensor:
    """DAPO dynamic sampling (Yu et al. 2025, §3.2): keep-mask ``(N,)`` bool dropping constant-reward groups.

    A group whose rewards all agree (all correct, all wrong, or a single response) has zero advantage and
    no gradient; DAPO filters it out and samples more prompts to fill the batch.
    """
    _check_rewards(rewards)
    index, n_groups = group_index(rewards.numel(), group_ids, group_size)
    keep = ~group_stats(rewards, index, n_groups).constant[index]  # (N,)
    return keep.to(rewards.device)


def broadcast_to_tokens(seq_advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Spread per-response advantages ``(B,)`` over the response tokens: ``(B, T)``, 0 on padding."""
    if seq_advantages.dim() != 1 or mask.dim() != 2 or seq_advantages.shape[0] != mask.shape[0]:
        raise ValueError(
            f"seq_advantages {tuple(seq_advantages.shape)} and mask {tuple(mask.shape)} must be (B,) and (B, T)"
        )
    dtype = seq_advantages.dtype if seq_advantages.is_floating_point() else torch.float32
    valid = (mask > 0).to(dtype)  # (B, T)
    return seq_advantages.to(dtype=dtype, device=mask.device).unsqueeze(-1) * valid  # (B, T)
