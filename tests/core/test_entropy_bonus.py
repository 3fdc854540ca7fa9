"""Entropy bonus: -coef * H per valid token, gradient through the entropy, composes with every method."""

from __future__ import annotations

import math

import pytest
import torch

from _core_batches import random_batch, with_
from stare_rl import (
    AGG_MODES,
    LossContext,
    SurrogateConfig,
    TokenBatch,
    aggregate,
    compute_loss,
    list_methods,
)
from stare_rl.control.base import AdaptiveEntropyCoef, StepObservation
from stare_rl.core.entropy_bonus import (
    EntropyBonusConfig,
    add_entropy_bonus,
    entropy_bonus,
    resolve_entropy_coef,
)
from stare_rl.core.tokens import logprobs_and_entropy


def test_token_term_is_minus_coef_times_entropy_on_valid_tokens() -> None:
    ent = torch.tensor([[1.0, 2.0, float("nan")], [0.5, float("inf"), 3.0]], requires_grad=True)
    mask = torch.tensor([[1, 1, 0], [1, 0, 1]])
    term = entropy_bonus(ent, mask, 0.1)
    torch.testing.assert_close(term.detach(), torch.tensor([[-0.1, -0.2, 0.0], [-0.05, 0.0, -0.3]]))
    (g,) = torch.autograd.grad(term.sum(), ent)
    torch.testing.assert_close(g, torch.tensor([[-0.1, -0.1, 0.0], [-0.1, 0.0, -0.1]]))  # no NaN leaks


def _logit_batch(seed: int = 0, b: int = 3, t: int = 5, v: int = 11) -> tuple[torch.Tensor, TokenBatch]:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, t, v, generator=g, requires_grad=True)
    tokens = torch.randint(0, v, (b, t), generator=g)
    lp, ent = logprobs_and_entropy(logits, tokens, chunk_size=4)
    mask = torch.ones(b, t)
    mask[0, 3:] = 0
    adv = torch.randn(b, 1, generator=g).expand(b, t) * mask
    batch = TokenBatch(log_prob=lp, old_log_prob=lp.detach() + 0.1, advantages=adv, mask=mask, entropy=ent)
    return logits, batch


@pytest.mark.parametrize("mode", AGG_MODES)
def test_gradient_flows_through_the_entropy(mode: str) -> None:
    logits, batch = _logit_batch()
    coef = 0.05
    sur = SurrogateConfig(loss_agg_mode=mode)
    out = add_entropy_bonus(compute_loss("vanilla", batch, surrogate=sur), batch, EntropyBonusConfig(coef=coef))
    (g, ) = torch.autograd.grad(aggregate(out.token_loss, batch.mask, mode), logits, retain_graph=True)
    pg = aggregate(compute_loss("vanilla", batch, surrogate=sur).token_loss, batch.mask, mode)
    expected = pg - coef * aggregate(batch.entropy, batch.mask, mode)  # verl: pg_loss - c * agg_loss(H)
    (g_ref, ) = torch.autograd.grad(expected, logits)
    torch.testing.assert_close(g, g_ref)
    assert float(g[0, 3:].abs().max()) == 0.0  # padding positions get nothing


def test_descending_the_bonus_raises_the_entropy() -> None:
    logits, batch = _logit_batch(seed=3)
    bonus = aggregate(entropy_bonus(batch.entropy, batch.mask, 1.0), batch.mask)
    (g, ) = torch.autograd.grad(bonus, logits)
    _, h_after = logprobs_and_entropy(logits.detach() - 0.1 * g, torch.zeros(3, 5, dtype=torch.long))
    h_before = batch.entropy.detach()
    assert bool((h_after[batch.valid] > h_before[batch.valid]).all())


