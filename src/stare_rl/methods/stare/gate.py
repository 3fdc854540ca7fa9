"""STARE's controllers: the closed-loop target-entropy gate (STARE §4.3) and the adaptive W/M schedule (§4.4).

Both implement :class:`stare_rl.control.base.Controller` and are declared by the ``stare`` method at registration.
"""

from __future__ import annotations

from typing import Any, ClassVar

from stare_rl.control.base import (
    StepObservation,
    check_non_negative,
    controller_state,
    finite_entropy,
    load_controller_state,
    require_same_settings,
    sign_of,
)
from stare_rl.control.target import EntropyTarget, start_entropy_of

GATE = "gate"  # name of the STARE gate among a gated method's controllers (keys its saved state)


class StareGate:
    """STARE §4.3 closed-loop gate: on while the batch token-mean entropy is below the target.

    Args:
        target_entropy: H_tgt (the STARE config's ``target_entropy``, paper default 0.3), absolute or relative to
            the start entropy (``"0.5x"``, :mod:`stare_rl.control.target`).

    ``gate_on`` is ``None`` before the first update (methods treat ``None`` as on, like the reference).
    """

    settings: ClassVar[tuple[str, ...]] = ("target_entropy",)

    def __init__(self, target_entropy: float | str = 0.3) -> None:
        self.target = EntropyTarget(target_entropy)
        self.gate_on: bool | None = None
        self.last_entropy: float | None = None

    @property
    def memoryless(self) -> bool:
        """gate_on depends on this step's entropy only (see control.base.Controller), unless the target is relative:
        then it also depends on the start entropy, which only the step controller's first measurement gives."""
        return not self.target.relative

    @property
    def target_entropy(self) -> float:
        return self.target.value_or_nan()

    def update(self, obs: StepObservation) -> None:
        """Set the gate from this step's token-mean entropy over the whole global batch."""
        h = finite_entropy(obs.entropy)
        target = self.target.resolve(start_entropy_of(obs))
        self.last_entropy = h
        self.gate_on = bool(h < target)

    def context(self) -> dict[str, Any]:
        return {"gate_on": self.gate_on}

    def metrics(self) -> dict[str, float]:
        return {} if self.gate_on is None else {"gate_on": float(self.gate_on), "target_entropy": self.target_entropy}

    def state_dict(self) -> dict[str, Any]:
        return {
            "target_entropy": self.target.state_dict(),
            "gate_on": self.gate_on,
            "last_entropy": self.last_entropy,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        require_same_settings(self, state)
        self.target.load_state_dict(state["target_entropy"])
        self.gate_on = None if state["gate_on"] is None else bool(state["gate_on"])
        self.last_entropy = None if state["last_entropy"] is None else float(state["last_entropy"])


class StareWeightSchedule:
    """STARE §4.4 adaptive W/M schedule (a sign controller on the entropy error).

    ``W <- clip(W + alpha * sgn(H_tgt - H), 1, w_max)`` and ``M <- clip(M - alpha * sgn(H_tgt - H), m_min, 1)``:
    below the target W grows and M shrinks by alpha per step, above it they relax back towards 1 (no
    re-weighting), and at the target they stay. Defaults (alpha 0.01, w_max 1.5, m_min 0.5) are the STARE
    run script's; the reference keeps W/M only in memory (lost on resume), here they are in ``state_dict``.

    Args (each named as the STARE config field that sets it, and saved under that name):
        reweight_w, reweight_m: the starting W and M (the current ones are ``w`` and ``m``).
        target_entropy: H_tgt.
        weight_alpha: step size >= 0 (0 = static weights).
        weight_w_max: upper bound of W (>= reweight_w).
        weight_m_min: lower bound of M (in (0, reweight_m]).
    """

    settings: ClassVar[tuple[str, ...]] = (
        "target_entropy", "weight_alpha", "weight_w_max", "weight_m_min", "reweight_w", "reweight_m",
    )
    _DYNAMIC = ("w", "m")

    def __init__(
        self,
        reweight_w: float = 1.1,
        reweight_m: float = 0.9,
        target_entropy: float | str = 0.3,
        weight_alpha: float = 0.01,
        weight_w_max: float = 1.5,
        weight_m_min: float = 0.5,
    ) -> None:
        check_non_negative("weight_alpha", weight_alpha)
        if not 1.0 <= reweight_w <= weight_w_max:
            raise ValueError(f"reweight_w={reweight_w} must be in [1, weight_w_max={weight_w_max}]")
        if not 0.0 < weight_m_min <= reweight_m <= 1.0:
            raise ValueError(f"reweight_m={reweight_m} must be in [weight_m_min={weight_m_min}, 1] with weight_m_min > 0")
        self.target = EntropyTarget(target_entropy)
        self.weight_alpha, self.weight_w_max, self.weight_m_min = (
            float(weight_alpha), float(weight_w_max), float(weight_m_min))
        self.reweight_w, self.reweight_m = float(reweight_w), float(reweight_m)
        self.w, self.m = self.reweight_w, self.reweight_m  # the current W and M

    @classmethod
    def from_config(cls, cfg: Any) -> StareWeightSchedule:
        """Start from a STARE-style config's fields of the same names."""
        return cls(**{name: getattr(cfg, name) for name in cls.settings})

    def update(self, obs: StepObservation) -> None:
        """Move W and M one step from this step's batch entropy."""
        target = self.target.resolve(start_entropy_of(obs))
        sign = sign_of(target - finite_entropy(obs.entropy))  # +1 below target: intensify
        self.w = min(max(self.w + self.weight_alpha * sign, 1.0), self.weight_w_max)
        self.m = min(max(self.m - self.weight_alpha * sign, self.weight_m_min), 1.0)

    def context(self) -> dict[str, Any]:
        return {"reweight_w": self.w, "reweight_m": self.m}

    @property
    def target_entropy(self) -> float:
        return self.target.value_or_nan()

    def metrics(self) -> dict[str, float]:
        return {"reweight_w": self.w, "reweight_m": self.m, "target_entropy": self.target_entropy}

    def state_dict(self) -> dict[str, Any]:
        return controller_state(self)

    @staticmethod
    def upgrade_state(state: dict[str, Any]) -> dict[str, Any]:
        """A state saved before the settings took their config names (``alpha``, ``w_max``, ``m_min``, ``init_w``,
        ``init_m``; the current W and M under ``reweight_w``/``reweight_m``) in today's names."""
        if "alpha" not in state:
            return state
        old = {"alpha": "weight_alpha", "w_max": "weight_w_max", "m_min": "weight_m_min", "reweight_w": "w",
               "reweight_m": "m", "init_w": "reweight_w", "init_m": "reweight_m"}
        return {old.get(k, k): v for k, v in state.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        load_controller_state(self, state)
