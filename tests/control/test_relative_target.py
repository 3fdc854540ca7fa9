"""Relative entropy targets (``target_entropy: "0.5x"``): one spelling and one semantics for every target holder.

For each target-holding set-up, driven by the real :class:`StepController`: the target is resolved once from the
first step batch's entropy (the start entropy), logged, kept when the entropy moves, saved into the controller
file, and restored on resume without measuring again; a resumed run then behaves exactly like the uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch

from stare_rl.control.base import AdaptiveEntropyCoef
from stare_rl.control.setup import LossSetup
from stare_rl.control.target import EntropyTarget, parse_target
from stare_rl.core.registry import get_method, list_methods, make_config
from stare_rl.core.types import TokenBatch
from stare_rl.io.runlog import CONTROLLER_FILE

# Every set-up that holds an entropy target: (method, method fields, adaptive-bonus kwargs or None).
HOLDERS = {
    "stare_gate": ("stare", {}, None),
    "stare_paper": ("stare", {"weight_control": "paper"}, None),
    "stare_auto": ("stare", {"variant": "C2", "weight_control": "auto"}, None),
    "stare_sensitivity": ("stare_sensitivity", {}, None),
    "entropic": ("entropic", {}, None),
    "entrocraft": ("entrocraft", {}, None),
    "adaptive_bonus": ("vanilla", {}, {}),
}


def _batch(h: float) -> TokenBatch:
    """A step batch whose token-mean entropy over the valid tokens is exactly ``h`` (padding holds 9.0)."""
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # (2, 4), 5 valid tokens
    entropy = torch.where(mask > 0, torch.full_like(mask, h), torch.full_like(mask, 9.0))  # (2, 4)
    logp = torch.full_like(mask, -0.5)
    adv = torch.tensor([[1.0], [-1.0]]).expand(2, 4) * mask
    return TokenBatch(logp, logp.clone(), adv, mask, entropy, old_entropy=entropy.clone())


def _setup(name: str, target: float | str) -> LossSetup:
    method, fields, bonus = HOLDERS[name]
    if bonus is not None:
        return LossSetup(method, make_config(method), adaptive_entropy={**bonus, "target_entropy": target})
    return LossSetup(method, make_config(method, **fields, target_entropy=target))


def _targets(ctrl) -> list[float]:
    """The absolute target every controller of the step controller holds."""
    return [c.target.value_or_nan() for c in ctrl.controllers.values() if hasattr(c, "target")]


def test_every_target_holder_is_covered() -> None:
    """A registered method with a ``target_entropy`` field must appear in HOLDERS (new methods cannot slip by)."""
    holders = {m for m, _, _ in HOLDERS.values()}
    for name in list_methods():
        fields = {f.name for f in dataclasses.fields(get_method(name).config_cls)}
        if "target_entropy" in fields:
            assert name in holders, name


@pytest.mark.parametrize("name", sorted(HOLDERS))
def test_relative_target_resolves_once_logs_saves_and_restores(name: str, tmp_path: Path) -> None:
    setup = _setup(name, "0.5x")
    ctrl = setup.step_controller()
    assert ctrl.controllers and all(math.isnan(t) for t in _targets(ctrl))  # unresolved before the first step
    ctrl.begin_step(_batch(0.4), step=0)  # start entropy 0.4 -> target 0.2
    assert _targets(ctrl) == pytest.approx([0.2] * len(_targets(ctrl)))
    assert ctrl.metrics()["start_entropy"] == pytest.approx(0.4)
    assert ctrl.metrics()["target_entropy"] == pytest.approx(0.2)
    ctrl.begin_step(_batch(0.1), step=1)  # the entropy moves; the target does not
    assert ctrl.metrics()["target_entropy"] == pytest.approx(0.2)
    ctrl.save(tmp_path)
    saved = json.loads((tmp_path / CONTROLLER_FILE).read_text())
    assert saved["start_entropy"] == pytest.approx(0.4)

    resumed = _setup(name, "0.5x").step_controller()
    assert resumed.load(tmp_path)
    assert resumed.start_entropy == pytest.approx(0.4)
    assert _targets(resumed) == pytest.approx(_targets(ctrl))  # restored before any new measurement
    for step, h in enumerate((0.9, 0.15, 0.25), start=2):  # 0.9 would give 0.45 if it were measured again
        a, b = ctrl.begin_step(_batch(h), step), resumed.begin_step(_batch(h), step)
        assert dict(a.stats) == dict(b.stats)
        assert ctrl.metrics() == resumed.metrics()
        assert resumed.metrics()["target_entropy"] == pytest.approx(0.2)
    assert resumed.state_dict() == ctrl.state_dict()


@pytest.mark.parametrize("name", sorted(HOLDERS))
def test_relative_target_acts_like_the_absolute_one_it_resolves_to(name: str) -> None:
    """After resolution, '0.5x' at start entropy 0.5 gives every step the same context as the absolute 0.25
    (entropies exact in float32, so the comparison is exact)."""
    rel, ab = _setup(name, "0.5x").step_controller(), _setup(name, 0.25).step_controller()
    for step, h in enumerate((0.5, 0.375, 0.125, 0.0625, 0.4375)):
        assert dict(rel.begin_step(_batch(h), step).stats) == dict(ab.begin_step(_batch(h), step).stats)


def test_a_relative_gate_is_not_memoryless() -> None:
    """verl's plugin-only path re-sets memoryless controllers from a micro-batch estimate; a relative target needs
    the start entropy, which only the step controller measures, so the relative gate must not claim memorylessness."""
    from stare_rl.control.base import is_memoryless

    assert is_memoryless(_setup("stare_gate", 0.3).step_controller().controllers["gate"])
    assert not is_memoryless(_setup("stare_gate", "0.5x").step_controller().controllers["gate"])


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.3, 0.3), (0, 0.0), ("0.25", 0.25), ("0.5x", "0.5x"), (" 0.7X ", "0.7x"), ("1.5x", "1.5x")],
)
def test_spellings(value: object, expected: object) -> None:
    assert parse_target("target_entropy", value).spelling() == expected
    assert make_config("stare", target_entropy=value).target_entropy == expected


@pytest.mark.parametrize("value", [-0.1, "-0.1", "0x", "-1x", "x", "half", "0.5xx", "nanx", math.inf, True, None, [0.5]])
@pytest.mark.parametrize("method", ["stare", "entropic", "entrocraft"])
def test_bad_spellings_name_the_field_and_the_value(method: str, value: object) -> None:
    with pytest.raises(ValueError, match=r"target_entropy=.* must be a number >= 0 \(absolute\) or a string"):
        make_config(method, target_entropy=value)


def test_adaptive_bonus_names_the_one_target_field() -> None:
    with pytest.raises(ValueError, match="target_entropy='half' must be"):
        AdaptiveEntropyCoef(target_entropy="half")
    with pytest.raises(ValueError, match="target_entropy='-2x'"):
        AdaptiveEntropyCoef(target_entropy="-2x")


def test_old_checkpoints_with_a_bare_absolute_target_still_load() -> None:
    t = EntropyTarget("0.5x")
    t.load_state_dict(0.3)  # a controller file written before relative targets
    assert t.value == 0.3 and not t.relative
    strict = EntropyTarget(0.3)
    with pytest.raises(ValueError, match="saved controller state has target_entropy=0.3; this run has target_entropy='0.5x'"):
        EntropyTarget("0.5x").load_state_dict(strict.state_dict(), strict=True)
