"""The one-time warning for an absolute entropy target set for another model's entropy (issue 41: SmolLM2 starts at
~2-3 nats at temperature 1, the STARE default target is 0.3, so the gate would never open and nothing said so)."""

from __future__ import annotations

import logging

import pytest
import torch

from stare_rl.control.step import FAR_TARGET_RATIO, StepController, far_target_warnings
from stare_rl.core.types import TokenBatch
from stare_rl.methods.stare.config import StareConfig


def _controllers(target: float | str) -> dict:
    return StepController("stare", StareConfig(target_entropy=target)).controllers


@pytest.mark.parametrize("target, start, warned", [
    (0.3, 2.0, True),     # 6.7x above: the gate never opens
    (0.3, 0.9, True),     # exactly 3x: warned
    (0.3, 0.89, False),   # just under 3x
    (0.3, 0.1, True),     # 3x below: always on
    (0.3, 0.11, False),
    ("0.5x", 2.0, False),  # relative targets follow the start
    (0.0, 0.5, True),     # a zero target is infinitely far
])
def test_far_absolute_targets_are_named_once_with_the_ratio(target: float | str, start: float, warned: bool) -> None:
    lines = far_target_warnings(_controllers(target), start)
    assert bool(lines) == warned
    if warned:
        assert all("is absolute and the policy's starting batch entropy is" in line for line in lines)
        assert lines[0].startswith("gate: target_entropy=") and "0.5x" in lines[0]


def test_the_step_controller_warns_at_the_first_measurement_only(caplog: pytest.LogCaptureFixture) -> None:
    ctrl = StepController("stare", StareConfig(target_entropy=0.3))
    mask = torch.ones(2, 3)
    batch = TokenBatch(log_prob=torch.zeros(2, 3), old_log_prob=torch.zeros(2, 3), advantages=torch.ones(2, 3),
                       mask=mask, entropy=torch.full((2, 3), FAR_TARGET_RATIO * 0.3 + 1.0))
    with caplog.at_level(logging.WARNING, logger="stare_rl.control.step"):
        ctrl.update(batch, step=0)
        ctrl.update(batch, step=1)
    warned = [r for r in caplog.records if "is absolute" in r.getMessage()]
    assert len({r.getMessage().split(":")[0] for r in warned}) == len(warned) >= 1  # one line per controller
    assert len(warned) == len([n for n in ctrl.controllers if hasattr(ctrl.controllers[n], "target")])
