"""``clip_cov``: Clip-Cov (Cui et al. 2025, "The Entropy Mechanism of Reinforcement Learning for Reasoning
Language Models", §4.2), on top of the shared clipped surrogate.

Entropy collapses because tokens with a high covariance between their (centred) advantage and their
(centred) log-probability dominate the entropy change. Clip-Cov detaches the gradient of a small random
subset of such tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from stare_rl.core.registry import register_method
from stare_rl.core.selection import topk_count
from stare_rl.core.surrogate import LOG_RATIO_CLAMP, SurrogateConfig, clipped_surrogate
from stare_rl.core.types import LossContext, LossOutput, TokenBatch


@dataclass(frozen=True)
class ClipCovConfig:
    """Clip-Cov hyper-parameters; defaults are the paper's and verl's (Cui et al. 2025, §4.2 / App.)."""

    clip_cov_ratio: float = field(
        default=0.0002,
        metadata={
            "help": "r: fraction of valid tokens whose gradient is detached (k = max(1, floor(r * N_valid)); "
            "0 detaches nothing = vanilla)."
        },
    )
    clip_cov_lb: float = field(
        default=1.0, metadata={"help": "Lower bound: only tokens with cov > clip_cov_lb are candidates."}
    )
    clip_cov_ub: float = field(
        default=5.0, metadata={"help": "Upper bound: only tokens with cov < clip_cov_ub are candidates."}
    )

    def __post_init__(self) -> None:
        if not 0.0 <= self.clip_cov_ratio <= 1.0:
            raise ValueError(f"clip_cov_ratio={self.clip_cov_ratio} must be in [0, 1]")
        if not self.clip_cov_lb < self.clip_cov_ub:
            raise ValueError(
                f"clip_cov_lb={self.clip_cov_lb} must be < clip_cov_ub={self.clip_cov_ub} (candidate window)"
            )


def token_covariance(log_prob: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-token centred covariance ``(A - mean A) * (log pi - mean log pi)``, detached.

    Means are over the valid tokens of the batch handed in (verl semantics: per micro-batch). Padding gets 0.

    Args:
        log_prob, advantages, mask: ``(B, T)``.

    Returns:
        ``(B, T)`` covariance term.
    """
    valid = mask > 0  # (B, T)
    n = valid.sum().clamp(min=1).to(log_prob.dtype)
    lp = torch.where(valid, log_prob.detach(), 0.0)  # (B, T) padding may hold anything
    adv = torch.where(valid, advantages.detach(), 0.0)
    cov = (adv - adv.sum() / n) * (lp - lp.sum() / n)  # (B, T)
    return torch.where(valid, cov, 0.0)


def _not_ratio_clipped(batch: TokenBatch, idx: torch.Tensor, surrogate: SurrogateConfig) -> torch.Tensor:
    """``(n,)`` bool for flat token positions ``idx``: the ratio clip does not already stop the gradient."""
    with torch.no_grad():
        lp = batch.log_prob.detach().reshape(-1)[idx]
        old = batch.old_log_prob.reshape(-1)[idx]
        adv = batch.advantages.reshape(-1)[idx]
        ratio = torch.exp((lp - old).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))  # (n,)
        clipped = torch.clamp(ratio, 1.0 - surrogate.clip_ratio_low, 1.0 + surrogate.clip_ratio_high)
        return ~((-adv * clipped) > (-adv * ratio))


def _random_subset(idx: torch.Tensor, k: int, generator: torch.Generator | None) -> torch.Tensor:
    """``k`` entries of the 1-D index tensor ``idx`` chosen uniformly without replacement."""
    if k <= 0 or idx.numel() == 0:
        return idx[:0]
    # DEVIATION: verl draws from torch's global RNG; we take ctx.generator (global RNG only when None).
    device = generator.device if generator is not None else torch.device("cpu")
    perm = torch.randperm(idx.numel(), generator=generator, device=device).to(idx.device)
    return idx[perm[: min(k, idx.numel())]]


@register_method("clip_cov", ClipCovConfig)
def clip_cov_loss(batch: TokenBatch, cfg: ClipCovConfig, surrogate: SurrogateConfig, ctx: LossContext) -> LossOutput:
    """Clip-Cov: the clipped surrogate with the gradient of a few high-covariance tokens detached.

    Cui et al. 2025 §4.2. With ``cov_t = (A_t - mean A)(log pi_t - mean log pi)`` over valid tokens,
    candidates are valid, not already ratio-clipped tokens with ``lb < cov_t < ub``; ``k = max(1,
    floor(r * N_valid))`` of them (fewer if there are fewer candidates) are chosen uniformly at random and
    their loss term is multiplied by 0 (weight 0, no gradient). Everything else is the shared surrogate.

    Args:
        batch: ``(B, T)`` tensors; entropy is not used.
        cfg: ratio and candidate window.
        surrogate: shared clip settings.
        ctx: ``generator`` drives the random choice (deterministic tests); None uses torch's global RNG.

    Returns:
        token loss ``(B, T)``, weights in {0, 1} (0 = detached), ``masks["clip_cov_selected"]``, metrics
        ``clip_cov_frac`` (detached fraction of valid tokens) and ``clip_cov_candidates``.

    Notes:
        Means, N_valid and the random choice are per the batch handed in (verl: per micro-batch).
        # DEVIATION: verl's clip_cov applies no dual clip; we reuse the shared dual-clip surrogate so that
        the only difference to ``vanilla`` is the detached subset (A<0 tokens past c are rare and get no
        gradient either way).
    """
    token_loss, metrics = clipped_surrogate(
        batch.log_prob, batch.old_log_prob, batch.advantages, batch.mask, surrogate
    )
    valid = batch.valid  # (B, T)
    cov = token_covariance(batch.log_prob, batch.advantages, batch.mask)  # (B, T)
    # Cui et al. §4.2: candidates inside the covariance window, excluding tokens the clip already stops.
    window = valid & (cov > cfg.clip_cov_lb) & (cov < cfg.clip_cov_ub)  # (B, T)
    idx = window.reshape(-1).nonzero().squeeze(-1)  # (n_window,) usually a small fraction of the tokens
    idx = idx[_not_ratio_clipped(batch, idx, surrogate)]  # (n_candidates,)
    k = topk_count(cfg.clip_cov_ratio, batch.n_valid, rounding="floor")
    selected = torch.zeros_like(valid)
    selected.view(-1)[_random_subset(idx, k, ctx.generator)] = True  # (B, T)
    weights = (~selected).to(token_loss.dtype)  # (B, T) 1 kept, 0 detached
    token_loss = token_loss.masked_fill(selected, 0.0)  # = token_loss * weights
    n = valid.sum().clamp(min=1).to(token_loss.dtype)
    metrics["clip_cov_frac"] = selected.sum() / n
    metrics["clip_cov_candidates"] = torch.tensor(float(idx.numel()), dtype=token_loss.dtype, device=valid.device)
    return LossOutput(token_loss=token_loss, token_weights=weights, metrics=metrics,
                      masks={"clip_cov_selected": selected})
