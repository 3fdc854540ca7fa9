"""``entropic``: EntroPIC, entropy stabilisation by proportional-integral control (Yang et al. 2025, "EntroPIC:
Towards Stable Long-Term Training of LLMs via Entropy Stabilization with Proportional-Integral Control",
arXiv 2511.15248; method section and the reference code ``yk7333/EntroPIC``).

Positive samples lower the entropy, negative samples raise it, and the high-probability tokens carry most of
that effect. EntroPIC adds a term on the high-probability tokens whose sign and size a PI controller sets
from the entropy error, once per step:

    e_t     = H_t - H_tgt                                  (H_t: token-mean entropy of the step batch)
    alpha_t = clip(Kp e_t + Ki I_{t-1}, -alpha_max, alpha_max),   I_t = I_{t-1} + e_t
    l       = l_clip(r, A) + alpha_t * (-r |A|) * 1[pi(a) > tau]

On a high-probability token the extra term scales the positive samples' push by (1 + alpha) and the negative
samples' by (1 - alpha) (unclipped ratio): entropy above the target (alpha > 0) sharpens the policy, below
it (alpha < 0) positive samples are damped and negative ones amplified, which raises the entropy.

Controller state: :class:`EntroPICController` (declared with the method; its ``context()`` gives
``entropic_alpha``, read by the loss with ``ctx.get("entropic_alpha")``; ``None`` = 0, i.e. vanilla).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from stare_rl.control.base import StepObservation, controller_state, load_controller_state
from stare_rl.control.target import EntropyTarget, canonical_target, start_entropy_of
from stare_rl.core.metrics import control_metric
from stare_rl.core.registry import MetricSpec, register_method
from stare_rl.core.surrogate import LOG_RATIO_CLAMP, SurrogateConfig, clipped_surrogate, token_signs
from stare_rl.core.types import LossContext, LossOutput, TokenBatch

ALPHA_KEY = "entropic_alpha"


@dataclass(frozen=True)
class EntroPICConfig:
    """EntroPIC settings. Defaults are the reference's (``run_entropic.sh``: ``target_entropy=0.1``,
    ``entropy_control_p=1``, ``entropy_control_i=0.01``; ``core_algos.py``: ``high_prob_thresh=0.95``;
    ``dp_actor.py``: alpha clipped to [-1, 1])."""

    target_entropy: float | str = field(
        default=0.1,
        metadata={"help": "H_tgt: token-mean entropy to hold (reference run script: 0.1). A number >= 0, or '<r>x' "
                  "(e.g. '0.5x'): r times the entropy of the first step batch, resolved once and saved."},
    )
    kp: float = field(default=1.0, metadata={"help": "Kp >= 0: proportional gain (reference: entropy_control_p=1)."})
    ki: float = field(default=0.01, metadata={"help": "Ki >= 0: integral gain (reference: entropy_control_i=0.01)."})
    alpha_max: float = field(
        default=1.0, metadata={"help": "alpha is clipped to [-alpha_max, alpha_max], in (0, 1] (reference: 1)."}
    )
    high_prob_threshold: float = field(
        default=0.95,
        metadata={"help": "tau in (0, 1): tokens with pi(a) > tau get the controlled term (reference: 0.95)."},
    )
    anti_windup: bool = field(
        default=True,
        metadata={
            "help": "Conditional integration: the integral does not grow while alpha is saturated by the error's "
            "own sign. DEVIATION from the reference (which integrates without bound); False reproduces it."
        },
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "target_entropy", canonical_target("target_entropy", self.target_entropy))
        for name in ("kp", "ki"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name}={value} must be a finite value >= 0")
        if not 0.0 < self.alpha_max <= 1.0:
            raise ValueError(f"alpha_max={self.alpha_max} must be in (0, 1] (1 - alpha must stay >= 0)")
        if not 0.0 < self.high_prob_threshold < 1.0:
            raise ValueError(f"high_prob_threshold={self.high_prob_threshold} must be in (0, 1)")


class EntroPICController:
    """The PI controller of EntroPIC: one update per step from the step batch's token-mean entropy.

    ``alpha = clip(Kp e + Ki I, -alpha_max, alpha_max)`` with ``e = H - H_tgt`` and ``I`` the sum of the
    previous errors; then ``I += e`` (unless anti-windup holds it: alpha saturated and ``e`` pushing further).
    ``alpha`` is 0 before the first update.
    """

    settings: ClassVar[tuple[str, ...]] = ("target_entropy", "kp", "ki", "alpha_max", "anti_windup")
    _DYNAMIC = ("integral", "alpha", "error", "entropy")

    def __init__(
        self, target_entropy: float | str, kp: float, ki: float, alpha_max: float = 1.0, anti_windup: bool = True
    ) -> None:
        EntroPICConfig(target_entropy=target_entropy, kp=kp, ki=ki, alpha_max=alpha_max)  # validation, by name
        self.target = EntropyTarget(target_entropy)
        self.kp, self.ki = float(kp), float(ki)
        self.alpha_max, self.anti_windup = float(alpha_max), bool(anti_windup)
        self.integral = 0.0
        self.alpha = 0.0
        self.error: float | None = None
        self.entropy: float | None = None

    @classmethod
    def from_config(cls, cfg: EntroPICConfig) -> EntroPICController:
        return cls(cfg.target_entropy, cfg.kp, cfg.ki, cfg.alpha_max, cfg.anti_windup)

    @property
    def target_entropy(self) -> float:
        """The absolute target (NaN until a relative target is resolved at the first update)."""
        return self.target.value_or_nan()

    def update(self, obs: StepObservation) -> None:
        h = float(obs.entropy)
        if not math.isfinite(h):
            raise ValueError(f"entropy={obs.entropy} must be finite (step {obs.step})")
        e = h - self.target.resolve(start_entropy_of(obs))  # > 0: too much entropy -> alpha > 0 sharpens
        u = self.kp * e + self.ki * self.integral  # uses the integral of the previous errors (reference order)
        self.alpha = min(max(u, -self.alpha_max), self.alpha_max)
        saturated_same_way = self.alpha != u and (e > 0) == (u > 0) and e != 0.0
        if not (self.anti_windup and saturated_same_way):
            self.integral += e
        self.error, self.entropy = e, h

    def context(self) -> dict[str, Any]:
        return {ALPHA_KEY: self.alpha}

    def metrics(self) -> dict[str, float]:
        nan = math.nan
        return {
            ALPHA_KEY: self.alpha,
            "entropic_integral": self.integral,
            "entropic_error": nan if self.error is None else self.error,
            "target_entropy": self.target_entropy,
        }

    def state_dict(self) -> dict[str, Any]:
        return controller_state(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        load_controller_state(self, state)


def _controllers(cfg: EntroPICConfig) -> dict[str, EntroPICController]:
    return {"entropic_pi": EntroPICController.from_config(cfg)}


@register_method("entropic", EntroPICConfig, controllers=_controllers,
                 metrics=(MetricSpec(control_metric(ALPHA_KEY), "EntroPIC alpha"),))
def entropic_loss(batch: TokenBatch, cfg: EntroPICConfig, surrogate: SurrogateConfig, ctx: LossContext) -> LossOutput:
    """Clipped surrogate plus the PI-controlled high-probability term (EntroPIC; formula in the module doc).

    Args:
        batch: ``(B, T)`` tensors (the loss needs no entropy; the controller's input, the step's token-mean
            entropy, is measured by the step controller, which asks for it because the method has a controller).
        cfg: threshold tau and alpha_max (the gains live in the controller).
        surrogate: the shared clip settings of ``l_clip``.
        ctx: ``entropic_alpha`` from :class:`EntroPICController`; ``None`` = 0 (vanilla).

    Returns:
        per-token loss (0 on padding), unit weights, mask ``high_prob``, metrics: the surrogate's plus
        ``high_prob_frac`` (fraction of valid tokens with pi > tau) and, only when no controller handed it in,
        ``entropic_alpha`` (the controller logs its own).

    Notes:
        The high-probability mask is per token (current policy, detached). alpha is a per-step controller state.
        # DEVIATION: the reference aggregates the extra term separately, averaging over the high-probability
        tokens of its micro-batch; here it is a per-token term aggregated with the rest (over all valid tokens),
        so the effective gain is the reference's times (high-probability tokens / valid tokens) and does not
        depend on the micro-batch layout. The reference also updates alpha per micro-batch from that
        micro-batch's entropy; here once per step from the whole step batch.
    """
    given = ctx.get(ALPHA_KEY)
    alpha = 0.0 if given is None else float(given)
    if not (math.isfinite(alpha) and abs(alpha) <= cfg.alpha_max):
        raise ValueError(f"context {ALPHA_KEY}={alpha} must be finite with |alpha| <= alpha_max={cfg.alpha_max}")
    signs = token_signs(batch.advantages, batch.mask)
    token_loss, metrics = clipped_surrogate(
        batch.log_prob, batch.old_log_prob, batch.advantages, batch.mask, surrogate, signs=signs
    )
    high_prob = signs.valid & (batch.log_prob.detach() > math.log(cfg.high_prob_threshold))  # (B, T)
    if alpha != 0.0:
        log_ratio = torch.where(high_prob, batch.log_prob - batch.old_log_prob, 0.0)  # (B, T)
        ratio = torch.exp(torch.clamp(log_ratio, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))  # (B, T) unclipped r
        extra = torch.where(high_prob, -ratio * signs.adv.abs(), 0.0)  # (B, T) -r |A| on high-prob tokens
        token_loss = token_loss + alpha * extra  # EntroPIC: controlled weights of positive / negative samples
    n = signs.valid.sum().clamp(min=1).to(torch.float32)  # metrics in float32 whatever the compute dtype
    if given is None:  # alpha from the controller is logged by it (control/entropic_alpha): each value once
        metrics[ALPHA_KEY] = torch.tensor(alpha, dtype=torch.float32, device=token_loss.device)
    metrics["high_prob_frac"] = high_prob.sum() / n
    return LossOutput(
        token_loss=token_loss,
        token_weights=torch.ones_like(token_loss).detach(),
        metrics=metrics,
        masks={"high_prob": high_prob},
    )
