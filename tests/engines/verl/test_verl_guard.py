"""#23 item 6: a stare-rl loss that needs the exact entry point refuses under plain verl.trainer.main_ppo before
Ray starts, with the command to use instead (stare_rl.engines.verl.guard)."""

from __future__ import annotations

import copy
import functools
import os
import subprocess
import sys

import pytest

pytest.importorskip("verl")

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from stare_rl.engines.verl import adapter as V  # noqa: E402
from stare_rl.engines.verl import guard as G  # noqa: E402

TARGET = f"actor_rollout_ref.actor.policy_loss._target_={V.CONFIG_TARGET}"


@functools.cache
def _base():
    import verl.trainer.config as verl_config_pkg

    with initialize_config_dir(config_dir=os.path.dirname(verl_config_pkg.__file__), version_base=None):
        return compose(config_name="ppo_trainer", overrides=[TARGET])  # composed once: seconds


def verl_config(*overrides: str):
    """verl's config tree with our policy-loss class and ``key=value`` overrides (a leading + adds a field)."""
    cfg = copy.deepcopy(_base())
    for item in overrides:
        key, value = item.lstrip("+").split("=", 1)
        OmegaConf.update(cfg, key, value, force_add=True)
    return cfg


@pytest.mark.parametrize(("overrides", "needs"), [
    (["actor_rollout_ref.actor.policy_loss.loss_mode=stare"], None),  # the gate alone: surprisal estimate
    (["actor_rollout_ref.actor.policy_loss.loss_mode=vanilla"], None),  # verl's own loss
    (["actor_rollout_ref.actor.policy_loss.loss_mode=stare_rl.vanilla"], None),
    (["actor_rollout_ref.actor.policy_loss.loss_mode=stare", "+actor_rollout_ref.actor.policy_loss.gate_entropy=exact"],
     "gate_entropy='exact'"),
    (["actor_rollout_ref.actor.policy_loss.loss_mode=stare", "+actor_rollout_ref.actor.policy_loss.stare_gate=exact"],
     "gate_entropy='exact'"),  # the old name, read as gate_entropy
    (["actor_rollout_ref.actor.policy_loss.loss_mode=stare",
      "+actor_rollout_ref.actor.policy_loss.stare_weight_control=paper"], "keep state across steps"),
    (["actor_rollout_ref.actor.policy_loss.loss_mode=stare_rl.steer"], "old policy's entropy"),
    (["actor_rollout_ref.actor.policy_loss.loss_mode=high_entropy"], "actor's entropy"),
    (["actor_rollout_ref.actor.policy_loss.loss_mode=stare_rl.entropic"], "keep state across steps"),
    (["actor_rollout_ref.actor.policy_loss.loss_mode=stare",  # a relative target needs the start entropy
      "+actor_rollout_ref.actor.policy_loss.stare_target_entropy=0.5x"], "keep state across steps"),
    (["actor_rollout_ref.actor.policy_loss.loss_mode=entrocraft"], "keep state across steps"),
])
def test_reasons_follow_the_methods_needs(overrides: list[str], needs: str | None) -> None:
    reasons = G.entry_point_reasons(verl_config(*overrides))
    assert (reasons == []) if needs is None else any(needs in r for r in reasons), reasons


def test_refusal_names_the_mode_and_the_command_with_the_same_overrides() -> None:
    argv = ["actor_rollout_ref.actor.policy_loss.loss_mode=stare_rl.steer", "data.train_batch_size=4"]
    with pytest.raises(ValueError) as err:
        G.check_plain_main_ppo(verl_config(*argv), argv=[TARGET, *argv])
    text = str(err.value)
    assert "loss_mode='stare_rl.steer' cannot run through plain python -m verl.trainer.main_ppo" in text
    assert (f"python -m stare_rl.engines.verl.main {TARGET} actor_rollout_ref.actor.policy_loss.loss_mode="
            "stare_rl.steer data.train_batch_size=4 trainer.v1.trainer_mode=stare_rl") in text


def test_guard_is_inert_outside_plain_main_ppo() -> None:
    import verl.utils.config as verl_config_mod

    assert not G.launched_as_plain_main_ppo() and not G.install()  # pytest is not main_ppo
    assert not getattr(verl_config_mod.validate_config, "_stare_rl_guard", False)


@pytest.mark.slow  # verl's real main_ppo in a fresh interpreter: ~15 s of imports
def test_plain_main_ppo_refuses_steer_before_ray_starts(tmp_path) -> None:
    argv = [TARGET, "actor_rollout_ref.actor.policy_loss.loss_mode=stare_rl.steer"]
    proc = subprocess.run([sys.executable, "-m", G.PLAIN_MODULE, *argv], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HYDRA_FULL_ERROR": "1"}, cwd=tmp_path)  # Hydra's outputs/
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "cannot run through plain python -m verl.trainer.main_ppo" in out and "old policy's entropy" in out
    assert "python -m stare_rl.engines.verl.main" in out
    assert "ray init kwargs" not in out and "Started a local Ray instance" not in out  # before ray.init
