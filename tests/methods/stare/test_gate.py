"""STARE's controllers (methods/stare/gate.py): the gate and the adaptive W/M schedule, hand-derived trajectories,
clipping, validation, exact resume through state_dict, and the gate driving the STARE loss."""

from __future__ import annotations

import json

import pytest
import torch

from _core_batches import random_batch
from stare_rl import LossContext, compute_loss
from stare_rl.control.base import Controller, StepObservation
from stare_rl.methods.stare.config import StareConfig
from stare_rl.methods.stare.gate import StareGate, StareWeightSchedule


def step(ctrl: Controller, h: float) -> dict:
    """One update from batch entropy ``h``; returns the controller's context."""
    ctrl.update(StepObservation(entropy=h, step=0))
    return ctrl.context()


def test_gate_is_on_strictly_below_target() -> None:
    gate = StareGate(target_entropy=0.3)
    assert gate.gate_on is None and gate.context() == {"gate_on": None}  # None = on for the methods
    assert gate.metrics() == {}
    assert step(gate, 0.21) == {"gate_on": True}
    assert step(gate, 0.3) == {"gate_on": False}  # at the target: off (1[H < H_tgt])
    assert step(gate, 0.37) == {"gate_on": False} and gate.metrics() == {"gate_on": 0.0, "target_entropy": 0.3}
    assert step(gate, 0.0) == {"gate_on": True} and gate.last_entropy == 0.0
    with pytest.raises(ValueError, match="batch_entropy=nan"):
        step(gate, float("nan"))
    with pytest.raises(ValueError, match="target_entropy=-1"):
        StareGate(-1.0)


def test_gate_state_round_trips_through_json() -> None:
    gate = StareGate(0.4)
    step(gate, 0.5)
    restored = StareGate(0.4)  # same settings (another target is refused: tests/control/test_resume_rule.py)
    restored.load_state_dict(json.loads(json.dumps(gate.state_dict())))
    assert restored.state_dict() == gate.state_dict() and restored.gate_on is False


def test_schedule_hand_derived_trajectory_and_bounds() -> None:
    sch = StareWeightSchedule(
        reweight_w=1.1, reweight_m=0.9, target_entropy=0.3, weight_alpha=0.2, weight_w_max=1.5, weight_m_min=0.5
    )
    def wm(h: float) -> tuple[float, float]:
        ctx = step(sch, h)
        assert sch.metrics() == {**ctx, "target_entropy": 0.3}
        return ctx["reweight_w"], ctx["reweight_m"]

    # below target: W up / M down by alpha, clipped at w_max / m_min
    assert wm(0.1) == pytest.approx((1.3, 0.7))
    assert wm(0.1) == pytest.approx((1.5, 0.5))
    assert wm(0.1) == pytest.approx((1.5, 0.5))
    assert wm(0.3) == pytest.approx((1.5, 0.5))  # at the target: no move
    # above target: relax towards no re-weighting, clipped at W = 1 and M = 1
    assert wm(0.9) == pytest.approx((1.3, 0.7))
    for _ in range(5):
        step(sch, 0.9)
    assert (sch.w, sch.m) == (1.0, 1.0) and (sch.reweight_w, sch.reweight_m) == (1.1, 0.9)  # current, starting
    assert sch.context()["reweight_w"] == 1.0


def test_schedule_resume_continues_exactly() -> None:
    entropies = [0.25, 0.1, 0.4, 0.29, 0.31, 0.05, 0.05, 0.6, 0.2, 0.2]
    cfg = StareConfig(weight_control="paper", weight_alpha=0.013)
    straight = StareWeightSchedule.from_config(cfg)
    for h in entropies:
        step(straight, h)
    first = StareWeightSchedule.from_config(cfg)
    for h in entropies[:4]:
        step(first, h)
    resumed = StareWeightSchedule.from_config(cfg)  # W and M must come from the state
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
    for h in entropies[4:]:
        step(resumed, h)
    assert resumed.state_dict() == straight.state_dict()


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"weight_alpha": -0.1}, "weight_alpha=-0.1"),
        ({"reweight_w": 0.9}, "reweight_w=0.9"),
        ({"reweight_w": 2.0, "weight_w_max": 1.5}, "reweight_w=2.0"),
        ({"reweight_m": 0.4, "weight_m_min": 0.5}, "reweight_m=0.4"),
        ({"reweight_m": 1.1}, "reweight_m=1.1"),
    ],
)
def test_schedule_validation(kwargs: dict, text: str) -> None:
    with pytest.raises(ValueError) as err:
        StareWeightSchedule(**kwargs)
    assert text in str(err.value)


def test_controllers_drive_the_stare_loss() -> None:
    batch = random_batch(9, 4, 8)
    cfg = StareConfig(variant="C2", top_p_ratio=0.5)
    gate = StareGate(cfg.target_entropy)
    step(gate, 0.9)  # entropy above target: gate off -> all weights 1
    out = compute_loss("stare", batch, cfg, context=LossContext(stats=gate.context()))
    assert torch.equal(out.token_weights, torch.ones_like(out.token_weights))
    step(gate, 0.1)
    out = compute_loss("stare", batch, cfg, context=LossContext(stats=gate.context()))
    assert set(out.token_weights.flatten().tolist()) == {float(torch.tensor(v)) for v in (0.9, 1.0, 1.1)}
