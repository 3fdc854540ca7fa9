"""Archer dual-token clip: hand-derived per-response quantile and per-class clipping, quantile helper against
torch.nanquantile, reduces to vanilla, row-split invariance, edge cases, validation, verl registration."""

from __future__ import annotations

import math

import pytest
import torch

from _core_batches import (
    random_batch,
    with_,
)
from stare_rl import SurrogateConfig, TokenBatch, aggregate, compute_loss, get_method
from stare_rl.methods.archer import ArcherConfig, row_entropy_quantile

PAPER_SURROGATE = SurrogateConfig(clip_ratio_low=0.2, clip_ratio_high=0.2, clip_ratio_c=3.0)  # low-entropy clip
NAN = math.nan
# row 0: 5 valid tokens, A = +1;  row 1: 3 valid, equal entropies, A = -1;  row 2: 2 valid, A = -1
ENT = [[0.1, 0.2, 0.3, 0.4, 2.0], [1.0, 1.0, 1.0, NAN, NAN], [0.1, 5.0, NAN, NAN, NAN]]
RATIO = [[1.4, 1.0, 1.0, 1.0, 1.4], [0.6, 1.0, 1.0, 1.0, 1.0], [1.0, 0.6, 1.0, 1.0, 1.0]]
ADV = [[1.0] * 5, [-1.0, -1.0, -1.0, 0.0, 0.0], [-1.0, -1.0, 0.0, 0.0, 0.0]]
MASK = [[1.0] * 5, [1.0, 1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0]]


def _hand_batch() -> TokenBatch:
    lp = torch.full((3, 5), -0.5, dtype=torch.float64, requires_grad=True)
    old = lp.detach() - torch.log(torch.tensor(RATIO, dtype=torch.float64))
    return TokenBatch(lp, old, torch.tensor(ADV, dtype=torch.float64), torch.tensor(MASK),
                      entropy=torch.tensor(ENT, dtype=torch.float64))


def test_hand_derived_quantiles() -> None:
    # row 0: sorted [0.1, 0.2, 0.3, 0.4, 2.0], rank 0.8 * 4 = 3.2 -> 0.4 + 0.2 * (2.0 - 0.4) = 0.72
    # row 1: all 1.0 -> 1.0;  row 2: rank 0.8 * 1 = 0.8 -> 0.1 + 0.8 * 4.9 = 4.02
    batch = _hand_batch()
    q = row_entropy_quantile(batch.entropy, batch.valid, 0.8)
    assert torch.allclose(q, torch.tensor([[0.72], [1.0], [4.02]], dtype=torch.float64), atol=1e-12)


def test_hand_derived_loss_and_gradient() -> None:
    # high-entropy tokens (H > q of their row): (0, 4) and (2, 1); nothing in row 1 (ties at the quantile are low)
    # (0, 0): A=+1, r=1.4, low  -> clip at 1.2: l = -1.2, grad 0
    # (0, 4): A=+1, r=1.4, high -> inside 1.5:  l = -1.4, grad -A r = -1.4
    # (1, 0): A=-1, r=0.6, low  -> clip at 0.8: l = 0.8, grad 0
    # (2, 1): A=-1, r=0.6, high -> inside 0.5:  l = 0.6, grad 0.6
    # other valid tokens: r = 1, l = -A, grad -A
    batch = _hand_batch()
    out = compute_loss("archer", batch, ArcherConfig(), PAPER_SURROGATE)
    high = torch.zeros(3, 5, dtype=torch.bool)
    high[0, 4] = high[2, 1] = True
    assert torch.equal(out.masks["high_entropy"], high)
    loss = torch.tensor([[-1.2, -1, -1, -1, -1.4], [0.8, 1, 1, 0, 0], [1, 0.6, 0, 0, 0]], dtype=torch.float64)
    assert torch.allclose(out.token_loss, loss, atol=1e-12)
    (grad,) = torch.autograd.grad(out.token_loss.sum(), batch.log_prob)
    g = torch.tensor([[0, -1, -1, -1, -1.4], [0, 1, 1, 0, 0], [1, 0.6, 0, 0, 0]], dtype=torch.float64)
    assert torch.allclose(grad, g, atol=1e-12)
    assert float(out.metrics["high_entropy_frac"]) == pytest.approx(2 / 10)
    assert float(out.metrics["pg_clipfrac"]) == pytest.approx(2 / 10)
    assert float(out.metrics["pg_clipfrac_high_entropy"]) == 0.0
    assert float(out.metrics["pg_clipfrac_low_entropy"]) == pytest.approx(2 / 8)


