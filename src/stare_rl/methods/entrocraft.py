"""``entrocraft``: hold the entropy in a band by switching the advantage (Li et al. 2026, "Addressing Performance
Saturation for LLM RL via Precise Entropy Curve Control", arXiv 2604.26326; §4.1-4.3, Algorithm 1, and the
reference code ``lblaoke/entrocraft``, ``verl/trainer/ppo/core_algos.py``: ``grpo_range``, ``grpo_range_linear``,
``grpo_range_cos``).

§3 (Theorems 1-2): a positive-advantage update lowers the entropy, a negative-advantage one raises it. So the
sign of the advantages that reach the gradient steers the entropy. Once per step, from the batch entropy H and
the band ``[h_low, h_high]``:

    m = 1[H > h_high] - 1[H < h_low]                          (Algorithm 1's out-of-range indicator)
    m = +1:  A' = 1[R > c]        correct responses only (RAFT++): sharpen, entropy falls
    m = -1:  A' = -1[R < c]       wrong responses only (NSR): entropy rises
    m =  0:  A' = A               GRPO (the batch's own advantages)
    l = l_clip(r, A')

with R the response's raw outcome reward and c = ``reward_midpoint``. Bounds (§4.3): ``h_low/high = c_t (1 -/+
band)`` around the target ``c_t``, annealed over ``anneal_steps`` from ``target_entropy`` to
``anneal_end_fraction * target_entropy`` (``none``: constant; ``linear``: progress ``t / T``; ``cosine``: ``(1 -
cos(pi t / T)) / 2``, as the reference's ``grpo_range_cos``), then held.

Rewards. The reference's RAFT++ and NSR take the *raw* reward, not the group-relative advantage: ``max(R, 0)`` and
``min(R, 0)`` with the ±1 reward of its math tasks. So every correct response is pushed up (RAFT++) and every wrong
one down (NSR), *including the groups whose rewards all agree*, which carry no GRPO advantage. On a 0/1 reward
``min(R, 0) = 0``: NSR would be a no-op. Here the reward is centred on ``reward_midpoint`` (0.5 for a 0/1 reward,
0 for the reference's ±1): ``sign(R - c)``, i.e. exactly the reference's ``max/min(R, 0)`` for a binary reward
mapped to ±1. The method declares ``needs_rewards``; both engines hand the loss each response's reward.
# DEVIATION: a graded reward gets a unit push (the sign of R - c), where the reference would scale by R.
# The sign comes from the reward, not the group advantage: the advantage is 0 in groups that agree, which would
# drop them (on countdown_cot 60-75 % of the groups).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from stare_rl.control.base import StepObservation, finite_entropy, require_same_settings
from stare_rl.control.target import EntropyTarget, canonical_target, start_entropy_of
from stare_rl.core.metrics import control_metric
from stare_rl.core.registry import MetricSpec, register_method
from stare_rl.core.surrogate import SurrogateConfig, clipped_surrogate
from stare_rl.core.types import LossContext, LossOutput, TokenBatch

MODE_KEY = "entrocraft_mode"  # +1 RAFT++ (above the band), -1 NSR (below), 0 GRPO (inside)
ANNEALS = ("none", "linear", "cosine")


@dataclass(frozen=True)
class EntrocraftConfig:
    """Entrocraft settings. The reference's linear recipe (``grpo_range_linear``, Qwen3-4B) moves the band from
    [0.6, 0.7] to [0.4, 0.5] over training: centre 0.65 -> 0.45, half-width 0.05."""

    target_entropy: float | str = field(
        default=0.65,
        metadata={"help": "Centre of the entropy band at the start (reference linear recipe: [0.6, 0.7] -> 0.65). A "
                  "number >= 0, or '<r>x' (e.g. '0.5x'): r times the entropy of the first step batch, resolved once "
                  "and saved."},
    )
    band: float = field(
        default=0.1,
        metadata={"help": "Half-width of the band as a fraction of its centre, in [0, 1): bounds = centre * (1 -/+ "
                  "band). The reference's +-0.05 is +-7.7 % at 0.65 and +-11 % at 0.45 (ours: relative, scale-free)."},
    )
    anneal: str = field(
        default="none",
        metadata={"help": "none, linear or cosine: how the centre moves from target_entropy to anneal_end_fraction * "
                  "target_entropy over anneal_steps (the paper finds linear best, §5.3)."},
    )
    anneal_end_fraction: float = field(
        default=0.45 / 0.65,
        metadata={"help": "Final centre as a fraction of target_entropy, > 0 (reference linear recipe: 0.45 / 0.65)."},
    )
    reward_midpoint: float = field(
        default=0.5,
        metadata={"help": "Reward that separates correct from wrong: RAFT++ keeps responses with R > it, NSR those "
                  "with R < it (0.5 for a 0/1 reward; 0 for the reference's -1/+1 reward). A response exactly at "
                  "it is in neither."},
    )
    anneal_steps: int = field(
        default=0,
        metadata={"help": "Steps over which the centre anneals (the run's max_steps); required > 0 unless "
                  "anneal='none'. After it the centre stays at its end value."},
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "target_entropy", canonical_target("target_entropy", self.target_entropy))
        if not (isinstance(self.band, (int, float)) and 0.0 <= self.band < 1.0):
            raise ValueError(f"band={self.band!r} must be in [0, 1) (a fraction of the band's centre)")
        if self.anneal not in ANNEALS:
            raise ValueError(f"anneal={self.anneal!r} is not one of {list(ANNEALS)}")
        f = self.anneal_end_fraction
        if not (isinstance(f, (int, float)) and math.isfinite(f) and f > 0.0):
            raise ValueError(f"anneal_end_fraction={f!r} must be a finite number > 0")
        m = self.reward_midpoint
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m):
            raise ValueError(f"reward_midpoint={m!r} must be a finite number (0.5 for a 0/1 reward)")
        steps = self.anneal_steps
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise ValueError(f"anneal_steps={steps!r} must be an integer >= 0")
        if self.anneal != "none" and steps == 0:
            raise ValueError(f"anneal={self.anneal!r} needs anneal_steps > 0 (e.g. the run's max_steps), got 0")


def anneal_progress(kind: str, step: int, steps: int) -> float:
    """Fraction of the way from the start centre to the end one at 0-based ``step``: 0 for ``none``."""
    if kind == "none" or steps <= 0:
        return 0.0
    x = min(max(step / steps, 0.0), 1.0)
    return x if kind == "linear" else 0.5 * (1.0 - math.cos(math.pi * x))


class EntrocraftBand:
    """The band and Algorithm 1's indicator ``m``, once per step from the batch token-mean entropy.

    Not memoryless: the annealed band depends on the step, and a relative target on the start entropy.
    """

    settings: ClassVar[tuple[str, ...]] = ("target_entropy", "band", "anneal", "anneal_end_fraction", "anneal_steps")

    def __init__(self, cfg: EntrocraftConfig) -> None:
        self.cfg = cfg
        self.target = EntropyTarget(cfg.target_entropy)
        self.mode = 0
        self.lower = self.upper = self.centre = math.nan
        self.entropy: float | None = None

    def bounds(self, step: int) -> tuple[float, float, float]:
        """``(lower, centre, upper)`` at ``step`` (the target must be resolved)."""
        c0 = self.target.value_or_nan()
        centre = c0 * (1.0 + (self.cfg.anneal_end_fraction - 1.0) * anneal_progress(
            self.cfg.anneal, step, self.cfg.anneal_steps))  # §4.3: annealed centre
        return centre * (1.0 - self.cfg.band), centre, centre * (1.0 + self.cfg.band)

    def update(self, obs: StepObservation) -> None:
        h = finite_entropy(obs.entropy)
        self.target.resolve(start_entropy_of(obs))
        self.lower, self.centre, self.upper = self.bounds(int(obs.step))
        self.mode = int(h > self.upper) - int(h < self.lower)  # Algorithm 1: m
        self.entropy = h

    def context(self) -> dict[str, Any]:
        return {MODE_KEY: self.mode}

    def metrics(self) -> dict[str, float]:
        return {MODE_KEY: float(self.mode), "entrocraft_lower": self.lower, "entrocraft_upper": self.upper,
                "entrocraft_centre": self.centre, "target_entropy": self.target.value_or_nan()}

    def state_dict(self) -> dict[str, Any]:
        config = {k: getattr(self.cfg, k) for k in self.settings if k != "target_entropy"}
        return {"target_entropy": self.target.state_dict(), **config, "mode": self.mode, "lower": self.lower,
                "upper": self.upper, "centre": self.centre, "entropy": self.entropy}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        require_same_settings(self, state)
        self.target.load_state_dict(state["target_entropy"])
        self.mode = int(state["mode"])
        self.lower, self.upper, self.centre = (float(state[k]) for k in ("lower", "upper", "centre"))
        self.entropy = None if state["entropy"] is None else float(state["entropy"])


def switched_advantages(advantages: torch.Tensor, rewards: torch.Tensor, mask: torch.Tensor, mode: int,
                        midpoint: float = 0.5) -> torch.Tensor:
    """``(B, T)`` advantages after the band switch: RAFT++ (``mode`` +1), NSR (-1) or unchanged (0); 0 on padding.

    ``rewards`` is each response's raw reward at its tokens; RAFT++ and NSR read it against ``midpoint`` (every
    group, whether or not its rewards agree), GRPO keeps the batch's ``advantages``.
    """
    valid = mask > 0  # (B, T)
    if mode > 0:  # RAFT++: unit push on every correct response
        return (valid & (rewards.detach() > midpoint)).to(advantages.dtype)
    if mode < 0:  # NSR: unit push-down on every wrong response
        return -(valid & (rewards.detach() < midpoint)).to(advantages.dtype)
    return torch.where(valid, advantages.detach(), 0.0)


@register_method("entrocraft", EntrocraftConfig, needs_rewards=True,
                 controllers=lambda cfg: {"entrocraft_band": EntrocraftBand(cfg)},
                 metrics=(MetricSpec(control_metric(MODE_KEY), "Entrocraft mode (+1 RAFT++, -1 NSR)",
                                     short="mode", ylim=(-1.05, 1.05)),))
def entrocraft_loss(batch: TokenBatch, cfg: EntrocraftConfig, surrogate: SurrogateConfig,
                    ctx: LossContext) -> LossOutput:
    """The shared clipped surrogate on the band-switched advantages (formula in the module docstring).

    Args:
        batch: ``(B, T)`` tensors; ``advantages`` are the estimator's (GRPO by default, used inside the band),
            ``rewards`` each response's raw reward (RAFT++ / NSR).
        cfg: the band (read by the controller) and ``reward_midpoint`` (read here).
        surrogate: the shared clip settings.
        ctx: ``entrocraft_mode`` in {-1, 0, +1} from :class:`EntrocraftBand`; ``None`` = 0 (GRPO).

    Returns:
        per-token loss (0 on padding), unit weights, mask ``kept`` (valid tokens with a non-zero switched
        advantage), metrics: the surrogate's plus ``entrocraft_mode`` and ``kept_frac``.

    Notes:
        The mode is a per-step controller output (whole step batch, all ranks); the switch is per token and needs no
        statistic across micro-batches. Token-mean still divides by every valid token, rejected samples included,
        as the reference's RAFT++ / NSR estimators leave them in the batch with advantage 0.
    """
    mode = int(ctx.get(MODE_KEY, 0))
    if mode not in (-1, 0, 1):
        raise ValueError(f"context {MODE_KEY}={mode} must be -1, 0 or 1")
    adv = switched_advantages(batch.advantages, batch.rewards, batch.mask, mode, cfg.reward_midpoint)  # (B, T)
    token_loss, metrics = clipped_surrogate(batch.log_prob, batch.old_log_prob, adv, batch.mask, surrogate)
    kept = (batch.mask > 0) & (adv != 0)  # (B, T)
    n = (batch.mask > 0).sum().clamp(min=1).to(token_loss.dtype)
    metrics[MODE_KEY] = torch.tensor(float(mode), dtype=token_loss.dtype, device=token_loss.device)
    metrics["kept_frac"] = kept.sum() / n
    return LossOutput(token_loss=token_loss, token_weights=torch.ones_like(token_loss).detach(), metrics=metrics,
                      masks={"kept": kept})
