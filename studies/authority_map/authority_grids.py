"""The authority map's layout (studies/authority_map/HYPOTHESES.md), read from its three pre-registered grids.

Each grid method is one :class:`Slot` of the map: (task, width, actuator, target, fallback, W bound), from the
method's fields (``method``, ``tiny_hidden_size``, ``target_entropy``, ``auto_fallback``, ``auto_w_max``,
``auto_bonus_span``), not from
its name; its phase follows: A = GRPO and both actuators at 0.7x without the fallback, B = the same with
``auto_fallback: bonus``, B3 = B with ``auto_w_max: 3`` (the deviation of 2026-11-28), B3s = B3 with
``auto_bonus_span`` log 50 (the second deviation of 2026-11-28), C = 0.5x. Reads the YAML only (no training code), so the driver's declaration imports it at no cost.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import NamedTuple

import yaml

HERE = Path(__file__).resolve().parent
TASKS = ("arithmetic", "countdown", "countdown_cot")
GRIDS = {task: HERE / f"{task}.yaml" for task in TASKS}
ACTUATORS = {"vanilla": "grpo", "stare": "C2", "stare_sensitivity": "sensitivity"}  # train method -> map name
REFERENCE = "grpo"
PRIMARY_TARGET, LOW_TARGET = "0.7x", "0.5x"
HAND_OFF_W = 3.0  # phase B3's auto_w_max: the bonus takes over once W reaches 3
BONUS_SPAN = math.log(50.0)  # phase B3s's auto_bonus_span: the bonus's half as wide as with W <= 50


class Slot(NamedTuple):
    """One cell of the map, seeds aside."""

    task: str
    width: int
    actuator: str  # "grpo" | "C2" | "sensitivity"
    target: str | None  # "0.7x" | "0.5x" | None (GRPO)
    fallback: str  # "none" | "bonus"
    w_max: float | None = None  # auto_w_max as the grid spells it (B and C with the fallback: 50, B3: 3); else None
    span: float | None = None  # auto_bonus_span as the grid spells it (B3s: log 50); else None

    @property
    def phase(self) -> str:
        if self.actuator == REFERENCE or (self.target == PRIMARY_TARGET and self.fallback == "none"):
            return "A"
        if self.target == PRIMARY_TARGET:
            if self.w_max == HAND_OFF_W:
                return "B3s" if self.span is not None else "B3"
            return "B"
        return "C"

    @property
    def pair(self) -> tuple[str, int, str, str | None]:
        """Rule F's pair: the same (task, width, actuator, target), without and with the fallback (F3, F3s alike)."""
        return self.task, self.width, self.actuator, self.target


@functools.cache
def slots(task: str) -> dict[str, Slot]:
    """Grid method -> its slot, in the grid's order."""
    data = yaml.safe_load(GRIDS[task].read_text())
    out = {}
    for name, fields in data["methods"].items():
        cfg = {**data["base"], **fields}
        w_max, span = cfg.get("auto_w_max"), cfg.get("auto_bonus_span")
        out[name] = Slot(task, int(cfg["tiny_hidden_size"]), ACTUATORS[cfg["method"]], cfg.get("target_entropy"),
                         str(cfg.get("auto_fallback", "none")), None if w_max is None else float(w_max),
                         None if span is None else float(span))
    return out


def widths(task: str) -> tuple[int, ...]:
    """The task's widths in the grid's order: its default first (HYPOTHESES.md, "Widths")."""
    return tuple(dict.fromkeys(s.width for s in slots(task).values()))


def default_width(task: str) -> int:
    return widths(task)[0]


def methods(task: str, phase: str | None = None, width: int | None = None) -> tuple[str, ...]:
    """The grid's methods (in its order) of one phase and / or one width."""
    return tuple(m for m, s in slots(task).items()
                 if (phase is None or s.phase == phase) and (width is None or s.width == width))


def reference(task: str, width: int) -> str:
    """GRPO's method at a width (rule R's cell)."""
    return next(m for m, s in slots(task).items() if s.width == width and s.actuator == REFERENCE)


FALLBACK_FIELDS = ("description", "auto_fallback", "auto_w_max", "auto_bonus_span")  # what a fallback cell adds


@functools.cache
def twin(task: str, method: str) -> str | None:
    """Rule T (HYPOTHESES.md, the deviation of 2026-11-28 "a fallback cell identical to its twin"): a fallback
    method's twin, the grid method whose fields are the same but for ``FALLBACK_FIELDS`` and which has no fallback
    (its phase-A or phase-C cell without the bonus); None for a method without the fallback, or with no such twin."""
    data = yaml.safe_load(GRIDS[task].read_text())
    fields = data["methods"]
    if str(fields[method].get("auto_fallback", "none")) != "bonus":
        return None
    def core(m: str) -> dict:
        return {k: v for k, v in fields[m].items() if k not in FALLBACK_FIELDS}
    return next((m for m in fields if str(fields[m].get("auto_fallback", "none")) == "none" and core(m) == core(method)),
                None)

