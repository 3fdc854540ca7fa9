"""EntroPIC: PI controller step response, integral action, anti-windup, exact state round trip; the loss
(hand-derived (1 + alpha) / (1 - alpha) high-probability term), reduces to vanilla, edge cases, validation,
traits and verl registration."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from _core_batches import EDGE_CASES, edge_case_batch, random_batch
from stare_rl import LossContext, TokenBatch, aggregate, compute_loss, get_method
from stare_rl.control.base import StepObservation
from stare_rl.control.step import StepController
from stare_rl.methods.entropic import EntroPICConfig, EntroPICController


def _obs(h: float, step: int = 0) -> StepObservation:
    return StepObservation(entropy=h, step=step)


def _ctx(alpha: float | None) -> LossContext:
    return LossContext(stats={} if alpha is None else {"entropic_alpha": alpha})


# ----------------------------------------------------------------------------- controller


def test_step_response_hand_derived() -> None:
    # H_tgt = 0.1, Kp = 1, Ki = 0.01; alpha_t = Kp e_t + Ki I_{t-1}, then I_t = I_{t-1} + e_t
    c = EntroPICController(target_entropy=0.1, kp=1.0, ki=0.01)
    assert c.context() == {"entropic_alpha": 0.0}  # before the first update: no control
    expected = [  # (H, alpha, integral after)
        (0.5, 0.4, 0.4),  # e = 0.4: alpha = 0.4 + 0.01 * 0
        (0.5, 0.404, 0.8),  # alpha = 0.4 + 0.01 * 0.4
        (0.1, 0.008, 0.8),  # e = 0: only the integral term
        (0.0, -0.092, 0.7),  # e = -0.1: alpha = -0.1 + 0.008
    ]
    for step, (h, alpha, integral) in enumerate(expected):
        c.update(_obs(h, step))
        assert c.alpha == pytest.approx(alpha) and c.integral == pytest.approx(integral)
        assert c.context() == {"entropic_alpha": c.alpha}
    m = c.metrics()
    assert m["entropic_alpha"] == pytest.approx(-0.092) and m["entropic_error"] == pytest.approx(-0.1)


def test_saturation_and_anti_windup_hand_derived() -> None:
    on = EntroPICController(0.1, 1.0, 0.01, alpha_max=1.0, anti_windup=True)
    off = EntroPICController(0.1, 1.0, 0.01, alpha_max=1.0, anti_windup=False)
    for c in (on, off):
        c.update(_obs(3.0))  # e = 2.9 -> u = 2.9 -> alpha clipped to 1
        c.update(_obs(3.0))
        assert c.alpha == 1.0
    assert on.integral == 0.0  # held while saturated in the error's direction
    assert off.integral == pytest.approx(5.8)  # the reference integrates without bound
    for c in (on, off):
        c.update(_obs(0.1))  # e = 0
    assert on.alpha == 0.0 and off.alpha == pytest.approx(0.058)


def _closed_loop(c: EntroPICController, h: float, steps: int, gain: float, drift: float) -> list[float]:
    """A toy plant: entropy falls by gain * alpha per step plus a constant drift (entropy collapse)."""
    hs = []
    for t in range(steps):
        c.update(_obs(h, t))
        h = h - gain * c.alpha + drift
        hs.append(h)
    return hs


def test_integral_action_removes_the_steady_state_error() -> None:
    # under a constant downward drift a P controller settles below the target, PI settles on it
    p_only = _closed_loop(EntroPICController(0.1, 1.0, 0.0), 0.5, 3000, gain=0.5, drift=-0.02)
    pi = _closed_loop(EntroPICController(0.1, 1.0, 0.01), 0.5, 3000, gain=0.5, drift=-0.02)
    assert p_only[-1] == pytest.approx(0.1 - 0.02 / 0.5, abs=1e-6)  # e* = drift / (gain Kp) = -0.04
    assert pi[-1] == pytest.approx(0.1, abs=1e-6)


def test_anti_windup_limits_the_overshoot_after_saturation() -> None:
    on = _closed_loop(EntroPICController(0.1, 1.0, 0.01, anti_windup=True), 2.0, 400, gain=0.05, drift=0.0)
    off = _closed_loop(EntroPICController(0.1, 1.0, 0.01, anti_windup=False), 2.0, 400, gain=0.05, drift=0.0)
    undershoot_on, undershoot_off = 0.1 - min(on), 0.1 - min(off)
    assert 0.0 < undershoot_on < 0.5 * undershoot_off


def test_state_round_trip_is_exact() -> None:
    a = EntroPICController(0.2, 0.8, 0.05, alpha_max=0.7)
    for t, h in enumerate([0.9, 0.6, 0.4, 0.1]):
        a.update(_obs(h, t))
    state = json.loads(json.dumps(a.state_dict()))  # JSON-able plain values
    b = EntroPICController(0.2, 0.8, 0.05, alpha_max=0.7)  # same settings: the saved ones define the state
    b.load_state_dict(state)
    assert b.state_dict() == a.state_dict()
    for t, h in enumerate([0.3, 0.25, 0.0, 1.5], start=4):
        a.update(_obs(h, t))
        b.update(_obs(h, t))
        assert (a.alpha, a.integral) == (b.alpha, b.integral)


def test_controller_rejects_non_finite_entropy_and_bad_gains() -> None:
    c = EntroPICController(0.1, 1.0, 0.01)
    with pytest.raises(ValueError, match="entropy=nan must be finite"):
        c.update(_obs(math.nan))
    with pytest.raises(ValueError, match="ki=-1.0 must be a finite value >= 0"):
        EntroPICController(0.1, 1.0, -1.0)


# ----------------------------------------------------------------------------- loss


def _hand_batch() -> TokenBatch:
    # tokens 0, 1: pi = 0.97 > 0.95 (high probability); token 2: pi = 0.5; token 3: padding
    lp = torch.log(torch.tensor([[0.97, 0.97, 0.5, 0.9]], dtype=torch.float64)).requires_grad_(True)
    old = lp.detach() - 0.1  # r = e^0.1 = 1.105: inside every clip interval
    adv = torch.tensor([[1.0, -1.0, 1.0, 0.0]], dtype=torch.float64)
    return TokenBatch(lp, old, adv, torch.tensor([[1.0, 1.0, 1.0, 0.0]]))


def test_hand_derived_loss_and_gradient() -> None:
    # l = -A r + alpha (-r |A|) on high-probability tokens, alpha = 0.5, r = e^0.1:
    # token 0 (A = +1): -(1 + alpha) r = -1.5 r;  token 1 (A = -1): (1 - alpha) r = 0.5 r;  token 2: -r
    # d l / d log pi equals l here (every term is linear in r)
    batch = _hand_batch()
    r = math.exp(0.1)
    out = compute_loss("entropic", batch, EntroPICConfig(), None, _ctx(0.5))
    expected = torch.tensor([[-1.5 * r, 0.5 * r, -r, 0.0]], dtype=torch.float64)
    assert torch.allclose(out.token_loss, expected, atol=1e-12)
    (grad,) = torch.autograd.grad(out.token_loss.sum(), batch.log_prob)
    assert torch.allclose(grad, expected, atol=1e-12)
    assert out.masks["high_prob"].tolist() == [[True, True, False, False]]
    assert float(out.metrics["high_prob_frac"]) == pytest.approx(2 / 3)
    assert "entropic_alpha" not in out.metrics  # handed in by the controller, which logs it (each value once)
    assert float(compute_loss("entropic", _hand_batch(), EntroPICConfig()).metrics["entropic_alpha"]) == 0.0
    # alpha < 0 (entropy below target): positive high-probability tokens damped, negative ones amplified
    out = compute_loss("entropic", _hand_batch(), EntroPICConfig(), None, _ctx(-0.5))
    assert torch.allclose(out.token_loss, torch.tensor([[-0.5 * r, 1.5 * r, -r, 0.0]], dtype=torch.float64))


@pytest.mark.parametrize("alpha", [None, 0.0])
@pytest.mark.parametrize("seed", range(3))
def test_alpha_zero_or_absent_is_vanilla(alpha: float | None, seed: int) -> None:
    batch = random_batch(seed, 4, 8)
    out = compute_loss("entropic", batch, None, None, _ctx(alpha))
    assert torch.equal(out.token_loss, compute_loss("vanilla", batch).token_loss)


def test_controller_context_drives_the_loss() -> None:
    cfg = EntroPICConfig()
    ctrl = get_method("entropic").controllers(cfg)["entropic_pi"]
    assert isinstance(ctrl, EntroPICController)
    ctrl.update(_obs(0.4))  # e = 0.3 -> alpha = 0.3
    batch = _hand_batch()
    out = compute_loss("entropic", batch, cfg, None, LossContext(stats=ctrl.context()))
    assert ctrl.metrics()["entropic_alpha"] == pytest.approx(0.3) and "entropic_alpha" not in out.metrics
    r = math.exp(0.1)
    assert float(out.token_loss.detach()[0, 0]) == pytest.approx(-1.3 * r)


def test_context_alpha_out_of_range_is_rejected() -> None:
    with pytest.raises(ValueError, match="entropic_alpha=1.5 must be finite with"):
        compute_loss("entropic", _hand_batch(), EntroPICConfig(), None, _ctx(1.5))


def test_traits_and_defaults() -> None:
    spec = get_method("entropic")
    assert not spec.needs_entropy and spec.controllers is not None  # the loss needs no H
    cfg = EntroPICConfig()
    assert (cfg.target_entropy, cfg.kp, cfg.ki, cfg.alpha_max, cfg.high_prob_threshold) == (0.1, 1.0, 0.01, 1.0, 0.95)
    c = EntroPICController.from_config(cfg)
    for method in ("update", "context", "metrics", "state_dict", "load_state_dict"):  # the Controller protocol
        assert callable(getattr(c, method))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target_entropy": -0.1}, "target_entropy=-0.1 must be a number >= 0"),
        ({"target_entropy": "half"}, "target_entropy='half' must be a number >= 0"),
        ({"target_entropy": "0x"}, "target_entropy='0x' must be a number >= 0"),
        ({"kp": math.inf}, "kp=inf must be a finite value >= 0"),
        ({"alpha_max": 1.5}, r"alpha_max=1.5 must be in \(0, 1\]"),
        ({"high_prob_threshold": 1.0}, r"high_prob_threshold=1.0 must be in \(0, 1\)"),
    ],
)
def test_config_validation_names_field_and_value(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EntroPICConfig(**kwargs)


@pytest.mark.parametrize("case", EDGE_CASES)
def test_edge_cases_are_finite(case: str) -> None:
    batch = edge_case_batch(case, 4)
    out = compute_loss("entropic", batch, None, None, _ctx(-0.7))
    loss = aggregate(out.token_loss, batch.mask)
    (grad,) = torch.autograd.grad(loss, batch.log_prob)
    assert torch.isfinite(loss) and bool(torch.isfinite(grad).all())
    assert all(bool(torch.isfinite(v)) for v in out.metrics.values())
    if case in ("no_valid", "zero_adv"):
        assert float(loss.detach()) == 0.0 and bool((grad == 0).all())


def test_registered_in_verl_and_alpha_from_the_driver_state() -> None:
    """verl's registry has ``stare_rl.entropic``; with the exact entry point's controller state (what its driver
    sends each step) the verl loss uses that alpha and equals the core."""
    pytest.importorskip("verl")
    import verl  # noqa: F401  (the stare_rl plugin registers on import)
    from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY
    from verl.workers.config import FSDPActorConfig

    from stare_rl.engines.verl import adapter as V

    fn = POLICY_LOSS_REGISTRY["stare_rl.entropic"]
    assert fn._stare_rl_method == "entropic"
    base = random_batch(3, 4, 7)
    batch = TokenBatch(base.log_prob.detach() * 0.02, base.old_log_prob * 0.02, base.advantages, base.mask)
    batch.log_prob.requires_grad_(True)  # most tokens now have pi > 0.95
    pl = V.StareRLPolicyLossConfig()
    cfg = FSDPActorConfig(policy_loss=pl, rollout_n=4, ppo_micro_batch_size_per_gpu=2, clip_ratio_low=0.2,
                          clip_ratio_high=0.28)
    driver = EntroPICController.from_config(V.method_config("entropic", pl))
    driver.update(_obs(0.6))  # e = 0.5 -> alpha = 0.5
    with V.step_state(V.StepState(controllers={"entropic_pi": driver.state_dict()})):
        loss, metrics = fn(batch.old_log_prob, batch.log_prob, batch.advantages, batch.mask, "token-mean", cfg)
    assert "loss/entropic_alpha" not in metrics  # the driver's alpha, logged by the driver (control/entropic_alpha)
    sur = V.surrogate_config(cfg, "token-mean")
    out = compute_loss("entropic", batch, EntroPICConfig(), sur, _ctx(0.5))
    torch.testing.assert_close(loss, aggregate(out.token_loss, batch.mask), rtol=1e-6, atol=1e-7)
    van = aggregate(compute_loss("vanilla", batch, None, sur).token_loss, batch.mask)
    assert abs(float(loss.detach()) - float(van.detach())) > 1e-3


def test_step_controller_runs_the_method_controller_and_saves_it(tmp_path: Path) -> None:
    """Through the engine-neutral step controller: H measured over all micro-batches -> alpha in the context,
    the state saved and restored under the controller's name (no engine or controller file names EntroPIC)."""
    cfg = EntroPICConfig(target_entropy=0.5, kp=0.2, ki=0.1)
    micro = [random_batch(s, 3, 6) for s in range(3)]
    h = float(sum((b.entropy * b.mask).sum() for b in micro) / sum(b.mask.sum() for b in micro))
    sc = StepController("entropic", cfg)
    assert sc.needs_entropy and sorted(sc.controllers) == ["entropic_pi"]
    ctx = sc.begin_step(micro, step=0)
    alpha0 = min(max(0.2 * (h - 0.5), -1.0), 1.0)  # first step: no integral yet
    assert ctx.get("entropic_alpha") == pytest.approx(alpha0)
    assert sc.metrics()["entropic_alpha"] == pytest.approx(alpha0)
    sc.save(tmp_path)
    fresh = StepController("entropic", cfg)
    assert fresh.load(tmp_path) and fresh.state_dict() == sc.state_dict()
    ctx1, ctx1_fresh = sc.begin_step(micro, step=1), fresh.begin_step(micro, step=1)
    alpha1 = min(max(0.2 * (h - 0.5) + 0.1 * (h - 0.5), -1.0), 1.0)
    assert ctx1.get("entropic_alpha") == ctx1_fresh.get("entropic_alpha") == pytest.approx(alpha1)
