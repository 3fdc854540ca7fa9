"""80/20 high-entropy mask: hand-derived top-rho selection, global threshold, reduces-to-vanilla, properties."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from _core_batches import EDGE_CASES, edge_case_batch, random_batch, with_
from stare_rl import AGG_MODES, LossContext, SurrogateConfig, TokenBatch, aggregate, compute_loss
from stare_rl.methods.high_entropy import HighEntropyConfig, high_entropy_threshold

ENT = [3.0, 0.5, 2.0, 1.0, 4.0, 9.0]  # the last token is padding


def _hand_batch() -> TokenBatch:
    lp = torch.tensor([[-0.3, -1.0, -0.2, -2.0, -0.7, -0.1]], requires_grad=True)
    return TokenBatch(
        log_prob=lp,
        old_log_prob=lp.detach() + 0.05,
        advantages=torch.tensor([[1.0, 1.0, -1.0, -1.0, 0.5, 0.0]]),
        mask=torch.tensor([[1.0, 1.0, 1.0, 1.0, 1.0, 0.0]]),
        entropy=torch.tensor([ENT]),
    )


@pytest.mark.parametrize(
    ("rho", "kept"),
    [
        (0.2, [4]),  # k = ceil(0.2 * 5) = 1
        (0.4, [0, 4]),  # k = 2
        (0.5, [0, 2, 4]),  # k = ceil(2.5) = 3
        (1.0, [0, 1, 2, 3, 4]),  # everything valid, never the padding
    ],
)
def test_keeps_the_top_rho_fraction_by_entropy(rho: float, kept: list[int]) -> None:
    batch = _hand_batch()
    out = compute_loss("high_entropy", batch, HighEntropyConfig(rho=rho))
    expected = [i in kept for i in range(6)]
    assert out.masks["high_entropy"][0].tolist() == expected
    assert out.token_weights[0].tolist() == [float(e) for e in expected]
    van = compute_loss("vanilla", _hand_batch())
    assert torch.equal(out.token_loss, van.token_loss * out.token_weights)
    assert float(out.metrics["high_entropy_frac"]) == pytest.approx(len(kept) / 5)
    grad = torch.autograd.grad(aggregate(out.token_loss, batch.mask), batch.log_prob)[0]
    assert [bool(g != 0) for g in grad[0]] == [e and a != 0 for e, a in zip(expected, [1, 1, -1, -1, 0.5, 0], strict=True)]


def test_global_threshold_from_context_overrides_the_batch() -> None:
    out = compute_loss("high_entropy", _hand_batch(), HighEntropyConfig(rho=0.2), context=LossContext(stats={"entropy_threshold": 1.5}))
    assert out.masks["high_entropy"][0].tolist() == [True, False, True, False, True, False]
    assert float(out.metrics["entropy_threshold"]) == 1.5


def test_global_threshold_makes_micro_batches_agree_with_the_whole_batch() -> None:
    batch = random_batch(11, 8, 10, token_adv=True)
    cfg = HighEntropyConfig()
    full = compute_loss("high_entropy", batch, cfg)
    tau = high_entropy_threshold(batch.entropy[batch.valid], cfg.rho)
    n_tok = batch.n_valid
    whole = aggregate(full.token_loss, batch.mask, "token-mean")
    parts, total = [], torch.zeros(())
    for rows in (slice(0, 3), slice(3, 8)):
        sub = with_(batch, **{k: getattr(batch, k)[rows] for k in ("log_prob", "old_log_prob", "advantages",
                                                                     "mask", "entropy")})
        out = compute_loss("high_entropy", sub, cfg, context=LossContext(stats={"entropy_threshold": tau}))
        parts.append(out.token_weights)
        total = total + aggregate(out.token_loss, sub.mask, "token-mean", global_tokens=n_tok)
    assert torch.equal(torch.cat(parts), full.token_weights)
    torch.testing.assert_close(total, whole.detach())
    # Without the global threshold each micro-batch keeps its own top 20%: another selection (this seed).
    local = [compute_loss("high_entropy", with_(batch, **{k: getattr(batch, k)[r] for k in
                                                          ("log_prob", "old_log_prob", "advantages", "mask",
                                                           "entropy")}), cfg).token_weights
             for r in (slice(0, 3), slice(3, 8))]
    assert not torch.equal(torch.cat(local), full.token_weights)


def test_threshold_helper() -> None:
    vals = torch.tensor([0.1, 0.7, 0.3, 0.9, 0.5])
    assert high_entropy_threshold(vals, 0.2) == pytest.approx(0.9)
    assert high_entropy_threshold(vals, 0.5) == pytest.approx(0.5)  # k = ceil(2.5) = 3
    assert high_entropy_threshold(vals, 1.0) == pytest.approx(0.1)
    assert high_entropy_threshold(torch.tensor([]), 0.2) is None


def test_missing_entropy_is_a_clear_error() -> None:
    batch = with_(_hand_batch(), entropy=None)
    with pytest.raises(ValueError, match="entropy"):
        compute_loss("high_entropy", batch)


@pytest.mark.parametrize("rho", [0.0, -0.1, 1.1, float("nan")])
def test_config_validation_names_field_and_value(rho: float) -> None:
    with pytest.raises(ValueError, match=f"rho={rho}"):
        HighEntropyConfig(rho=rho)


def test_default_is_the_papers() -> None:
    assert HighEntropyConfig().rho == 0.2


@pytest.mark.parametrize("mode", AGG_MODES)
def test_rho_one_reduces_to_vanilla(mode: str) -> None:
    for seed in range(4):
        batch = random_batch(seed, 4, 12)
        sur = SurrogateConfig(loss_agg_mode=mode)
        out = compute_loss("high_entropy", batch, HighEntropyConfig(rho=1.0), sur)
        van = compute_loss("vanilla", batch, surrogate=sur)
        assert torch.equal(out.token_loss, van.token_loss)
        l1, l2 = aggregate(out.token_loss, batch.mask, mode), aggregate(van.token_loss, batch.mask, mode)
        assert torch.equal(l1, l2)
        g1, g2 = (torch.autograd.grad(x, batch.log_prob)[0] for x in (l1, l2))
        assert torch.equal(g1, g2)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    b=st.integers(1, 4),
    t=st.integers(1, 12),
    mask_p=st.sampled_from([0.0, 0.3, 0.9, 1.0]),
    rho=st.floats(0.01, 1.0),
    w=st.floats(0.01, 100.0),
    mode=st.sampled_from(AGG_MODES),
)
def test_properties(seed: int, b: int, t: int, mask_p: float, rho: float, w: float, mode: str) -> None:
    batch = random_batch(seed, b, t, mask_p=mask_p, token_adv=True)
    entropy = batch.entropy.clone().requires_grad_(True)
    batch = with_(batch, entropy=entropy)
    out = compute_loss("high_entropy", batch, HighEntropyConfig(rho=rho))
    keep = out.masks["high_entropy"]
    assert set(out.token_weights.unique().tolist()) <= {0.0, 1.0}
    assert not bool((keep & ~batch.valid).any())
    n = batch.n_valid
    assert int(keep.sum()) == (max(1, min(n, int(rho * n + 0.999999))) if n else 0)  # no ties in random floats
    if n:  # every kept entropy is >= every dropped valid entropy
        dropped = batch.entropy.detach()[batch.valid & ~keep]
        assert dropped.numel() == 0 or float(batch.entropy.detach()[keep].min()) >= float(dropped.detach().max())
    loss = aggregate(out.token_loss, batch.mask, mode)
    g_lp, g_ent = torch.autograd.grad(loss, (batch.log_prob, entropy), allow_unused=True)
    assert torch.isfinite(loss) and bool(torch.isfinite(g_lp).all())
    assert bool((g_lp[~keep] == 0).all())
    assert g_ent is None or float(g_ent.abs().max()) == 0.0  # entropy only selects
    out_w = compute_loss("high_entropy", with_(batch, advantages=batch.advantages * w), HighEntropyConfig(rho=rho))
    assert torch.equal(out_w.masks["high_entropy"], keep)
    torch.testing.assert_close(aggregate(out_w.token_loss, batch.mask, mode), loss.detach() * w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", AGG_MODES)
@pytest.mark.parametrize("case", EDGE_CASES)
def test_edge_cases_are_finite(case: str, mode: str) -> None:
    batch = edge_case_batch(case, seed=5)
    out = compute_loss("high_entropy", batch)
    loss = aggregate(out.token_loss, batch.mask, mode)
    grad = torch.autograd.grad(loss, batch.log_prob)[0]
    assert torch.isfinite(loss) and bool(torch.isfinite(grad).all())
    if case == "single_token":
        assert out.masks["high_entropy"].sum() == 1 and bool(out.masks["high_entropy"][1, 2])
    if case in ("no_valid", "zero_adv"):
        assert float(loss.detach()) == 0.0 and float(grad.abs().max()) == 0.0
