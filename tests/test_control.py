"""Controllers: STARE gate, adaptive W/M schedule, adaptive entropy coefficient (hand-derived trajectories,
clipping, exact resume through state_dict), make_context, global_token_mean and global_stats."""

from __future__ import annotations

import json
import math

import pytest
import torch

from _core_batches import random_batch
from stare_rl import LossContext, TokenBatch, compute_loss
from stare_rl.control import (
    AdaptiveEntropyCoef,
    StareGate,
    StareWeightSchedule,
    global_stats,
    global_token_mean,
    make_context,
)
from stare_rl.methods.stare import StareConfig


def test_gate_is_on_strictly_below_target() -> None:
    gate = StareGate(target_entropy=0.3)
    assert gate.gate_on is None and make_context(gate=gate).gate_on is None  # None = on for the methods
    assert gate.update(0.21) is True
    assert gate.update(0.3) is False  # at the target: off (1[H < H_tgt])
    assert gate.update(0.37) is False
    assert gate.update(0.0) is True and gate.last_entropy == 0.0
    with pytest.raises(ValueError, match="batch_entropy=nan"):
        gate.update(float("nan"))
    with pytest.raises(ValueError, match="target_entropy=-1"):
        StareGate(-1.0)


def test_gate_state_round_trips_through_json() -> None:
    gate = StareGate(0.4)
    gate.update(0.5)
    restored = StareGate()
    restored.load_state_dict(json.loads(json.dumps(gate.state_dict())))
    assert restored.state_dict() == gate.state_dict() and restored.gate_on is False


def test_schedule_hand_derived_trajectory_and_bounds() -> None:
    sch = StareWeightSchedule(
        reweight_w=1.1, reweight_m=0.9, target_entropy=0.3, alpha=0.2, w_max=1.5, m_min=0.5
    )
    # below target: W up / M down by alpha, clipped at w_max / m_min
    assert sch.update(0.1) == pytest.approx((1.3, 0.7))
    assert sch.update(0.1) == pytest.approx((1.5, 0.5))
    assert sch.update(0.1) == pytest.approx((1.5, 0.5))
    assert sch.update(0.3) == pytest.approx((1.5, 0.5))  # at the target: no move
    # above target: relax towards no re-weighting, clipped at W = 1 and M = 1
    assert sch.update(0.9) == pytest.approx((1.3, 0.7))
    for _ in range(5):
        sch.update(0.9)
    assert (sch.reweight_w, sch.reweight_m) == (1.0, 1.0)
    assert make_context(schedule=sch).reweight_w == 1.0


def test_schedule_resume_continues_exactly() -> None:
    entropies = [0.25, 0.1, 0.4, 0.29, 0.31, 0.05, 0.05, 0.6, 0.2, 0.2]
    straight = StareWeightSchedule.from_config(StareConfig(), alpha=0.013)
    for h in entropies:
        straight.update(h)
    first = StareWeightSchedule.from_config(StareConfig(), alpha=0.013)
    for h in entropies[:4]:
        first.update(h)
    resumed = StareWeightSchedule()  # different defaults: everything must come from the state
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
    for h in entropies[4:]:
        resumed.update(h)
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
    assert ctl.update(0.1) == pytest.approx(0.003)
    assert ctl.update(0.1) == pytest.approx(0.005)
    assert ctl.update(0.1) == pytest.approx(0.005)  # capped
    assert ctl.update(0.5) == pytest.approx(0.003)
    for _ in range(4):
        ctl.update(0.5)
    assert ctl.coef == 0.0
    assert make_context(entropy_coef=ctl).entropy_coef == 0.0
    other = AdaptiveEntropyCoef()
    other.load_state_dict(ctl.state_dict())
    assert other.update(0.2) == ctl.update(0.2)
    with pytest.raises(ValueError, match="init=0.5"):
        AdaptiveEntropyCoef(init=0.5)
    with pytest.raises(ValueError, match="step=-1"):
        AdaptiveEntropyCoef(step=-1.0)


def test_make_context_merges_controllers_and_global_stats() -> None:
    gate, sch = StareGate(0.3), StareWeightSchedule(alpha=0.05)
    gate.update(0.2)
    sch.update(0.2)
    gen = torch.Generator().manual_seed(0)
    ctx = make_context(gate=gate, schedule=sch, generator=gen, surprisal_threshold_pos=1.5)
    assert (ctx.gate_on, ctx.surprisal_threshold_pos, ctx.generator) == (True, 1.5, gen)
    assert ctx.omega_max is None and ctx.entropy_coef is None
    assert ctx.reweight_w == pytest.approx(1.15) and ctx.reweight_m == pytest.approx(0.85)
    with pytest.raises(ValueError, match="surprisal_threshold"):
        make_context(surprisal_thresold_pos=1.0)


def test_controllers_drive_the_stare_loss() -> None:
    batch = random_batch(9, 4, 8)
    cfg = StareConfig(variant="C2", top_p_ratio=0.5)
    gate = StareGate(cfg.target_entropy)
    gate.update(0.9)  # entropy above target: gate off -> all weights 1
    out = compute_loss("stare", batch, cfg, context=make_context(gate=gate))
    assert torch.equal(out.token_weights, torch.ones_like(out.token_weights))
    gate.update(0.1)
    out = compute_loss("stare", batch, cfg, context=make_context(gate=gate))
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
    stats = global_stats("high_entropy", micro)
    ref = compute_loss("high_entropy", whole)
    glob = torch.cat(
        [compute_loss("high_entropy", mb, context=LossContext(**stats)).masks["high_entropy"] for mb in micro]
    )
    assert torch.equal(glob, ref.masks["high_entropy"])
    assert global_stats("vanilla", micro) == {}
    with pytest.raises(ValueError, match="known methods"):
        global_stats("no_such_method", micro)
