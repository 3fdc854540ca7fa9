"""Entrocraft: the band and Algorithm 1's indicator (hand-derived, annealing none / linear / cosine), the advantage
switch RAFT++ / NSR / GRPO and its loss and gradient (hand-derived on small tensors), reduces to vanilla inside
the band, the ±1 mapping of a 0/1 reward (NSR is not a no-op; the agreeing groups are pushed too), validation, state round trip, and a closed loop
in which the band holds a toy entropy."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from _core_batches import random_batch
from stare_rl import LossContext, TokenBatch, aggregate, compute_loss, get_method
from stare_rl.control.base import StepObservation
from stare_rl.core.advantages import broadcast_to_tokens, compute_advantages
from stare_rl.core.surrogate import SurrogateConfig
from stare_rl.methods.entrocraft import EntrocraftBand, EntrocraftConfig, anneal_progress, switched_advantages


def _band(**kw) -> EntrocraftBand:
    return EntrocraftBand(EntrocraftConfig(**kw))


def _ctx(mode: int | None) -> LossContext:
    return LossContext(stats={} if mode is None else {"entrocraft_mode": mode})


# ----------------------------------------------------------------------------- the band and the indicator m


def test_indicator_hand_derived_constant_band() -> None:
    # target 0.5, band 0.1: bounds [0.45, 0.55]; m = 1[H > 0.55] - 1[H < 0.45]
    b = _band(target_entropy=0.5, band=0.1)
    assert b.context() == {"entrocraft_mode": 0}  # before the first update: GRPO
    for step, (h, m) in enumerate([(0.6, 1), (0.55, 0), (0.5, 0), (0.45, 0), (0.449, -1), (0.0, -1), (0.56, 1)]):
        b.update(StepObservation(entropy=h, step=step))
        assert b.mode == m, (h, m)
        assert (b.lower, b.centre, b.upper) == pytest.approx((0.45, 0.5, 0.55))


def test_annealed_bounds_hand_derived() -> None:
    # centre_t = 0.6 * (1 + (0.5 - 1) * p_t) over 10 steps; linear p = t/10, cosine p = (1 - cos(pi t/10)) / 2
    assert anneal_progress("none", 5, 10) == 0.0
    assert anneal_progress("linear", 5, 10) == 0.5 and anneal_progress("linear", 20, 10) == 1.0  # then held
    assert anneal_progress("cosine", 5, 10) == pytest.approx(0.5)  # (1 - cos(pi/2)) / 2
    assert anneal_progress("cosine", 2, 10) == pytest.approx((1 - math.cos(math.pi / 5)) / 2)  # 0.0954915
    lin = _band(target_entropy=0.6, band=0.2, anneal="linear", anneal_end_fraction=0.5, anneal_steps=10)
    lin.update(StepObservation(entropy=0.45, step=5))  # centre 0.6 * 0.75 = 0.45 -> bounds [0.36, 0.54]
    assert (lin.lower, lin.centre, lin.upper) == pytest.approx((0.36, 0.45, 0.54)) and lin.mode == 0
    lin.update(StepObservation(entropy=0.35, step=10))  # centre 0.3 -> [0.24, 0.36]: 0.35 is inside
    assert lin.centre == pytest.approx(0.3) and lin.mode == 0
    lin.update(StepObservation(entropy=0.37, step=30))  # held at 0.3 after anneal_steps: above 0.36
    assert lin.centre == pytest.approx(0.3) and lin.mode == 1
    cos = _band(target_entropy=0.6, band=0.2, anneal="cosine", anneal_end_fraction=0.5, anneal_steps=10)
    cos.update(StepObservation(entropy=0.5, step=2))  # centre 0.6 * (1 - 0.5 * 0.0954915) = 0.5713525
    assert cos.centre == pytest.approx(0.5713525, abs=1e-7) and cos.mode == 0


def test_relative_target_and_annealing_compose() -> None:
    # '0.5x' at start entropy 0.8 -> centre 0.4 at step 0, linear to 0.5 * 0.4 = 0.2 at step 4
    b = _band(target_entropy="0.5x", band=0.1, anneal="linear", anneal_end_fraction=0.5, anneal_steps=4)
    b.update(StepObservation(entropy=0.8, step=0, start_entropy=0.8))
    assert b.centre == pytest.approx(0.4) and b.mode == 1  # 0.8 > 0.44
    b.update(StepObservation(entropy=0.2, step=4, start_entropy=0.8))
    assert b.centre == pytest.approx(0.2) and b.metrics()["target_entropy"] == pytest.approx(0.4)


def test_state_round_trip_is_exact() -> None:
    b = _band(target_entropy="0.5x", anneal="linear", anneal_steps=10)
    b.update(StepObservation(entropy=0.3, step=0))
    b.update(StepObservation(entropy=0.1, step=1))
    other = _band(target_entropy="0.5x", anneal="linear", anneal_steps=10)
    other.load_state_dict(json.loads(json.dumps(b.state_dict())))
    assert other.state_dict() == b.state_dict() and other.context() == b.context()
    for step, h in enumerate((0.2, 0.05, 0.16), start=2):
        b.update(StepObservation(entropy=h, step=step))
        other.update(StepObservation(entropy=h, step=step))
        assert other.metrics() == b.metrics()


# ----------------------------------------------------------------------------- the switch and the loss


def test_switched_advantages_hand_derived() -> None:
    # rows: rewards 1, 0, 0 (an all-wrong group: A = 0), 1 (an all-correct group: A = 0), 1; A = +1.2, -0.8, 0, 0,
    # +0.3; the last token of row 1 is padding
    adv = torch.tensor([[1.2, 1.2], [-0.8, -0.8], [0.0, 0.0], [0.0, 0.0], [0.3, 0.3]])
    rewards = torch.tensor([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    # RAFT++ = max(2R - 1, 0): every correct response, the all-correct group's included
    raft = torch.tensor([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    # NSR = min(2R - 1, 0): every wrong response, the all-wrong group's included (padding 0)
    nsr = torch.tensor([[0.0, 0.0], [-1.0, 0.0], [-1.0, -1.0], [0.0, 0.0], [0.0, 0.0]])
    grpo = torch.tensor([[1.2, 1.2], [-0.8, 0.0], [0.0, 0.0], [0.0, 0.0], [0.3, 0.3]])  # unchanged (padding 0)
    assert torch.equal(switched_advantages(adv, rewards, mask, 1), raft)
    assert torch.equal(switched_advantages(adv, rewards, mask, -1), nsr)
    assert torch.equal(switched_advantages(adv, rewards, mask, 0), grpo)


def test_the_reference_plus_minus_one_reward_with_midpoint_zero() -> None:
    # the reference's math reward is -1/+1 and its estimators take max(R, 0) / min(R, 0): midpoint 0 gives the same
    r = torch.tensor([[1.0], [-1.0], [-1.0], [1.0]])
    mask, adv = torch.ones(4, 1), torch.zeros(4, 1)
    assert torch.equal(switched_advantages(adv, r, mask, 1, midpoint=0.0), torch.clamp(r, min=0.0))
    assert torch.equal(switched_advantages(adv, r, mask, -1, midpoint=0.0), torch.clamp(r, max=0.0))
    # a response exactly at the midpoint is in neither set
    half = torch.full((1, 1), 0.5)
    assert switched_advantages(torch.zeros(1, 1), half, torch.ones(1, 1), 1).item() == 0.0
    assert switched_advantages(torch.zeros(1, 1), half, torch.ones(1, 1), -1).item() == 0.0


def test_a_zero_one_reward_maps_to_plus_minus_one_and_nsr_is_not_a_no_op() -> None:
    # one group of 4, rewards 0/1 = [1, 0, 0, 1]: mean 0.5, unbiased std 0.5774 -> GRPO A = +-0.8660
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0])
    mask = torch.ones(4, 3)
    adv = broadcast_to_tokens(compute_advantages("grpo", rewards, group_size=4), mask)  # (4, 3)
    assert adv[0, 0].item() == pytest.approx(0.5 / (0.5773503 + 1e-6), rel=1e-5)
    # the reference's NSR on the raw 0/1 reward: min(R, 0) = 0 everywhere, a no-op; here 2R - 1 = [+1, -1, -1, +1]
    assert torch.equal(torch.minimum(rewards, torch.zeros(4)), torch.zeros(4))
    r = broadcast_to_tokens(rewards, mask)
    nsr = switched_advantages(adv, r, mask, -1)[:, 0]
    raft = switched_advantages(adv, r, mask, 1)[:, 0]
    assert torch.equal(nsr, torch.minimum(2 * rewards - 1, torch.zeros(4)))  # [0, -1, -1, 0]
    assert torch.equal(raft, torch.maximum(2 * rewards - 1, torch.zeros(4)))  # [1, 0, 0, 1]


def _two_token_batch() -> TokenBatch:
    # on-policy (r = 1): the clipped loss is -A' per token and its gradient w.r.t. log pi is -A'
    log_prob = torch.log(torch.tensor([[0.5, 0.25], [0.5, 0.125]])).requires_grad_(True)
    adv = torch.tensor([[2.0, 2.0], [-0.5, -0.5]])
    rewards = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    return TokenBatch(log_prob, log_prob.detach().clone(), adv, torch.ones(2, 2), rewards=rewards)


@pytest.mark.parametrize(
    ("mode", "token_loss", "kept"),
    [
        (1, [[-1.0, -1.0], [0.0, 0.0]], 0.5),  # RAFT++: A' = [1, 0] per row -> loss -A' = [-1, 0]
        (-1, [[0.0, 0.0], [1.0, 1.0]], 0.5),  # NSR: A' = [0, -1] -> loss [0, +1]
        (0, [[-2.0, -2.0], [0.5, 0.5]], 1.0),  # GRPO: A' = A
        (None, [[-2.0, -2.0], [0.5, 0.5]], 1.0),  # no context: GRPO
    ],
)
def test_loss_and_gradient_hand_derived(mode: int | None, token_loss: list, kept: float) -> None:
    batch = _two_token_batch()
    out = compute_loss("entrocraft", batch, EntrocraftConfig(), SurrogateConfig(), _ctx(mode))
    assert torch.allclose(out.token_loss, torch.tensor(token_loss))
    assert out.metrics["kept_frac"].item() == kept and out.metrics["entrocraft_mode"].item() == (mode or 0)
    loss = aggregate(out.token_loss, batch.mask, "token-mean")  # mean over the 4 valid tokens
    (grad,) = torch.autograd.grad(loss, batch.log_prob)
    # d/dlogpi of -A' r / 4 at r = 1 is -A' / 4
    assert torch.allclose(grad, torch.tensor(token_loss) / 4)
    assert torch.equal(out.token_weights, torch.ones(2, 2))


def test_inside_the_band_it_is_exactly_vanilla() -> None:
    for seed in range(3):
        batch = random_batch(seed)
        batch = dataclasses.replace(batch, rewards=(batch.advantages > 0).to(batch.log_prob.dtype))
        a = compute_loss("entrocraft", batch, EntrocraftConfig(), SurrogateConfig(), _ctx(0))
        b = compute_loss("vanilla", batch, None, SurrogateConfig())
        assert torch.equal(a.token_loss, b.token_loss)


def test_without_rewards_the_loss_names_the_missing_field() -> None:
    batch = dataclasses.replace(_two_token_batch(), rewards=None)
    with pytest.raises(ValueError, match="method 'entrocraft' needs batch.rewards"):
        compute_loss("entrocraft", batch, None, None, _ctx(-1))


def test_bad_mode_and_config_name_the_field() -> None:
    with pytest.raises(ValueError, match="entrocraft_mode=2 must be -1, 0 or 1"):
        compute_loss("entrocraft", _two_token_batch(), None, None, _ctx(2))
    for kwargs, text in [
        ({"band": 1.0}, "band=1.0 must be in [0, 1)"),
        ({"anneal": "exp"}, "anneal='exp' is not one of ['none', 'linear', 'cosine']"),
        ({"anneal": "linear"}, "anneal='linear' needs anneal_steps > 0"),
        ({"anneal_steps": -1}, "anneal_steps=-1 must be an integer >= 0"),
        ({"anneal_end_fraction": 0.0}, "anneal_end_fraction=0.0 must be a finite number > 0"),
        ({"reward_midpoint": float("nan")}, "reward_midpoint=nan must be a finite number"),
        ({"target_entropy": "0.5"}, None),  # a numeric string is an absolute target
    ]:
        if text is None:
            assert EntrocraftConfig(**kwargs).target_entropy == 0.5
            continue
        with pytest.raises(ValueError) as err:
            EntrocraftConfig(**kwargs)
        assert text in str(err.value)


def test_traits_declared_at_registration() -> None:
    spec = get_method("entrocraft")
    ctrls = spec.make_controllers(EntrocraftConfig())
    assert list(ctrls) == ["entrocraft_band"] and not getattr(ctrls["entrocraft_band"], "memoryless", False)
    assert not spec.needs_entropy and spec.global_stats is None
    assert spec.needs_rewards  # RAFT++ / NSR read the raw reward, not the group advantage
    assert [m.key for m in spec.metrics] == ["control/entrocraft_mode"]


def test_closed_loop_band_holds_a_toy_entropy() -> None:
    """A toy plant where RAFT++ steps lower the entropy by 0.02, NSR steps raise it by 0.02 and GRPO steps drift it
    down by 0.005 (collapse): from 0.8 the band [0.36, 0.44] is entered and never left by more than one step."""
    b = _band(target_entropy=0.4, band=0.1)
    h, hs = 0.8, []
    for t in range(200):
        b.update(StepObservation(entropy=h, step=t))
        h += {1: -0.02, -1: 0.02, 0: -0.005}[b.mode]
        hs.append(h)
    after = hs[hs.index(next(x for x in hs if x <= 0.44)):]
    assert all(0.36 - 0.02 - 1e-9 <= x <= 0.44 + 1e-9 for x in after)
