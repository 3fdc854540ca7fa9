"""The exact-gate entry point (``stare_rl.engines.verl.main``) on CPU, without Ray or a GPU.

The trainer is built with its real ``__init__`` from a composed recipe, and verl's own hooks
(``_compute_old_log_prob``, ``_update_actor``, ``_save_checkpoint``, ``_load_checkpoint``) run for real. Only
the two things that need Ray are replaced: the actor worker group (``ActorWG`` below does what verl's worker
does: writes log-probs and entropy, materialises the update batch with its ``extra_info``, splits it with
verl's own mini/micro-batch functions and calls the loss installed with ``set_loss_fn``) and TransferQueue (``MemoryTQ``: an in-memory key/field store with the same
nested layout). If verl moves or renames a hook the subclass overrides, ``test_hooks_pinned`` fails.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import logging
import math
import os
import runpy
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

from hydra import compose, initialize_config_dir  # noqa: E402
from hydra.core.global_hydra import GlobalHydra  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from transfer_queue import KVBatchMeta  # noqa: E402
from verl.trainer.main_ppo import TaskRunnerV1  # noqa: E402
from verl.trainer.ppo.v1 import get_trainer_cls  # noqa: E402
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer  # noqa: E402
from verl.trainer.ppo.v1.trainer_base import PPOTrainer  # noqa: E402
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync  # noqa: E402
from verl.utils import tensordict_utils as tu  # noqa: E402
from verl.workers.engine.utils import prepare_micro_batches  # noqa: E402
from verl.workers.engine_workers import ActorRolloutRefWorker  # noqa: E402
from verl.workers.utils.losses import ppo_loss  # noqa: E402

import stare_rl.engines.verl.main as vm  # noqa: E402
from stare_rl import aggregate, compute_loss  # noqa: E402
from stare_rl.control.base import global_token_mean  # noqa: E402
from stare_rl.core.types import LossContext, TokenBatch  # noqa: E402
from stare_rl.engines.verl import adapter as V  # noqa: E402
from stare_rl.io.runlog import CONTROLLER_FILE  # noqa: E402

RECIPES = Path(str(resources.files("stare_rl") / "recipes" / "verl"))
PROMPT_LEN = 2


def load(name: str, overrides: list[str] | None = None) -> Any:
    with initialize_config_dir(config_dir=str(RECIPES), version_base=None):
        cfg = compose(config_name=name, overrides=overrides or [])
    OmegaConf.resolve(cfg)
    return cfg


@functools.cache
def _stare_recipe() -> Any:
    return load("stare_qwen25_math_1p5b", ["+actor_rollout_ref.actor.policy_loss.stare_weight_control=paper",
                                           "actor_rollout_ref.actor.policy_loss.stare_top_p_ratio=0.5"])


def stare_config(tmp_path: Path, **updates: Any) -> Any:
    """The STARE quick-start recipe (adaptive W/M on), composed once; ``updates``: dotted key -> value."""
    cfg = copy.deepcopy(_stare_recipe())
    for key, value in {"trainer.default_local_dir": str(tmp_path / "ckpt"), **updates}.items():
        OmegaConf.update(cfg, key, value)
    return cfg


def nested(rows: list[torch.Tensor]) -> torch.Tensor:
    return torch.nested.as_nested_tensor(rows, layout=torch.jagged)


class MemoryTQ:
    """TransferQueue's kv interface over a dict: one row of nested per-sample tensors per key."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, torch.Tensor]] = {}

    def kv_batch_get(self, keys: list[str], partition_id: str, select_fields: list[str] | None = None) -> TensorDict:
        fields = select_fields or list(self.rows[keys[0]])
        return TensorDict({f: nested([self.rows[k][f] for k in keys]) for f in fields}, batch_size=[len(keys)])

    def kv_batch_put(self, keys: list[str], partition_id: str, fields: TensorDict, **_: Any) -> KVBatchMeta:
        for f, value in fields.items():
            for k, row in zip(keys, value.unbind(0), strict=True):
                self.rows.setdefault(k, {})[f] = row
        return KVBatchMeta(keys=list(keys), tags=[{} for _ in keys], partition_id=partition_id)


