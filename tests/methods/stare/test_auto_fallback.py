"""``auto_fallback: bonus``: the ``auto`` controller's second actuator (an entropy bonus) in split range.

Hand-derived cases of the law in stare_rl.methods.stare.auto (docs/methods.md, "When the selection runs out of
authority"): one PI demand u in [0, log w_max + s]; W = exp(min(u, log w_max)); the bonus coefficient
c = auto_bonus_max * clip((u - log w_max) / s, 0, 1), s = auto_bonus_span (unset: log w_max); anti-windup at the top
of the whole range.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from stare_rl.control.base import StepObservation
from stare_rl.control.setup import LossSetup, bonus_controllers
from stare_rl.core.entropy_bonus import EntropyBonusConfig
from stare_rl.core.registry import compute_loss, get_method
from stare_rl.core.types import LossContext, TokenBatch
from stare_rl.methods.stare.auto import AutoWeightConfig, AutoWeightController
from stare_rl.methods.stare.config import StareConfig, auto_weight_config
from stare_rl.methods.stare.sensitivity import StareSensitivityConfig

E = math.e  # auto_w_max = e: u_max = log W_max = 1, so the whole range is [0, 2]


def controller(fallback: str = "bonus", bonus_max: float = 0.2) -> AutoWeightController:
    """PI with k_p = 0, k_i = 0.5, no smoothing, no rate limit: u_t = I_t, one integral step of 0.5 * e per step."""
    cfg = AutoWeightConfig(auto_kp=0.0, auto_ki=0.5, auto_smoothing=0.0, auto_rate_limit=10.0, auto_w_max=E,
                           auto_m_min=0.01, auto_fallback=fallback, auto_bonus_max=bonus_max)
    return AutoWeightController(1.0, cfg)  # absolute target 1.0: H = 0.5 gives e = +0.5, H = 1.5 gives e = -0.5


def drive(ctrl: AutoWeightController, entropies: list[float]) -> list[tuple[float, float, float, int]]:
    """(u, W, c, actuator) after each step."""
    out = []
    for t, h in enumerate(entropies):
        ctrl.update(StepObservation(entropy=h, step=t))
        out.append((ctrl.strength, ctrl.reweight_w, ctrl.entropy_coef, ctrl.actuator))
    return out


def test_the_bonus_takes_only_the_demand_w_cannot_meet() -> None:
    trace = drive(controller(), [0.5] * 9)  # e = 0.5: the integral grows by 0.25 per step
    u = [row[0] for row in trace]
    assert u == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.0])  # held at the top: anti-windup
    for strength, w, c, actuator in trace[:4]:  # first half of the range: W alone, exp(u), no bonus
        assert w == pytest.approx(math.exp(strength)) and c == 0.0 and actuator == 1
    for strength, w, c, actuator in trace[4:]:  # second half: W at its bound, c = 0.2 * (u - 1)
        assert w == pytest.approx(E) and c == pytest.approx(0.2 * (strength - 1.0)) and actuator == 2
    assert trace[-1][2] == pytest.approx(0.2)  # auto_bonus_max


def test_the_bonus_is_handed_back_before_w_is_lowered() -> None:
    ctrl = controller()
    drive(ctrl, [0.5] * 8)  # u = 2: W = e, c = 0.2
    trace = drive(ctrl, [1.5] * 8)  # e = -0.5: the demand falls by 0.25 per step
    u = [row[0] for row in trace]
    assert u == pytest.approx([1.75, 1.5, 1.25, 1.0, 0.75, 0.5, 0.25, 0.0])
    c = [row[2] for row in trace]
    assert c == pytest.approx([0.15, 0.1, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0])  # the bonus goes first ...
    w = [row[1] for row in trace]
    assert w[:4] == pytest.approx([E] * 4)  # ... while W stays at its bound
    assert w[4:] == pytest.approx([math.exp(0.75), math.exp(0.5), math.exp(0.25), 1.0])  # then W
    assert [row[3] for row in trace] == [2, 2, 2, 1, 1, 1, 1, 0]  # 0: vanilla


def test_without_the_fallback_the_law_is_unchanged() -> None:
    plain = AutoWeightController(1.0, AutoWeightConfig(auto_kp=0.0, auto_ki=0.5, auto_smoothing=0.0,
                                                       auto_rate_limit=10.0, auto_w_max=E, auto_m_min=0.01))
    none = controller("none", bonus_max=1.0)  # the default: the states compare equal field for field
    for t, h in enumerate([0.5] * 6 + [1.5] * 3):
        for ctrl in (plain, none):
            ctrl.update(StepObservation(entropy=h, step=t))
        assert none.state_dict() == plain.state_dict() and none.metrics() == plain.metrics()
        assert "entropy_coef" not in none.context() and none.entropy_coef == 0.0
    assert plain.strength == pytest.approx(0.25)  # held at u_max = 1 while below, then 3 steps of -0.25


def test_metrics_say_which_actuator_acts() -> None:
    ctrl = controller()
    drive(ctrl, [0.5] * 5)
    m = ctrl.metrics()
    assert m["entropy_coef"] == pytest.approx(0.05) and m["auto_actuator"] == 2.0
    assert ctrl.context()["entropy_coef"] == pytest.approx(0.05)


def test_state_round_trip_and_settings_check() -> None:
    a, b = controller(), controller()
    drive(a, [0.5] * 6)
    b.load_state_dict(a.state_dict())
    assert drive(a, [0.7, 1.2, 0.4]) == drive(b, [0.7, 1.2, 0.4])
    with pytest.raises(ValueError, match="auto_fallback: saved 'bonus', requested 'none'"):
        controller("none").load_state_dict(a.state_dict())
    old = {k: v for k, v in controller("none").state_dict().items() if k not in ("auto_fallback", "auto_bonus_max")}
    controller("none").load_state_dict(old)  # a checkpoint written before the fallback existed loads


def test_the_bonus_bound_defines_the_state_only_when_the_bonus_can_act() -> None:
    """auto_bonus_max is inert without the fallback: a run saved with auto_fallback none resumes under another
    bound (the default moved from 0.1 to 1.0, and grids do not spell it); with the bonus on it is refused."""
    saved = controller("none", bonus_max=0.1).state_dict()
    controller("none", bonus_max=1.0).load_state_dict(saved)  # accepted
    with pytest.raises(ValueError, match=r"auto_bonus_max: saved 0\.1, requested 1\.0"):
        controller("bonus", bonus_max=1.0).load_state_dict(controller("bonus", bonus_max=0.1).state_dict())
    assert "auto_bonus_max" not in controller("none").settings and "auto_bonus_max" in controller("bonus").settings
    assert AutoWeightConfig().auto_bonus_max == 1.0  # TRL's own adaptive entropy bound


def test_an_unset_w_bound_follows_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """auto_w_max unset: W_MAX_ALONE (50) without a fallback; with the bonus, HAND_OFF_W, where the bonus takes over
    (rule D of the authority map chooses it). It is its own value: set to 3, W alone keeps 50. A value given is
    kept either way, and the STARE configs hold the bound the run uses (config.yaml logs it)."""
    from stare_rl.methods.stare import auto

    assert AutoWeightConfig().auto_w_max == auto.W_MAX_ALONE == 50.0
    assert AutoWeightConfig(auto_fallback="bonus").auto_w_max == auto.HAND_OFF_W
    monkeypatch.setattr(auto, "HAND_OFF_W", 3.0)
    assert AutoWeightConfig(auto_fallback="bonus").auto_w_max == 3.0
    assert AutoWeightConfig(auto_fallback="none").auto_w_max == 50.0
    assert AutoWeightConfig(auto_fallback="bonus", auto_w_max=20.0).auto_w_max == 20.0
    for cls in (StareConfig, StareSensitivityConfig):
        assert cls(weight_control="auto", auto_fallback="bonus").auto_w_max == 3.0
        assert cls(weight_control="auto").auto_w_max == 50.0
    ctrl = AutoWeightController(0.3, AutoWeightConfig(auto_fallback="bonus"))
    assert ctrl.config.u_max == pytest.approx(math.log(3.0)) and ctrl.config.demand_max == pytest.approx(math.log(9.0))
    with pytest.raises(ValueError, match=r"auto_fallback='entropy'"):  # the fallback is checked before it is read
        AutoWeightConfig(auto_fallback="entropy")


def test_the_w_bound_the_run_uses_reaches_every_surface(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """TRL's StareGRPOConfig and `stare train` leave auto_w_max unset (None = the method's default) and build the
    method config with the bound resolved from the fallback; `stare train`'s config.yaml holds the number."""
    from stare_rl.methods.stare import auto
    from stare_rl.train.plan import plan_run
    from stare_rl.trl import StareGRPOConfig

    monkeypatch.setattr(auto, "HAND_OFF_W", 3.0)
    args = StareGRPOConfig(output_dir=str(tmp_path / "api"), method="stare", weight_control="auto",
                           auto_fallback="bonus", report_to="none")
    assert args.auto_w_max is None and args.loss_setup().method_config.auto_w_max == 3.0
    plan = plan_run(["--method", "stare_sensitivity", "--weight_control", "auto", "--auto_fallback", "bonus",
                     "--output_dir", str(tmp_path / "cli")])
    assert plan.setup.method_config.auto_w_max == 3.0 and plan.explicit["auto_w_max"] == 3.0
    plan = plan_run(["--method", "stare", "--weight_control", "auto", "--output_dir", str(tmp_path / "alone")])
    assert plan.explicit["auto_w_max"] == 50.0
    # auto_bonus_span the same way: unset, log of the bound in use; given on the command line, kept
    assert args.loss_setup().method_config.auto_bonus_span == pytest.approx(math.log(3.0))
    plan = plan_run(["--method", "stare", "--weight_control", "auto", "--auto_fallback", "bonus", "--auto_w_max", "3",
                     "--auto_bonus_span", "3.912", "--output_dir", str(tmp_path / "span")])
    assert plan.setup.method_config.auto_bonus_span == 3.912 and plan.explicit["auto_bonus_span"] == 3.912


