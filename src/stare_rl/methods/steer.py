"""``steer``: entropy-change-aware token weights (STEER).

STEER ("Stabilizing Token-level Entropy-changE via Reweighting", reference code ``zz-haooo/STEER``): each
token's estimated entropy change ``|Omega| = |A * pi (1 - pi) / pi_old * (log pi + H)|`` is mapped to a weight
that shrinks the tokens which move the entropy most, and the weight multiplies the clipped per-token loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from stare_rl.core.registry import GlobalStats, register_method
from stare_rl.core.selection import SCOPE_DEFAULT_NOTE, SELECTION_SCOPES, count_true
from stare_rl.core.surrogate import SurrogateConfig, clipped_surrogate, token_signs
from stare_rl.core.tokens import steer_omega_abs
from stare_rl.core.types import LossContext, LossOutput, TokenBatch

STEER_MAPPINGS = ("exp", "linear")
SCOPES = SELECTION_SCOPES  # micro_batch (= batch, the reference) | global (whole step batch)


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
            "help": "micro_batch (alias batch): max/min |Omega| over the batch handed to the loss (reference). "
            "global: the engine "
            "gathers |Omega| of the whole global batch and passes omega_max/omega_min through LossContext."
            + SCOPE_DEFAULT_NOTE
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
    """``(B, T)`` |Omega| at every position (detached); raises if the batch has no old-policy entropy."""
    if batch.old_entropy is None:
        raise ValueError(
            "method 'steer' needs batch.old_entropy (the (B, T) entropy of the old policy, from the log-prob pass "
            "that gives old_log_prob); got old_entropy=None"
        )
    # STEER: H is the old policy's entropy (the reference reads `entropys` stored by the log-prob pass)
    return steer_omega_abs(batch.log_prob, batch.old_log_prob, batch.advantages, batch.old_entropy)


def _resolve_extrema(
    ctx: LossContext, local_max: torch.Tensor, local_min: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Global max/min from the context when given (global scope), else this batch's."""

    def as_t(v: float) -> torch.Tensor:
        return torch.as_tensor(v, dtype=local_max.dtype, device=local_max.device)

    o_max = as_t(ctx.get("omega_max")) if ctx.get("omega_max") is not None else local_max
    o_min = as_t(ctx.get("omega_min")) if ctx.get("omega_min") is not None else local_min
    return o_max, o_min


def _map_omega(
    omega: torch.Tensor, o_max: torch.Tensor, o_min: torch.Tensor, cfg: SteerConfig
) -> torch.Tensor:
    """The exp / linear map applied elementwise (works on 0-dim tensors too)."""
    dt, dev = omega.dtype, omega.device
    w_min = cfg.token_weight_min
    if cfg.mapping == "exp":
        floor = torch.tensor(cfg.omega_floor, dtype=dt, device=dev)
        # STEER: k = -ln(w_min) / max(max|Omega|, 0.02); w = exp(-k |Omega|), so the top token gets w_min
        k = -torch.log(torch.tensor(w_min, dtype=dt, device=dev)) / torch.maximum(o_max, floor)
        return torch.mul(omega, -k).exp_().clamp_(min=w_min, max=1.0)  # one fresh tensor, in place after
    w_max = cfg.token_weight_max
    if bool(o_max > o_min):
        scale = (w_max - w_min) / (o_max - o_min)
        w = torch.sub(omega, o_min).mul_(scale).neg_().add_(w_max)  # linear: the largest |Omega| gets w_min
    else:  # every |Omega| equal: the reference gives the midpoint
        w = torch.full_like(omega, (w_min + w_max) / 2)
    return w.clamp_(min=w_min, max=w_max)


