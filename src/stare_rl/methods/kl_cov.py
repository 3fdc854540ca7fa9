"""``kl_cov``: KL penalty on the tokens of largest covariance (KL-Cov).

Cui et al. 2025, "The Entropy Mechanism of Reinforcement Learning for Reasoning Language Models", §4: the
entropy change is driven by the covariance between log pi(a) and the advantage. KL-Cov applies a KL penalty
``beta * |log pi - log pi_old|`` to the top-k fraction of tokens ranked by the centred product
``(A - mean A)(log pi - mean log pi)``, on top of the *unclipped* policy-gradient loss ``-A r``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from stare_rl.core.registry import GlobalStats, register_method
from stare_rl.core.selection import (
    SCOPE_DEFAULT_NOTE,
    SELECTION_SCOPES,
    kth_largest,
    select_at_least,
    topk_count,
    topk_mask,
)
from stare_rl.core.surrogate import LOG_RATIO_CLAMP, SurrogateConfig
from stare_rl.core.types import LossContext, LossOutput, TokenBatch

SCOPES = SELECTION_SCOPES  # micro_batch (= batch, the reference) | global (whole step batch)


@dataclass(frozen=True)
class KLCovConfig:
    """KL-Cov hyper-parameters.

    Defaults: ``kl_cov_ratio = 2e-4`` (verl's default, the paper's value for Qwen2.5-32B; the paper uses 2e-3
    for 7B) and ``ppo_kl_coef = 1`` (the paper's beta and verl's in-code fallback; verl's YAML ships 0.1).
    The surrogate's clip settings are not used: the reference KL-Cov loss is unclipped; its aggregation mode is.
    """

    kl_cov_ratio: float = field(
        default=0.0002,
        metadata={"help": "k in (0, 1]: fraction of valid tokens that get the KL penalty (floor)."},
    )
    ppo_kl_coef: float = field(
        default=1.0, metadata={"help": "beta >= 0: coefficient of |log pi - log pi_old|."}
    )
    selection_scope: str = field(
        default="batch",
        metadata={
            "help": "micro_batch (alias batch): means and top-k over the batch handed to the loss (reference). "
            "global: the engine "
            "passes the global means and covariance threshold through LossContext (kl_cov_global_stats)."
            + SCOPE_DEFAULT_NOTE
        },
    )

    def __post_init__(self) -> None:
        if not 0.0 < self.kl_cov_ratio <= 1.0:
            raise ValueError(f"kl_cov_ratio={self.kl_cov_ratio} must be in (0, 1]")
        if not (self.ppo_kl_coef >= 0.0 and math.isfinite(self.ppo_kl_coef)):
            raise ValueError(f"ppo_kl_coef={self.ppo_kl_coef} must be a finite value >= 0")
        if self.selection_scope not in SCOPES:
            raise ValueError(f"selection_scope={self.selection_scope!r} is not one of {list(SCOPES)}")


def kl_cov_covariance(
    batch: TokenBatch, adv_mean: float | None = None, logp_mean: float | None = None
) -> torch.Tensor:
    """``(B, T)`` centred product ``(A - mean A)(log pi - mean log pi)`` (detached; 0 on padding).

    Means are over valid tokens of this batch unless global ones are given.
    """
    valid = batch.valid
    a = batch.advantages.detach()
    lp = batch.log_prob.detach()
    if not bool(valid.any()):
        return torch.zeros_like(a)
    # the same 1-D means as kl_cov_global_stats, so batch scope on a whole batch == global scope
    a_mean = (
        a[valid].mean() if adv_mean is None else torch.as_tensor(adv_mean, dtype=a.dtype, device=a.device)
    )
    lp_mean = (
        lp[valid].mean()
        if logp_mean is None
        else torch.as_tensor(logp_mean, dtype=lp.dtype, device=lp.device)
    )
    cov = (a - a_mean) * (lp - lp_mean)  # (B, T)
    return torch.where(valid, cov, torch.zeros_like(cov))


def kl_cov_selection(batch: TokenBatch, cfg: KLCovConfig, ctx: LossContext) -> torch.Tensor:
    """``(B, T)`` bool: the tokens that get the KL penalty.

    Batch scope: the top ``max(1, floor(N_valid * ratio))`` valid tokens by signed covariance. Global scope
    (stats ``kl_cov_threshold`` with ``kl_cov_adv_mean`` and ``kl_cov_logp_mean`` in ``ctx``): valid tokens whose
    covariance, centred with the global means, is >= the global threshold.
    """
    threshold, adv_mean, logp_mean = (ctx.get(k) for k in ("kl_cov_threshold", "kl_cov_adv_mean", "kl_cov_logp_mean"))
    given = [threshold, adv_mean, logp_mean]
    if any(v is not None for v in given) and any(v is None for v in given):
        raise ValueError(
            "kl_cov global scope needs kl_cov_threshold, kl_cov_adv_mean and kl_cov_logp_mean together; got "
            f"kl_cov_threshold={threshold}, kl_cov_adv_mean={adv_mean}, kl_cov_logp_mean={logp_mean}"
        )
    valid = batch.valid
    cov = kl_cov_covariance(batch, adv_mean, logp_mean)  # (B, T)
    if threshold is not None:
        return select_at_least(cov, valid, threshold)
    k = topk_count(cfg.kl_cov_ratio, batch.n_valid, rounding="floor")  # Cui et al.: floor, at least 1
    return topk_mask(cov, valid, k)


@register_method(
    "kl_cov",
    KLCovConfig,
    global_stats=GlobalStats(
        candidates=lambda batch, cfg: kl_cov_candidate_values(batch),
        reduce=lambda slots, cfg: kl_cov_global_stats(slots[0], slots[1], cfg),
        enabled=lambda cfg: cfg.selection_scope == "global",
    ),
)
def kl_cov_loss(
    batch: TokenBatch, cfg: KLCovConfig, surrogate: SurrogateConfig, ctx: LossContext
) -> LossOutput:
    """KL-Cov (Cui et al. 2025, §4.2): ``l_t = -A_t r_t + beta * |log pi_t - log pi_old,t| * [t in top-k cov]``.

    Args:
        batch: ``(B, T)`` tensors.
        cfg: :class:`KLCovConfig`.
        surrogate: only ``loss_agg_mode`` matters to the caller; clipping is not applied (reference).
        ctx: optional global means and threshold (:func:`kl_cov_global_stats`).

    Returns:
        per-token loss (0 on padding), unit weights, mask ``kl_selected``, metrics ``ppo_kl_abs``, ``ppo_kl``,
        ``kl_cov_k`` and ``kl_cov_selected_frac``.

    Notes:
        Means and the top-k are statistics of the batch handed in (the reference: per GPU micro-batch) unless
        global ones are given. ``r = exp(log pi - log pi_old)``.
    """
    valid = batch.valid
    log_ratio = batch.log_prob - batch.old_log_prob  # (B, T)
    # DEVIATION: the log-ratio is clamped at +-20 (as in the shared surrogate) so that r cannot overflow to inf;
    # the reference does not clamp, and only differs where r > 4.8e8, where it would overflow anyway.
    ratio = torch.exp(torch.clamp(log_ratio, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))  # (B, T)
    pg = -batch.advantages * ratio  # (B, T) unclipped policy-gradient loss
    abs_kl = log_ratio.abs()  # (B, T)
    selected = kl_cov_selection(batch, cfg, ctx)  # (B, T) bool
    token_loss = torch.where(selected, pg + cfg.ppo_kl_coef * abs_kl, pg)
    token_loss = torch.where(valid, token_loss, torch.zeros_like(token_loss))  # where, not *: no inf * 0
    with torch.no_grad():
        vf = batch.mask_f
        n = vf.sum().clamp(min=1.0)
        metrics = {
            "ppo_kl_abs": (abs_kl.detach() * vf).sum() / n,
            "ppo_kl": (-log_ratio.detach() * vf).sum() / n,
            "kl_cov_k": selected.sum().to(vf.dtype),
            "kl_cov_selected_frac": selected.sum().to(vf.dtype) / n,
        }
    weights = torch.ones_like(token_loss).detach()
    return LossOutput(
        token_loss=token_loss, token_weights=weights, metrics=metrics, masks={"kl_selected": selected}
    )


def kl_cov_global_stats(
    advantages_valid: torch.Tensor, log_prob_valid: torch.Tensor, cfg: KLCovConfig
) -> dict[str, float]:
    """Global-scope KL-Cov statistics from the valid tokens of the whole global batch (pure).

    Args:
        advantages_valid, log_prob_valid: 1-D, aligned (same token order), all valid tokens of the global batch.
        cfg: the KL-Cov config.

    Returns:
        ``{"kl_cov_adv_mean", "kl_cov_logp_mean", "kl_cov_threshold"}`` for :class:`LossContext`
        (threshold ``inf`` when there is no valid token).
    """
    a = advantages_valid.detach().reshape(-1)
    lp = log_prob_valid.detach().reshape(-1)
    if a.shape != lp.shape:
        raise ValueError(f"advantages_valid has shape {tuple(a.shape)}, log_prob_valid {tuple(lp.shape)}")
    if a.numel() == 0:
        return {"kl_cov_adv_mean": 0.0, "kl_cov_logp_mean": 0.0, "kl_cov_threshold": math.inf}
    a_mean, lp_mean = a.mean(), lp.mean()
    cov = (a - a_mean) * (lp - lp_mean)  # (N,)
    kth = kth_largest(cov, topk_count(cfg.kl_cov_ratio, cov.numel(), rounding="floor"))
    return {
        "kl_cov_adv_mean": float(a_mean),
        "kl_cov_logp_mean": float(lp_mean),
        "kl_cov_threshold": math.inf if kth is None else kth,
    }


def kl_cov_candidate_values(batch: TokenBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """1-D advantages and detached log-probs of this batch's valid tokens (what an engine gathers)."""
    valid = batch.valid
    return batch.advantages.detach()[valid], batch.log_prob.detach()[valid]
