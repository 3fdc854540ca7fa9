"""KL-Cov: hand-derived covariance selection and penalty, floor rounding, properties, edge cases, validation,
global means and threshold over micro-batches."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from _core_batches import random_batch, with_
from stare_rl import LossContext, TokenBatch, aggregate, compute_loss
from stare_rl.control.step import StepController
from stare_rl.methods.kl_cov import KLCovConfig, kl_cov_global_stats

LP = [-0.1, -0.5, -3.0, -0.2, -2.0, -4.0]
ADV = [2.0, 2.0, 2.0, -2.0, -2.0, -2.0]
SHIFT = [0.1, -0.2, 0.3, 0.05, -0.1, 0.2]  # log_prob - old_log_prob


def _hand_batch() -> TokenBatch:
    lp = torch.tensor([LP], requires_grad=True)
    return TokenBatch(lp, torch.tensor([LP]) - torch.tensor([SHIFT]), torch.tensor([ADV]), torch.ones(1, 6))


def test_hand_derived_selection_loss_and_grad() -> None:
    # mean A = 0, mean log_prob = -1.633; cov = A (lp - mean) = [3.07, 2.27, -2.73, -2.87, 0.73, 4.73]:
    # ratio 0.34 of 6 -> floor(2.04) = 2 tokens, the signed largest: token 5 (A<0, lp very low) and token 0.
    cfg = KLCovConfig(kl_cov_ratio=0.34, ppo_kl_coef=0.5)
    batch = _hand_batch()
    mean_lp = sum(LP) / 6
    cov = [a * (lp - mean_lp) for a, lp in zip(ADV, LP, strict=True)]
    top2 = sorted(range(6), key=lambda i: -cov[i])[:2]
    assert sorted(top2) == [0, 5]
    out = compute_loss("kl_cov", batch, cfg)
    assert out.masks["kl_selected"].tolist() == [[i in top2 for i in range(6)]]
    loss = aggregate(out.token_loss, batch.mask)
    shift, adv = torch.tensor([SHIFT]), torch.tensor([ADV])
    ratio = torch.exp(shift)
    sel = out.masks["kl_selected"].float()
    expected = (
        -adv * ratio + 0.5 * shift.abs() * sel
    ).sum() / 6  # unclipped -A r, plus beta |log r| on top-k
    assert float(loss) == pytest.approx(float(expected), abs=1e-6)
    (grad,) = torch.autograd.grad(loss, batch.log_prob)
    assert torch.allclose(grad, (-adv * ratio + 0.5 * torch.sign(shift) * sel) / 6, rtol=1e-6)
    assert torch.equal(out.token_weights, torch.ones(1, 6))


def test_floor_rounding_at_least_one() -> None:
    batch = random_batch(2, 4, 8, mask_p=1.0)  # 32 valid tokens
    for ratio, k in [(0.0002, 1), (0.1, 3), (0.5, 16), (1.0, 32)]:
        out = compute_loss("kl_cov", batch, KLCovConfig(kl_cov_ratio=ratio))
        assert int(out.metrics["kl_cov_k"]) == k == int(out.masks["kl_selected"].sum())


def test_defaults() -> None:
    cfg = KLCovConfig()
    assert (cfg.kl_cov_ratio, cfg.ppo_kl_coef, cfg.selection_scope) == (0.0002, 1.0, "batch")


batch_args = st.tuples(
    st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 12), st.sampled_from([0.0, 0.5, 0.9, 1.0])
)


@given(batch_args, st.floats(0.001, 1.0), st.floats(0.0, 2.0))
def test_properties(args, ratio: float, coef: float) -> None:
    seed, b, t, mask_p = args
    batch = random_batch(seed, b, t, mask_p=mask_p, token_adv=True)
    out = compute_loss("kl_cov", batch, KLCovConfig(kl_cov_ratio=ratio, ppo_kl_coef=coef))
    sel, valid = out.masks["kl_selected"], batch.valid
    n = int(valid.sum())
    assert bool((sel <= valid).all())
    assert int(sel.sum()) == (max(1, int(n * ratio)) if n else 0)
    assert torch.isfinite(out.token_loss).all() and bool((out.token_loss[~valid] == 0).all())
    # coefficient 0 reduces to the unclipped policy-gradient loss -A r
    plain = compute_loss("kl_cov", batch, KLCovConfig(kl_cov_ratio=ratio, ppo_kl_coef=0.0))
    r = torch.exp(batch.log_prob - batch.old_log_prob)
    assert torch.allclose(plain.token_loss, torch.where(valid, -batch.advantages * r, 0.0))


@given(batch_args, st.floats(0.05, 20.0))
def test_scaling_advantages_scales_the_policy_term(args, c: float) -> None:
    # the covariance ranking is scale-free in A, so with beta = 0 the loss scales exactly with A
    seed, b, t, mask_p = args
    batch = random_batch(seed, b, t, mask_p=mask_p, token_adv=True)
    cfg = KLCovConfig(kl_cov_ratio=0.2, ppo_kl_coef=0.0)
    out, out_c = (
        compute_loss("kl_cov", batch, cfg),
        compute_loss("kl_cov", with_(batch, advantages=batch.advantages * c), cfg),
    )
    assert torch.allclose(
        aggregate(out_c.token_loss, batch.mask),
        c * aggregate(out.token_loss, batch.mask),
        rtol=1e-5,
        atol=1e-6,
    )


def test_edge_cases() -> None:
    base = random_batch(4, 3, 5)
    empty = with_(base, mask=torch.zeros(3, 5), advantages=torch.zeros(3, 5))
    out = compute_loss("kl_cov", empty, KLCovConfig(kl_cov_ratio=0.5))
    loss = aggregate(out.token_loss, empty.mask)
    (grad,) = torch.autograd.grad(loss, empty.log_prob)
    assert (
        float(loss.detach()) == 0.0 and bool((grad == 0).all()) and not bool(out.masks["kl_selected"].any())
    )
    # a huge log-ratio on padding must not turn into inf * 0 = NaN
    lp = base.log_prob.detach().clone()
    lp[~base.valid] = 80.0
    out = compute_loss("kl_cov", with_(base, log_prob=lp), KLCovConfig(kl_cov_ratio=0.5))
    assert bool(torch.isfinite(out.token_loss).all())


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"kl_cov_ratio": 0.0}, "kl_cov_ratio=0.0"),
        ({"kl_cov_ratio": 1.5}, "kl_cov_ratio=1.5"),
        ({"ppo_kl_coef": -1.0}, "ppo_kl_coef=-1.0"),
        ({"selection_scope": "node"}, "selection_scope='node'"),
    ],
)
def test_config_validation(kwargs: dict, text: str) -> None:
    with pytest.raises(ValueError) as err:
        KLCovConfig(**kwargs)
    assert text in str(err.value)


def test_partial_global_context_is_an_error() -> None:
    with pytest.raises(ValueError, match="kl_cov_adv_mean"):
        compute_loss("kl_cov", random_batch(0), context=LossContext(stats={"kl_cov_threshold": 0.1}))


def test_global_stats_make_micro_batches_match_the_whole_batch() -> None:
    cfg = KLCovConfig(kl_cov_ratio=0.05)
    whole = random_batch(8, 8, 16, token_adv=True)
    ref = compute_loss("kl_cov", whole, cfg)
    fields = ("log_prob", "old_log_prob", "advantages", "mask", "entropy")
    chunks = [torch.chunk(getattr(whole, f).detach(), 4) for f in fields]
    micro = [TokenBatch(lp.clone().requires_grad_(True), *rest) for lp, *rest in zip(*chunks, strict=True)]
    stats = StepController("kl_cov", cfg).global_stats(micro)
    valid = whole.valid
    assert stats == kl_cov_global_stats(whole.advantages[valid], whole.log_prob.detach()[valid], cfg)
    ctx = LossContext(stats=stats)
    glob = torch.cat([compute_loss("kl_cov", mb, cfg, context=ctx).masks["kl_selected"] for mb in micro])
    local = torch.cat([compute_loss("kl_cov", mb, cfg).masks["kl_selected"] for mb in micro])
    assert torch.equal(glob, ref.masks["kl_selected"])
    assert not torch.equal(local, ref.masks["kl_selected"])