def test_the_bonus_span_sets_the_bonus_gain_apart_from_w_bound() -> None:
    """auto_bonus_span s = 2 with u_max = 1: the range is [0, 3], c = 0.2 (u - 1) / 2, anti-windup at 3."""
    cfg = AutoWeightConfig(auto_kp=0.0, auto_ki=0.5, auto_smoothing=0.0, auto_rate_limit=10.0, auto_w_max=E,
                           auto_m_min=0.01, auto_fallback="bonus", auto_bonus_max=0.2, auto_bonus_span=2.0)
    ctrl = AutoWeightController(1.0, cfg)
    assert cfg.demand_max == pytest.approx(3.0)
    trace = drive(ctrl, [0.5] * 13)  # e = 0.5: +0.25 per step up to the top, 3
    assert [row[0] for row in trace] == pytest.approx([0.25 * k for k in range(1, 13)] + [3.0])
    for strength, w, c, _ in trace:
        assert w == pytest.approx(math.exp(min(strength, 1.0)))
        assert c == pytest.approx(0.2 * min(max(strength - 1.0, 0.0), 2.0) / 2.0)
    assert trace[5][2] == pytest.approx(0.05) and trace[-1][2] == pytest.approx(0.2)  # u = 1.5: a quarter of the span
    back = drive(ctrl, [1.5] * 4)  # e = -0.5: down by 0.25 per step, through the bonus's half first
    assert [row[2] for row in back] == pytest.approx([0.175, 0.15, 0.125, 0.1]) and back[-1][1] == pytest.approx(E)