@pytest.mark.parametrize("seed", range(4))
def test_quantile_matches_torch_nanquantile(seed: int) -> None:
    batch = random_batch(seed, 5, 11, mask_p=0.7)
    for q in (0.0, 0.3, 0.8, 1.0):
        ours = row_entropy_quantile(batch.entropy, batch.valid, q)
        masked = torch.where(batch.valid, batch.entropy, torch.nan)
        ref = torch.nanquantile(masked, q, dim=-1, keepdim=True)  # what the reference code calls
        present = batch.valid.any(-1, keepdim=True)
        assert torch.allclose(ours[present], ref[present], atol=1e-6)
        assert bool(torch.isinf(ours[~present]).all())


@pytest.mark.parametrize("seed", range(4))
def test_reduces_to_vanilla(seed: int) -> None:
    batch = random_batch(seed, 4, 9, token_adv=True)
    sur = SurrogateConfig()
    van = compute_loss("vanilla", batch, None, sur)
    (g_van,) = torch.autograd.grad(aggregate(van.token_loss, batch.mask), batch.log_prob)
    same_clip = ArcherConfig(high_entropy_clip_ratio_low=sur.clip_ratio_low,
                             high_entropy_clip_ratio_high=sur.clip_ratio_high)
    none_high = ArcherConfig(token_entropy_quantile=1.0)
    for cfg in (same_clip, none_high):
        b = with_(batch)
        out = compute_loss("archer", b, cfg, sur)
        assert torch.allclose(out.token_loss, van.token_loss, atol=1e-7)
        (g,) = torch.autograd.grad(aggregate(out.token_loss, b.mask), b.log_prob)
        assert torch.allclose(g, g_van, atol=1e-7)
    assert not bool(compute_loss("archer", with_(batch), none_high, sur).masks["high_entropy"].any())


def test_per_response_selection_does_not_depend_on_the_split() -> None:
    batch = random_batch(7, 6, 10, token_adv=True)
    whole = compute_loss("archer", batch)
    for rows in (slice(0, 2), slice(2, 6)):
        part = TokenBatch(batch.log_prob.detach()[rows], batch.old_log_prob[rows], batch.advantages[rows],
                          batch.mask[rows], entropy=batch.entropy[rows])
        out = compute_loss("archer", part)
        assert torch.equal(out.masks["high_entropy"], whole.masks["high_entropy"][rows])
        assert torch.allclose(out.token_loss, whole.token_loss.detach()[rows])


def test_traits_and_defaults() -> None:
    spec = get_method("archer")
    assert spec.needs_entropy and spec.global_stats is None and spec.controllers is None
    cfg = ArcherConfig()
    assert (cfg.token_entropy_quantile, cfg.high_entropy_clip_ratio_low, cfg.high_entropy_clip_ratio_high) == (
        0.8, 0.5, 0.5)
    with pytest.raises(ValueError, match="needs batch.entropy"):
        compute_loss("archer", with_(random_batch(0, 2, 4), entropy=None))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"token_entropy_quantile": 1.5}, r"token_entropy_quantile=1.5 must be in \[0, 1\]"),
        ({"high_entropy_clip_ratio_low": 1.0}, r"high_entropy_clip_ratio_low=1.0 must be in \[0, 1\)"),
        ({"high_entropy_clip_ratio_high": -0.1}, "high_entropy_clip_ratio_high=-0.1 must be >= 0"),
    ],
)
def test_config_validation_names_field_and_value(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ArcherConfig(**kwargs)
