"""Step-level options around any method: the advantage estimator, DAPO dynamic sampling, the entropy bonus and
the quadrant diagnostics. Their fields are part of :class:`stare_rl.trl.StareGRPOConfig` (copied from here, not
re-listed); ``None`` for a bonus setting means the controller's own default (:mod:`stare_rl.control.base`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stare_rl.control.base import AdaptiveEntropyCoef
from stare_rl.control.setup import LossSetup
from stare_rl.core.advantages import list_advantages
from stare_rl.core.entropy_bonus import EntropyBonusConfig
from stare_rl.core.surrogate import SurrogateConfig

BONUS_MODES = ("off", "fixed", "adaptive")
TARGET_FIELD = "target_entropy"  # one name for the entropy target: the method's and the adaptive bonus's
DYNAMIC_SAMPLING_MODES = ("refill", "mask")


@dataclass(frozen=True)
class StepOptions:
    """The controllers and batch-level options around the method (one generation batch = one step)."""

    advantage_estimator: str = field(
        default="grpo", metadata={"help": "Registered advantage estimator: grpo | drgrpo | rloo (stare_rl.core.advantages)."}
    )
    dynamic_sampling: bool = field(
        default=False,
        metadata={"help": "DAPO dynamic sampling (§3.2): prompt groups whose rewards all agree carry no gradient; "
                  "see dynamic_sampling_mode for what replaces them."},
    )
    dynamic_sampling_mode: str = field(
        default="refill",
        metadata={"help": "refill: generate more prompt groups until the batch holds as many informative groups as "
                  "it has rows for, then truncate (DAPO and the STARE script; the batch size stays constant). "
                  "mask: keep the one generation and drop the constant groups from the loss (the batch shrinks)."},
    )
    max_num_gen_batches: int = field(
        default=10,
        metadata={"help": "refill: at most this many generation rounds per step, the first included (STARE script: "
                  "10). Short at the limit: the batch is filled with constant groups masked out of the loss."},
    )
    refill_batch_multiplier: int = field(
        default=1,
        metadata={"help": "refill: each extra round draws this many generation batches of prompts (the STARE script "
                  "generates 3 x the train batch per round)."},
    )
    entropy_bonus: str = field(
        default="off", metadata={"help": "off | fixed | adaptive: entropy bonus added to any method's loss."}
    )
    bonus_coef: float | None = field(
        default=None, metadata={"help": "Fixed bonus coefficient, or the adaptive controller's initial value."}
    )
    target_entropy: float | str | None = field(
        default=None,
        metadata={"help": "The target token-mean entropy of whichever mechanism holds one: the method's (STARE's gate "
                  "and W/M schedule, weight_control auto, EntroPIC, Entrocraft, ...) and the adaptive entropy bonus "
                  "(its coefficient grows below the target); one target for both when both are on. A number >= 0, "
                  "or '<r>x' (e.g. '0.5x'): r times the entropy of the first step batch, resolved once and saved. "
                  "Unset: the method's default, for the bonus too (the bonus's own 0.3 when the method holds none)."},
    )
    bonus_step: float | None = field(default=None, metadata={"help": "Adaptive bonus: coefficient step per batch."})
    bonus_coef_min: float | None = field(default=None, metadata={"help": "Adaptive bonus: lower bound."})
    bonus_coef_max: float | None = field(default=None, metadata={"help": "Adaptive bonus: upper bound."})
    quadrant_metrics: bool = field(
        default=True,
        metadata={"help": "Log the four-quadrant token diagnostics (quadrant/*) and actor/entropy every step. Cost: "
                  "the full-vocabulary entropy of every token on every training forward (TRL: inside its fused "
                  "LM-head pass, a few percent of a step at V=151,936 with a small model, docs/benchmarks.md); off, "
                  "the entropy is computed only where the method or its controllers need it."},
    )

    def __post_init__(self) -> None:
        if self.advantage_estimator not in list_advantages():
            raise ValueError(f"advantage_estimator={self.advantage_estimator!r} is not one of {list_advantages()}")
        if self.entropy_bonus not in BONUS_MODES:
            raise ValueError(f"entropy_bonus={self.entropy_bonus!r} is not one of {list(BONUS_MODES)}")
        if self.dynamic_sampling_mode not in DYNAMIC_SAMPLING_MODES:
            raise ValueError(f"dynamic_sampling_mode={self.dynamic_sampling_mode!r} is not one of "
                             f"{list(DYNAMIC_SAMPLING_MODES)}")
        for name in ("max_num_gen_batches", "refill_batch_multiplier"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}={value!r} must be an integer >= 1")

    def loss_setup(self, method: str, method_config: Any, surrogate: SurrogateConfig) -> LossSetup:
        """The engine-agnostic :class:`LossSetup` (controller settings validated by building them)."""
        bonus = adaptive = None
        if self.entropy_bonus == "fixed":
            bonus = EntropyBonusConfig() if self.bonus_coef is None else EntropyBonusConfig(coef=self.bonus_coef)
        elif self.entropy_bonus == "adaptive":
            adaptive = {n: getattr(self, n) for n in ("bonus_step", "bonus_coef_min", "bonus_coef_max", "bonus_coef")
                        if getattr(self, n) is not None}
            # one target for every holder: unset, the bonus takes the method's (its own 0.3 if the method has none)
            target = self.target_entropy if self.target_entropy is not None else getattr(method_config, TARGET_FIELD,
                                                                                           None)
            if target is not None:
                adaptive[TARGET_FIELD] = target
            AdaptiveEntropyCoef(**adaptive)  # validates
        return LossSetup(
            method=method,
            method_config=method_config,
            surrogate=surrogate,
            advantage_estimator=self.advantage_estimator,
            dynamic_sampling=self.dynamic_sampling,
            dynamic_sampling_mode=self.dynamic_sampling_mode,
            max_num_gen_batches=self.max_num_gen_batches,
            refill_batch_multiplier=self.refill_batch_multiplier,
            entropy_bonus=bonus,
            adaptive_entropy=adaptive,
            quadrant_metrics=self.quadrant_metrics,
        )


__all__ = ["BONUS_MODES", "DYNAMIC_SAMPLING_MODES", "TARGET_FIELD", "StepOptions"]