def test_with_a_low_w_bound_the_span_sets_how_fast_the_bonus_can_swing() -> None:
    """At W <= 3 and the rate limit 0.25 the demand climbs u_t = 0.25 t. The bonus first acts at t = 5 (1.25 > log 3
    = 1.099) and reaches auto_bonus_max at the first t with 0.25 t >= log 3 + s: t = 9 (2.25 >= 2.197) for s = log 3,
    5 steps of ramp; t = 21 (5.25 >= 5.011) for s = log 50, 17 steps."""
    def steps_to_full(span: float | None) -> int:
        cfg = AutoWeightConfig(auto_kp=100.0, auto_ki=0.0, auto_smoothing=0.0, auto_rate_limit=0.25, auto_w_max=3.0,
                               auto_fallback="bonus", auto_bonus_span=span)
        ctrl = AutoWeightController(1.0, cfg)
        trace = drive(ctrl, [0.5] * 40)  # e = 0.5: the P term alone asks for 50, far above the top
        handed = next(t for t, row in enumerate(trace) if row[2] > 0.0)  # the first step the bonus acts
        full = next(t for t, row in enumerate(trace) if row[2] >= cfg.auto_bonus_max - 1e-12)
        assert trace[handed - 1][1] == pytest.approx(3.0, rel=0.3)  # W near its bound when the bonus starts
        return full - handed + 1

    assert steps_to_full(None) == 5
    assert steps_to_full(math.log(50.0)) == 17


