"""The ``auto`` weight controller (stare_rl.methods.stare.auto): control law, anti-windup, rate limit, state.

The closed-loop tests run the controller against a synthetic entropy process, the linear model its defaults
were derived from (docs/methods.md): relative entropy ``x = H / H_tgt`` with
``x_{t+1} = x_t - drift + c * (a_t - 1)`` where ``a_t = 0.9 a_{t-1} + 0.1 W_t`` is the weight seen through Adam's
momentum and ``c = drift / (W* - 1)``, so that ``W*`` is the weight that holds the entropy (measured on the tiny
arithmetic model: drift 0.0017 / step; W* ~ 19 for O1, a few for C2; the papers' 7B setting: W* ~ 1.1).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from stare_rl.control.base import StepObservation
from stare_rl.methods.stare.auto import AutoWeightConfig, AutoWeightController

TARGET = 0.3
DRIFT = 0.0017  # GRPO on the tiny arithmetic model: relative entropy lost per step (measured, docs/methods.md)


def run_plant(ctrl, steps, *, w_star=3.0, x0=1.25, noise=0.0, seed=0, drift_at=None):
    """Close the loop for ``steps`` steps; returns (true x, measured x, W) lists, x = H / H_tgt."""
    rng = random.Random(seed)
    c = DRIFT / (w_star - 1.0)  # relative entropy gained per step per unit of (W - 1)
    x, applied = x0, 1.0
    true_x, measured, weights = [], [], []
    for t in range(steps):
        seen = max(x * (1.0 + noise * rng.gauss(0.0, 1.0)), 0.0)  # batch entropy: sampling noise
        ctrl.update(StepObservation(entropy=seen * TARGET, step=t))
        applied = 0.9 * applied + 0.1 * ctrl.reweight_w  # Adam momentum smooths the actuator
        true_x.append(x)
        measured.append(seen)
        weights.append(ctrl.reweight_w)
        x = max(x - (DRIFT if drift_at is None else drift_at(t)) + c * (applied - 1.0), 0.0)
    return true_x, measured, weights


def first_crossing(values):
    return next(i for i, v in enumerate(values) if v <= 1.0)


def test_first_steps_hand_derived():
    cfg = AutoWeightConfig(auto_kp=8.0, auto_ki=0.1, auto_smoothing=0.8, auto_rate_limit=0.25, auto_w_max=10.0, auto_m_min=0.1)
    ctrl = AutoWeightController(0.3, cfg)
    ctrl.update(StepObservation(entropy=0.24, step=0))  # e = (0.3 - 0.24) / 0.3 = 0.2 (first step: unsmoothed)
    assert ctrl.error == pytest.approx(0.2)
    assert ctrl.integral == pytest.approx(0.02)  # ki * e
    assert ctrl.p_term == pytest.approx(1.6)  # kp * e
    assert ctrl.strength == pytest.approx(0.25)  # demand 1.62, rate-limited to 0 + 0.25
    assert ctrl.rate_limited and not ctrl.saturated_high
    assert ctrl.reweight_w == pytest.approx(math.exp(0.25))
    assert ctrl.reweight_m == pytest.approx(math.exp(-0.25))
    ctrl.update(StepObservation(entropy=0.33, step=1))  # raw e = -0.1; smoothed 0.8 * 0.2 + 0.2 * -0.1 = 0.14
    assert ctrl.error == pytest.approx(0.14)
    assert ctrl.integral == pytest.approx(0.034)
    assert ctrl.strength == pytest.approx(0.5)  # demand 1.154, rate-limited to 0.25 + 0.25
    assert ctrl.context() == {"reweight_w": pytest.approx(math.exp(0.5)), "reweight_m": pytest.approx(math.exp(-0.5)),
                              "gate_on": True}


@pytest.mark.parametrize("w_star", [1.1, 3.0, 19.0])  # the papers' 7B strength .. our O1 on the tiny model
def test_step_response_settles_in_band(w_star):
    """From 25 % above the target, with a drift that only W* cancels: the entropy undershoots by less than 10 %
    after the first crossing, never goes back above the target by more than 10 %, settles (integral action: no
    offset) and the controller holds W*."""
    ctrl = AutoWeightController(TARGET)
    true_x, _, weights = run_plant(ctrl, 600, w_star=w_star)
    cross = first_crossing(true_x)
    after = true_x[cross:]
    assert min(after) > 0.9, f"undershoot {1 - min(after):.3f}"
    assert max(after) < 1.1, f"overshoot {max(after) - 1:.3f}"
    assert all(abs(x - 1.0) < 0.02 for x in after[-100:])
    assert weights[-1] == pytest.approx(w_star, rel=0.02)
    assert all(w == 1.0 for w in weights[: cross - 30])  # well above the target: exactly vanilla


def test_noisy_measurement_band_fraction():
    """Batch entropy with 5.5 % sampling noise (measured on the tiny arithmetic model): after the first crossing
    the *measured* entropy is within ±10 % of the target on >= 82 % of steps on average over seeds, >= 75 % on
    each (noise alone allows 93 %)."""
    fractions = []
    for seed in range(6):
        ctrl = AutoWeightController(TARGET)
        _, measured, _ = run_plant(ctrl, 400, noise=0.055, seed=seed)
        after = measured[first_crossing(measured):]
        fractions.append(sum(abs(x - 1.0) <= 0.1 for x in after) / len(after))
    assert sum(fractions) / len(fractions) >= 0.82 and min(fractions) >= 0.75, fractions


def test_above_target_goes_to_vanilla_and_drains():
    ctrl = AutoWeightController(TARGET)
    for t in range(200):
        ctrl.update(StepObservation(entropy=0.25, step=t))
    assert ctrl.strength > 0.5
    for t in range(200, 400):
        ctrl.update(StepObservation(entropy=0.4, step=t))
    assert ctrl.strength == 0.0 and ctrl.integral == 0.0
    assert ctrl.context() == {"reweight_w": 1.0, "reweight_m": 1.0, "gate_on": False}
    assert ctrl.metrics()["auto_saturated_low"] == 1.0


def test_anti_windup_recovers_fast_after_long_saturation():
    """200 steps where even W = w_max cannot stop the fall (W* = 1000), then the drift reverses: the strength
    leaves its bound within a few steps of the entropy crossing back above the target and is 0 soon after
    (a plain integral would have accumulated ki * e * 200 and stayed pinned for ~100 steps)."""
    cfg = AutoWeightConfig()
    ctrl = AutoWeightController(TARGET, cfg)
    true_x, _, weights = run_plant(ctrl, 400, w_star=1000.0, x0=1.0, drift_at=lambda t: DRIFT if t < 200 else -0.01)
    assert all(w == pytest.approx(cfg.auto_w_max) for w in weights[80:200])
    assert ctrl.integral <= cfg.u_max
    back = next(t for t in range(200, 400) if true_x[t] > 1.0)
    released = next(t for t in range(back, 400) if weights[t] < cfg.auto_w_max)
    assert released - back <= 3
    assert weights[back + 30] == 1.0


def test_one_warning_when_w_stays_at_its_bound(caplog):
    """50 consecutive steps at W = w_max below the target: one warning naming the bound and the remedy; a step
    back above the target resets the count; never a second warning."""
    import logging

    ctrl = AutoWeightController(TARGET)
    with caplog.at_level(logging.WARNING, logger="stare_rl.methods.stare.auto"):
        for t in range(400):
            ctrl.update(StepObservation(entropy=0.05, step=t))
    warnings = [r for r in caplog.records if "run out of authority" in r.getMessage()]
    assert len(warnings) == 1 and "auto_w_max=50.0" in warnings[0].getMessage()
    assert "stare_sensitivity" in warnings[0].getMessage()
    assert "auto_fallback 'bonus'" in warnings[0].getMessage() and "low auto_w_max" in warnings[0].getMessage()
    page, section = "docs/controller.md", "## The authority map"  # the warning's pointer to the map exists
    assert f"{page}, '{section[3:]}'" in warnings[0].getMessage()
    assert section in (Path(__file__).resolve().parents[3] / page).read_text()
    quiet = AutoWeightController(TARGET)  # W reaches its bound but the entropy keeps crossing back: no warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="stare_rl.methods.stare.auto"):
        for t in range(400):
            quiet.update(StepObservation(entropy=0.05 if t % 40 else 0.6, step=t))
    assert quiet.metrics()["auto_saturated_high"] == 1.0
    assert not [r for r in caplog.records if "run out of authority" in r.getMessage()]


def test_rate_limit():
    cfg = AutoWeightConfig(auto_kp=100.0, auto_ki=1.0, auto_smoothing=0.0, auto_rate_limit=0.1)
    ctrl = AutoWeightController(TARGET, cfg)
    previous = 0.0
    for t, h in enumerate([0.0] * 40 + [1.0] * 40 + [0.1, 0.5] * 20):
        ctrl.update(StepObservation(entropy=h, step=t))
        assert abs(ctrl.strength - previous) <= 0.1 + 1e-12
        previous = ctrl.strength
    assert 0.0 <= ctrl.strength <= cfg.u_max


def test_state_round_trip_is_exact():
    """Resume mid-run from a JSON round trip of the state: the rest of the trajectory is identical."""
    rng = random.Random(1)
    entropies = [max(0.3 + 0.05 * rng.gauss(0, 1) - 0.0005 * t, 0.0) for t in range(120)]
    full = AutoWeightController(TARGET)
    resumed = AutoWeightController(TARGET)
    for t, h in enumerate(entropies[:60]):
        full.update(StepObservation(entropy=h, step=t))
        resumed.update(StepObservation(entropy=h, step=t))
    state = json.loads(json.dumps(resumed.state_dict()))
    resumed = AutoWeightController(TARGET)
    resumed.load_state_dict(state)
    assert resumed.metrics() == full.metrics()
    for t, h in enumerate(entropies[60:], start=60):
        full.update(StepObservation(entropy=h, step=t))
        resumed.update(StepObservation(entropy=h, step=t))
        assert resumed.metrics() == full.metrics()
        assert resumed.context() == full.context()


def test_state_of_other_settings_is_rejected():
    ctrl = AutoWeightController(TARGET, AutoWeightConfig(auto_kp=4.0))
    other = AutoWeightController(TARGET)
    with pytest.raises(ValueError, match="auto_kp: saved 4.0, requested 16.0"):
        other.load_state_dict(ctrl.state_dict())
    with pytest.raises(ValueError, match="target_entropy: saved 0.3, requested 0.2"):
        AutoWeightController(0.2).load_state_dict(other.state_dict())


@pytest.mark.parametrize(
    ("field", "value"),
    [("auto_kp", -1.0), ("auto_ki", float("nan")), ("auto_w_max", 1.0), ("auto_w_max", float("inf")), ("auto_m_min", 0.0),
     ("auto_m_min", 1.5), ("auto_rate_limit", 0.0), ("auto_smoothing", 1.0), ("auto_smoothing", -0.1)],
)
def test_bad_settings_name_field_and_value(field, value):
    with pytest.raises(ValueError, match=f"{field}={value!r}".replace("(", r"\(").replace(")", r"\)")):
        AutoWeightConfig(**{field: value})


def test_bad_target_and_entropy():
    with pytest.raises(ValueError, match="target_entropy=-0.1"):
        AutoWeightController(-0.1)
    with pytest.raises(ValueError, match="auto_kp=0 and auto_ki=0"):
        AutoWeightConfig(auto_kp=0.0, auto_ki=0.0)
    ctrl = AutoWeightController(TARGET)
    for bad in (float("nan"), float("inf"), -0.5):
        with pytest.raises(ValueError, match="entropy="):
            ctrl.update(StepObservation(entropy=bad, step=0))


@pytest.mark.parametrize("target", [0.0, 0.3])
def test_no_nan_at_zero_entropy_or_zero_target(target):
    ctrl = AutoWeightController(target)
    for t, h in enumerate([0.0, 0.0, 0.5, 0.0, 1e-9, -1e-8, 0.0]):  # -1e-8: float rounding of a zero entropy
        ctrl.update(StepObservation(entropy=h, step=t))
        values = list(ctrl.metrics().values()) + [ctrl.reweight_w, ctrl.reweight_m]
        assert all(math.isfinite(v) for v in values)
    if target == 0.0:  # target 0: never below it, so never re-weighting (like the hard gate: h < 0 is never true)
        assert ctrl.strength == 0.0 and ctrl.reweight_w == 1.0
    else:  # H = 0 is the largest possible error (+1)
        assert ctrl.strength > 0.0


def test_metrics_cover_every_internal_quantity():
    ctrl = AutoWeightController(TARGET)
    ctrl.update(StepObservation(entropy=0.2, step=0))
    m = ctrl.metrics()
    for key in ("reweight_w", "reweight_m", "gate_on", "auto_strength", "auto_error", "auto_integral",
                "auto_p_term", "target_entropy", "auto_saturated_high", "auto_saturated_low",
                "auto_rate_limited"):
        assert isinstance(m[key], float), key
    assert "auto_target" not in m  # the target is logged once, as control/target_entropy
    assert m["auto_strength"] == pytest.approx(math.log(m["reweight_w"]))


# ----- wiring: weight_control='auto' on the STARE-style methods, through the one StepController -----

def _entropy_batch(level: float):
    """A random batch whose token-mean entropy is ``level`` (the StepController measures it)."""
    import dataclasses

    import torch

    from _core_batches import random_batch

    batch = random_batch(3, b=6, t=10)
    return dataclasses.replace(batch, entropy=torch.full_like(batch.log_prob, level).detach())


@pytest.mark.parametrize("method", ["stare", "stare_sensitivity"])
def test_auto_replaces_the_gate_and_sets_w_m(method):
    import torch

    from stare_rl import SurrogateConfig, compute_loss, make_config
    from stare_rl.control.step import StepController
    from stare_rl.core.types import LossContext

    cfg = make_config(method, variant="C2", weight_control="auto")
    sc = StepController(method, cfg)
    assert set(sc.controllers) == {"auto"} and sc.needs_entropy
    above = sc.begin_step([_entropy_batch(0.5)], 0)  # above the target 0.3: vanilla, gate off
    assert above.get("gate_on") is False and above.get("reweight_w") == 1.0 and above.get("reweight_m") == 1.0
    batch = _entropy_batch(0.5)
    ref = compute_loss("vanilla", batch, surrogate=SurrogateConfig())
    out = compute_loss(method, batch, cfg, SurrogateConfig(), above)
    assert torch.equal(out.token_loss, ref.token_loss)
    for step in (1, 2, 3):  # below: the smoothed error turns positive, strength > 0, W = 1 / M
        below = sc.begin_step([_entropy_batch(0.2)], step)
    w, m = below.get("reweight_w"), below.get("reweight_m")
    assert below.get("gate_on") is True and w > 1.0 and m == pytest.approx(1.0 / w)
    fixed = make_config(method, variant="C2", reweight_w=w, reweight_m=m)  # the same weights, given by hand
    out = compute_loss(method, batch, cfg, SurrogateConfig(), below)
    by_hand = compute_loss(method, batch, fixed, SurrogateConfig(), LossContext(stats={"gate_on": True}))
    assert torch.equal(out.token_loss, by_hand.token_loss)
    assert sc.metrics()["auto_strength"] == pytest.approx(math.log(w))
    assert set(json.loads(json.dumps(sc.state_dict()))) == {"auto"}


@pytest.mark.parametrize(
    ("field", "value"),
    [("auto_kp", -2.0), ("auto_ki", float("inf")), ("auto_w_max", 0.5), ("auto_m_min", 2.0),
     ("auto_rate_limit", -1.0), ("auto_smoothing", 1.0)],
)
def test_method_config_names_the_auto_field(field, value):
    from stare_rl import make_config

    for method in ("stare", "stare_sensitivity"):
        with pytest.raises(ValueError, match=f"{field}={value!r}"):
            make_config(method, weight_control="auto", **{field: value})
    with pytest.raises(ValueError, match="weight_control='pid' is not one of"):
        make_config("stare", weight_control="pid")
