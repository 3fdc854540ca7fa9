"""``steer``: entropy-change-aware token weights (STEER).

STEER ("Stabilizing Token-level Entropy-changE via Reweighting", reference code ``zz-haooo/STEER``): each
token's estimated entropy change ``|Omega| = |A * pi (1 - pi) / pi_old * (log pi + H)|`` is mapped to a weight
that shrinks the tokens which move the entropy most, and the weight multiplies the clipped per-token loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from stare_rl.registry import register_method
from stare_rl.surrogate import SurrogateConfig, clipped_surrogate
from stare_rl.tokens import steer_omega_abs
from stare_rl.types import LossContext, LossOutput, TokenBatch

STEER_MAPPINGS = ("exp", "linear")
SCOPES = ("batch", "global")


@dataclass(frozen=True)
class SteerConfig:
    """STEER hyper-parameters; defaults are the paper's main recipe (``run/run_exp.sh``: exp map,
    lambda_min = token_weight_min = 0.8, cap 1.0)."""

    mapping: str = field(
        default="exp",
        metadata={
            "help": "exp: w = clamp(exp(ln(w_min) |Omega| / max(max|Omega|, floor)), w_min, 1) (paper default). "
            "linear: w = w_max - (|Omega| - min)(w_max - w_min)/(max - min), clamped to [w_min, w_max]."
        },
    )
    token_weight_min: float = field(
        default=0.8, metadata={"help": "lambda_min > 0: the smallest weight (given to the largest |Omega|)."}
    )
    token_weight_max: float = field(
        default=1.0,
        metadata={"help": "Largest weight, linear map only (the exp map is capped at 1; must then be 1.0)."},
    )
    omega_floor: float = field(
        default=0.02,
        metadata={"help": "exp map: max|Omega| is floored at this value, so tiny |Omega| are not up-scaled."},
    )
    selection_scope: str = field(
        default="batch",
        metadata={
            "help": "batch: max/min |Omega| over the batch handed to the loss (reference). global: the engine "
            "gathers |Omega| of the whole global batch and passes omega_max/omega_min through LossContext."
        },
    )

    def __post_init__(self) -> None:
        if self.mapping not in STEER_MAPPINGS:
            raise ValueError(f"mapping={self.mapping!r} is not one of {list(STEER_MAPPINGS)}")
        if not (self.token_weight_min > 0.0 and math.isfinite(self.token_weight_min)):
            raise ValueError(f"token_weight_min={self.token_weight_min} must be a finite value > 0")
        if not self.token_weight_max >= self.token_weight_min:
            raise ValueError(
                f"token_weight_max={self.token_weight_max} must be >= token_weight_min={self.token_weight_min}"
            )
        if self.mapping == "exp" and self.token_weight_min > 1.0:
            raise ValueError(f"token_weight_min={self.token_weight_min} must be <= 1 with mapping='exp'")
        if self.mapping == "exp" and self.token_weight_max != 1.0:
            raise ValueError(
                f"token_weight_max={self.token_weight_max} has no effect with mapping='exp' (weights are capped at "
                "1 as in the reference); leave it at 1.0 or use mapping='linear'"
            )
        if not self.omega_floor > 0.0:
            raise ValueError(f"omega_floor={self.omega_floor} must be > 0")
        if self.selection_scope not in SCOPES:
            raise ValueError(f"selection_scope={self.selection_scope!r} is not one of {list(SCOPES)}")


def steer_omega(batch: TokenBatch) -> torch.Tensor:
    """``(B, T)`` |Omega| at every position (detached); raises if the batch has no entropy."""
    if batch.entropy is None:
        raise ValueError(
            "method 'steer' needs batch.entropy (the (B, T) old-policy entropy); got entropy=None"
        )
    return steer_omega_abs(batch.log_prob, batch.old_log_prob, batch.advantages, batch.entropy)


def steer_token_weights(
    omega: torch.Tensor, valid: torch.Tensor, cfg: SteerConfig, ctx: LossContext
) -> torch.Tensor:
    """Map |Omega| to STEER weights (0 on padding, no gradient).

    Args:
        omega: ``(B, T)`` |Omega|.
        valid: ``(B, T)`` bool mask.
        cfg: mapping and bounds.
        ctx: ``omega_max`` / ``omega_min`` of the global batch when given; else this batch's valid tokens.

    Returns:
        ``(B, T)`` weights in [w_min, 1] (exp) or [w_min, w_max] (linear) on valid tokens, 0 elsewhere.
    """
    dt, dev = omega.dtype, omega.device
    if not bool(valid.any()):  # nothing valid: every weight is 0 (padding)
        return torch.zeros_like(omega)
    vals = omega[valid]  # (n_valid,)
    o_max = torch.as_tensor(ctx.omega_max, dtype=dt, device=dev) if ctx.omega_max is not None else vals.max()
    w_min = cfg.token_weight_min
    if cfg.mapping == "exp":
        floor = torch.tensor(cfg.omega_floor, dtype=dt, device=dev)
        # STEER: k = -ln(w_min) / max(max|Omega|, 0.02); w = exp(-k |Omega|), so the top token gets w_min
        k = -torch.log(torch.tensor(w_min, dtype=dt, device=dev)) / torch.maximum(o_max, floor)
        w = torch.clamp(torch.exp(-k * omega), min=w_min, max=1.0)  # (B, T)
    else:
        o_min = (
            torch.as_tensor(ctx.omega_min, dtype=dt, device=dev) if ctx.omega_min is not None else vals.min()
        )
        w_max = cfg.token_weight_max
        if bool(o_max > o_min):
            scale = (w_max - w_min) / (o_max - o_min)
            w = w_max - (omega - o_min) * scale  # (B, T) linear: largest |Omega| -> w_min
        else:  # every |Omega| equal: the reference gives the midpoint
            w = torch.full_like(omega, (w_min + w_max) / 2)
        w = torch.clamp(w, min=w_min, max=w_max)
    return torch.where(valid, w, torch.zeros_like(w)).detach()


@register_method("steer", SteerConfig)
def steer_loss(
    batch: TokenBatch, cfg: SteerConfig, surrogate: SurrogateConfig, ctx: LossContext
) -> LossOutput:
    """STEER: the dual-clip PPO surrogate with weights from the estimated entropy change.

    Objective (token-mean): ``J = (1/N) sum_t w(|Omega_t|) * min(r_t A_t, clip(r_t) A_t)``, with
    ``|Omega| = |A pi (1 - pi) / pi_old (log pi + H)|`` (no gradient) and the exp or linear map.

    Args:
        batch: ``(B, T)`` tensors; ``entropy`` (old-policy entropy H) is required.
        cfg: :class:`SteerConfig`.
        surrogate: clip settings.
        ctx: ``omega_max`` (and ``omega_min`` for linear) of the global batch, else computed here.

    Returns:
        per-token loss ``w * clipped_loss``; weights (0 on padding, as the reference); metrics.

    Notes:
        max/min |Omega| are statistics of the batch handed in (reference: per GPU micro-batch) unless the
        engine passes global values (``selection_scope="global"``, :func:`steer_global_stats`).
    """
    omega = steer_omega(batch)  # (B, T)
    clipped, metrics = clipped_surrogate(
        batch.log_prob, batch.old_log_prob, batch.advantages, batch.mask, surrogate
    )
    valid = batch.valid
    weights = steer_token_weights(omega, valid, cfg, ctx)  # (B, T)
    metrics.update(_steer_metrics(batch, surrogate, omega, weights))
    return LossOutput(token_loss=clipped * weights, token_weights=weights, metrics=metrics)


def _steer_metrics(
    batch: TokenBatch, surrogate: SurrogateConfig, omega: torch.Tensor, weights: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Detached metrics over the valid tokens of this batch (0 when none)."""
    valid, vf = batch.valid, batch.mask_f
    n = vf.sum().clamp(min=1.0)
    zero = torch.zeros((), dtype=omega.dtype, device=omega.device)
    w_valid, o_valid = weights[valid], omega[valid]
    with torch.no_grad():
        ratio = torch.exp(torch.clamp(batch.log_prob - batch.old_log_prob, -20.0, 20.0))  # (B, T)
        high = ((ratio > 1 + surrogate.clip_ratio_high) & (batch.advantages > 0)).to(vf.dtype)
        low = ((ratio < 1 - surrogate.clip_ratio_low) & (batch.advantages < 0)).to(vf.dtype)
        return {
            "pg_clipfrac_high": (high * vf).sum() / n,
            "pg_clipfrac_low": (low * vf).sum() / n,
            "token_weights_mean": w_valid.mean() if w_valid.numel() else zero,
            "token_weights_min": w_valid.min() if w_valid.numel() else zero,
            "token_weights_max": w_valid.max() if w_valid.numel() else zero,
            "omega_abs_max": o_valid.max() if o_valid.numel() else zero,
            "omega_abs_min": o_valid.min() if o_valid.numel() else zero,
        }


def steer_global_stats(omega_valid: torch.Tensor) -> dict[str, float | None]:
    """Global-scope STEER statistics from |Omega| of all valid tokens of the global batch (pure).

    Returns:
        ``{"omega_max": .., "omega_min": ..}`` for :class:`LossContext`; both ``None`` when there is no valid
        token anywhere (every weight is then 0 and nothing contributes).
    """
    vals = omega_valid.detach().reshape(-1)
    if vals.numel() == 0:
        return {"omega_max": None, "omega_min": None}
    return {"omega_max": float(vals.max()), "omega_min": float(vals.min())}


def steer_candidate_values(batch: TokenBatch) -> torch.Tensor:
    """1-D |Omega| of this batch's valid tokens (what an engine gathers across ranks)."""
    return steer_omega(batch)[batch.valid]
