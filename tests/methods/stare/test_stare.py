"""STARE: hand-derived selection and weights, properties (hypothesis), edge cases, validation, global scope."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from _core_batches import random_batch, with_
from stare_rl import LossContext, SurrogateConfig, TokenBatch, aggregate, compute_loss
from stare_rl.control.step import StepController
from stare_rl.core.selection import topk_count
from stare_rl.methods.stare.config import StareConfig
from stare_rl.methods.stare.loss import stare_global_thresholds

LP = [-0.1, -2.0, -1.0, -0.5, -3.0, -0.2]
ADV = [1.0, 1.0, 1.0, -1.0, -1.0, -1.0]


def _hand_batch() -> TokenBatch:
    lp = torch.tensor([LP], requires_grad=True)
    return TokenBatch(lp, torch.tensor([LP]), torch.tensor([ADV]), torch.ones(1, 6))


def _loss_and_grad(batch: TokenBatch, cfg: StareConfig, ctx: LossContext, mode: str = "token-mean"):
    out = compute_loss("stare", batch, cfg, SurrogateConfig(loss_agg_mode=mode), ctx)
    loss = aggregate(out.token_loss, batch.mask, mode)
    (grad,) = torch.autograd.grad(loss, batch.log_prob)
    return out, loss, grad


@pytest.mark.parametrize(
    ("variant", "expected"),
    [("C2", [1.0, 1.3, 1.3, 0.7, 0.7, 1.0]), ("O1", [1.0, 1.3, 1.3, 1.0, 1.0, 1.0])],
)
def test_hand_derived_selection_weights_loss_and_grad(variant: str, expected: list[float]) -> None:
    # P = 0.5 of 3 candidates per sign -> k = ceil(1.5) = 2: surprisals 2.0, 1.0 in T+ and 3.0, 0.5 in T-.
    cfg = StareConfig(variant=variant, top_p_ratio=0.5, reweight_w=1.3, reweight_m=0.7)
    out, loss, grad = _loss_and_grad(_hand_batch(), cfg, LossContext(stats={"gate_on": True}))
    w = torch.tensor([expected])
    assert torch.allclose(out.token_weights, w)
    assert out.masks["l_plus"].tolist() == [[False, True, True, False, False, False]]
    l_minus = [[False, False, False, True, True, False]] if variant == "C2" else [[False] * 6]
    assert out.masks["l_minus"].tolist() == l_minus
    # on-policy: ratio 1, per-token loss -A * w; token-mean over 6 tokens; d/d log_prob = -A * w / 6
    adv = torch.tensor([ADV])
    assert torch.allclose(loss, (-adv * w).sum() / 6)
    assert torch.allclose(grad, -adv * w / 6)
    assert int(out.metrics["k_plus"]) == 2 and int(out.metrics["k_minus"]) == (2 if variant == "C2" else 0)
    assert "gate_on" not in out.metrics  # handed in by the gate controller, which logs it (each value once)
    assert float(out.metrics["reweight_w"]) == pytest.approx(1.3)  # the config's W: no controller handed one in
    no_gate = compute_loss("stare", _hand_batch(), cfg, SurrogateConfig(), LossContext()).metrics
    assert float(no_gate["gate_on"]) == 1.0  # no controller: the loss logs the gate it assumed (on)


def test_k_rounding_is_the_reference_ceil() -> None:
    assert topk_count(0.28, 25) == 7  # math.ceil(0.28 * 25) would give 8 (float noise)
    assert topk_count(0.1, 47) == 5 and topk_count(0.1, 3) == 1 and topk_count(0.0, 10) == 0
    assert topk_count(1.0, 9) == 9 and topk_count(0.5, 0) == 0


def test_defaults_are_the_paper_values() -> None:
    cfg = StareConfig()
    assert (cfg.variant, cfg.top_p_ratio, cfg.reweight_w, cfg.reweight_m, cfg.target_entropy) == (
        "O1",
        0.1,
        1.1,
        0.9,
        0.3,
    )
    assert cfg.selection_scope == "batch"


def test_context_overrides_w_and_m_and_gate_none_means_on() -> None:
    cfg = StareConfig(variant="C2", top_p_ratio=0.5)
    out = compute_loss("stare", _hand_batch(), cfg, context=LossContext(stats={"reweight_w": 1.4, "reweight_m": 0.6}))
    assert sorted(set(out.token_weights.flatten().tolist())) == pytest.approx([0.6, 1.0, 1.4])
    with pytest.raises(ValueError, match="reweight_w=0.5"):
        compute_loss("stare", _hand_batch(), cfg, context=LossContext(stats={"reweight_w": 0.5}))


batch_args = st.tuples(
    st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 12), st.sampled_from([0.0, 0.5, 0.9, 1.0])
)
stare_cfgs = st.builds(
    StareConfig,
    variant=st.sampled_from(["O1", "C2"]),
    top_p_ratio=st.floats(0.0, 1.0),
    reweight_w=st.floats(1.0, 2.0),
    reweight_m=st.floats(0.05, 1.0),
)


def _batch(args: tuple[int, int, int, float]) -> TokenBatch:
    seed, b, t, mask_p = args
    return random_batch(seed, b, t, mask_p=mask_p)


@given(batch_args, stare_cfgs)
def test_weights_sets_and_selection_properties(args, cfg: StareConfig) -> None:
    batch = _batch(args)
    out = compute_loss("stare", batch, cfg, context=LossContext(stats={"gate_on": True}))
    w = out.token_weights
    allowed = {1.0, cfg.reweight_w} if cfg.variant == "O1" else {cfg.reweight_m, 1.0, cfg.reweight_w}
    assert set(w.flatten().tolist()) <= {float(torch.tensor(a)) for a in allowed}
    assert not w.requires_grad
    l_plus, l_minus = out.masks["l_plus"], out.masks["l_minus"]
    valid, adv = batch.valid, batch.advantages
    t_plus, t_minus = valid & (adv > 0), valid & (adv < 0)
    assert bool((l_plus <= t_plus).all()) and bool((l_minus <= t_minus).all())
    assert int(l_plus.sum()) == topk_count(cfg.top_p_ratio, int(t_plus.sum()))
    expected_minus = topk_count(cfg.top_p_ratio, int(t_minus.sum())) if cfg.variant == "C2" else 0
    assert int(l_minus.sum()) == expected_minus
    s = -batch.log_prob.detach()
    if bool(l_plus.any()) and bool((t_plus & ~l_plus).any()):  # selected = the highest surprisals
        assert float(s[l_plus].min()) >= float(s[t_plus & ~l_plus].max())
    w32 = float(torch.tensor(cfg.reweight_w))  # W as stored in float32
    if w32 != 1.0:
        assert torch.equal(w == w32, l_plus)


@given(batch_args, stare_cfgs)
def test_gate_off_is_exactly_vanilla(args, cfg: StareConfig) -> None:
    batch = _batch(args)
    out, loss, grad = _loss_and_grad(batch, cfg, LossContext(stats={"gate_on": False}))
    ref = compute_loss("vanilla", with_(batch))
    ref_loss = aggregate(ref.token_loss, batch.mask)
    assert torch.equal(out.token_weights, torch.ones_like(out.token_weights))
    assert torch.equal(out.token_loss, ref.token_loss) and torch.equal(loss, ref_loss)


@given(batch_args, stare_cfgs, st.floats(0.05, 20.0), st.sampled_from(["token-mean", "seq-mean-token-sum"]))
def test_scaling_advantages_scales_the_loss(args, cfg: StareConfig, c: float, mode: str) -> None:
    batch = _batch(args)
    _, loss, grad = _loss_and_grad(batch, cfg, LossContext(stats={"gate_on": True}), mode)
    scaled = with_(batch, advantages=batch.advantages * c)
    _, loss_c, grad_c = _loss_and_grad(scaled, cfg, LossContext(stats={"gate_on": True}), mode)
    assert torch.allclose(loss_c, c * loss, rtol=1e-5, atol=1e-6)
    assert torch.allclose(grad_c, c * grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", ["O1", "C2"])
@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"])
def test_edge_cases_are_finite_and_zero_where_nothing_contributes(variant: str, mode: str) -> None:
    cfg = StareConfig(variant=variant, top_p_ratio=0.5)
    base = random_batch(3, 4, 6)
    cases = {
        "no valid tokens": with_(base, mask=torch.zeros(4, 6), advantages=torch.zeros(4, 6)),
        "all-zero advantages": with_(base, advantages=torch.zeros(4, 6)),
    }
    for name, batch in cases.items():
        out, loss, grad = _loss_and_grad(batch, cfg, LossContext(stats={"gate_on": True}), mode)
        assert float(loss.detach()) == 0.0 and bool((grad == 0).all()), name
        assert int(out.metrics["k_plus"]) == 0 and int(out.metrics["k_minus"]) == 0, name
    single = torch.zeros(4, 6)
    single[2, 3] = 1.0
    adv = torch.zeros(4, 6)
    adv[2, 3] = 0.7
    out, loss, grad = _loss_and_grad(
        with_(base, mask=single, advantages=adv), cfg, LossContext(stats={"gate_on": True}), mode
    )
    assert bool(out.masks["l_plus"][2, 3]) and int(out.masks["l_plus"].sum()) == 1
    assert torch.isfinite(loss) and bool(torch.isfinite(grad).all()) and float(grad[2, 3]) != 0.0
    assert int((grad != 0).sum()) == 1
    rows = base.mask.clone()
    rows[0] = 0.0
    rows[3] = 0.0
    out, loss, grad = _loss_and_grad(with_(base, mask=rows), cfg, LossContext(stats={"gate_on": True}), mode)
    assert torch.isfinite(loss) and bool(torch.isfinite(grad).all())
    assert bool((grad[0] == 0).all()) and bool((grad[3] == 0).all())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("top_p_ratio", -0.1),
        ("top_p_ratio", 1.5),
        ("reweight_w", 0.9),
        ("reweight_m", 0.0),
        ("reweight_m", 1.2),
        ("variant", "X3"),
        ("target_entropy", -1.0),
        ("selection_scope", "world"),
    ],
)
def test_config_validation_names_field_and_value(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"{field}=.?{value}"):
        StareConfig(**{field: value})


def test_variant_is_case_insensitive() -> None:
    assert StareConfig(variant="c2").variant == "C2"


def _split_rows(batch: TokenBatch, parts: int) -> list[TokenBatch]:
    chunks = [
        torch.chunk(getattr(batch, f).detach(), parts) for f in ("log_prob", "old_log_prob", "advantages")
    ]
    masks, ents = torch.chunk(batch.mask, parts), torch.chunk(batch.entropy, parts)
    return [
        TokenBatch(lp.clone().requires_grad_(True), old, adv, m, e)
        for lp, old, adv, m, e in zip(*chunks, masks, ents, strict=True)
    ]


@pytest.mark.parametrize("variant", ["O1", "C2"])
def test_global_thresholds_make_micro_batches_match_the_whole_batch(variant: str) -> None:
    cfg = StareConfig(variant=variant, top_p_ratio=0.2, reweight_w=1.3, reweight_m=0.7)
    whole = random_batch(11, 8, 16, token_adv=True)
    ref = compute_loss("stare", whole, cfg, context=LossContext(stats={"gate_on": True}))
    micro = _split_rows(whole, 4)
    stats = StepController("stare", cfg).global_stats(micro)  # single process: gathers across the micro-batches
    s = -whole.log_prob.detach()
    pos, neg = s[whole.valid & (whole.advantages > 0)], s[whole.valid & (whole.advantages < 0)]
    assert stats == stare_global_thresholds(pos, neg, cfg)
    ctx = LossContext(stats={"gate_on": True, **stats})
    glob = [compute_loss("stare", mb, cfg, context=ctx) for mb in micro]
    local = [compute_loss("stare", mb, cfg, context=LossContext(stats={"gate_on": True})) for mb in micro]
    assert torch.equal(torch.cat([o.token_weights for o in glob]), ref.token_weights)
    for name in ("l_plus", "l_minus"):
        assert torch.equal(torch.cat([o.masks[name] for o in glob]), ref.masks[name])
    # the reference (per micro-batch) selection depends on the split: it selects more tokens here
    n_local = sum(int(o.masks["l_plus"].sum()) for o in local)
    assert n_local > int(ref.masks["l_plus"].sum())


def test_global_threshold_inf_selects_nothing() -> None:
    cfg = StareConfig(top_p_ratio=0.0)
    stats = stare_global_thresholds(torch.tensor([1.0, 2.0]), torch.tensor([3.0]), cfg)
    assert stats["surprisal_threshold_pos"] == float("inf") and stats["surprisal_threshold_neg"] is None
    out = compute_loss("stare", random_batch(1), cfg, context=LossContext(stats=stats))
    assert not bool(out.masks["l_plus"].any())


@given(st.integers(0, 10_000), st.integers(16_384, 40_000), st.floats(0.0001, 1.0), st.booleans())
def test_exact_kth_largest_and_topk_mask_with_prefilter(
    seed: int, n: int, frac: float, quantised: bool
) -> None:
    from stare_rl.core.selection import _kth_exact, topk_mask

    g = torch.Generator().manual_seed(seed)
    values = torch.randn(1, n, generator=g)
    if quantised:  # bf16-like values: many ties, also at the k-th value
        values = values.to(torch.bfloat16).float()
    candidates = torch.rand(1, n, generator=g) < 0.7
    n_cand = int(candidates.sum())
    k = max(1, int(frac * n_cand))
    key = torch.where(candidates, values, float("-inf")).reshape(-1)
    assert float(_kth_exact(key, k, largest=True)[0]) == float(torch.topk(key, k).values[-1])
    mask = topk_mask(values, candidates, k)
    assert int(mask.sum()) == k and bool((mask <= candidates).all())
    if k < n_cand:
        assert float(values[mask].min()) >= float(values[candidates & ~mask].max())
