"""``stare_sensitivity`` (this project's extension of STARE): hand-derived case, properties, gate off == vanilla."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stare_rl.core.registry import compute_loss, make_config
from stare_rl.core.surrogate import SurrogateConfig
from stare_rl.core.types import LossContext, TokenBatch
from stare_rl.methods.stare.sensitivity import StareSensitivityConfig, sensitivity_selection


def _hand_batch() -> TokenBatch:
    """One row with A = +1 and one with A = -1; H = 1 everywhere; surprisals chosen by hand."""
    s = torch.tensor([[0.5, 1.5, 2.0, 4.0, 3.0], [0.2, 1.2, 2.0, 6.0, 0.9]])  # (2, 5) surprisal
    log_prob = -s
    adv = torch.tensor([[1.0] * 5, [-1.0] * 5])
    mask = torch.ones(2, 5)
    mask[1, 4] = 0  # padding: never selected, even though its statistics would qualify
    log_prob[1, 4] = -50.0
    return TokenBatch(log_prob, log_prob.clone(), adv, mask, torch.ones(2, 5))


def test_hand_derived_selection() -> None:
    batch = _hand_batch()
    # S = pi (H - s) with H = 1: row 0 -> e^-0.5*0.5 > 0, e^-1.5*(-0.5), e^-2*(-1), e^-4*(-3), e^-3*(-2)
    #   |A S| of the raising A>0 tokens: 0.1116 (s=1.5), 0.1353 (s=2), 0.0549 (s=4), 0.0996 (s=3)
    # P = 0.4 of 5 A>0 tokens -> k+ = 2: s=2 and s=1.5 (the rarest token, s=4, is NOT picked; STARE would pick it)
    cfg = StareSensitivityConfig(top_p_ratio=0.4, reweight_w=2.0, reweight_m=0.5)
    l_plus, l_minus, dh = sensitivity_selection(batch, cfg)
    assert l_plus[0].tolist() == [False, True, True, False, False]
    assert not l_plus[1].any()
    # row 1 (A = -1): valid s = 0.2, 1.2, 2.0, 6.0 -> raising (s > H): 1.2 (0.0602), 2.0 (0.1353), 6.0 (0.0124)
    # k- = ceil(0.4 * 4) = 2: s = 2.0 and s = 1.2
    assert l_minus[1].tolist() == [False, True, True, False, False]
    assert not l_minus[0].any()
    expected_dh_02 = -1.0 * math.exp(-2.0) * (1.0 - 2.0)  # -A S for A = +1, s = 2: raises entropy
    assert dh[0, 2].item() == pytest.approx(expected_dh_02, rel=1e-6)
    assert dh[1, 2].item() == pytest.approx(-expected_dh_02, rel=1e-6)  # A = -1: lowers it
    assert dh[1, 4].item() == 0.0  # padding
    out = compute_loss("stare_sensitivity", batch, cfg, SurrogateConfig(), LossContext(stats={"gate_on": True}))
    w = out.token_weights
    assert w[0].tolist() == [1.0, 2.0, 2.0, 1.0, 1.0]
    assert w[1].tolist() == [1.0, 0.5, 0.5, 1.0, 1.0]
    # on-policy (ratio 1) the per-token loss is -A * weight
    assert torch.allclose(out.token_loss * batch.mask, -batch.advantages * w * batch.mask)
    assert out.metrics["l_plus_dh_pred"].item() > 0 > out.metrics["l_minus_dh_pred"].item()


def test_fewer_raising_tokens_than_k_selects_only_raising() -> None:
    s = torch.tensor([[0.1, 0.2, 0.3, 5.0]])  # only s = 5 is above H = 1
    batch = TokenBatch(-s, -s, torch.ones(1, 4), torch.ones(1, 4), torch.ones(1, 4))
    l_plus, _, _ = sensitivity_selection(batch, StareSensitivityConfig(top_p_ratio=1.0))
    assert l_plus.tolist() == [[False, False, False, True]]


def test_o1_has_empty_l_minus_and_variant_is_normalised() -> None:
    cfg = make_config("stare_sensitivity", variant="o1")
    assert cfg.variant == "O1"
    _, l_minus, _ = sensitivity_selection(_hand_batch(), cfg)
    assert not l_minus.any()


def _random_batch(seed: int, b: int, t: int) -> TokenBatch:
    g = torch.Generator().manual_seed(seed)
    log_prob = -torch.rand(b, t, generator=g) * 4.0
    old = log_prob + 0.2 * torch.randn(b, t, generator=g)
    adv = torch.randn(b, 1, generator=g).expand(b, t).clone()
    adv[0] = 0.0  # a zero-advantage row
    mask = (torch.rand(b, t, generator=g) > 0.2).float()
    entropy = torch.rand(b, t, generator=g) * 2.0
    return TokenBatch(log_prob.requires_grad_(), old, adv * mask, mask, entropy)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), b=st.integers(1, 6), t=st.integers(1, 9), p=st.floats(0.0, 1.0))
def test_properties(seed: int, b: int, t: int, p: float) -> None:
    batch = _random_batch(seed, b, t)
    cfg = StareSensitivityConfig(top_p_ratio=p, reweight_w=1.5, reweight_m=0.7)
    l_plus, l_minus, dh = sensitivity_selection(batch, cfg)
    valid = batch.valid
    adv = batch.advantages
    assert not (l_plus & l_minus).any()
    assert (l_plus <= (valid & (adv > 0))).all() and (l_minus <= (valid & (adv < 0))).all()
    assert (dh[l_plus] > 0).all() and (dh[l_minus] < 0).all()  # raise / lower entropy by prediction
    surpr = -batch.log_prob.detach()
    assert (surpr[l_plus | l_minus] > batch.entropy[l_plus | l_minus]).all()  # S < 0 <=> s > H
    n_pos, n_neg = int((valid & (adv > 0)).sum()), int((valid & (adv < 0)).sum())
    assert int(l_plus.sum()) <= math.ceil(p * n_pos - 1e-6) + (1 if p > 0 and n_pos else 0)
    assert int(l_minus.sum()) <= math.ceil(p * n_neg - 1e-6) + (1 if p > 0 and n_neg else 0)
    # ranking: every selected L+ token predicts at least as large a change as every eligible unselected one
    eligible = valid & (adv > 0) & (dh > 0) & ~l_plus
    if l_plus.any() and eligible.any():
        assert dh[l_plus].min() >= dh[eligible].max() - 1e-7
    out = compute_loss("stare_sensitivity", batch, cfg, SurrogateConfig(), LossContext(stats={"gate_on": True}))
    assert torch.isfinite(out.token_loss).all()
    assert torch.isfinite(torch.stack(list(out.metrics.values()))).all()
    expected_w = torch.ones(b, t).masked_fill(l_plus, 1.5).masked_fill(l_minus, 0.7)
    assert torch.equal(out.token_weights, expected_w)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_gate_off_equals_vanilla_loss_and_gradient(seed: int) -> None:
    batch = _random_batch(seed, 5, 7)
    sur = SurrogateConfig(clip_ratio_low=0.2, clip_ratio_high=0.28)
    off = compute_loss("stare_sensitivity", batch, StareSensitivityConfig(reweight_w=3.0, reweight_m=0.2), sur,
                       LossContext(stats={"gate_on": False}))
    van = compute_loss("vanilla", batch, None, sur, LossContext())
    assert torch.equal(off.token_loss, van.token_loss)
    (g_off,) = torch.autograd.grad(off.token_loss.sum(), batch.log_prob)
    (g_van,) = torch.autograd.grad(van.token_loss.sum(), batch.log_prob)
    assert torch.equal(g_off, g_van)
    assert torch.equal(off.token_weights, torch.ones_like(off.token_weights))


def test_weights_one_equals_vanilla_and_context_overrides_weights() -> None:
    batch = _random_batch(3, 4, 6)
    ones = compute_loss("stare_sensitivity", batch, StareSensitivityConfig(reweight_w=1.0, reweight_m=1.0))
    van = compute_loss("vanilla", batch)
    assert torch.allclose(ones.token_loss, van.token_loss)
    out = compute_loss("stare_sensitivity", _hand_batch(), StareSensitivityConfig(top_p_ratio=1.0), None,
                       LossContext(stats={"reweight_w": 1.4, "reweight_m": 0.6}))
    assert "reweight_w" not in out.metrics  # handed in by a controller, which logs it (each value once)
    w = out.token_weights
    assert torch.allclose(w[out.masks["l_plus"]], torch.tensor(1.4))
    assert torch.allclose(w[out.masks["l_minus"]], torch.tensor(0.6))
    assert out.masks["l_plus"].any() and out.masks["l_minus"].any()


def test_edge_cases_finite() -> None:
    b, t = 3, 4
    lp = -torch.rand(b, t)
    empty = TokenBatch(lp, lp, torch.zeros(b, t), torch.zeros(b, t), torch.ones(b, t))
    out = compute_loss("stare_sensitivity", empty)
    assert torch.isfinite(out.token_loss).all() and out.metrics["k_plus"].item() == 0
    assert all(torch.isfinite(v).all() for v in out.metrics.values())


@pytest.mark.parametrize("kwargs, field", [
    ({"variant": "X"}, "variant"), ({"top_p_ratio": 1.5}, "top_p_ratio"), ({"reweight_w": 0.9}, "reweight_w"),
    ({"reweight_m": 0.0}, "reweight_m"), ({"target_entropy": -1.0}, "target_entropy"),
])
def test_config_validation_names_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        StareSensitivityConfig(**kwargs)


def test_needs_entropy() -> None:
    lp = -torch.rand(2, 3)
    batch = TokenBatch(lp, lp, torch.ones(2, 3), torch.ones(2, 3))
    with pytest.raises(ValueError, match="entropy"):
        compute_loss("stare_sensitivity", batch)


def test_metrics_are_float32_under_a_bf16_batch() -> None:
    """Issue 44: W 1.1 is logged as 1.1 (float32), not with bf16 rounding (1.109375), as STARE's own loss does."""
    b = _hand_batch()
    bf = TokenBatch(b.log_prob.bfloat16(), b.old_log_prob.bfloat16(), b.advantages.bfloat16(), b.mask.bfloat16(),
                    b.entropy.bfloat16())
    out = compute_loss("stare_sensitivity", bf, StareSensitivityConfig(reweight_w=1.1, reweight_m=0.9),
                       SurrogateConfig(), LossContext())
    own = ("gate_on", "reweight_w", "reweight_m", "k_plus", "k_minus", "l_plus_frac", "l_minus_frac",
           "l_plus_dh_pred", "l_minus_dh_pred", "mean_weight")
    assert {k: out.metrics[k].dtype for k in own} == dict.fromkeys(own, torch.float32)
    assert out.metrics["reweight_w"].item() == torch.tensor(1.1, dtype=torch.float32).item()
    assert out.metrics["reweight_m"].item() == torch.tensor(0.9, dtype=torch.float32).item()
