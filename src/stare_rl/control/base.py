"""Stateful controllers: updated once per generation batch, outside the loss, by the step controller.

- :class:`AdaptiveEntropyCoef`: an adaptive entropy-bonus coefficient for the entropy-bonus baseline.

Method-owned controllers live in their method's package (STARE's gate and schedule:
:mod:`stare_rl.methods.stare.gate`). Each implements :class:`Controller`: ``update(StepObservation)``, ``context()`` (merged into
``LossContext.stats``), ``metrics()``, and ``state_dict()`` / ``load_state_dict()`` (plain floats and bools,
so a resumed run continues exactly), and declares its state-defining ``settings`` (see :class:`Controller`).
A method declares the controllers it owns at registration;
:class:`stare_rl.control.step.StepController` drives them. It imports nothing from ``methods/`` or
``engines/`` (the layer contract in pyproject.toml).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import torch

from stare_rl.control.target import EntropyTarget, setting_value, start_entropy_of
from stare_rl.core.types import TokenBatch


@dataclass(frozen=True)
class StepObservation:
    """What a controller sees once per generation batch, before any update on it.

    Args:
        entropy: token-mean entropy of the current policy over the whole step batch (all ranks).
        step: 0-based generation-batch index.
        batches: this rank's detached micro-batches (for controllers needing more than H).
        group: process group for all-reduces (None = default / single process).
        start_entropy: the token-mean entropy of the first step batch before any update (the step controller's
            first measurement, saved and restored on resume); relative targets are resolved from it
            (:mod:`stare_rl.control.target`). None: this observation's ``entropy`` is the first one.
    """

    entropy: float
    step: int
    batches: tuple[TokenBatch, ...] = ()
    group: Any = None
    start_entropy: float | None = None


@runtime_checkable
class Controller(Protocol):
    """A per-step controller (see the module docstring).

    Capabilities are attributes of the controller, read by engines with :func:`is_memoryless`, never by the
    method's name: ``memoryless = True`` says that its outputs depend on the current observation only (no
    history, no step count), so an engine without per-step driver state (verl's plugin-only path) may update
    it from a micro-batch estimate of the batch entropy. Absent means False.

    ``settings`` names the controller's *state-defining* settings: the config fields that set them, which are
    also their ``state_dict`` keys and the controller's attribute names (one spelling). Its saved state is only meaningful under those values, so a resumed run whose requested value
    differs is refused (:func:`setting_differences`, one rule for every controller; docs/train.md "Resuming").
    ``load_state_dict`` restores the dynamic state only, after checking the settings with :func:`require_same_settings`.
    An optional ``upgrade_state(state) -> state`` (a static method) rewrites a state saved in an older layout.
    """

    settings: tuple[str, ...]  # a class attribute, or an instance one where the config decides (auto's fallback)

    def update(self, obs: StepObservation) -> None: ...

    def context(self) -> dict[str, Any]: ...

    def metrics(self) -> dict[str, float]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def finite_entropy(batch_entropy: float) -> float:
    """``batch_entropy`` as a float; ValueError naming it when it is not finite (every controller's first check)."""
    value = float(batch_entropy)
    if not math.isfinite(value):
        # DEVIATION: the STARE reference prints a warning and skips the update; a NaN entropy means the
        # step is already broken, so we fail loudly instead of silently keeping a stale gate.
        raise ValueError(f"batch_entropy={batch_entropy} must be finite")
    return value


def check_non_negative(name: str, value: float) -> None:
    """ValueError naming ``name`` unless ``value`` is finite and >= 0."""
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name}={value} must be a finite value >= 0")


def current_state(controller: Any, saved: Mapping[str, Any]) -> Mapping[str, Any]:
    """``saved`` in today's layout: the controller's ``upgrade_state`` (if it has one) applied, else unchanged."""
    upgrade = getattr(controller, "upgrade_state", None)
    return upgrade(dict(saved)) if upgrade is not None else saved


def setting_differences(controller: Any, saved: Mapping[str, Any]) -> list[str]:
    """``"<field>: saved <a>, requested <b>"`` for each state-defining setting (``controller.settings``) whose value
    in the saved state differs from ``controller``'s own (the requested one); empty when they all agree.

    A setting that the saved state does not record (a checkpoint written before it was recorded) is not compared.
    """
    saved = current_state(controller, saved)
    requested = controller.state_dict()
    return [f"{field}: saved {setting_value(saved[field])!r}, requested {setting_value(requested[field])!r}"
            for field in controller.settings
            if field in saved and setting_value(saved[field]) != setting_value(requested[field])]


def require_same_settings(controller: Any, saved: Mapping[str, Any]) -> None:
    """ValueError naming each state-defining setting whose saved value differs from the requested one."""
    diffs = setting_differences(controller, saved)
    if diffs:
        raise ValueError(f"{type(controller).__name__} state was saved with other settings ({'; '.join(diffs)}); "
                         "a resumed run keeps its settings: resume with the saved values or start a new run")


def controller_state(controller: Any) -> dict[str, Any]:
    """A target-holding controller's checkpoint: its state-defining settings, its ``_DYNAMIC`` values and its
    target's own state (spelling, measured start, resolved value) under ``target_entropy``."""
    keys = (*controller.settings, *controller._DYNAMIC)
    state: dict[str, Any] = {k: getattr(controller, k) for k in keys if k != "target_entropy"}
    state["target_entropy"] = controller.target.state_dict()
    return state


def load_controller_state(controller: Any, state: Mapping[str, Any]) -> None:
    """Restore :func:`controller_state` (an older layout upgraded first): the settings must match (ValueError
    naming each that differs), then the target and every ``_DYNAMIC`` value (``None`` stays ``None``: "not
    measured yet")."""
    state = current_state(controller, state)
    require_same_settings(controller, state)
    controller.target.load_state_dict(state["target_entropy"])
    for k in controller._DYNAMIC:
        setattr(controller, k, None if state[k] is None else float(state[k]))


def sign_of(x: float) -> float:
    """-1.0, 0.0 or +1.0."""
    return float((x > 0) - (x < 0))


class AdaptiveEntropyCoef:
    """Adaptive entropy-bonus coefficient (in the spirit of Skywork-OR1's adaptive entropy control).

    ``c <- clip(c + bonus_step * sgn(H_tgt - H), bonus_coef_min, bonus_coef_max)`` from ``c = bonus_coef``: the
    bonus grows while the entropy is below the target and shrinks above it; the current c is ``entropy_coef``. Defaults are ours, not a paper's: target 0.3 (STARE's, to compare the
    baselines at the same target), init 0.001 (verl's historical fixed ``entropy_coeff``), step 5e-4, range
    [0, 0.01]. ``target_entropy`` may be relative to the start entropy (``"0.5x"``, :mod:`stare_rl.control.target`).
    """

    settings: ClassVar[tuple[str, ...]] = (  # the stare train fields (engines/trl/options.py) of these names
        "target_entropy", "bonus_step", "bonus_coef_min", "bonus_coef_max", "bonus_coef",
    )
    _DYNAMIC = ("entropy_coef",)

    def __init__(
        self,
        target_entropy: float | str = 0.3,
        bonus_step: float = 5e-4,
        bonus_coef_min: float = 0.0,
        bonus_coef_max: float = 0.01,
        bonus_coef: float = 0.001,
    ) -> None:
        self.target = EntropyTarget(target_entropy)
        check_non_negative("bonus_step", bonus_step)
        if not (0.0 <= bonus_coef_min <= bonus_coef_max and math.isfinite(bonus_coef_max)):
            raise ValueError(f"bonus_coef_min={bonus_coef_min}, bonus_coef_max={bonus_coef_max} must satisfy "
                             "0 <= bonus_coef_min <= bonus_coef_max")
        if not bonus_coef_min <= bonus_coef <= bonus_coef_max:
            raise ValueError(f"bonus_coef={bonus_coef} must be in [bonus_coef_min={bonus_coef_min}, "
                             f"bonus_coef_max={bonus_coef_max}]")
        self.bonus_step = float(bonus_step)
        self.bonus_coef_min, self.bonus_coef_max = float(bonus_coef_min), float(bonus_coef_max)
        self.bonus_coef = float(bonus_coef)
        self.entropy_coef = self.bonus_coef  # the current coefficient

    @property
    def target_entropy(self) -> float:
        """The absolute target (NaN until a relative target is resolved at the first update)."""
        return self.target.value_or_nan()

    def update(self, obs: StepObservation) -> None:
        """Move the coefficient one step."""
        target = self.target.resolve(start_entropy_of(obs))
        sign = sign_of(target - finite_entropy(obs.entropy))
        self.entropy_coef = min(max(self.entropy_coef + self.bonus_step * sign, self.bonus_coef_min),
                                self.bonus_coef_max)

    def context(self) -> dict[str, Any]:
        return {"entropy_coef": self.entropy_coef}

    def metrics(self) -> dict[str, float]:
        return {"entropy_coef": self.entropy_coef, "target_entropy": self.target_entropy}

    def state_dict(self) -> dict[str, Any]:
        return controller_state(self)

    @staticmethod
    def upgrade_state(state: dict[str, Any]) -> dict[str, Any]:
        """A state saved before the settings took their config names (``step``, ``coef_min``, ``coef_max``,
        ``init``; the current coefficient under ``coef``) in today's names."""
        if "coef" not in state:
            return state
        old = {"step": "bonus_step", "coef_min": "bonus_coef_min", "coef_max": "bonus_coef_max", "init": "bonus_coef",
               "coef": "entropy_coef"}
        return {old.get(k, k): v for k, v in state.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        load_controller_state(self, state)


def is_memoryless(controller: Any) -> bool:
    """Whether ``controller`` declares ``memoryless = True`` (see :class:`Controller`)."""
    return bool(getattr(controller, "memoryless", False))


def global_token_mean(
    batches: TokenBatch | Sequence[TokenBatch], attr: str = "entropy", group: Any = None
) -> float:
    """Token-mean of ``batch.<attr>`` over the valid tokens of all micro-batches on all ranks.

    The STARE gate's input: the batch token-mean entropy of the whole global batch (0 when nothing is valid).
    """
    import torch.distributed as dist

    batches = [batches] if isinstance(batches, TokenBatch) else list(batches)
    # (sum, count) on the inputs' device: NCCL all-reduces CUDA tensors only
    device = batches[0].mask.device if batches else torch.device("cpu")
    total = torch.zeros(2, dtype=torch.float64, device=device)
    for b in batches:
        values = getattr(b, attr)
        if values is None:
            raise ValueError(f"batch.{attr} is None; global_token_mean needs it")
        total += torch.stack(
            [(values.detach().double() * b.mask_f.double()).sum(), b.mask_f.sum().double()]
        ).to(device)
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(total, group=group)
    return float(total[0] / total[1]) if float(total[1]) > 0 else 0.0
