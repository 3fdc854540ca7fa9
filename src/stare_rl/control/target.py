"""Entropy targets, absolute or relative to the entropy measured at the start of RL: one spelling, one semantics.

Every target-holding controller (STARE's gate and schedules, ``weight_control: auto``, the adaptive entropy bonus,
EntroPIC, Entrocraft) takes its ``target_entropy`` through :func:`parse_target`:

- a number (or a numeric string, as a command-line flag arrives), e.g. ``0.3``: an absolute token-mean entropy;
- a string ``"<ratio>x"``, e.g. ``"0.5x"``: that fraction of the **start entropy**, the token-mean entropy of the
  current policy over the first step batch, measured by the step controller before any update on it (the same
  measurement the controllers act on at step 0; not the initial evaluation, whose samples and prompts differ).

A relative target is resolved once, at the first update (:meth:`EntropyTarget.resolve`), logged as the metric
``target_entropy`` and saved in the controller's state; a resumed run restores the resolved value and never
measures again. It imports nothing from ``methods/`` or ``engines/`` (the layer contract in pyproject.toml).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

RELATIVE_SUFFIX = "x"  # "0.5x" = 0.5 x the start entropy


@dataclass(frozen=True)
class TargetSpec:
    """A parsed target: exactly one of ``absolute`` (>= 0) and ``ratio`` (> 0) is set."""

    absolute: float | None = None
    ratio: float | None = None

    @property
    def relative(self) -> bool:
        return self.ratio is not None

    def spelling(self) -> float | str:
        """The canonical spelling: a float, or ``"<ratio>x"`` (``repr`` of the ratio, so it round-trips)."""
        return f"{self.ratio!r}{RELATIVE_SUFFIX}" if self.ratio is not None else float(self.absolute)  # type: ignore[arg-type]


def parse_target(name: str, value: Any) -> TargetSpec:
    """Parse a target spelling; a bad one raises ValueError naming ``name`` and the value.

    Args:
        name: the config field (for the message), e.g. ``"target_entropy"``.
        value: a number >= 0, a numeric string, or ``"<ratio>x"`` with a ratio > 0.
    """
    allowed = f"a number >= 0 (absolute) or a string '<ratio>{RELATIVE_SUFFIX}' with ratio > 0 (e.g. '0.5x': " \
              "half the entropy measured at the start of RL)"
    if isinstance(value, bool):
        raise ValueError(f"{name}={value!r} must be {allowed}")
    if isinstance(value, (int, float)):
        v = float(value)
        if not (math.isfinite(v) and v >= 0.0):
            raise ValueError(f"{name}={value!r} must be {allowed}")
        return TargetSpec(absolute=v)
    if isinstance(value, str):
        text = value.strip().lower()
        relative = text.endswith(RELATIVE_SUFFIX)
        number = text[:-1].strip() if relative else text
        try:
            v = float(number)
        except ValueError:
            raise ValueError(f"{name}={value!r} must be {allowed}") from None
        if relative and math.isfinite(v) and v > 0.0:
            return TargetSpec(ratio=v)
        if not relative:
            if math.isfinite(v) and v >= 0.0:
                return TargetSpec(absolute=v)
            raise ValueError(f"{name}={v!r} must be {allowed}")  # a flag's number, shown as a number
    raise ValueError(f"{name}={value!r} must be {allowed}")


def canonical_target(name: str, value: Any) -> float | str:
    """``parse_target(name, value).spelling()``: what a config stores after validation."""
    return parse_target(name, value).spelling()


class EntropyTarget:
    """A controller's target: absolute, or ``ratio x start entropy`` resolved once and then fixed.

    Args:
        value: a target spelling (see :func:`parse_target`).
        name: the field it came from (for messages).

    Attributes:
        spec: the parsed spelling.
        value: the absolute target in force (``None`` until a relative target is resolved).
        start_entropy: the start entropy it was resolved from (``None`` for an absolute target).
    """

    def __init__(self, value: Any, name: str = "target_entropy") -> None:
        self.name = name
        self.spec = parse_target(name, value)
        self.value: float | None = self.spec.absolute
        self.start_entropy: float | None = None

    @property
    def relative(self) -> bool:
        return self.spec.relative

    @property
    def resolved(self) -> bool:
        return self.value is not None

    def resolve(self, start_entropy: float) -> float:
        """The absolute target; a relative one is fixed at ``ratio * start_entropy`` on the first call only."""
        if self.value is None:
            h0 = float(start_entropy)
            if not (math.isfinite(h0) and h0 >= 0.0):
                raise ValueError(f"start entropy={start_entropy!r} must be a finite value >= 0 to resolve "
                                 f"{self.name}={self.spec.spelling()!r}")
            self.start_entropy = h0
            self.value = self.spec.ratio * h0  # type: ignore[operator]
        return self.value

    def value_or_nan(self) -> float:
        return math.nan if self.value is None else self.value

    def state_dict(self) -> dict[str, Any]:
        return {"spec": self.spec.spelling(), "value": self.value, "start_entropy": self.start_entropy}

    def load_state_dict(self, state: Any, strict: bool = False) -> None:
        """Restore a saved target (this dict, or a bare float from checkpoints written before relative targets).

        The saved spelling and resolved value win, as every controller's saved state does; with ``strict`` a
        saved spelling that differs from this run's is an error instead.
        """
        if not isinstance(state, dict):  # older checkpoints: the absolute target itself
            state = {"spec": float(state), "value": float(state), "start_entropy": None}
        saved = parse_target(self.name, state["spec"])
        if strict and saved != self.spec:
            raise ValueError(f"the saved controller state has {self.name}={saved.spelling()!r}; this run has "
                             f"{self.name}={self.spec.spelling()!r}")
        self.spec = saved
        self.value = None if state["value"] is None else float(state["value"])
        self.start_entropy = None if state["start_entropy"] is None else float(state["start_entropy"])


def setting_value(value: Any) -> Any:
    """The setting a saved controller value stands for: a target's saved state (:meth:`EntropyTarget.state_dict`)
    compares by its spelling (``0.3``, ``"0.5x"``), since the resolved value and start entropy are state, not
    settings; any other value is itself."""
    if isinstance(value, dict) and "spec" in value:
        return value["spec"]
    return value


def start_entropy_of(obs: Any) -> float:
    """The start entropy an observation carries (the step controller's first measurement), else its own entropy."""
    start = getattr(obs, "start_entropy", None)
    return float(obs.entropy) if start is None else float(start)


__all__ = ["RELATIVE_SUFFIX", "EntropyTarget", "TargetSpec", "canonical_target", "parse_target", "setting_value",
           "start_entropy_of"]
