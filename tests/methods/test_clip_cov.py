"""Clip-Cov: hand-derived covariance window, random-subset size and determinism, reduces-to-vanilla, properties."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from _core_batches import EDGE_CASES, edge_case_batch, random_batch, with_
from stare_rl import AGG_MODES, LossContext, SurrogateConfig, TokenBatch, aggregate, compute_loss
from stare_rl.methods.clip_cov import ClipCovConfig, token_covariance

LP = [-0.1, -0.5, -3.0, -0.2, -2.0, -4.0]
ADV = [2.0, 2.0, 2.0, -2.0, -2.0, -2.0]


def _hand_batch(old_shift: list[float] | None = None) -> TokenBatch:
    lp = torch.tensor([LP], requires_grad=True)
    old = torch.tensor([LP]) - torch.tensor([old_shift or [0.0] * 6])
    return TokenBatch(log_prob=lp, old_log_prob=old, advantages=torch.tensor([ADV]), mask=torch.ones(1, 6))


def _grad(batch: TokenBatch, out_loss: torch.Tensor) -> torch.Tensor:
    return torch.autograd.grad(out_loss, batch.log_prob)[0]


def _ctx(seed: int = 0) -> LossContext:
    return LossContext(generator=torch.Generator().manual_seed(seed))


def test_covariance_matches_hand_derivation() -> None:
    batch = _hand_batch()
    mean_a, mean_lp = sum(ADV) / 6, sum(LP) / 6
    expected = [(a - mean_a) * (lp - mean_lp) for a, lp in zip(ADV, LP, strict=True)]
    got = token_covariance(batch.log_prob, batch.advantages, batch.mask)[0].tolist()
    assert got == pytest.approx(expected, rel=1e-6)
    # By hand: cov = [3.067, 2.267, -2.733, -2.867, 0.733, 4.733] -> window (1, 5) holds tokens 0, 1, 5.
    assert [1.0 < c < 5.0 for c in expected] == [True, True, False, False, False, True]


def test_selects_every_candidate_when_k_exceeds_them() -> None:
    batch = _hand_batch()
    out = compute_loss("clip_cov", batch, ClipCovConfig(clip_cov_ratio=1.0), context=_ctx())
    assert out.masks["clip_cov_selected"][0].tolist() == [True, True, False, False, False, True]
    assert out.token_weights[0].tolist() == [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    van = compute_loss("vanilla", _hand_batch())
    assert torch.equal(out.token_loss, van.token_loss * out.token_weights)
    assert float(out.metrics["clip_cov_frac"]) == pytest.approx(3 / 6)
    assert float(out.metrics["clip_cov_candidates"]) == 3
    # Detached tokens get exactly zero gradient; the others keep vanilla's (token-mean over 6 tokens).
    g = _grad(batch, aggregate(out.token_loss, batch.mask))
    assert g[0, [0, 1, 5]].abs().max() == 0
    # on-policy, r = 1: d(-A r)/d log_prob = -A r, / 6 tokens
    assert g[0, [2, 3, 4]].tolist() == pytest.approx([-a / 6 for a in (ADV[2], ADV[3], ADV[4])], rel=1e-6)


def test_ratio_clipped_tokens_are_not_candidates() -> None:
    # token 0 (A > 0, cov in window) has r = e^0.5 = 1.65 > 1 + 0.28: the clip already stops its gradient.
    batch = _hand_batch(old_shift=[0.5, 0.0, 0.0, 0.0, 0.0, 0.0])
    out = compute_loss("clip_cov", batch, ClipCovConfig(clip_cov_ratio=1.0), context=_ctx())
    assert out.masks["clip_cov_selected"][0].tolist() == [False, True, False, False, False, True]


def test_k_is_floor_of_ratio_times_valid_tokens_at_least_one() -> None:
    # 200 valid tokens all inside the window: k = max(1, floor(r * 200)).
    g = torch.Generator().manual_seed(3)
    lp = -torch.rand(2, 100, generator=g) * 3
    adv = torch.where(lp > lp.mean(), 1.0, -1.0) * 4.0  # (A - mean A)(lp - mean lp) > 0 for every token
    mask = torch.ones(2, 100)
    batch = TokenBatch(log_prob=lp, old_log_prob=lp.clone(), advantages=adv, mask=mask)
    cov = token_covariance(lp, adv, mask)
    lb, ub = float(cov.min()) - 1e-3, float(cov.max()) + 1e-3
    for ratio, k in [(0.0002, 1), (0.01, 2), (0.0749, 14), (0.5, 100), (1.0, 200)]:
        out = compute_loss("clip_cov", batch, ClipCovConfig(ratio, lb, ub), context=_ctx())
        assert int(out.masks["clip_cov_selected"].sum()) == k == max(1, math.floor(ratio * 200))


def test_random_choice_follows_the_generator() -> None:
    batch = _hand_batch()
    cfg = ClipCovConfig(clip_cov_ratio=0.2)  # k = floor(0.2 * 6) = 1 of the 3 candidates
    picks = []
    for seed in range(300):
        sel = compute_loss("clip_cov", batch, cfg, context=_ctx(seed)).masks["clip_cov_selected"][0]
        assert int(sel.sum()) == 1
        picks.append(int(sel.nonzero()))
    again = [int(compute_loss("clip_cov", batch, cfg, context=_ctx(s)).masks["clip_cov_selected"][0].nonzero())
             for s in range(20)]
    assert again == picks[:20]  # same generator seed -> same choice
    counts = {i: picks.count(i) for i in (0, 1, 5)}
    assert set(picks) == {0, 1, 5}
    assert all(60 < c < 140 for c in counts.values()), counts  # uniform over candidates (expected 100 each)


def test_ratio_zero_reduces_to_vanilla() -> None:
    for seed in range(5):
        batch = random_batch(seed, 4, 16, token_adv=True)
        for mode in AGG_MODES:
            sur = SurrogateConfig(loss_agg_mode=mode)
            out = compute_loss("clip_cov", batch, ClipCovConfig(clip_cov_ratio=0.0, clip_cov_lb=-9, clip_cov_ub=9),
                               sur, _ctx())
            van = compute_loss("vanilla", batch, surrogate=sur)
            assert torch.equal(out.token_loss, van.token_loss)
            l1, l2 = aggregate(out.token_loss, batch.mask, mode), aggregate(van.token_loss, batch.mask, mode)
            assert torch.equal(_grad(batch, l1), _grad(batch, l2))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"clip_cov_ratio": -0.1}, "clip_cov_ratio=-0.1"),
        ({"clip_cov_ratio": 1.5}, "clip_cov_ratio=1.5"),
        ({"clip_cov_lb": 5.0, "clip_cov_ub": 5.0}, "clip_cov_lb=5.0"),
        ({"clip_cov_lb": 6.0}, "clip_cov_ub=5.0"),
    ],
)
def test_config_validation_names_field_and_value(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ClipCovConfig(**kwargs)


def test_defaults_are_the_papers() -> None:
    cfg = ClipCovConfig()
    assert (cfg.clip_cov_ratio, cfg.clip_cov_lb, cfg.clip_cov_ub) == (0.0002, 1.0, 5.0)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    b=st.integers(1, 4),
    t=st.integers(1, 12),
    mask_p=st.sampled_from([0.0, 0.3, 0.9, 1.0]),
    ratio=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    log2w=st.integers(-3, 3),
    mode=st.sampled_from(AGG_MODES),
)
def test_properties(seed: int, b: int, t: int, mask_p: float, ratio: float, log2w: int, mode: str) -> None:
    batch = random_batch(seed, b, t, mask_p=mask_p, token_adv=True)
    cfg = ClipCovConfig(clip_cov_ratio=ratio, clip_cov_lb=-0.5, clip_cov_ub=0.5)
    out = compute_loss("clip_cov", batch, cfg, context=_ctx(seed))
    sel = out.masks["clip_cov_selected"]
    # weights in {0, 1}; only valid tokens are detached; at most max(1, floor(r N)) of them.
    assert set(out.token_weights.unique().tolist()) <= {0.0, 1.0}
    assert not bool((sel & ~batch.valid).any())
    assert int(sel.sum()) <= (max(1, math.floor(ratio * batch.n_valid)) if ratio > 0 and batch.n_valid else 0)
    loss = aggregate(out.token_loss, batch.mask, mode)
    grad = _grad(batch, loss)
    assert torch.isfinite(loss) and bool(torch.isfinite(grad).all())
    assert bool((grad[sel] == 0).all())
    # Scaling A by w = 2^k (exact in float) with the window scaled by w selects the same tokens and scales
    # the loss by w: the covariance is linear in A.
    w = 2.0**log2w
    scaled = with_(batch, advantages=batch.advantages * w)
    cfg_w = ClipCovConfig(clip_cov_ratio=ratio, clip_cov_lb=-0.5 * w, clip_cov_ub=0.5 * w)
    out_w = compute_loss("clip_cov", scaled, cfg_w, context=_ctx(seed))
    assert torch.equal(out_w.masks["clip_cov_selected"], sel)
    torch.testing.assert_close(aggregate(out_w.token_loss, batch.mask, mode), loss * w)


@pytest.mark.parametrize("mode", AGG_MODES)
@pytest.mark.parametrize("case", EDGE_CASES)
def test_edge_cases_are_finite(case: str, mode: str) -> None:
    batch = edge_case_batch(case, seed=7)
    out = compute_loss("clip_cov", batch, ClipCovConfig(clip_cov_ratio=1.0, clip_cov_lb=-9, clip_cov_ub=9),
                       context=_ctx())
    loss = aggregate(out.token_loss, batch.mask, mode)
    grad = _grad(batch, loss)
    assert torch.isfinite(loss) and bool(torch.isfinite(grad).all())
    if case in ("no_valid", "zero_adv"):
        assert float(loss.detach()) == 0.0 and float(grad.abs().max()) == 0.0
