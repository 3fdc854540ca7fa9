"""Exact STARE gate (and STEER entropy) on verl: ``python -m stare_rl.engines.verl.main <hydra overrides>``.

Same command line as ``python -m verl.trainer.main_ppo`` (same Hydra config tree, same overrides); the only
change is the V1 sync trainer subclass below, registered as ``trainer.v1.trainer_mode=stare_rl``, which

1. runs the method's :class:`~stare_rl.control.step.StepController` once per step, before the update: it
   measures the token-mean entropy of the whole step batch (verl already computes the old policy's entropy in
   ``_compute_old_log_prob``; we read it back) and updates the method's controllers (the STARE gate, the §4.4
   W/M schedule), whose state is sent with the update batch;
2. installs :func:`stare_rl.engines.verl.adapter.exact_ppo_loss` with ``set_loss_fn`` so that the registered loss
   sees that state and the actor's entropy (``actor.calculate_entropy=True``; STEER, 80/20 mask);
3. saves the controller state into each checkpoint folder (``StepController.save``, before verl marks the
   checkpoint as the latest) and restores it on resume.

The once-per-step logic lives in small functions (:func:`step_batch`, :func:`step_controller`,
:func:`checkpoint_dir`, :func:`check_config`) that the tests run on CPU without Ray; the trainer only calls
them from verl's hooks. Needs verl's full install (Ray, TransferQueue, a GPU) to train.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from functools import partial
from typing import Any

import hydra
import ray
import torch
import transfer_queue as tq
from omegaconf import open_dict
from tensordict import TensorDict
from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.utils.config import omega_conf_to_dataclass, validate_config
from verl.utils.device import auto_set_device

from stare_rl.control.setup import bonus_controllers
from stare_rl.control.step import StepController
from stare_rl.core.metrics import control_metric
from stare_rl.core.registry import BASELINE_METHOD, get_method
from stare_rl.core.types import TokenBatch
from stare_rl.engines.verl.adapter import NAME_PREFIX, STATE_KEY, STATS_KEY, exact_ppo_loss, method_config
from stare_rl.engines.verl.check import require_plugin

logger = logging.getLogger(__name__)

TRAINER_MODE = "stare_rl"
ENTROPY_FIELDS = ("entropy", "response_mask")  # what the step controller reads back from TransferQueue
STATS_FIELDS = ("old_log_probs", "advantages", "response_mask", "entropy")  # ... for the global statistics


def loss_mode(config: Any) -> str:
    """The core method name of ``actor.policy_loss.loss_mode`` (``stare_rl.stare`` -> ``stare``)."""
    return str(config.actor_rollout_ref.actor.policy_loss.get("loss_mode", BASELINE_METHOD)).removeprefix(NAME_PREFIX)


def check_config(config: Any) -> None:
    """Reject, on the driver and before any worker starts, settings the exact path cannot honour."""
    mode, actor = loss_mode(config), config.actor_rollout_ref.actor
    spec = get_method(mode)
    needs_entropy = spec.entropy_needed(method_config(mode, actor.policy_loss))
    bypass = (config.algorithm.get("rollout_correction", None) or {}).get("bypass_mode", False)
    if (spec.controllers is not None or spec.needs_old_entropy) and bypass:
        raise ValueError(f"algorithm.rollout_correction.bypass_mode=True: loss_mode={mode!r} needs the recomputed "
                         "old log-probs and their entropy (its controllers' batch entropy, or the old policy's H "
                         "in the loss); set it to False")
    if actor.get("entropy_coeff", 0) and bonus_controllers(mode, method_config(mode, actor.policy_loss)):
        raise ValueError(f"actor_rollout_ref.actor.entropy_coeff={actor.entropy_coeff}: loss_mode={mode!r} sets its "
                         "own entropy-bonus coefficient (auto_fallback='bonus'); set entropy_coeff=0")
    if needs_entropy and not actor.get("calculate_entropy", False):
        raise ValueError(f"actor_rollout_ref.actor.calculate_entropy=False: loss_mode={mode!r} needs the actor's "
                         "entropy in the loss; set it to True")
    if (config.get("distillation", None) or {}).get("enabled", False):
        raise ValueError("distillation.enabled=True: the exact entry point installs its own loss (verl's ppo_loss "
                         "plus the step state), which would replace verl's distillation loss")


def step_batch(data: TensorDict) -> TokenBatch:
    """Translate the step batch's ``entropy`` and ``response_mask`` into a TokenBatch for the step controller.

    Args:
        data: ``(B, T)`` padded or nested (TransferQueue's layout); padding samples that verl adds for balancing
            have an all-zero mask and do not count. Only the entropy and mask are real: the trainer is verl's
            single controller and measures H there; the log-probs and advantages (zeros) are the workers'.
    """
    padded = data.select(*ENTROPY_FIELDS)
    if any(v.is_nested for v in padded.values()):
        padded = padded.to_padded_tensor()
    entropy = padded["entropy"].detach().double()  # (B, T)
    zeros = torch.zeros_like(entropy)
    return TokenBatch(zeros, zeros, zeros, padded["response_mask"], entropy=entropy)


def step_stats_batch(data: TensorDict) -> TokenBatch:
    """The whole step batch as the policy is before its update, for the method's global statistics.

    Args:
        data: ``old_log_probs``, ``advantages``, ``response_mask`` and, when stored, ``entropy`` (verl's old
            log-prob pass), padded or nested. ``log_prob`` is the old one: no update has happened yet.
    """
    padded = data.select(*[f for f in STATS_FIELDS if f in data.keys()])
    if any(v.is_nested for v in padded.values()):
        padded = padded.to_padded_tensor()
    old = padded["old_log_probs"].detach().float()  # (B, T)
    mask = padded["response_mask"].float()
    ent = padded["entropy"].detach().float() if "entropy" in padded.keys() else None
    return TokenBatch(old, old, padded["advantages"].float() * mask, mask, entropy=ent, old_entropy=ent)


def step_controller(config: Any) -> StepController:
    """The driver's StepController for ``actor.policy_loss`` (the batch is global there: no process group)."""
    mode = loss_mode(config)
    return StepController(mode, method_config(mode, config.actor_rollout_ref.actor.policy_loss))


def checkpoint_dir(trainer_config: Any, global_steps: int, resuming: bool = False) -> str:
    """The ``global_step_<n>`` folder verl saves into (or, when ``resuming``, resumes from), as verl finds it."""
    if resuming and trainer_config.resume_mode == "resume_path":
        folder = str(trainer_config.resume_from_path)
    else:
        folder = os.path.join(str(trainer_config.default_local_dir), f"global_step_{global_steps}")
    return os.path.abspath(folder)


def resume_folder(trainer_config: Any) -> str | None:
    """The ``global_step_<n>`` folder verl will resume from, found as verl's trainer finds it (``resume_mode``
    ``auto``: the latest checkpoint of ``default_local_dir``; ``resume_path``: ``resume_from_path``), or None."""
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    mode = trainer_config.resume_mode
    if mode == "auto":
        return find_latest_ckpt_path(os.path.abspath(str(trainer_config.default_local_dir)))
    if mode == "resume_path" and trainer_config.resume_from_path:
        return os.path.abspath(str(trainer_config.resume_from_path))
    return None


def check_resume(config: Any) -> None:
    """Refuse, on the driver before any worker starts, a resume whose controller settings differ from the
    checkpoint's (``StepController.check_checkpoint``: one rule for every controller and engine)."""
    folder = resume_folder(config.trainer)
    if folder is not None:
        step_controller(config).check_checkpoint(folder)


def exact_loss_fn(config: Any) -> partial:
    """The loss the trainer installs with ``set_loss_fn``: verl's ``ppo_loss`` plus the step state."""
    return partial(exact_ppo_loss, config=omega_conf_to_dataclass(config.actor_rollout_ref.actor))


class StareRLTrainer(PPOTrainerSync):
    """verl's sync PPO trainer plus the once-per-step StepController and the entropy-aware loss wrapper."""

    def __init__(self, config: Any) -> None:
        check_config(config)
        with open_dict(config):  # selected as "stare_rl", but verl branches on trainer_mode == "sync"
            config.trainer.v1.trainer_mode = "sync"  # (replay buffer, checkpoints): behave exactly as sync
        super().__init__(config)
        self.stare_rl = step_controller(config)
        # verl prints its config with the unset method fields as null: the values in use, once (as verl prints)
        print(f"stare-rl: {loss_mode(config)} settings in use: "
              f"{json.dumps(dataclasses.asdict(self.stare_rl.config))}", flush=True)

    def _setup(self) -> None:
        super()._setup()
        self.actor_rollout_wg.set_loss_fn(exact_loss_fn(self.config))

    def _compute_old_log_prob(self, batch: Any, metrics: dict) -> Any:
        batch = super()._compute_old_log_prob(batch, metrics)  # writes old_log_probs and entropy to TQ
        if self.stare_rl.controllers:  # STARE §4.3/§4.4: once per step, from the pre-update batch entropy
            data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=list(ENTROPY_FIELDS))
            step = getattr(self, "global_steps", 1) - 1  # verl counts steps from 1
            self.stare_rl.update(step_batch(data), step=step)  # global statistics: in the loss, over the DP ranks
            metrics.update({control_metric(k): v for k, v in self.stare_rl.metrics().items()})
        return batch

    def _update_actor(self, batch: Any, metrics: dict) -> Any:
        batch.extra_info[STATE_KEY] = self.stare_rl.state_dict()  # plain values: it crosses Ray
        if self.stare_rl.global_stats_enabled:  # selection_scope='global' = the whole step batch, once
            spec = self.stare_rl.spec
            needs_entropy = spec.entropy_needed(self.stare_rl.config) or spec.needs_old_entropy
            fields = [f for f in STATS_FIELDS if f != "entropy" or needs_entropy]
            data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=fields)
            batch.extra_info[STATS_KEY] = self.stare_rl.global_stats(step_stats_batch(data))
        return super()._update_actor(batch, metrics)

    def _save_checkpoint(self) -> None:
        # first: verl's save ends by pointing latest_checkpointed_iteration.txt at this folder
        self.stare_rl.save(checkpoint_dir(self.config.trainer, self.global_steps))
        super()._save_checkpoint()

    def _load_checkpoint(self) -> Any:
        out = super()._load_checkpoint()  # sets global_steps (0 = from scratch)
        if self.global_steps > 0:
            self.stare_rl.load(checkpoint_dir(self.config.trainer, self.global_steps, resuming=True))
        return out


