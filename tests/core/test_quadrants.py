"""Hand-derived cases for the per-step quadrant diagnostics."""

from __future__ import annotations

import math

import pytest
import torch

from stare_rl.core.quadrants import QUADRANTS, quadrant_masks, quadrant_stats
from stare_rl.core.tokens import entropy_sensitivity

P = "quadrant/"


def _batch() -> tuple[torch.Tensor, ...]:
    # Row 0: three valid tokens + padding; row 1: three valid tokens + padding.
    # pi:   0.1 (s=2.303 > H=1), 0.8 (s=0.223 < H=1), 0.5 (A=0), pad
    #       0.05 (s=3.0 > H=1.2), 0.9 (s=0.105 < H=0.5), 0.3 (s=1.204 > H=0.7), pad
    pi = torch.tensor([[0.1, 0.8, 0.5, 0.5], [0.05, 0.9, 0.3, 0.5]])
    log_prob = pi.log()
    entropy = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.2, 0.5, 0.7, 1.0]])
    adv = torch.tensor([[1.0, 1.0, 0.0, 1.0], [-2.0, -2.0, -2.0, -2.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 0]])
    return log_prob, entropy, adv, mask


def test_quadrant_membership_by_hand() -> None:
    log_prob, entropy, adv, mask = _batch()
    m = quadrant_masks(log_prob, entropy, adv, mask)
    assert m["pos_high"].tolist() == [[True, False, False, False], [False] * 4]
    assert m["pos_low"].tolist() == [[False, True, False, False], [False] * 4]
    assert m["neg_high"].tolist() == [[False] * 4, [True, False, True, False]]
    assert m["neg_low"].tolist() == [[False] * 4, [False, True, False, False]]


def test_fractions_and_leading_term_prediction_by_hand() -> None:
    log_prob, entropy, adv, mask = _batch()
    out = quadrant_stats(log_prob, entropy, adv, mask, lr_scale=0.5)
    n = 6.0
    assert out[P + "pos_high_frac"].item() == pytest.approx(1 / n)
    assert out[P + "pos_low_frac"].item() == pytest.approx(1 / n)
    assert out[P + "neg_high_frac"].item() == pytest.approx(2 / n)
    assert out[P + "neg_low_frac"].item() == pytest.approx(1 / n)
    assert out[P + "zero_adv_frac"].item() == pytest.approx(1 / n)
    fr = sum(out[f"{P}{q}_frac"].item() for q in QUADRANTS) + out[P + "zero_adv_frac"].item()
    assert fr == pytest.approx(1.0)

    # dH = -A * pi * (log pi + H), times lr_scale, summed per quadrant, / n_valid
    def dh(a: float, p: float, h: float) -> float:
        return -a * p * (math.log(p) + h) * 0.5

    exp_pos_high = dh(1.0, 0.1, 1.0)  # > 0: reinforcing a surprising token raises entropy
    exp_pos_low = dh(1.0, 0.8, 1.0)  # < 0
    exp_neg_high = dh(-2.0, 0.05, 1.2) + dh(-2.0, 0.3, 0.7)  # < 0
    exp_neg_low = dh(-2.0, 0.9, 0.5)  # > 0
    assert exp_pos_high > 0 and exp_pos_low < 0 and exp_neg_high < 0 and exp_neg_low > 0
    assert out[P + "pos_high_dh_pred"].item() == pytest.approx(exp_pos_high / n, rel=1e-5)
    assert out[P + "pos_low_dh_pred"].item() == pytest.approx(exp_pos_low / n, rel=1e-5)
    assert out[P + "neg_high_dh_pred"].item() == pytest.approx(exp_neg_high / n, rel=1e-5)
    assert out[P + "neg_low_dh_pred"].item() == pytest.approx(exp_neg_low / n, rel=1e-5)
    total = exp_pos_high + exp_pos_low + exp_neg_high + exp_neg_low
    assert out[P + "dh_pred"].item() == pytest.approx(total / n, rel=1e-5)
    assert "quadrant/l_plus_share" not in out
    for v in out.values():
        assert v.dim() == 0 and not v.requires_grad


def test_l_plus_minus_shares_by_hand() -> None:
    log_prob, entropy, adv, mask = _batch()
    l_plus = torch.zeros(2, 4, dtype=torch.bool)
    l_plus[0, 0] = True
    l_plus[0, 3] = True  # padding: ignored
    l_minus = torch.zeros(2, 4, dtype=torch.bool)
    l_minus[1, 0] = True
    out = quadrant_stats(log_prob, entropy, adv, mask, selections={"l_plus": l_plus, "l_minus": l_minus}, lr_scale=7.0)
    mags = [abs(-a * p * (math.log(p) + h)) for a, p, h in
            [(1, 0.1, 1.0), (1, 0.8, 1.0), (-2, 0.05, 1.2), (-2, 0.9, 0.5), (-2, 0.3, 0.7)]]
    assert out[P + "l_plus_share"].item() == pytest.approx(mags[0] / sum(mags), rel=1e-5)
    assert out[P + "l_minus_share"].item() == pytest.approx(mags[2] / sum(mags), rel=1e-5)


def test_exact_sensitivity_is_used_when_given() -> None:
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 7)
    tokens = torch.randint(0, 7, (3, 5))
    logp_all = logits.log_softmax(-1)
    log_prob = logp_all.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    adv = torch.randn(3, 5)
    mask = torch.ones(3, 5)
    s_exact = entropy_sensitivity(logits, tokens)
    out = quadrant_stats(log_prob, entropy, adv, mask, sensitivity=s_exact)
    assert out[P + "dh_pred"].item() == pytest.approx((-(adv * s_exact)).sum().item() / 15, rel=1e-5)
    lead = quadrant_stats(log_prob, entropy, adv, mask)
    assert out[P + "dh_pred"].item() != pytest.approx(lead[P + "dh_pred"].item(), rel=1e-3)


def test_empty_mask_and_zero_advantages_are_zero_not_nan() -> None:
    log_prob, entropy, adv, _ = _batch()
    empty = torch.zeros(2, 4)
    sel = torch.ones(2, 4, dtype=torch.bool)
    out = quadrant_stats(log_prob, entropy, adv, empty, selections={"l_plus": sel, "l_minus": sel})
    assert all(v.item() == 0.0 for v in out.values())
    out = quadrant_stats(log_prob, entropy, torch.zeros(2, 4), torch.ones(2, 4), selections={"l_plus": sel})
    assert out[P + "zero_adv_frac"].item() == 1.0
    assert out[P + "l_plus_share"].item() == 0.0
    assert all(torch.isfinite(v) for v in out.values())
    out = quadrant_stats(torch.zeros(0, 0), torch.zeros(0, 0), torch.zeros(0, 0), torch.zeros(0, 0))
    assert all(v.item() == 0.0 for v in out.values())


def test_bad_shapes_name_the_field() -> None:
    log_prob, entropy, adv, mask = _batch()
    with pytest.raises(ValueError, match="advantages"):
        quadrant_stats(log_prob, entropy, adv[:, :2], mask)
    with pytest.raises(ValueError, match="log_prob"):
        quadrant_stats(log_prob[0], entropy[0], adv[0], mask[0])