@register_method(
    "steer",
    SteerConfig,
    needs_old_entropy=True,
    global_stats=GlobalStats(
        candidates=lambda batch, cfg: (steer_candidate_values(batch),),
        reduce=lambda slots, cfg: steer_global_stats(slots[0]),
        enabled=lambda cfg: cfg.selection_scope == "global",
    ),
)
def steer_loss(
    batch: TokenBatch, cfg: SteerConfig, surrogate: SurrogateConfig, ctx: LossContext
) -> LossOutput:
    """STEER: the dual-clip PPO surrogate with weights from the estimated entropy change.

    Objective (token-mean): ``J = (1/N) sum_t w(|Omega_t|) * min(r_t A_t, clip(r_t) A_t)``, with
    ``|Omega| = |A pi (1 - pi) / pi_old (log pi + H)|`` (no gradient) and the exp or linear map.

    Args:
        batch: ``(B, T)`` tensors; ``old_entropy`` (H, the old policy's entropy) is required; ``entropy`` (the
            current policy's) is not used.
        cfg: :class:`SteerConfig`.
        surrogate: clip settings.
        ctx: stats ``omega_max`` (and ``omega_min`` for linear) of the global batch, else computed here.

    Returns:
        per-token loss ``w * clipped_loss``; weights (0 on padding, as the reference); metrics
        ``token_weights_mean/min/max`` and ``omega_abs_max/min`` over the valid tokens of this batch.

    Notes:
        max/min |Omega| are statistics of the batch handed in (reference: per GPU micro-batch) unless the
        engine passes global values (``selection_scope="global"``, :func:`steer_global_stats`).
    """
    if batch.old_entropy is None:
        steer_omega(batch)  # raises the ValueError naming the missing entropy
    signs = token_signs(batch.advantages, batch.mask)  # (B, T) masks shared with the surrogate
    valid = signs.valid
    with torch.no_grad():
        # |Omega| from A masked to 0 on padding: equal on valid tokens, exactly 0 on padding
        # H = old-policy entropy, as the reference (its `entropys` come from the old log-prob pass)
        omega = steer_omega_abs(batch.log_prob, batch.old_log_prob, signs.adv, batch.old_entropy)  # (B, T)
        local_max = omega.amax() if omega.numel() else omega.new_zeros(())  # |Omega| >= 0, padding 0
        local_min = _valid_min(omega, valid)
        o_max, o_min = _resolve_extrema(ctx, local_max, local_min)
        weights = _map_omega(omega, o_max, o_min, cfg)  # (B, T) finite, in [w_min, w_max]
        weights.mul_(valid.view(torch.uint8).to(weights.dtype))  # 0 on padding (cheaper than masked_fill on CPU)
    # the weights (> 0 on valid tokens) are folded into -A inside the surrogate: token_loss = w * clipped
    token_loss, metrics = clipped_surrogate(
        batch.log_prob, batch.old_log_prob, batch.advantages, batch.mask, surrogate, weights=weights, signs=signs
    )
    with torch.no_grad():
        n_valid = count_true(valid)
        zero = omega.new_zeros(())
        # the weight map is monotone decreasing in |Omega|: the extreme weights sit at the extreme |Omega|
        w_lo, w_hi = _map_omega(torch.stack([local_max, local_min]), o_max, o_min, cfg).unbind()  # one map call
        metrics.update(
            {
                "token_weights_mean": weights.sum() / n_valid if n_valid else zero,
                "token_weights_min": w_lo if n_valid else zero,
                "token_weights_max": w_hi if n_valid else zero,
                "omega_abs_max": local_max,
                "omega_abs_min": local_min,
            }
        )
    return LossOutput(token_loss=token_loss, token_weights=weights, metrics=metrics)


def _valid_min(omega: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """min |Omega| over valid tokens (0-dim; 0 when nothing is valid)."""
    if omega.numel() == 0:
        return omega.new_zeros(())
    if omega.device.type == "cpu" and omega.dtype in (torch.float32, torch.float64):  # numpy: ~3x cheaper
        m = np.min(omega.numpy(), where=valid.numpy(), initial=np.inf)
        return omega.new_tensor(0.0 if np.isinf(m) else float(m))
    local_min = torch.where(valid, omega, torch.inf).min()
    return torch.where(torch.isinf(local_min), 0.0, local_min)


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
