"""CE-GPPO: hand-derived values and gradients per clip case, reduces to PPO (beta = 0: gradient, beta = 1: value),
dual clip, edge cases, config validation, verl registration."""

from __future__ import annotations

import math

import pytest
import torch

from _core_batches import random_batch
from stare_rl import SurrogateConfig, TokenBatch, aggregate, compute_loss, get_method
from stare_rl.methods.ce_gppo import CEGPPOConfig

SYM = SurrogateConfig(clip_ratio_low=0.2, clip_ratio_high=0.2, clip_ratio_c=3.0)  # the paper's eps 0.2 / 0.2
LP = [-0.5, -1.0, -0.3, -0.2, -1.5, -0.7]
RATIO = [1.5, 0.5, 1.1, 0.9, 4.0, 1.0]
ADV = [1.0, -1.0, 1.0, -1.0, -2.0, 0.0]
MASK = [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]  # the last token is padding


def _hand_batch() -> TokenBatch:
    lp = torch.tensor([LP], dtype=torch.float64, requires_grad=True)
    old = lp.detach() - torch.log(torch.tensor([RATIO], dtype=torch.float64))
    old[0, 5] = math.nan  # padding may hold anything
    return TokenBatch(lp, old, torch.tensor([ADV], dtype=torch.float64), torch.tensor([MASK]))


def test_hand_derived_values_and_gradients() -> None:
    # Per token (eps 0.2 / 0.2, c = 3, beta1 = 0.75, beta2 = 1); d l / d log pi:
    # 0: A=+1, r=1.5 > 1.2  -> value -beta2*1.2*A = -1.2,         grad -beta2*1.2*A = -1.2   (PPO: grad 0)
    # 1: A=-1, r=0.5 < 0.8  -> value -beta1*0.8*A = 0.6,          grad 0.6                   (PPO: grad 0)
    # 2: A=+1, r=1.1 inside -> value -A r = -1.1,                 grad -A r = -1.1
    # 3: A=-1, r=0.9 inside -> value 0.9,                         grad 0.9
    # 4: A=-2, r=4 > c      -> dual clip: value -A c = 6,         grad 0
    batch = _hand_batch()
    out = compute_loss("ce_gppo", batch, CEGPPOConfig(beta1=0.75, beta2=1.0), SYM)
    expected = torch.tensor([[-1.2, 0.6, -1.1, 0.9, 6.0, 0.0]], dtype=torch.float64)
    assert torch.allclose(out.token_loss, expected, atol=1e-12)
    (grad,) = torch.autograd.grad(out.token_loss.sum(), batch.log_prob)
    assert torch.allclose(grad, torch.tensor([[-1.2, 0.6, -1.1, 0.9, 0.0, 0.0]], dtype=torch.float64), atol=1e-12)
    assert out.masks["clipped_low"].tolist() == [[False, True, False, False, False, False]]
    assert out.masks["clipped_high"].tolist() == [[True, False, False, False, False, False]]
    assert float(out.metrics["ce_gppo_low_frac"]) == pytest.approx(1 / 5)
    assert float(out.metrics["ce_gppo_high_frac"]) == pytest.approx(1 / 5)
    assert torch.equal(out.token_weights, torch.ones(1, 6, dtype=torch.float64))


def test_beta_scales_only_the_out_of_interval_gradients() -> None:
    b1, b2 = 0.3, 2.0
    batch = _hand_batch()
    out = compute_loss("ce_gppo", batch, CEGPPOConfig(beta1=b1, beta2=b2), SYM)
    (grad,) = torch.autograd.grad(aggregate(out.token_loss, batch.mask), batch.log_prob)
    expected = torch.tensor([[-b2 * 1.2, b1 * 0.8, -1.1, 0.9, 0.0, 0.0]], dtype=torch.float64) / 5  # token-mean
    assert torch.allclose(grad, expected, atol=1e-12)


def test_dual_clip_binds_when_beta1_bound_exceeds_c() -> None:
    # beta1 (1 - eps_low) = 5 * 0.8 = 4 > c = 3: token 1 (A = -1) is capped at -A c = 3, no gradient (reference order)
    batch = _hand_batch()
    out = compute_loss("ce_gppo", batch, CEGPPOConfig(beta1=5.0), SYM)
    assert float(out.token_loss.detach()[0, 1]) == pytest.approx(3.0)
    (grad,) = torch.autograd.grad(out.token_loss.sum(), batch.log_prob)
    assert float(grad[0, 1]) == 0.0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("surrogate", [SurrogateConfig(), SYM])
def test_reduces_to_ppo(seed: int, surrogate: SurrogateConfig) -> None:
    batch = random_batch(seed, 4, 9, token_adv=True)
    van = compute_loss("vanilla", batch, None, surrogate)
    (g_van,) = torch.autograd.grad(aggregate(van.token_loss, batch.mask), batch.log_prob)
    # beta = 0: out-of-interval tokens contribute no gradient, exactly PPO's gradient
    zero = compute_loss("ce_gppo", batch, CEGPPOConfig(beta1=0.0, beta2=0.0), surrogate)
    (g_zero,) = torch.autograd.grad(aggregate(zero.token_loss, batch.mask), batch.log_prob)
    assert torch.allclose(g_zero, g_van, atol=1e-7)
    # beta = 1: PPO's value everywhere (GPPO), and a gradient exactly where PPO clipped
    one = compute_loss("ce_gppo", batch, CEGPPOConfig(beta1=1.0, beta2=1.0), surrogate)
    assert torch.allclose(one.token_loss, van.token_loss, atol=1e-6)
    out_of_interval = one.masks["clipped_low"] | one.masks["clipped_high"]
    assert bool(out_of_interval.any())
    (g_one,) = torch.autograd.grad(aggregate(one.token_loss, batch.mask), batch.log_prob)
    assert torch.allclose(g_one[~out_of_interval], g_van[~out_of_interval], atol=1e-7)
    assert bool((g_one[out_of_interval] != 0).all()) and bool((g_van[out_of_interval] == 0).all())


def test_defaults_are_the_papers() -> None:
    cfg = CEGPPOConfig()
    assert (cfg.beta1, cfg.beta2) == (0.75, 1.0)
    spec = get_method("ce_gppo")
    assert (spec.needs_entropy, spec.global_stats, spec.controllers) == (False, None, None)


@pytest.mark.parametrize(("field", "value"), [("beta1", -0.1), ("beta2", math.inf), ("beta1", math.nan)])
def test_config_validation_names_field_and_value(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=rf"{field}={value} must be a finite value >= 0"):
        CEGPPOConfig(**{field: value})