class ActorWG:
    """verl's actor worker group minus Ray/FSDP: the policy is a fixed table of per-token log-probs."""

    def __init__(self, tq: MemoryTQ, log_prob: dict[str, torch.Tensor], entropy: dict[str, torch.Tensor]) -> None:
        self.tq, self.log_prob, self.entropy = tq, log_prob, entropy
        self.loss_fn: Any = None
        self.losses: list[torch.Tensor] = []
        self.saved: list[str] = []
        self.loaded: list[str] = []

    @staticmethod
    def full_sequence(x: torch.Tensor) -> torch.Tensor:  # model output layout: shifted by one, prompt + response
        return torch.cat([x.new_zeros(PROMPT_LEN - 1), x, x.new_zeros(1)])

    def set_loss_fn(self, loss_fn: Any) -> None:
        self.loss_fn = loss_fn

    def compute_log_prob(self, batch: KVBatchMeta) -> KVBatchMeta:
        assert batch.extra_info["calculate_entropy"]
        out = TensorDict({"log_probs": nested([self.full_sequence(self.log_prob[k]) for k in batch.keys]),
                          "entropy": nested([self.full_sequence(self.entropy[k]) for k in batch.keys])},
                         batch_size=[len(batch)])
        return self.tq.kv_batch_put(batch.keys, batch.partition_id, out)

    def update_actor(self, batch: KVBatchMeta) -> dict[str, Any]:
        data = self.tq.kv_batch_get(batch.keys, batch.partition_id)  # verl's worker: every field of the rows
        for key, val in batch.extra_info.items():  # as verl's _meta_to_realdata does
            tu.assign_non_tensor_data(tensor_dict=data, key=key, val=val)
        tu.assign_non_tensor(data, dp_size=1, batch_num_tokens=None, global_batch_size=None,
                             use_dynamic_bsz=False, micro_batch_size_per_gpu=len(batch))
        (mini,) = tu.make_iterator(data, mini_batch_size=len(batch), epochs=1)  # verl's mini-batch split ...
        (data,) = prepare_micro_batches(mini)[0]  # ... and micro-batch split (one each: the state must survive)
        log_prob = nested([self.full_sequence(self.log_prob[k] + 0.1) for k in batch.keys])  # current policy
        entropy = nested([self.full_sequence(self.entropy[k]) for k in batch.keys])
        loss, _ = self.loss_fn(model_output={"log_probs": log_prob, "entropy": entropy}, data=data)
        self.losses.append(loss)
        return {"metrics": {"mfu": [0.0], "pg_loss": [float(loss)]}}

    def save_checkpoint(self, local_path: str, *args: Any, **kwargs: Any) -> None:
        self.saved.append(local_path)

    def load_checkpoint(self, local_path: str, **kwargs: Any) -> None:
        self.loaded.append(local_path)


class DataLoaderState:
    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


LENGTHS = [5, 3, 4, 2, 0]  # the last sample is verl's balancing padding: an all-zero response mask
REWARDS = [1.0, 0.0, 0.0, 1.0, 0.0]  # outcome rewards: rows 2 and 3 disagree with their advantage's sign (+1, -1)


def step_data(seed: int, entropy_scale: float) -> dict[str, Any]:
    g = torch.Generator().manual_seed(seed)
    keys = [f"uid{seed}_{i}" for i in range(len(LENGTHS))]
    rows, log_prob, entropy = {}, {}, {}
    for i, (k, n) in enumerate(zip(keys, LENGTHS, strict=True)):
        width = max(n, 2)
        mask = (torch.arange(width) < n).long()
        rows[k] = {"prompts": torch.ones(PROMPT_LEN, dtype=torch.long), "responses": torch.ones(width, dtype=torch.long),
                   "response_mask": mask, "advantages": torch.full((width,), (-1.0) ** i) * mask,
                   "rm_scores": torch.zeros(width)}
        if n:  # the reward manager puts the outcome on the last response token
            rows[k]["rm_scores"][n - 1] = REWARDS[i]
        log_prob[k] = -torch.rand(width, generator=g) * 2 - 0.05
        rows[k]["rollout_log_probs"] = log_prob[k] - 0.01  # vLLM's, for verl's rollout-vs-actor metrics
        entropy[k] = torch.rand(width, generator=g) * entropy_scale
    valid = torch.cat([entropy[k][: n] for k, n in zip(keys, LENGTHS, strict=True)])
    return {"keys": keys, "rows": rows, "log_prob": log_prob, "entropy": entropy, "h": float(valid.double().mean())}


