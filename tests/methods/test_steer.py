"""STEER: hand-derived |Omega| and weights (exp / linear / floor / degenerate), properties, edge cases,
validation and the global max/min |Omega| over micro-batches."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from _core_batches import random_batch, with_
from stare_rl import LossContext, SurrogateConfig, TokenBatch, aggregate, compute_loss
from stare_rl.control.step import StepController
from stare_rl.methods.steer import SteerConfig, steer_global_stats

PI = [0.9, 0.5, 0.2, 0.6]
H = [0.3, 1.0, 2.0, 0.1]
ADV = [1.0, -1.0, 0.5, 2.0]


def _hand_batch(scale: float = 1.0) -> TokenBatch:
    lp = torch.log(torch.tensor([PI]))
    return TokenBatch(
        lp.clone().requires_grad_(True),
        lp.clone(),
        scale * torch.tensor([ADV]),
        torch.ones(1, 4),
        entropy=torch.tensor([H]) + 5.0,  # the current policy's entropy: STEER must not read it
        old_entropy=torch.tensor([H]),
    )


def _omega(scale: float = 1.0) -> list[float]:
    # on-policy: |Omega| = |A / pi * pi (1 - pi) (ln pi + H)| = |A (1 - pi) (ln pi + H)|
    return [abs(scale * a * (1 - p) * (math.log(p) + h)) for p, h, a in zip(PI, H, ADV, strict=True)]


def test_hand_derived_exp_weights_loss_and_grad() -> None:
    om = _omega()
    top = max(om)
    assert top > 0.02
    expected = [min(1.0, max(0.8, math.exp(math.log(0.8) * o / top))) for o in om]
    batch = _hand_batch()
    out = compute_loss("steer", batch, SteerConfig())
    assert out.token_weights[0].tolist() == pytest.approx(expected, rel=1e-6)
    assert float(out.token_weights.min()) == pytest.approx(0.8)  # the top-|Omega| token gets lambda_min
    loss = aggregate(out.token_loss, batch.mask)
    (grad,) = torch.autograd.grad(loss, batch.log_prob)
    w, a = torch.tensor([expected]), torch.tensor([ADV])
    assert float(loss) == pytest.approx(float((-a * w).sum() / 4), rel=1e-6)  # ratio 1: loss -A w
    assert torch.allclose(grad, -a * w / 4, rtol=1e-6)  # weights carry no gradient


def test_hand_derived_linear_weights() -> None:
    om = _omega()
    lo, hi = min(om), max(om)
    expected = [1.2 - (o - lo) * (1.2 - 0.8) / (hi - lo) for o in om]
    out = compute_loss(
        "steer", _hand_batch(), SteerConfig(mapping="linear", token_weight_min=0.8, token_weight_max=1.2)
    )
    assert out.token_weights[0].tolist() == pytest.approx(expected, rel=1e-6)


def test_omega_floor_keeps_tiny_omegas_near_one() -> None:
    scale = 0.001  # every |Omega| < 0.02: the floor is active and nobody reaches lambda_min
    om = _omega(scale)
    assert max(om) < 0.02
    expected = [math.exp(math.log(0.8) * o / 0.02) for o in om]
    out = compute_loss("steer", _hand_batch(scale), SteerConfig())
    assert out.token_weights[0].tolist() == pytest.approx(expected, rel=1e-5)
    assert float(out.token_weights.min()) > 0.8


def test_linear_degenerate_equal_omegas_get_the_midpoint() -> None:
    batch = TokenBatch(
        torch.full((2, 3), -1.0, requires_grad=True),
        torch.full((2, 3), -1.0),
        torch.ones(2, 3),
        torch.ones(2, 3),
        old_entropy=torch.ones(2, 3),
    )
    out = compute_loss(
        "steer", batch, SteerConfig(mapping="linear", token_weight_min=0.7, token_weight_max=1.1)
    )
    assert torch.allclose(out.token_weights, torch.full((2, 3), 0.9))


def test_missing_entropy_is_a_clear_error() -> None:
    batch = with_(random_batch(0), old_entropy=None)
    with pytest.raises(ValueError, match="old_entropy"):
        compute_loss("steer", batch)
    compute_loss("steer", with_(random_batch(0), entropy=None))  # the current policy's entropy is not needed


def _reference_token_weights(lp: list[float], old_lp: list[float], adv: list[float], entropys: list[float],
                             w_min: float, w_max: float, linear: bool) -> list[float]:
    """STEER reference (zz-haooo/STEER@b31df71 core_algos.compute_token_weights), re-derived by hand for one
    all-valid row: x = clamp(pi, 1e-8, 1 - 1e-8), metric = |A / clamp(pi_old, 1e-8, 1) * x (1 - x) (ln x + H)|,
    H = `entropys`, which its actor takes from the old log-prob pass (data["entropys"])."""
    metric = []
    for lp_i, old_i, a, h in zip(lp, old_lp, adv, entropys, strict=True):
        x = min(max(math.exp(lp_i), 1e-8), 1 - 1e-8)
        metric.append(abs(a / min(max(math.exp(old_i), 1e-8), 1.0) * x * (1 - x) * (math.log(x) + h)))
    lo, hi = min(metric), max(metric)
    if linear:
        return [min(w_max, max(w_min, w_max - (m - lo) * (w_max - w_min) / (hi - lo))) for m in metric]
    k = -math.log(w_min) / max(hi, 0.02)
    return [min(1.0, max(w_min, math.exp(-k * m))) for m in metric]


@pytest.mark.parametrize("mapping", ["exp", "linear"])
def test_old_entropy_path_equals_the_reference_after_an_update(mapping: str) -> None:
    """A hand-made off-policy batch (pi != pi_old) whose current entropy differs from the old one: STEER's
    weights are the reference's computed with the old entropy, and differ from those of the current one."""
    lp, old_lp = [-0.1, -0.7, -1.6, -0.4, -2.3], [-0.2, -0.5, -1.9, -0.3, -2.0]
    adv, h_old, h_now = [1.0, -1.0, 0.5, 2.0, -0.5], [0.3, 1.0, 2.0, 0.1, 1.5], [0.9, 0.2, 1.1, 0.6, 0.4]
    w_max = 1.0 if mapping == "exp" else 1.2
    batch = TokenBatch(torch.tensor([lp], requires_grad=True), torch.tensor([old_lp]), torch.tensor([adv]),
                       torch.ones(1, 5), entropy=torch.tensor([h_now]), old_entropy=torch.tensor([h_old]))
    out = compute_loss("steer", batch, SteerConfig(mapping=mapping, token_weight_min=0.8, token_weight_max=w_max))
    want = _reference_token_weights(lp, old_lp, adv, h_old, 0.8, w_max, linear=mapping == "linear")
    assert out.token_weights[0].tolist() == pytest.approx(want, rel=1e-5)
    current = _reference_token_weights(lp, old_lp, adv, h_now, 0.8, w_max, linear=mapping == "linear")
    assert max(abs(a - b) for a, b in zip(want, current, strict=True)) > 0.01  # the two entropies disagree


