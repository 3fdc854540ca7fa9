"""What an engine adapter needs to build the loss and its step controller: engine-agnostic and frozen."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stare_rl.control.base import AdaptiveEntropyCoef
from stare_rl.control.step import StepController
from stare_rl.core.entropy_bonus import EntropyBonusConfig
from stare_rl.core.registry import get_method
from stare_rl.core.surrogate import SurrogateConfig


def bonus_controllers(method: str, method_config: Any) -> list[str]:
    """The names of ``method``'s controllers (under ``method_config``) that set the entropy-bonus coefficient
    (``entropy_coef`` in their context), e.g. STARE's ``auto`` with ``auto_fallback='bonus'``."""
    ctrls = get_method(method).make_controllers(method_config)
    return [name for name, ctrl in ctrls.items() if "entropy_coef" in ctrl.context()]


@dataclass(frozen=True)
class LossSetup:
    """Everything the engine adapter needs to build the loss; engine-agnostic and frozen.

    Args:
        method: registered method name.
        method_config: an instance of the method's config class.
        surrogate: the shared clip settings.
        advantage_estimator: registered estimator name.
        dynamic_sampling: DAPO filter on/off.
        dynamic_sampling_mode: ``refill`` (generate until the batch is full of informative groups) or ``mask``.
        max_num_gen_batches: refill: generation rounds per step at most (the first included).
        refill_batch_multiplier: refill: generation batches of prompts per extra round.
        entropy_bonus: fixed entropy bonus, or ``None`` (off or adaptive).
        adaptive_entropy: keyword arguments of :class:`stare_rl.control.base.AdaptiveEntropyCoef`, or ``None``.
        quadrant_metrics: log the quadrant diagnostics.
    """

    method: str
    method_config: Any
    surrogate: SurrogateConfig = field(default_factory=SurrogateConfig)
    advantage_estimator: str = "grpo"
    dynamic_sampling: bool = False
    dynamic_sampling_mode: str = "refill"
    max_num_gen_batches: int = 10
    refill_batch_multiplier: int = 1
    entropy_bonus: EntropyBonusConfig | None = None
    adaptive_entropy: dict[str, Any] | None = None
    quadrant_metrics: bool = True

    def __post_init__(self) -> None:
        if self.entropy_bonus is not None or self.adaptive_entropy is not None:
            owners = sorted(bonus_controllers(self.method, self.method_config))
            if owners:
                mode = "fixed" if self.entropy_bonus is not None else "adaptive"
                raise ValueError(f"entropy_bonus={mode!r}: method {self.method!r}'s controller {owners} already sets "
                                 "the entropy-bonus coefficient (auto_fallback='bonus'); use one of the two")

    def extra_controllers(self) -> dict[str, Any]:
        """Controllers of the set-up rather than the method (fresh instances): the adaptive entropy bonus."""
        return {} if self.adaptive_entropy is None else {"adaptive_entropy": AdaptiveEntropyCoef(**self.adaptive_entropy)}

    def step_controller(self, group: Any = None) -> Any:
        """A fresh :class:`~stare_rl.control.step.StepController` for this set-up."""
        return StepController(self.method, self.method_config, extra_controllers=self.extra_controllers(), group=group)
