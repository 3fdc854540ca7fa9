"""Entropy-based advantage (Cheng et al. 2025): hand-derived bonus, cap and loss, sign preservation, equals the
surrogate on the shaped advantage, reduces to vanilla (alpha = 0), no entropy gradient, edge cases, validation,
verl registration."""

from __future__ import annotations

import math

import pytest
import torch

from _core_batches import (
    random_batch,
    with_,
)
from stare_rl import TokenBatch, aggregate, compute_loss, get_method
from stare_rl.methods.entropy_advantage import EntropyAdvantageConfig

ADV = [1.0, 1.0, -1.0, -1.0, 0.0, 0.0]
ENT = [0.5, 3.0, 0.5, 3.0, 2.0, math.nan]  # the last token is padding
MASK = [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]


def _hand_batch(shift: float = 0.0) -> TokenBatch:
    lp = torch.tensor([[-0.3, -1.0, -0.2, -2.0, -0.7, -0.1]], dtype=torch.float64, requires_grad=True)
    return TokenBatch(
        lp, lp.detach() - shift, torch.tensor([ADV], dtype=torch.float64), torch.tensor([MASK]),
        entropy=torch.tensor([ENT], dtype=torch.float64),
    )


def test_hand_derived_bonus_loss_and_gradient() -> None:
    # psi = min(0.4 H, |A| / 2) = [0.2, min(1.2, 0.5), 0.2, min(1.2, 0.5), min(0.8, 0) , pad]
    #     = [0.2, 0.5, 0.2, 0.5, 0, 0];  A' = A + psi = [1.2, 1.5, -0.8, -0.5, 0, 0]
    # on-policy (r = 1, nothing clipped): l = -A' r, d l / d log pi = -A' r = -A'
    batch = _hand_batch()
    out = compute_loss("entropy_advantage", batch, EntropyAdvantageConfig(alpha=0.4, kappa=2.0))
    shaped = torch.tensor([[1.2, 1.5, -0.8, -0.5, 0.0, 0.0]], dtype=torch.float64)
    assert torch.allclose(out.token_loss, -shaped, atol=1e-12)
    (grad,) = torch.autograd.grad(out.token_loss.sum(), batch.log_prob)
    assert torch.allclose(grad, -shaped, atol=1e-12)
    assert float(out.metrics["entropy_bonus_mean"]) == pytest.approx((0.2 + 0.5 + 0.2 + 0.5 + 0.0) / 5)
    assert float(out.metrics["entropy_bonus_capped_frac"]) == pytest.approx(2 / 5)  # tokens 1 and 3


def test_off_policy_hand_value_with_clip() -> None:
    # r = e^0.3 = 1.3499 > 1.28: token 0 (A' = 1.2 > 0) is clipped at 1 + eps_high: l = -1.2 * 1.28, no gradient
    batch = _hand_batch(shift=0.3)
    out = compute_loss("entropy_advantage", batch)
    assert float(out.token_loss.detach()[0, 0]) == pytest.approx(-1.2 * 1.28)
    # token 2 (A' = -0.8 < 0): r inside [0.8, 3] -> l = 0.8 r, gradient 0.8 r
    r = math.exp(0.3)
    assert float(out.token_loss.detach()[0, 2]) == pytest.approx(0.8 * r)
    (grad,) = torch.autograd.grad(out.token_loss.sum(), batch.log_prob)
    assert float(grad[0, 0]) == 0.0 and float(grad[0, 2]) == pytest.approx(0.8 * r)


@pytest.mark.parametrize("seed", range(5))
def test_equals_vanilla_on_the_shaped_advantage_and_keeps_signs(seed: int) -> None:
    batch = random_batch(seed, 4, 9, token_adv=True)
    cfg = EntropyAdvantageConfig()
    a = batch.advantages
    psi = torch.minimum(cfg.alpha * batch.entropy, a.abs() / cfg.kappa) * batch.mask
    shaped = (a + psi) * batch.mask
    assert torch.equal(torch.sign(shaped), torch.sign(a))  # the cap |A| / kappa < |A| never flips a sign
    out = compute_loss("entropy_advantage", batch, cfg)
    ref = compute_loss("vanilla", with_(batch, advantages=shaped))
    assert torch.allclose(out.token_loss, ref.token_loss, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_alpha_zero_is_vanilla(seed: int) -> None:
    batch = random_batch(seed, 3, 7)
    out = compute_loss("entropy_advantage", batch, EntropyAdvantageConfig(alpha=0.0))
    van = compute_loss("vanilla", batch)
    assert torch.equal(out.token_loss, van.token_loss)


def test_no_gradient_through_the_entropy() -> None:
    batch = random_batch(0, 3, 7)
    ent = batch.entropy.clone().requires_grad_(True)
    b = with_(batch, entropy=ent)
    loss = aggregate(compute_loss("entropy_advantage", b).token_loss, b.mask)
    (g_lp, g_ent) = torch.autograd.grad(loss, [b.log_prob, ent], allow_unused=True)
    assert g_ent is None or bool((g_ent == 0).all())
    assert bool(g_lp.abs().sum() > 0)


def test_needs_entropy() -> None:
    assert get_method("entropy_advantage").needs_entropy
    batch = with_(random_batch(0, 2, 4), entropy=None)
    with pytest.raises(ValueError, match="needs batch.entropy"):
        compute_loss("entropy_advantage", batch)


def test_defaults_are_the_papers() -> None:
    cfg = EntropyAdvantageConfig()
    assert (cfg.alpha, cfg.kappa) == (0.4, 2.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": -0.1}, "alpha=-0.1 must be a finite value >= 0"),
        ({"alpha": math.nan}, "alpha=nan must be a finite value >= 0"),
        ({"kappa": 1.0}, "kappa=1.0 must be a finite value > 1"),
        ({"kappa": 0.5}, "kappa=0.5 must be a finite value > 1"),
    ],
)
def test_config_validation_names_field_and_value(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EntropyAdvantageConfig(**kwargs)
