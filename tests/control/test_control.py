"""Controllers: STARE gate, adaptive W/M schedule, adaptive entropy coefficient (hand-derived trajectories,
clipping, exact resume through state_dict), their context / metrics, global_token_mean, and the
StepController (global statistics, begin_step, save / load)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from _core_batches import random_batch
from stare_rl import LossContext, TokenBatch, compute_loss, make_config
from stare_rl.control.base import (
    AdaptiveEntropyCoef,
    Controller,
    StepObservation,
    global_token_mean,
)
from stare_rl.control.step import StepController
from stare_rl.io.runlog import CONTROLLER_FILE, read_json
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
        reweight_w=1.1, reweight_m=0.9, target_entropy=0.3, alpha=0.2, w_max=1.5, m_min=0.5
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
    assert (sch.reweight_w, sch.reweight_m) == (1.0, 1.0)
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
        ({"alpha": -0.1}, "alpha=-0.1"),
        ({"reweight_w": 0.9}, "reweight_w=0.9"),
        ({"reweight_w": 2.0, "w_max": 1.5}, "reweight_w=2.0"),
        ({"reweight_m": 0.4, "m_min": 0.5}, "reweight_m=0.4"),
        ({"reweight_m": 1.1}, "reweight_m=1.1"),
    ],
)
def test_schedule_validation(kwargs: dict, text: str) -> None:
    with pytest.raises(ValueError) as err:
        StareWeightSchedule(**kwargs)
    assert text in str(err.value)


def test_adaptive_entropy_coef_trajectory_bounds_and_resume() -> None:
    ctl = AdaptiveEntropyCoef(target_entropy=0.3, step=0.002, coef_min=0.0, coef_max=0.005, init=0.001)
    assert step(ctl, 0.1)["entropy_coef"] == pytest.approx(0.003)
    assert step(ctl, 0.1)["entropy_coef"] == pytest.approx(0.005)
    assert step(ctl, 0.1)["entropy_coef"] == pytest.approx(0.005)  # capped
    assert step(ctl, 0.5)["entropy_coef"] == pytest.approx(0.003)
    for _ in range(4):
        step(ctl, 0.5)
    assert ctl.coef == 0.0
    assert ctl.context() == {"entropy_coef": 0.0}
    assert ctl.metrics() == {"entropy_coef": 0.0, "target_entropy": 0.3}
    other = AdaptiveEntropyCoef(target_entropy=0.3, step=0.002, coef_min=0.0, coef_max=0.005, init=0.001)
    other.load_state_dict(ctl.state_dict())
    assert step(other, 0.2) == step(ctl, 0.2)
    with pytest.raises(ValueError, match="init=0.5"):
        AdaptiveEntropyCoef(init=0.5)
    with pytest.raises(ValueError, match="step=-1"):
        AdaptiveEntropyCoef(step=-1.0)


def test_step_controller_merges_controllers_and_global_stats() -> None:
    cfg = StareConfig(selection_scope="global", weight_control="paper", weight_alpha=0.05)
    batch = random_batch(4, 4, 8)
    h = global_token_mean(batch)
    sc = StepController("stare", cfg, extra_controllers={"adaptive_entropy": AdaptiveEntropyCoef(target_entropy=h + 1)})
    assert set(sc.controllers) == {"gate", "schedule", "adaptive_entropy"} and sc.needs_entropy
    gen = torch.Generator().manual_seed(0)
    ctx = sc.begin_step([batch], step=0)
    assert ctx.get("gate_on") is (h < cfg.target_entropy)
    expected_w = 1.1 + (0.05 if h < cfg.target_entropy else -0.05)
    assert ctx.get("reweight_w") == pytest.approx(max(expected_w, 1.0))
    assert ctx.get("entropy_coef") == pytest.approx(0.0015)  # below its target: one step up
    assert ctx.get("surprisal_threshold_pos") is not None and ctx.get("omega_max") is None
    assert sc.metrics()["batch_entropy"] == h and set(sc.metrics()) >= {"gate_on", "reweight_w", "entropy_coef"}
    assert sc.context([batch], generator=gen).generator is gen
    with pytest.raises(ValueError, match="clashes"):
        StepController("stare", cfg, extra_controllers={"gate": StareGate()})
    with pytest.raises(ValueError, match="need batch.entropy"):
        sc.begin_step([dataclasses.replace(batch, entropy=None)], step=1)
    with pytest.raises(TypeError):
        ctx.stats["gate_on"] = False  # frozen


def test_step_controller_save_load_is_exact(tmp_path) -> None:
    cfg = StareConfig(weight_control="paper")
    batches = [random_batch(s, 4, 8) for s in range(5)]
    straight = StepController("stare", cfg)
    for i, b in enumerate(batches):
        straight.begin_step(b, i)
    first = StepController("stare", cfg)
    for i, b in enumerate(batches[:3]):
        first.begin_step(b, i)
    path = first.save(tmp_path)
    assert path.name == CONTROLLER_FILE and sorted(p.name for p in tmp_path.iterdir()) == [CONTROLLER_FILE]
    assert read_json(path)["controllers"] == first.state_dict()
    resumed = StepController("stare", cfg)
    assert resumed.load(tmp_path) and not StepController("stare", cfg).load(tmp_path / "none")
    for i, b in enumerate(batches[3:], start=3):
        resumed.begin_step(b, i)
    assert resumed.state_dict() == straight.state_dict()
    assert StepController("vanilla").state_dict() == {} and not StepController("vanilla").active


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


def _split_rows(batch: TokenBatch, parts: int) -> list[TokenBatch]:
    fields = ("log_prob", "old_log_prob", "advantages", "mask", "entropy")
    chunks = [torch.chunk(getattr(batch, f).detach(), parts) for f in fields]
    return [TokenBatch(*c) for c in zip(*chunks, strict=True)]


def test_global_token_mean_over_micro_batches() -> None:
    whole = random_batch(3, 6, 10)
    expected = float((whole.entropy * whole.mask).sum() / whole.mask.sum())
    assert global_token_mean(_split_rows(whole, 3)) == pytest.approx(expected, rel=1e-6)
    empty = TokenBatch(
        torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2)
    )
    assert global_token_mean(empty) == 0.0
    assert math.isfinite(global_token_mean([empty, whole]))


def test_global_stats_high_entropy_and_unknown_methods() -> None:
    whole = random_batch(5, 8, 12)
    micro = _split_rows(whole, 4)
    stats = StepController("high_entropy").global_stats(micro)
    ref = compute_loss("high_entropy", whole)
    glob = torch.cat(
        [compute_loss("high_entropy", mb, context=LossContext(stats=stats)).masks["high_entropy"] for mb in micro]
    )
    assert torch.equal(glob, ref.masks["high_entropy"])
    assert StepController("vanilla").global_stats(micro) == {}
    with pytest.raises(ValueError, match="known methods"):
        StepController("no_such_method")
    glob_cfg = make_config("high_entropy", selection_scope="global")
    assert StepController("high_entropy", glob_cfg).begin_step(micro, 0).stats == stats  # enabled by the scope
    assert StepController("high_entropy").begin_step(micro, 0).stats == {}  # batch scope: nothing
