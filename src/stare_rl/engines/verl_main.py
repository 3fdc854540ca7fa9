"""Exact STARE gate (and STEER entropy) on verl: ``python -m stare_rl.engines.verl_main <hydra overrides>``.

Same command line as ``python -m verl.trainer.main_ppo`` (same Hydra config tree, same overrides); the only
change is the V1 sync trainer subclass below (``trainer.v1.trainer_mode=stare_rl``), which

1. measures the token-mean entropy of the whole step batch once, before the update (verl already computes
   the old policy's entropy in ``_compute_old_log_prob``; we read it back), updates the STARE gate and the
   optional adaptive W/M schedule (:mod:`stare_rl.control`), and sends their state with the update batch;
2. installs :func:`stare_rl.engines.verl.exact_ppo_loss` with ``set_loss_fn`` so that the registered loss
   sees that state and the actor's entropy (``actor.calculate_entropy=True``; STEER, 80/20 mask);
3. saves the controller state next to each checkpoint and restores it on resume.

Needs verl's full install (Ray, TransferQueue, a GPU); the plugin-only path (``verl.trainer.main_ppo``) does not.
"""

from __future__ import annotations

import json
import logging
import os
from functools import partial
from typing import Any

import hydra
import ray
import torch
import transfer_queue as tq
from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.utils.config import omega_conf_to_dataclass, validate_config
from verl.utils.device import auto_set_device

from stare_rl.control import StareGate
from stare_rl.engines.verl import NAME_PREFIX, STATE_KEY, exact_ppo_loss, make_schedule, method_config

logger = logging.getLogger(__name__)

TRAINER_MODE = "stare_rl"
STATE_FILE = "stare_rl_controllers.json"


def _loss_mode(config: Any) -> str:
    mode = str(config.actor_rollout_ref.actor.policy_loss.get("loss_mode", "vanilla"))
    return mode.removeprefix(NAME_PREFIX)


@register_trainer(TRAINER_MODE)
class StareRLTrainer(PPOTrainerSync):
    """verl's sync PPO trainer plus the once-per-step STARE controllers and the entropy-aware loss wrapper."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        policy_loss = config.actor_rollout_ref.actor.policy_loss
        self._stare = _loss_mode(config) == "stare"
        cfg = method_config("stare", policy_loss)
        self.gate = StareGate(cfg.target_entropy)
        self.schedule = make_schedule(policy_loss) if policy_loss.get("stare_adaptive", False) else None

    def _setup(self) -> None:
        super()._setup()
        actor_cfg = omega_conf_to_dataclass(self.config.actor_rollout_ref.actor)
        self.actor_rollout_wg.set_loss_fn(partial(exact_ppo_loss, config=actor_cfg))

    def _compute_old_log_prob(self, batch: Any, metrics: dict) -> Any:
        batch = super()._compute_old_log_prob(batch, metrics)
        if not self._stare:
            return batch
        if (self.config.algorithm.get("rollout_correction", None) or {}).get("bypass_mode", False):
            raise ValueError("the exact STARE gate needs recomputed old log-probs and their entropy: set "
                             "algorithm.rollout_correction.bypass_mode=False")
        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                               select_fields=["entropy", "response_mask"]).to_padded_tensor()
        mask = data["response_mask"].to(torch.float64)  # (B, T)
        h = float((data["entropy"].double() * mask).sum() / mask.sum().clamp(min=1.0))  # STARE §4.3 statistic
        self.gate.update(h)
        if self.schedule is not None:
            self.schedule.update(h)
        metrics.update({"stare_rl/batch_entropy": h, "stare_rl/gate_on": float(self.gate.gate_on)})
        return batch

    def _update_actor(self, batch: Any, metrics: dict) -> Any:
        state = {"gate_on": self.gate.gate_on} if self._stare else {}
        if self._stare and self.schedule is not None:
            state.update(self.schedule.context_fields())
        batch.extra_info[STATE_KEY] = state
        return super()._update_actor(batch, metrics)

    def _state_path(self) -> str:
        return os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}", STATE_FILE)

    def _save_checkpoint(self) -> None:
        super()._save_checkpoint()
        state = {"gate": self.gate.state_dict(), "schedule": self.schedule.state_dict() if self.schedule else None}
        with open(self._state_path(), "w") as f:
            json.dump(state, f)

    def _load_checkpoint(self) -> Any:
        out = super()._load_checkpoint()
        path = self._state_path()
        if self.global_steps > 0 and os.path.exists(path):
            with open(path) as f:
                state = json.load(f)
            self.gate.load_state_dict(state["gate"])
            if self.schedule is not None and state["schedule"] is not None:
                self.schedule.load_state_dict(state["schedule"])
            logger.info("restored STARE controllers from %s", path)
        return out


class StareRLTaskRunner(TaskRunnerV1.__ray_actor_class__):  # type: ignore[name-defined,misc]
    """verl's V1 task runner; importing this module in the Ray process registers the trainer above."""

    def run(self, config: Any) -> None:
        config.trainer.v1.trainer_mode = TRAINER_MODE
        return super().run(config)


def _main(config: Any) -> None:
    auto_set_device(config)
    if not config.trainer.use_v1 or config.trainer.v1.trainer_mode not in ("sync", TRAINER_MODE):
        raise ValueError("stare_rl.engines.verl_main supports trainer.use_v1=True with trainer.v1.trainer_mode=sync, "
                         f"got use_v1={config.trainer.use_v1}, trainer_mode={config.trainer.v1.trainer_mode!r}")
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    run_ppo(config, task_runner_class=ray.remote(StareRLTaskRunner))


def main() -> None:
    """Hydra entry point over verl's own ``ppo_trainer`` config tree (``--config-path`` works as in verl)."""
    import verl.trainer.config as verl_config

    config_dir = os.path.dirname(verl_config.__file__)
    hydra.main(config_path=config_dir, config_name="ppo_trainer", version_base=None)(_main)()


if __name__ == "__main__":
    main()
