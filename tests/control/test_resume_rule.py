"""One resume rule for every controller: a saved controller state whose state-defining settings differ from the
requested ones is refused, naming the field and both values (docs/train.md, "Resuming").

Every controller that any registered method declares (and the set-up's adaptive entropy bonus) is covered by
the generic test; each one also has a hand-built saved state with a changed target."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from stare_rl.control.base import AdaptiveEntropyCoef, StepObservation, setting_differences
from stare_rl.control.step import StepController
from stare_rl.control.target import setting_value
from stare_rl.core.registry import get_method, list_methods, make_config
from stare_rl.io.runlog import CONTROLLER_FILE
from stare_rl.methods.entrocraft import EntrocraftBand
from stare_rl.methods.entropic import EntroPICController
from stare_rl.methods.stare.auto import AutoWeightConfig, AutoWeightController
from stare_rl.methods.stare.config import WEIGHT_CONTROLS
from stare_rl.methods.stare.gate import StareGate, StareWeightSchedule


def _all_controllers() -> list[tuple[str, Any]]:
    """``(label, fresh controller)`` for every controller of every registered method (each weight_control) and
    the adaptive entropy bonus."""
    out: list[tuple[str, Any]] = [("adaptive_entropy", AdaptiveEntropyCoef())]
    for method in list_methods():
        spec = get_method(method)
        fields = {f.name for f in dataclasses.fields(spec.config_cls)}
        variants = WEIGHT_CONTROLS if "weight_control" in fields else (None,)
        for wc in variants:
            cfg = make_config(method, **({} if wc is None else {"weight_control": wc}))
            for name, ctrl in spec.make_controllers(cfg).items():
                out.append((f"{method}/{wc}/{name}", ctrl))
    return out


CONTROLLERS = _all_controllers()


def _changed(value: Any) -> Any:
    if isinstance(value, dict) and "spec" in value:  # a target's saved state: another spelling
        return {**value, "spec": _changed(value["spec"])}
    if isinstance(value, str):
        return "0.25x" if value.endswith("x") and value != "0.25x" else value + "-other"
    return (not value) if isinstance(value, bool) else value + 0.125


def test_every_controller_declares_settings_present_in_its_state() -> None:
    kinds = {type(c) for _, c in CONTROLLERS}
    assert {StareGate, StareWeightSchedule, AutoWeightController, EntroPICController, AdaptiveEntropyCoef,
            EntrocraftBand} <= kinds
    for label, ctrl in CONTROLLERS:
        assert ctrl.settings, label
        state = ctrl.state_dict()
        assert set(ctrl.settings) <= set(state), (label, set(ctrl.settings) - set(state))
        assert "target_entropy" in ctrl.settings, label  # every controller here tracks an entropy target


@pytest.mark.parametrize(("label", "ctrl"), CONTROLLERS, ids=[label for label, _ in CONTROLLERS])
def test_each_changed_setting_is_refused_naming_field_and_both_values(label: str, ctrl: Any) -> None:
    saved = json.loads(json.dumps(ctrl.state_dict()))
    ctrl.load_state_dict(saved)  # the same settings: accepted
    for field in ctrl.settings:
        other = {**saved, field: _changed(saved[field])}
        with pytest.raises(ValueError) as err:
            ctrl.load_state_dict(other)
        message = f"{field}: saved {setting_value(other[field])!r}, requested {setting_value(saved[field])!r}"
        assert message in str(err.value), (label, str(err.value))
    assert ctrl.state_dict() == saved  # nothing was restored from a refused state


def _obs(h: float, step: int = 0) -> StepObservation:
    return StepObservation(entropy=h, step=step)


def test_gate_hand_built_state() -> None:
    gate = StareGate(0.5)
    gate.load_state_dict({"target_entropy": 0.5, "gate_on": True, "last_entropy": 0.2})
    assert (gate.gate_on, gate.last_entropy) == (True, 0.2)
    with pytest.raises(ValueError, match=r"target_entropy: saved 0\.3, requested 0\.5"):
        gate.load_state_dict({"target_entropy": 0.3, "gate_on": False, "last_entropy": 0.4})
    assert gate.target_entropy == 0.5  # before this rule, the saved 0.3 silently replaced the requested 0.5


def test_weight_schedule_hand_built_state() -> None:
    """Today's layout (each setting under its config name, the current W and M as ``w``/``m``), and checkpoints
    written before it (``alpha``, ``w_max``, ``m_min``, ``init_w``/``init_m``, the current W/M as ``reweight_w``/
    ``reweight_m``), read through ``upgrade_state``."""
    sch = StareWeightSchedule(reweight_w=1.1, reweight_m=0.9, target_entropy=0.5, weight_alpha=0.01,
                              weight_w_max=1.5, weight_m_min=0.5)
    today = {"target_entropy": 0.5, "weight_alpha": 0.01, "weight_w_max": 1.5, "weight_m_min": 0.5,
             "reweight_w": 1.1, "reweight_m": 0.9, "w": 1.25, "m": 0.75}
    sch.load_state_dict(today)
    assert sch.context() == {"reweight_w": 1.25, "reweight_m": 0.75}
    assert {**sch.state_dict(), "target_entropy": 0.5} == today  # the target saves its own state
    with pytest.raises(ValueError, match=r"reweight_w: saved 1\.2, requested 1\.1"):
        sch.load_state_dict({**today, "reweight_w": 1.2})
    state = {"target_entropy": 0.5, "alpha": 0.01, "w_max": 1.5, "m_min": 0.5, "init_w": 1.1, "init_m": 0.9,
             "reweight_w": 1.3, "reweight_m": 0.7}
    sch.load_state_dict(state)
    assert sch.context() == {"reweight_w": 1.3, "reweight_m": 0.7}
    with pytest.raises(ValueError, match=r"target_entropy: saved 0\.3, requested 0\.5"):
        sch.load_state_dict({**state, "target_entropy": 0.3})
    with pytest.raises(ValueError, match=r"weight_alpha: saved 0\.02, requested 0\.01"):
        sch.load_state_dict({**state, "alpha": 0.02})
    with pytest.raises(ValueError, match=r"reweight_w: saved 1\.2, requested 1\.1"):  # the initial W
        sch.load_state_dict({**state, "init_w": 1.2})
    # a checkpoint written before the initial W/M were recorded: those two are not compared
    legacy = {k: v for k, v in state.items() if k not in ("init_w", "init_m")}
    sch.load_state_dict(legacy)
    assert (sch.w, sch.reweight_w) == (1.3, 1.1)


def test_auto_weight_hand_built_state_and_older_nested_layout() -> None:
    ctrl = AutoWeightController(0.5)
    ctrl.update(_obs(0.3))
    state = ctrl.state_dict()
    with pytest.raises(ValueError, match=r"target_entropy: saved 0\.3, requested 0\.5"):
        AutoWeightController(0.5).load_state_dict({**state, "target_entropy": 0.3})
    # the layout of older checkpoints: settings nested under "config", some under their short names
    nested = {k: v for k, v in state.items() if not k.startswith("auto_")}
    nested["config"] = {"kp": 16.0, "auto_ki": 0.5, "w_max": 50.0, "m_min": 0.02, "smoothing": 0.5,
                        "rate_limit": 0.25}
    resumed = AutoWeightController(0.5)
    resumed.load_state_dict(nested)
    assert resumed.metrics() == ctrl.metrics()
    with pytest.raises(ValueError, match=r"auto_kp: saved 4\.0, requested 16\.0"):
        AutoWeightController(0.5).load_state_dict({**nested, "config": {**nested["config"], "kp": 4.0}})
    assert "auto_kp" in AutoWeightController(0.5, AutoWeightConfig(auto_kp=4.0)).settings


def test_entropic_hand_built_state() -> None:
    ctrl = EntroPICController(0.5, kp=1.0, ki=0.01)
    state = {"target_entropy": 0.5, "kp": 1.0, "ki": 0.01, "alpha_max": 1.0, "anti_windup": True,
             "integral": 0.2, "alpha": 0.1, "error": 0.05, "entropy": 0.55}
    ctrl.load_state_dict(state)
    assert (ctrl.integral, ctrl.alpha) == (0.2, 0.1)
    with pytest.raises(ValueError, match=r"target_entropy: saved 0\.3, requested 0\.5"):
        ctrl.load_state_dict({**state, "target_entropy": 0.3})
    with pytest.raises(ValueError, match=r"anti_windup: saved False, requested True"):
        ctrl.load_state_dict({**state, "anti_windup": False})


def test_adaptive_entropy_hand_built_state() -> None:
    ctrl = AdaptiveEntropyCoef(target_entropy=0.5)
    today = {"target_entropy": 0.5, "bonus_step": 5e-4, "bonus_coef_min": 0.0, "bonus_coef_max": 0.01,
             "bonus_coef": 0.001, "entropy_coef": 0.003}
    ctrl.load_state_dict(today)
    assert ctrl.entropy_coef == 0.003 and {**ctrl.state_dict(), "target_entropy": 0.5} == today
    with pytest.raises(ValueError, match=r"bonus_step: saved 0\.001, requested 0\.0005"):
        ctrl.load_state_dict({**today, "bonus_step": 1e-3})
    # written before the settings took their config names: step, coef_min, coef_max, init; the current c as coef
    state = {"target_entropy": 0.5, "step": 5e-4, "coef_min": 0.0, "coef_max": 0.01, "init": 0.001, "coef": 0.004}
    ctrl.load_state_dict(state)
    assert ctrl.entropy_coef == 0.004
    with pytest.raises(ValueError, match=r"target_entropy: saved 0\.3, requested 0\.5"):
        ctrl.load_state_dict({**state, "target_entropy": 0.3})
    ctrl.load_state_dict({k: v for k, v in state.items() if k != "init"})  # older checkpoints: no "init"


def _saved(tmp_path: Path, ctrl: StepController) -> Path:
    ctrl.update(_as_batch(0.2), step=0)
    ctrl.save(tmp_path)
    return tmp_path


def _as_batch(h: float) -> Any:
    import torch

    from stare_rl.core.types import TokenBatch

    zeros = torch.zeros(1, 2)
    return TokenBatch(zeros, zeros, zeros, torch.ones(1, 2), entropy=torch.full((1, 2), h))


def _stare(**kw: Any) -> StepController:
    return StepController("stare", make_config("stare", **kw),
                          extra_controllers={"adaptive_entropy": AdaptiveEntropyCoef(target_entropy=0.3)})


def test_step_controller_check_checkpoint_lists_every_difference(tmp_path: Path) -> None:
    saved = _saved(tmp_path, _stare(weight_control="paper", target_entropy=0.3))
    _stare(weight_control="paper", target_entropy=0.3).check_checkpoint(saved)  # same settings: fine
    with pytest.raises(ValueError) as err:
        _stare(weight_control="paper", target_entropy=0.45).load(saved)
    msg = str(err.value)
    assert f"resume from {saved}" in msg
    assert "target_entropy: saved 0.3, requested 0.45 (controller 'gate')" in msg
    assert "target_entropy: saved 0.3, requested 0.45 (controller 'schedule')" in msg
    with pytest.raises(ValueError, match=r"controllers: saved \['adaptive_entropy', 'gate', 'schedule'\], "
                                         r"requested \['adaptive_entropy', 'auto'\]"):
        _stare(weight_control="auto", target_entropy=0.3).check_checkpoint(saved)
    with pytest.raises(ValueError, match=r"method: saved 'stare', requested 'entropic'"):
        StepController("entropic").check_checkpoint(saved)
    StepController("vanilla").check_checkpoint(tmp_path / "elsewhere")  # no controller file: nothing to check
    assert (saved / CONTROLLER_FILE).is_file()


def test_setting_differences_is_empty_for_the_same_settings() -> None:
    for label, ctrl in CONTROLLERS:
        assert setting_differences(ctrl, ctrl.state_dict()) == [], label