if __name__ != "__main__":  # `python -m` also runs a __main__ copy of this file: only the real module registers
    register_trainer(TRAINER_MODE)(StareRLTrainer)


class StareRLTaskRunner(TaskRunnerV1.__ray_actor_class__):  # type: ignore[name-defined,misc]
    """verl's V1 task runner. Ray pickles it by reference, so its process imports this module (registering
    the trainer) before ``run`` looks up ``trainer.v1.trainer_mode``."""


def _main(config: Any) -> None:
    require_plugin()  # verl hides plugin import errors: fail here, not with "unknown loss_mode" in a worker
    auto_set_device(config)
    if not config.trainer.use_v1 or config.trainer.v1.trainer_mode not in ("sync", TRAINER_MODE):
        raise ValueError("stare_rl.engines.verl.main needs trainer.use_v1=True and trainer.v1.trainer_mode=stare_rl "
                         f"(or sync), got use_v1={config.trainer.use_v1}, trainer_mode={config.trainer.v1.trainer_mode!r}")
    config.trainer.v1.trainer_mode = TRAINER_MODE
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    check_config(config)
    check_resume(config)
    run_ppo(config, task_runner_class=ray.remote(StareRLTaskRunner))


def main() -> None:
    """Hydra entry point over verl's own ``ppo_trainer`` config tree (``--config-path`` works as in verl)."""
    import verl.trainer.config as verl_config

    config_dir = os.path.dirname(verl_config.__file__)
    hydra.main(config_path=config_dir, config_name="ppo_trainer", version_base=None)(_main)()


if __name__ == "__main__":
    from stare_rl.engines.verl.main import main as module_main  # the importable module (see register above)

    module_main()