def test_composes_with_every_registered_method() -> None:
    batch = random_batch(2, 4, 9)
    ent = batch.entropy.clone().requires_grad_(True)
    batch = with_(batch, entropy=ent)
    cfg = EntropyBonusConfig(coef=0.01)
    expected_bonus = -0.01 * float((batch.entropy.detach() * batch.mask).sum() / batch.mask.sum())
    for name in list_methods():
        base = compute_loss(name, batch, context=LossContext(generator=torch.Generator().manual_seed(0)))
        out = add_entropy_bonus(base, batch, cfg)
        diff = aggregate(out.token_loss, batch.mask) - aggregate(base.token_loss, batch.mask)
        assert float(diff.detach()) == pytest.approx(expected_bonus, rel=1e-5), name
        assert torch.equal(out.token_weights, base.token_weights)
        (g_ent, ) = torch.autograd.grad(aggregate(out.token_loss, batch.mask), ent, retain_graph=True)
        torch.testing.assert_close(g_ent, -0.01 * batch.mask / batch.mask.sum())
        assert float(out.metrics["entropy_coef"]) == pytest.approx(0.01)


def test_coef_zero_changes_nothing() -> None:
    batch = random_batch(4)
    base = compute_loss("vanilla", batch)
    out = add_entropy_bonus(base, batch, EntropyBonusConfig(coef=0.0))
    assert torch.equal(out.token_loss, base.token_loss)


def test_context_coefficient_from_the_adaptive_controller_overrides_the_config() -> None:
    ctrl = AdaptiveEntropyCoef(target_entropy=0.3, bonus_step=5e-4, bonus_coef=0.001)
    ctrl.update(StepObservation(entropy=0.1, step=0))  # entropy below target: coefficient goes up one step
    ctx = LossContext(stats=ctrl.context())
    assert resolve_entropy_coef(EntropyBonusConfig(coef=0.5), ctx) == pytest.approx(0.0015)
    assert resolve_entropy_coef(EntropyBonusConfig(coef=0.5), LossContext()) == 0.5
    batch = random_batch(1)
    out = add_entropy_bonus(compute_loss("vanilla", batch), batch, EntropyBonusConfig(coef=0.5), ctx)
    assert "entropy_coef" not in out.metrics  # the controller's coefficient, logged by it (each value once)
    fixed = add_entropy_bonus(compute_loss("vanilla", batch), batch, EntropyBonusConfig(coef=0.5))
    assert float(fixed.metrics["entropy_coef"]) == 0.5 and fixed.metrics["entropy_coef"].dtype == torch.float32


@pytest.mark.parametrize("coef", [-0.1, math.nan, math.inf])
def test_config_validation_names_field_and_value(coef: float) -> None:
    with pytest.raises(ValueError, match=f"coef={coef}"):
        EntropyBonusConfig(coef=coef)
    with pytest.raises(ValueError, match=f"entropy_coef={coef}"):
        resolve_entropy_coef(EntropyBonusConfig(), LossContext(stats={"entropy_coef": coef}))


def test_missing_entropy_and_shape_errors() -> None:
    batch = with_(random_batch(0), entropy=None)
    with pytest.raises(ValueError, match="entropy=None"):
        add_entropy_bonus(compute_loss("vanilla", batch), batch)
    with pytest.raises(ValueError, match=r"entropy has shape \(2, 3\)"):
        entropy_bonus(torch.zeros(2, 3), torch.ones(3, 2), 0.1)


@pytest.mark.parametrize("mode", AGG_MODES)
def test_no_valid_tokens_is_zero_and_finite(mode: str) -> None:
    batch = random_batch(0, 2, 4)
    ent = batch.entropy.clone().requires_grad_(True)
    batch = with_(batch, mask=torch.zeros(2, 4), advantages=torch.zeros(2, 4), entropy=ent)
    out = add_entropy_bonus(compute_loss("vanilla", batch), batch)
    loss = aggregate(out.token_loss, batch.mask, mode)
    g = torch.autograd.grad(loss, (batch.log_prob, ent))
    assert float(loss.detach()) == 0.0 and all(float(x.abs().max()) == 0.0 for x in g)
    assert float(out.metrics["entropy"]) == 0.0