def test_an_unset_bonus_span_is_w_half(monkeypatch: pytest.MonkeyPatch) -> None:
    """auto_bonus_span unset: log auto_w_max (BONUS_SPAN None), so every run before the setting existed is
    unchanged; BONUS_SPAN set (rule D's choice) replaces it; a value given is kept. The configs hold it."""
    from stare_rl.methods.stare import auto

    assert auto.BONUS_SPAN is None
    assert AutoWeightConfig(auto_fallback="bonus", auto_w_max=3.0).auto_bonus_span == pytest.approx(math.log(3.0))
    assert AutoWeightConfig().auto_bonus_span == pytest.approx(math.log(50.0))
    assert AutoWeightConfig(auto_fallback="bonus", auto_bonus_span=2.5).auto_bonus_span == 2.5
    monkeypatch.setattr(auto, "BONUS_SPAN", math.log(50.0))
    assert AutoWeightConfig(auto_fallback="bonus", auto_w_max=3.0).auto_bonus_span == pytest.approx(math.log(50.0))
    for cls in (StareConfig, StareSensitivityConfig):
        cfg = cls(weight_control="auto", auto_fallback="bonus", auto_w_max=3.0)
        assert cfg.auto_bonus_span == pytest.approx(math.log(50.0))
        assert AutoWeightController(0.3, auto_weight_config(cfg)).config.demand_max == pytest.approx(math.log(150.0))


def test_the_bonus_span_defines_the_state_only_when_the_bonus_can_act() -> None:
    def ctrl(fallback: str, span: float | None) -> AutoWeightController:
        return AutoWeightController(1.0, AutoWeightConfig(auto_w_max=3.0, auto_fallback=fallback, auto_bonus_span=span))

    assert "auto_bonus_span" in ctrl("bonus", None).settings and "auto_bonus_span" not in ctrl("none", None).settings
    ctrl("none", 2.0).load_state_dict(ctrl("none", None).state_dict())  # inert without the bonus
    with pytest.raises(ValueError, match=r"auto_bonus_span: saved 1\.09\d*, requested 3\.91"):
        ctrl("bonus", math.log(50.0)).load_state_dict(ctrl("bonus", None).state_dict())
    # a checkpoint saved before the span existed had the bonus's half as wide as W's: it resumes unset, not changed
    old = {k: v for k, v in ctrl("bonus", None).state_dict().items() if k != "auto_bonus_span"}
    ctrl("bonus", None).load_state_dict(old)
    with pytest.raises(ValueError, match="auto_bonus_span: saved"):
        ctrl("bonus", math.log(50.0)).load_state_dict(old)


@pytest.mark.parametrize("field, value", [("auto_fallback", "entropy"), ("auto_bonus_max", 0.0),
                                          ("auto_bonus_max", float("nan")), ("auto_bonus_max", -1.0),
                                          ("auto_bonus_span", 0.0), ("auto_bonus_span", float("inf")),
                                          ("auto_bonus_span", -1.0), ("auto_bonus_span", True)])