batch_args = st.tuples(
    st.integers(0, 10_000), st.integers(1, 5), st.integers(1, 12), st.sampled_from([0.0, 0.5, 0.9, 1.0])
)
steer_cfgs = st.one_of(
    st.builds(SteerConfig, mapping=st.just("exp"), token_weight_min=st.floats(0.05, 1.0)),
    st.builds(
        lambda lo, span: SteerConfig(mapping="linear", token_weight_min=lo, token_weight_max=lo + span),
        st.floats(0.05, 1.5),
        st.floats(0.0, 1.0),
    ),
)


def _batch(args: tuple[int, int, int, float]) -> TokenBatch:
    seed, b, t, mask_p = args
    return random_batch(seed, b, t, mask_p=mask_p)


@given(batch_args, steer_cfgs)
def test_weights_in_documented_range(args, cfg: SteerConfig) -> None:
    batch = _batch(args)
    out = compute_loss("steer", batch, cfg)
    w, valid = out.token_weights, batch.valid
    hi = 1.0 if cfg.mapping == "exp" else cfg.token_weight_max
    lo32, hi32 = float(torch.tensor(cfg.token_weight_min)), float(torch.tensor(hi))
    assert bool((w[valid] >= lo32).all()) and bool((w[valid] <= hi32).all())
    assert bool((w[~valid] == 0).all()) and not w.requires_grad
    assert torch.isfinite(out.token_loss).all()


@given(batch_args, st.sampled_from(["exp", "linear"]))
def test_lambda_min_one_reduces_to_vanilla(args, mapping: str) -> None:
    batch = _batch(args)
    out = compute_loss(
        "steer", batch, SteerConfig(mapping=mapping, token_weight_min=1.0, token_weight_max=1.0)
    )
    ref = compute_loss("vanilla", batch)
    assert torch.equal(out.token_weights, batch.mask_f)
    assert torch.equal(out.token_loss, ref.token_loss)


