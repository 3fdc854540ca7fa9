"""The shared controllers (control/base.py, control/step.py): the adaptive entropy coefficient (hand-derived
trajectory, bounds, exact resume), global_token_mean, and the StepController (global statistics, begin_step,
save / load). STARE's own gate and W/M schedule: tests/methods/stare/test_gate.py."""

from __future__ import annotations

import dataclasses
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
from stare_rl.methods.stare.gate import StareGate


def step(ctrl: Controller, h: float) -> dict:
    """One update from batch entropy ``h``; returns the controller's context."""
    ctrl.update(StepObservation(entropy=h, step=0))
    return ctrl.context()


def test_adaptive_entropy_coef_trajectory_bounds_and_resume() -> None:
    ctl = AdaptiveEntropyCoef(target_entropy=0.3, bonus_step=0.002, bonus_coef_min=0.0, bonus_coef_max=0.005,
                              bonus_coef=0.001)
    assert step(ctl, 0.1)["entropy_coef"] == pytest.approx(0.003)
    assert step(ctl, 0.1)["entropy_coef"] == pytest.approx(0.005)
    assert step(ctl, 0.1)["entropy_coef"] == pytest.approx(0.005)  # capped
    assert step(ctl, 0.5)["entropy_coef"] == pytest.approx(0.003)
    for _ in range(4):
        step(ctl, 0.5)
    assert ctl.entropy_coef == 0.0
    assert ctl.context() == {"entropy_coef": 0.0}
    assert ctl.metrics() == {"entropy_coef": 0.0, "target_entropy": 0.3}
    other = AdaptiveEntropyCoef(target_entropy=0.3, bonus_step=0.002, bonus_coef_min=0.0, bonus_coef_max=0.005,
                              bonus_coef=0.001)
    other.load_state_dict(ctl.state_dict())
    assert step(other, 0.2) == step(ctl, 0.2)
    with pytest.raises(ValueError, match="bonus_coef=0.5"):
        AdaptiveEntropyCoef(bonus_coef=0.5)
    with pytest.raises(ValueError, match="bonus_step=-1"):
        AdaptiveEntropyCoef(bonus_step=-1.0)


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
