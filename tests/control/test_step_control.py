"""The TRL adapter and the verl entry point share one StepController: for the same step batch, translated by each
adapter's own functions, they give the same LossContext statistics and the same saved controller state."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("trl")
pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

from tensordict import TensorDict  # noqa: E402
from test_verl_main import stare_config  # noqa: E402

import stare_rl.engines.verl.main as vm  # noqa: E402
from stare_rl.core.surrogate import SurrogateConfig  # noqa: E402
from stare_rl.engines.trl.batch import trl_step_batch  # noqa: E402
from stare_rl.engines.trl.options import StepOptions  # noqa: E402
from stare_rl.engines.verl import adapter as V  # noqa: E402
from stare_rl.io.runlog import CONTROLLER_FILE, read_json  # noqa: E402


def _step(seed: int, entropy_scale: float) -> dict[str, torch.Tensor]:
    """One step batch: 6 completions of up to 7 tokens, sequence advantages of both signs, ragged lengths."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([7, 3, 5, 1, 6, 4])
    mask = (torch.arange(7)[None, :] < lengths[:, None]).float()  # (6, 7)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5, 1.0, 0.0])  # (6,)
    logp = -torch.rand(6, 7, generator=g) * 3 - 0.01  # (6, 7)
    return {"mask": mask, "adv": adv, "logp": logp, "old": logp - 0.02,
            "entropy": torch.rand(6, 7, generator=g) * entropy_scale}


@pytest.mark.parametrize("entropy_scale", [0.2, 3.0])  # token-mean ~0.1 (gate on) and ~1.5 (gate off)
def test_trl_and_verl_give_the_same_context_and_saved_state(tmp_path: Path, entropy_scale: float) -> None:
    cfg = stare_config(tmp_path)  # STARE recipe: weight_control=paper, global selection scope (verl's default)
    policy_loss = cfg.actor_rollout_ref.actor.policy_loss
    method_cfg = V.method_config("stare", policy_loss)
    assert method_cfg.weight_control == "paper" and method_cfg.selection_scope == "global"

    # TRL: the trainer's StepController from the set-up; its translation of the completion batch
    trl_ctrl = StepOptions().loss_setup("stare", method_cfg, SurrogateConfig()).step_controller()
    # verl: the driver's StepController; the workers rebuild theirs from its state in the loss
    verl_ctrl = vm.step_controller(cfg)

    for step, seed in enumerate((0, 1, 2)):
        d = _step(seed, entropy_scale)
        inputs = {"completion_mask": d["mask"], "advantages": d["adv"], "stare_keep": torch.ones(6),
                  "stare_norm_tokens": d["mask"].sum(), "old_per_token_logps": d["old"]}
        trl_ctx = trl_ctrl.begin_step(trl_step_batch(inputs, d["logp"], d["entropy"]), step)

        td = TensorDict({"entropy": d["entropy"], "response_mask": d["mask"].long()}, batch_size=[6])
        verl_ctrl.update(vm.step_batch(td), step)  # the driver, once per step
        batch = V.verl_token_batch(d["old"], d["logp"], d["adv"][:, None] * d["mask"], d["mask"].long(), d["entropy"])
        state = V.StepState(controllers=verl_ctrl.state_dict(), entropy=d["entropy"])
        verl_ctx, logged = V.loss_context("stare", batch, method_cfg, policy_loss, state)  # a worker, per micro-batch
        assert logged == {}  # the exact path: the driver logs the controllers

        assert dict(trl_ctx.stats) == dict(verl_ctx.stats)
        assert trl_ctx.get("gate_on") is (entropy_scale < 1.0)
        assert trl_ctx.get("surprisal_threshold_pos") is not None  # global statistics present on both sides
        assert trl_ctrl.state_dict() == verl_ctrl.state_dict()
        assert trl_ctrl.metrics() == verl_ctrl.metrics()

    trl_ctrl.save(tmp_path / "trl")
    verl_ctrl.save(tmp_path / "verl")
    assert read_json(tmp_path / "trl" / CONTROLLER_FILE) == read_json(tmp_path / "verl" / CONTROLLER_FILE)
    assert (tmp_path / "trl" / CONTROLLER_FILE).read_text() == (tmp_path / "verl" / CONTROLLER_FILE).read_text()