@given(batch_args, st.sampled_from(["exp", "linear"]), st.floats(0.05, 20.0))
def test_scaling_advantages_scales_the_loss(args, mapping: str, c: float) -> None:
    # |Omega| scales with A, and the maps only see |Omega| / max (exp) or (|Omega| - min) / (max - min)
    # (linear); a negligible floor keeps the exp map scale-free (the 0.02 floor is the one exception).
    cfg = SteerConfig(
        mapping=mapping,
        token_weight_min=0.6,
        token_weight_max=1.0 if mapping == "exp" else 1.3,
        omega_floor=1e-30,
    )
    batch = _batch(args)
    surrogate = SurrogateConfig()
    out = compute_loss("steer", batch, cfg, surrogate)
    out_c = compute_loss("steer", with_(batch, advantages=batch.advantages * c), cfg, surrogate)
    loss, loss_c = aggregate(out.token_loss, batch.mask), aggregate(out_c.token_loss, batch.mask)
    assert torch.allclose(loss_c, c * loss, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mapping", ["exp", "linear"])
def test_edge_cases_finite(mapping: str) -> None:
    cfg = SteerConfig(mapping=mapping, token_weight_max=1.0 if mapping == "exp" else 1.2)
    base = random_batch(5, 4, 6)
    for name, batch in {
        "no valid": with_(base, mask=torch.zeros(4, 6), advantages=torch.zeros(4, 6)),
        "zero adv": with_(base, advantages=torch.zeros(4, 6)),
    }.items():
        out = compute_loss("steer", batch, cfg)
        loss = aggregate(out.token_loss, batch.mask)
        (grad,) = torch.autograd.grad(loss, batch.log_prob)
        assert float(loss.detach()) == 0.0 and bool((grad == 0).all()), name
    single = torch.zeros(4, 6)
    single[1, 2] = 1.0
    batch = with_(base, mask=single, advantages=single * 0.5)
    out = compute_loss("steer", batch, cfg)
    loss = aggregate(out.token_loss, batch.mask)
    (grad,) = torch.autograd.grad(loss, batch.log_prob)
    assert int((out.token_weights > 0).sum()) == 1 and float(grad[1, 2]) != 0.0
    rows = base.mask.clone()
    rows[2] = 0.0
    batch = with_(base, mask=rows)
    out = compute_loss("steer", batch, cfg)
    (grad,) = torch.autograd.grad(
        aggregate(out.token_loss, batch.mask, "seq-mean-token-mean"), batch.log_prob
    )
    assert bool(torch.isfinite(grad).all()) and bool((grad[2] == 0).all())


@pytest.mark.parametrize(
    ("kwargs", "field", "value"),
    [
        ({"token_weight_min": 0.0}, "token_weight_min", "0.0"),
        ({"token_weight_min": -0.5}, "token_weight_min", "-0.5"),
        ({"mapping": "cubic"}, "mapping", "'cubic'"),
        ({"token_weight_max": 1.2}, "token_weight_max", "1.2"),
        ({"mapping": "linear", "token_weight_min": 1.2, "token_weight_max": 1.0}, "token_weight_max", "1.0"),
        ({"token_weight_min": 1.5}, "token_weight_min", "1.5"),
        ({"omega_floor": 0.0}, "omega_floor", "0.0"),
    ],
)
def test_config_validation_names_field_and_value(kwargs: dict, field: str, value: str) -> None:
    with pytest.raises(ValueError) as err:
        SteerConfig(**kwargs)
    assert f"{field}={value}" in str(err.value)


def test_defaults_are_the_paper_values() -> None:
    cfg = SteerConfig()
    assert (cfg.mapping, cfg.token_weight_min, cfg.token_weight_max, cfg.omega_floor) == (
        "exp",
        0.8,
        1.0,
        0.02,
    )


def _split_rows(batch: TokenBatch, parts: int) -> list[TokenBatch]:
    fields = ("log_prob", "old_log_prob", "advantages", "mask", "entropy", "old_entropy")
    chunks = [torch.chunk(getattr(batch, f).detach(), parts) for f in fields]
    return [TokenBatch(lp.clone().requires_grad_(True), *rest) for lp, *rest in zip(*chunks, strict=True)]


@pytest.mark.parametrize("mapping", ["exp", "linear"])
def test_global_omega_stats_make_micro_batches_match_the_whole_batch(mapping: str) -> None:
    cfg = SteerConfig(
        mapping=mapping, token_weight_min=0.6, token_weight_max=1.0 if mapping == "exp" else 1.2
    )
    whole = random_batch(21, 8, 16, token_adv=True)
    ref = compute_loss("steer", whole, cfg)
    micro = _split_rows(whole, 4)
    stats = StepController("steer", cfg).global_stats(micro)
    assert stats["omega_max"] == pytest.approx(float(ref.metrics["omega_abs_max"]))
    glob = torch.cat(
        [compute_loss("steer", mb, cfg, context=LossContext(stats=stats)).token_weights for mb in micro]
    )
    local = torch.cat([compute_loss("steer", mb, cfg).token_weights for mb in micro])
    assert torch.equal(glob, ref.token_weights)
    assert not torch.equal(
        local, ref.token_weights
    )  # the per-micro-batch max makes the reference layout-dependent


def test_global_stats_without_valid_tokens() -> None:
    assert steer_global_stats(torch.zeros(0)) == {"omega_max": None, "omega_min": None}