def trainer_with_workers(cfg: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[vm.StareRLTrainer, MemoryTQ]:
    mem = MemoryTQ()
    for name in ("kv_batch_get", "kv_batch_put"):
        monkeypatch.setattr(vm.tq, name, getattr(mem, name))  # the module object verl's trainer uses too
    trainer = vm.StareRLTrainer(cfg)  # verl's real __init__ (no Ray needed)
    trainer.actor_rollout_wg = ActorWG(mem, {}, {})
    trainer.train_dataloader = DataLoaderState()
    monkeypatch.setattr(PPOTrainer, "_setup", lambda self: None)  # verl's: starts Ray workers and vLLM
    trainer._setup()  # ours on top: installs the exact loss with set_loss_fn
    return trainer, mem


def run_step(trainer: vm.StareRLTrainer, mem: MemoryTQ, data: dict[str, Any]) -> tuple[dict[str, Any], KVBatchMeta]:
    wg = trainer.actor_rollout_wg
    wg.log_prob.update(data["log_prob"])
    wg.entropy.update(data["entropy"])
    for k, row in data["rows"].items():
        mem.rows[k] = dict(row)
    batch = KVBatchMeta(keys=data["keys"], tags=[{} for _ in data["keys"]], partition_id="train")
    metrics: dict[str, Any] = {}
    batch = trainer._compute_old_log_prob(batch, metrics)  # verl's hook + the gate update
    batch = trainer._update_actor(batch, metrics)  # verl's hook + the step state -> the installed loss
    return metrics, batch


def padded_step(data: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """(old log-probs, advantages, mask, entropy, rewards) of a step, ``(B, T)`` each, padded; rewards broadcast."""
    keys, width = data["keys"], max(max(LENGTHS), 2)

    def pad(d: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.stack([torch.nn.functional.pad(d[k], (0, width - d[k].numel())) for k in keys])

    mask = pad({k: data["rows"][k]["response_mask"] for k in keys}) > 0
    rewards = pad({k: data["rows"][k]["rm_scores"] for k in keys}).sum(dim=1, keepdim=True) * mask
    return (pad(data["log_prob"]), pad({k: data["rows"][k]["advantages"] for k in keys}), mask, pad(data["entropy"]),
            rewards)


def core_loss(data: dict[str, Any], cfg: Any, method: str = "stare", **ctx: Any) -> torch.Tensor:
    old, adv, mask, ent, rewards = padded_step(data)
    batch = TokenBatch(old + 0.1, old, adv, mask, entropy=ent, rewards=rewards)
    actor = vm.exact_loss_fn(cfg).keywords["config"]
    out = compute_loss(method, batch, V.method_config(method, actor.policy_loss),
                       V.surrogate_config(actor, actor.loss_agg_mode), LossContext(stats=ctx))
    return aggregate(out.token_loss, mask, actor.loss_agg_mode)


# ----------------------------------------------------------------------------- registration and verl's hooks

HOOKS = {  # what StareRLTrainer overrides, with verl 0.9's signatures
    "__init__": ["self", "config"],
    "_setup": ["self"],
    "_compute_old_log_prob": ["self", "batch", "metrics"],
    "_update_actor": ["self", "batch", "metrics"],
    "_save_checkpoint": ["self"],
    "_load_checkpoint": ["self"],
}


def test_trainer_registered_under_its_mode() -> None:
    assert get_trainer_cls(vm.TRAINER_MODE) is vm.StareRLTrainer
    assert issubclass(vm.StareRLTrainer, PPOTrainerSync)
    assert vm.StareRLTaskRunner.__module__ == "stare_rl.engines.verl.main"  # Ray imports it -> registration
    assert issubclass(vm.StareRLTaskRunner, TaskRunnerV1.__ray_actor_class__)


def test_hooks_pinned() -> None:
    for name, params in HOOKS.items():
        assert hasattr(PPOTrainerSync, name), f"verl's PPOTrainerSync lost {name}: re-check verl_main"
        assert list(inspect.signature(getattr(PPOTrainerSync, name)).parameters) == params, name
        assert name in vm.StareRLTrainer.__dict__
    # the gate is measured before the update, and the loss is installed after verl set its own
    step_src = inspect.getsource(PPOTrainer._step_once)
    assert step_src.index("self._compute_old_log_prob(") < step_src.index("self._update_actor(")
    assert "self._setup()" in inspect.getsource(PPOTrainer.init)
    assert "get_trainer_cls(config.trainer.v1.trainer_mode)" in inspect.getsource(TaskRunnerV1.__ray_actor_class__.run)
    assert list(inspect.signature(ActorRolloutRefWorker.set_loss_fn).parameters) == ["self", "loss_fn"]
    assert list(inspect.signature(ppo_loss).parameters) == ["config", "model_output", "data", "dp_group"]


def test_real_init_behaves_as_sync(tmp_path: Path) -> None:
    cfg = stare_config(tmp_path)
    assert cfg.trainer.v1.trainer_mode == vm.TRAINER_MODE  # the recipe selects the subclass ...
    trainer = vm.StareRLTrainer(cfg)
    assert trainer.trainer_mode == "sync" and type(trainer.replay_buffer) is ReplayBuffer  # ... which runs as sync
    ctrls = trainer.stare_rl.controllers
    assert ctrls["gate"].target_entropy == 0.3 and ctrls["schedule"].reweight_w == 1.1
    steer = vm.StareRLTrainer(load("steer_qwen25_math_1p5b"))
    assert steer.stare_rl.controllers == {} and steer.stare_rl.state_dict() == {}


# ----------------------------------------------------------------------------- the once-per-step logic


def step_entropy(td: TensorDict) -> float:
    """The driver's measurement: the step batch translated by ``vm.step_batch``, its global token-mean entropy."""
    return global_token_mean(vm.step_batch(td))


def entropy_batch(h: float) -> TokenBatch:
    """A one-token step batch whose token-mean entropy is ``h``."""
    zeros = torch.zeros(1, 1)
    return TokenBatch(zeros, zeros, zeros, torch.ones(1, 1), entropy=torch.full((1, 1), h))


def test_step_entropy_masks_padding_and_accepts_both_layouts() -> None:
    data = step_data(seed=0, entropy_scale=1.0)
    keys = data["keys"]
    td = TensorDict({"entropy": nested([data["entropy"][k] for k in keys]),
                     "response_mask": nested([data["rows"][k]["response_mask"] for k in keys])}, batch_size=[5])
    assert step_entropy(td) == pytest.approx(data["h"], rel=1e-12)
    assert step_entropy(td.to_padded_tensor()) == pytest.approx(data["h"], rel=1e-12)
    empty = TensorDict({"entropy": torch.ones(2, 3), "response_mask": torch.zeros(2, 3)}, batch_size=[2])
    assert step_entropy(empty) == 0.0  # nothing valid: defined, finite
    bad = TensorDict({"entropy": torch.full((1, 2), float("nan")), "response_mask": torch.ones(1, 2)}, batch_size=[1])
    with pytest.raises(ValueError, match="entropy contains NaN"):
        step_entropy(bad)


def test_one_step_gate_schedule_and_loss_through_verl_hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = stare_config(tmp_path)
    trainer, mem = trainer_with_workers(cfg, monkeypatch)
    wg = trainer.actor_rollout_wg
    assert wg.loss_fn.func is V.exact_ppo_loss

    low = step_data(seed=1, entropy_scale=0.4)  # token-mean entropy ~0.2 < 0.3: gate on, W up, M down
    metrics, batch = run_step(trainer, mem, low)
    assert metrics["control/batch_entropy"] == pytest.approx(low["h"], rel=1e-6) and low["h"] < 0.3
    assert metrics["actor/entropy"] == pytest.approx(low["h"], rel=1e-5)  # verl's own token-mean metric agrees
    assert metrics["control/gate_on"] == 1.0
    assert (metrics["control/reweight_w"], metrics["control/reweight_m"]) == pytest.approx((1.11, 0.89))
    sent = batch.extra_info[V.STATE_KEY]  # the driver StepController's state_dict
    assert sent == trainer.stare_rl.state_dict() and sent["gate"]["gate_on"] is True
    assert (sent["schedule"]["w"], sent["schedule"]["m"]) == pytest.approx((1.11, 0.89))  # the current W, M
    # selection_scope='global': the surprisal thresholds of the whole step batch, computed once by the driver
    # before the update (log_prob = old_log_prob), as TRL's StepController.begin_step does
    stats = batch.extra_info[V.STATS_KEY]
    old, adv, mask, _, _ = padded_step(low)
    assert stats == trainer.stare_rl.global_stats(TokenBatch(old, old, adv, mask.float()))
    assert set(stats) >= {"surprisal_threshold_pos"}
    torch.testing.assert_close(wg.losses[-1], core_loss(low, cfg, gate_on=True, reweight_w=1.11, reweight_m=0.89,
                                                        **stats))

    high = step_data(seed=2, entropy_scale=3.0)  # ~1.5 > 0.3: gate off, W/M relax
    metrics, batch = run_step(trainer, mem, high)
    assert metrics["control/gate_on"] == 0.0
    assert batch.extra_info[V.STATE_KEY]["schedule"]["w"] == pytest.approx(1.10)  # relaxed back
    stats = batch.extra_info[V.STATS_KEY]
    off = core_loss(high, cfg, gate_on=False, reweight_w=1.10, reweight_m=0.90, **stats)
    torch.testing.assert_close(wg.losses[-1], off)
    assert not torch.allclose(off, core_loss(high, cfg, gate_on=True, reweight_w=1.10, reweight_m=0.90, **stats))


def test_auto_weight_control_through_the_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """weight_control='auto' needs no engine code: the driver's StepController runs it, the loss uses its W/M. The
    settings in use are printed once, unset ones resolved (verl's config shows stare_auto_w_max: null)."""
    cfg = stare_config(tmp_path, **{"actor_rollout_ref.actor.policy_loss.stare_weight_control": "auto"})
    trainer, mem = trainer_with_workers(cfg, monkeypatch)
    assert set(trainer.stare_rl.controllers) == {"auto"}
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("stare-rl: stare settings in use: ")]
    assert json.loads(line.split(": ", 2)[2])["auto_w_max"] == 50.0
    assert cfg.actor_rollout_ref.actor.policy_loss.get("stare_auto_w_max") is None
    low = step_data(seed=1, entropy_scale=0.4)  # token-mean entropy ~0.2 < 0.3: the strength rises
    metrics, batch = run_step(trainer, mem, low)
    assert metrics["control/auto_strength"] == pytest.approx(0.25)  # first step: +rate_limit from W = 1
    w, m = metrics["control/reweight_w"], metrics["control/reweight_m"]
    assert metrics["control/gate_on"] == 1.0 and w == pytest.approx(math.exp(0.25)) and m == pytest.approx(1 / w)
    assert batch.extra_info[V.STATE_KEY] == trainer.stare_rl.state_dict()
    stats = batch.extra_info[V.STATS_KEY]  # the driver's global-scope thresholds of the step batch
    loss = trainer.actor_rollout_wg.losses[-1]
    torch.testing.assert_close(loss, core_loss(low, cfg, gate_on=True, reweight_w=w, reweight_m=m, **stats))
    assert not torch.allclose(loss, core_loss(low, cfg, gate_on=False, reweight_w=w, reweight_m=m, **stats))


def test_entrocraft_with_a_relative_target_through_the_entry_point(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Entrocraft needs no engine code of its own: the driver resolves '0.5x' from the first step's entropy, sets
    the band's mode once per step, and the workers' loss uses the switched advantages (RAFT++ above the band, NSR
    below) on each response's reward, read from the reward manager's rm_scores of the update batch."""
    pl = "actor_rollout_ref.actor.policy_loss."
    cfg = stare_config(tmp_path, **{pl + "loss_mode": "entrocraft"})
    OmegaConf.update(cfg, pl + "entrocraft_target_entropy", "0.5x", force_add=True)  # verl: +...=0.5x
    trainer, mem = trainer_with_workers(cfg, monkeypatch)
    assert set(trainer.stare_rl.controllers) == {"entrocraft_band"}
    first = step_data(seed=1, entropy_scale=0.4)  # h ~0.2: target 0.1, band [0.09, 0.11]: above -> RAFT++
    metrics, batch = run_step(trainer, mem, first)
    assert metrics["control/start_entropy"] == pytest.approx(first["h"], rel=1e-6)
    assert metrics["control/target_entropy"] == pytest.approx(0.5 * first["h"], rel=1e-6)
    assert metrics["control/entrocraft_mode"] == 1.0
    assert batch.extra_info[V.STATE_KEY] == trainer.stare_rl.state_dict()
    loss = trainer.actor_rollout_wg.losses[-1]
    torch.testing.assert_close(loss, core_loss(first, cfg, "entrocraft", entrocraft_mode=1))
    assert not torch.allclose(loss, core_loss(first, cfg, "entrocraft", entrocraft_mode=0))
    low = step_data(seed=2, entropy_scale=0.1)  # h ~0.05 < 0.09: NSR; the target stays 0.5 x the first entropy
    metrics, _ = run_step(trainer, mem, low)
    assert metrics["control/entrocraft_mode"] == -1.0
    assert metrics["control/target_entropy"] == pytest.approx(0.5 * first["h"], rel=1e-6)
    torch.testing.assert_close(trainer.actor_rollout_wg.losses[-1], core_loss(low, cfg, "entrocraft",
                                                                              entrocraft_mode=-1))
    # NSR reads the reward, not the advantage: with the advantage's sign instead (rows 2, 3 swapped) it differs
    old, adv, mask, ent, rewards = padded_step(low)
    by_sign = TokenBatch(old + 0.1, old, adv, mask, entropy=ent, rewards=(adv > 0).to(old.dtype))
    actor = vm.exact_loss_fn(cfg).keywords["config"]
    wrong = compute_loss("entrocraft", by_sign, V.method_config("entrocraft", actor.policy_loss),
                         V.surrogate_config(actor, actor.loss_agg_mode), LossContext(stats={"entrocraft_mode": -1}))
    assert not torch.allclose(trainer.actor_rollout_wg.losses[-1], aggregate(wrong.token_loss, mask,
                                                                             actor.loss_agg_mode))


def test_checkpoint_saved_atomically_before_verl_marks_it_and_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = stare_config(tmp_path)
    trainer, _ = trainer_with_workers(cfg, monkeypatch)
    for i, h in enumerate((0.1, 0.2, 0.5)):
        trainer.stare_rl.update(entropy_batch(h), step=i)
    trainer.global_steps = 7
    tracker = tmp_path / "ckpt" / "latest_checkpointed_iteration.txt"
    step_dir = tmp_path / "ckpt" / "global_step_7"

    def save_actor(local_path: str, *args: Any, **kwargs: Any) -> None:  # verl saves the actor first ...
        assert (step_dir / CONTROLLER_FILE).exists() and not tracker.exists()  # ... our state is already there

    monkeypatch.setattr(trainer.actor_rollout_wg, "save_checkpoint", save_actor)
    trainer._save_checkpoint()  # verl's real save: actor, data.pt, then the tracker file
    assert tracker.read_text() == "7"
    assert sorted(os.listdir(step_dir)) == sorted(["data.pt", CONTROLLER_FILE])  # no temporary file left
    saved = json.loads((step_dir / CONTROLLER_FILE).read_text())["controllers"]
    assert saved == trainer.stare_rl.state_dict() and saved["schedule"]["w"] == pytest.approx(1.11)

    resumed, _ = trainer_with_workers(stare_config(tmp_path), monkeypatch)
    assert resumed.stare_rl.state_dict() != saved
    resumed._load_checkpoint()  # verl's real resume (resume_mode=auto: the tracker) + ours
    assert resumed.global_steps == 7 and resumed.actor_rollout_wg.loaded == [str(step_dir / "actor")]
    assert resumed.stare_rl.state_dict() == saved

    # one resume rule: the driver refuses, before run_ppo starts any worker, a checkpoint of other settings
    vm.check_resume(stare_config(tmp_path))  # same settings (resume_mode=auto finds global_step_7)
    assert vm.resume_folder(stare_config(tmp_path).trainer) == str(step_dir)
    changed = stare_config(tmp_path, **{"actor_rollout_ref.actor.policy_loss.stare_target_entropy": 0.45})
    with pytest.raises(ValueError, match=r"target_entropy: saved 0\.3, requested 0\.45 \(controller 'gate'\)"):
        vm.check_resume(changed)
    with pytest.raises(ValueError, match=r"target_entropy: saved 0\.3, requested 0\.45"):
        trainer_with_workers(changed, monkeypatch)[0]._load_checkpoint()  # and the trainer's own resume path
    vm.check_resume(stare_config(tmp_path, **{"trainer.resume_mode": "disable"}))  # not resuming: nothing to check

    # resume_mode=resume_path reads the named folder; a folder without our file starts fresh, with a warning
    other = tmp_path / "elsewhere" / "global_step_3"
    other.mkdir(parents=True)
    fresh, _ = trainer_with_workers(stare_config(
        tmp_path, **{"trainer.resume_mode": "resume_path", "trainer.resume_from_path": str(other)}), monkeypatch)
    with caplog.at_level(logging.WARNING, logger="stare_rl.control.step"):
        fresh._load_checkpoint()
    assert fresh.global_steps == 3 and fresh.stare_rl.controllers["schedule"].reweight_w == 1.1
    assert "start fresh" in caplog.text


def test_failed_state_write_keeps_the_previous_file(tmp_path: Path) -> None:
    ctrl = vm.step_controller(stare_config(tmp_path))
    ctrl.update(entropy_batch(0.1), step=0)
    path = Path(ctrl.save(str(tmp_path / "s")))
    before = path.read_text()
    ctrl.controllers["gate"].last_entropy = object()  # type: ignore[assignment]  # not JSON: the write fails half way
    with pytest.raises(TypeError):
        ctrl.save(str(tmp_path / "s"))
    assert path.read_text() == before and os.listdir(tmp_path / "s") == [CONTROLLER_FILE]


def test_config_errors_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"rollout_correction\.bypass_mode=True"):
        vm.StareRLTrainer(stare_config(tmp_path, **{"algorithm.rollout_correction.bypass_mode": True}))
    with pytest.raises(ValueError, match=r"actor\.calculate_entropy=False: loss_mode='high_entropy'"):
        vm.check_config(load("steer_qwen25_math_1p5b", ["actor_rollout_ref.actor.policy_loss.loss_mode=high_entropy",
                                                        "actor_rollout_ref.actor.calculate_entropy=false"]))
    vm.check_config(load("steer_qwen25_math_1p5b"))  # STEER: the old entropy verl stores, no entropy in the update
    with pytest.raises(ValueError, match=r"bypass_mode=True: loss_mode='steer' needs the recomputed"):
        vm.check_config(load("steer_qwen25_math_1p5b", ["algorithm.rollout_correction.bypass_mode=true"]))


# ----------------------------------------------------------------------------- the command line


def test_run_sh_and_python_m_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGS_OUT"\n')
    (fake / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "ARGS_OUT": str(tmp_path / "args"),
           "TRAIN_FILES": "/d/train.parquet"}
    subprocess.run(["bash", str(RECIPES / "run.sh"), "stare_qwen25_math_1p5b", "trainer.total_epochs=1"],
                   env=env, check=True, timeout=30)
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:2] == ["-m", "stare_rl.engines.verl.main"]

    captured: dict[str, Any] = {}
    monkeypatch.setattr(vm, "run_ppo", lambda config, task_runner_class: captured.update(
        config=config, runner=task_runner_class))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["verl_main", *args[2:], "hydra.run.dir=.", "hydra.output_subdir=null",
                                      "hydra/job_logging=none", "hydra/hydra_logging=none"])
    GlobalHydra.instance().clear()
    try:  # exactly `python -m stare_rl.engines.verl.main <run.sh's arguments>`, up to Ray
        runpy.run_module("stare_rl.engines.verl.main", run_name="__main__", alter_sys=False)
    finally:
        GlobalHydra.instance().clear()
    config = captured["config"]
    assert config.trainer.v1.trainer_mode == vm.TRAINER_MODE and config.trainer.use_v1
    assert config.data.train_files == "/d/train.parquet" and config.trainer.total_epochs == 1
    assert captured["runner"].__ray_actor_class__ is vm.StareRLTaskRunner  # the importable class, not __main__'s
    assert get_trainer_cls(vm.TRAINER_MODE) is vm.StareRLTrainer  # the __main__ copy registered nothing