def test_bad_settings_name_field_and_value(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        StareConfig(weight_control="auto", **{field: value})


def batch(seed: int = 0) -> TokenBatch:
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(2, 4, 5, generator=g, requires_grad=True)
    logp_all = torch.log_softmax(logits, -1)
    actions = torch.randint(0, 5, (2, 4), generator=g)
    log_prob = logp_all.gather(-1, actions[..., None])[..., 0]
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    adv = torch.tensor([[1.0] * 4, [-1.0] * 4]) * mask
    return TokenBatch(log_prob, log_prob.detach(), adv, mask, entropy)


@pytest.mark.parametrize("method, cls", [("stare", StareConfig), ("stare_sensitivity", StareSensitivityConfig)])
def test_loss_adds_minus_c_h_on_valid_tokens(method: str, cls: type) -> None:
    b = batch()
    cfg = cls(variant="C2", weight_control="auto", auto_fallback="bonus")
    base = LossContext(stats={"gate_on": True, "reweight_w": E, "reweight_m": 1 / E})
    with_bonus = LossContext(stats={**base.stats, "entropy_coef": 0.05})
    plain = compute_loss(method, b, cfg, context=base).token_loss
    out = compute_loss(method, b, cfg, context=with_bonus).token_loss
    expected = plain - 0.05 * b.entropy * b.mask
    assert torch.allclose(out, expected, atol=1e-7)
    assert torch.equal(out[b.mask == 0], plain[b.mask == 0])  # padding untouched


def test_zero_coefficient_adds_nothing_and_missing_entropy_is_named() -> None:
    b = batch()
    cfg = StareConfig(variant="C2", weight_control="auto", auto_fallback="bonus")
    ctx = LossContext(stats={"gate_on": True, "reweight_w": 2.0, "reweight_m": 0.5, "entropy_coef": 0.0})
    assert torch.equal(compute_loss("stare", b, cfg, context=ctx).token_loss,
                       compute_loss("stare", b, StareConfig(variant="C2", weight_control="auto"), context=ctx).token_loss)
    no_h = TokenBatch(b.log_prob, b.old_log_prob, b.advantages, b.mask, None)
    with pytest.raises(ValueError, match="needs batch.entropy"):
        compute_loss("stare", no_h, cfg, context=ctx)


def test_the_entropy_trait_follows_the_setting() -> None:
    stare = get_method("stare")
    assert not stare.entropy_needed(StareConfig()) and not stare.entropy_needed(StareConfig(weight_control="auto"))
    assert stare.entropy_needed(StareConfig(weight_control="auto", auto_fallback="bonus"))
    assert not stare.entropy_needed(StareConfig(weight_control="fixed", auto_fallback="bonus"))  # auto only
    assert get_method("stare_sensitivity").entropy_needed(StareSensitivityConfig())


def test_two_bonus_controllers_are_refused() -> None:
    cfg = StareConfig(variant="C2", weight_control="auto", auto_fallback="bonus")
    assert bonus_controllers("stare", cfg) == ["auto"]
    assert bonus_controllers("stare", StareConfig(weight_control="auto")) == []
    with pytest.raises(ValueError, match="entropy_bonus='fixed'.*auto_fallback='bonus'"):
        LossSetup("stare", cfg, entropy_bonus=EntropyBonusConfig())
    with pytest.raises(ValueError, match="entropy_bonus='adaptive'"):
        LossSetup("stare", cfg, adaptive_entropy={"target_entropy": 0.3})


def fallback_trainer(out: Path, **grpo: object) -> object:
    """A real TRL STARE C2 trainer whose target (3x the start) drives W to its bound (1.5) in two steps, with the
    bonus as the fallback (cap 0.5); ``grpo`` overrides the GRPO settings (tests/test_cuda.py: ``use_cpu=False``)."""
    from datasets import Dataset

    from stare_rl.engines.trl.config import StareGRPOConfig
    from stare_rl.engines.trl.trainer import StareGRPOTrainer
    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer
    from stare_rl.tasks import get_task

    task = get_task("arithmetic")
    tok = build_char_tokenizer(task.alphabet)
    model = build_tiny_model(tok, hidden_size=32, num_layers=2, num_heads=2, seed=0)

    def digits(prompts: list, completions: list, **kwargs: object) -> list[float]:
        return [sum(ch.isdigit() for ch in text) / max(len(text), 1) for text in completions]

    settings: dict = dict(
        method="stare", variant="C2", weight_control="auto", target_entropy="3x", auto_w_max=1.5,
        auto_fallback="bonus", auto_bonus_max=0.5, quadrant_metrics=False,
        output_dir=str(out), per_device_train_batch_size=16, num_generations=4, max_completion_length=5,
        learning_rate=1e-3, max_steps=4, save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True,
        report_to="none", lr_scheduler_type="constant",
    )
    args = StareGRPOConfig(**{**settings, **grpo})
    return StareGRPOTrainer(model=model, reward_funcs=digits, args=args, processing_class=tok,
                            train_dataset=Dataset.from_list(task.make_split("train", 64, 0)))


@pytest.mark.slow
def test_trl_run_hands_the_demand_to_the_bonus(tmp_path: Path) -> None:
    """Real TRL: a target far above the start drives W to its bound (1.5) in two steps; then the bonus acts, the
    entropy is computed with its gradient and each step logs which actuator acted."""
    trainer = fallback_trainer(tmp_path)
    trainer.train()
    logs = [r for r in trainer.state.log_history if "loss" in r]
    assert [r["control/auto_actuator"] for r in logs] == [1.0, 2.0, 2.0, 2.0]  # u: 0.25, 0.5, 0.75, 1.0 > log 1.5
    coefs = [r["control/entropy_coef"] for r in logs]
    u_max = math.log(1.5)
    assert coefs == pytest.approx([0.5 * min(max((u - u_max) / u_max, 0.0), 1.0) for u in (0.25, 0.5, 0.75, 1.0)])
    assert all(r["control/reweight_w"] == pytest.approx(1.5) for r in logs[1:])
