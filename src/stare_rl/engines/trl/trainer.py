"""TRL engine adapter: a GRPOTrainer whose loss is a registered stare-rl method. Built against trl==1.16.0.

The ``engines/trl`` package is the only code that imports ``trl``. It translates, nothing more:

- tensors: TRL's completion batch -> :class:`~stare_rl.core.types.TokenBatch` (TRL's own per-token log-probs and,
  where the method, an entropy bonus, the controllers' measuring forward or the quadrant diagnostics need
  them, full-vocabulary entropies, at the sampling temperature) -> ``compute_loss`` + ``aggregate``;
- controllers: once per generation batch, before any update on it, the batch (current policy's log-probs and
  entropies) goes to :meth:`StepController.begin_step <stare_rl.control.step.StepController.begin_step>`
  (measure H -> the method's controllers and the adaptive entropy coefficient -> global statistics); the
  frozen context is used for every update on that batch;
- metrics: verl names (``actor/*``, ``critic/*``, ``response_length/*``) plus the one namespace of
  :mod:`stare_rl.core.metrics` (``control/*``, ``loss/*``, ``dynamic_sampling/*``, ``quadrant/*``), into TRL's ``_metrics`` (hence every ``report_to`` logger) and ``metrics.jsonl``;
- checkpoints: ``StepController.save`` / ``load`` (``checkpoint-N/`` + ``runlog.CONTROLLER_FILE``).

TRL private hooks overridden (checked by ``tests/engines/trl/test_trl_engine.py``): :data:`TRL_HOOKS`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import is_peft_model
from safetensors import SafetensorError
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import GRPOConfig, GRPOTrainer

from stare_rl.core.advantages import compute_advantages, dynamic_sampling_mask
from stare_rl.core.aggregate import aggregate
from stare_rl.core.entropy_bonus import EntropyBonusConfig
from stare_rl.core.metrics import (
    DYNAMIC_SAMPLING,
    MEAN_WEIGHT,
    control_metric,
    loss_metric,
    mask_fraction_metric,
)
from stare_rl.core.quadrants import quadrant_stats
from stare_rl.core.registry import compute_loss
from stare_rl.core.types import LossContext, TokenBatch
from stare_rl.engines.trl.batch import loss_mask, trl_step_batch, trl_token_batch, with_is_ratio_and_bonus
from stare_rl.engines.trl.callbacks import CompactProgressCallback, MetricsJsonlCallback
from stare_rl.engines.trl.config import StareGRPOConfig, check_superseded
from stare_rl.engines.trl.head import LMHeadSwitch
from stare_rl.engines.trl.refill import GroupRefill, take_rows
from stare_rl.io.runlog import METRICS_FILE, CheckpointWriteError, RunLayout

logger = logging.getLogger(__name__)

TRL_VERSION = "1.16.0"
# name -> parameters (after self) of the GRPOTrainer methods this adapter overrides or calls.
TRL_HOOKS: dict[str, tuple[str, ...]] = {
    "_generate_and_score_completions": ("inputs",),
    "_calculate_rewards": ("inputs", "prompts", "completions", "completion_ids_list"),
    "_compute_loss": ("model", "inputs"),
    "_get_per_token_logps_and_entropies": ("model", "input_ids", "attention_mask", "logits_to_keep"),
    "_save_checkpoint": ("model", "trial"),
    "_load_optimizer_and_scheduler": ("checkpoint",),
}
# Keys of a TRL batch forwarded to the model (multimodal inputs pass through untouched).
_FORWARD_KEYS = (
    "pixel_values", "image_grid_thw", "num_images", "pixel_attention_mask", "spatial_shapes", "num_tiles",
    "image_sizes", "token_type_ids", "mm_token_type_ids", "image_position_ids",
)
# Row tensors of a TRL batch that TRL pads on the left (everything else is padded on the right).
_LEFT_PADDED = ("prompt_ids", "prompt_mask")
# TRL metric name -> verl name.
_VERL_NAMES = {
    "reward": "critic/score/mean",
    "reward_std": "critic/score/std",
    "completions/mean_length": "response_length/mean",
    "completions/max_length": "response_length/max",
    "completions/min_length": "response_length/min",
    "completions/clipped_ratio": "response_length/clip_ratio",
    "grad_norm": "actor/grad_norm",
    "learning_rate": "actor/lr",
}
_ACTOR_METRICS = {"pg_clipfrac", "pg_clipfrac_lower", "ppo_kl", "entropy_coef", "entropy"}


class StareGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer whose policy loss is the stare-rl method chosen in ``args`` (a :class:`StareGRPOConfig`).

    The constructor is GRPOTrainer's, parameter for parameter (``tests/engines/trl/test_trl_api.py`` compares the
    signatures): a GRPOTrainer script becomes a stare-rl script by using this class and :class:`StareGRPOConfig`
    (with ``method=...``). On top of TRL it writes ``<output_dir>/metrics.jsonl`` (every logged step) and saves
    the step controller's state in every checkpoint (restored by ``resume_from_checkpoint``).
    """

    def __init__(
        self,
        model: Any,
        reward_funcs: Any = None,
        args: StareGRPOConfig | None = None,
        train_dataset: Any = None,
        eval_dataset: Any = None,
        processing_class: Any = None,
        reward_processing_classes: Any = None,
        callbacks: list[Any] | None = None,
        optimizers: tuple[Any, Any] = (None, None),
        quantization_config: Any = None,
        peft_config: Any = None,
        tools: list[Any] | None = None,
        rollout_func: Any = None,
        environment_factory: Any = None,
    ) -> None:
        args = _stare_args(args, model)
        check_superseded(args)  # also when changed after the config was built
        self.setup = setup = args.loss_setup()
        self.step_control = setup.step_controller()  # group None: the default group spans every rank
        self._ctx: LossContext | None = LossContext()  # None: to be measured by the next training forward
        self._rewards: torch.Tensor | None = None
        super().__init__(model, reward_funcs, args, train_dataset, eval_dataset, processing_class,
                         reward_processing_classes, callbacks, optimizers, quantization_config, peft_config, tools,
                         rollout_func, environment_factory)
        base = self.model.get_base_model() if is_peft_model(self.model) else self.model
        self._head = LMHeadSwitch(base, self.temperature, self.args.cast_lm_head_to_fp32)
        if setup.dynamic_sampling and setup.dynamic_sampling_mode == "refill" and not hasattr(
                self.train_dataset, "__getitem__"):
            raise ValueError("dynamic_sampling_mode='refill' draws extra prompts by index and needs a map-style "
                             "train dataset; use dynamic_sampling_mode='mask' with an iterable dataset")
        self.add_callback(MetricsJsonlCallback(Path(self.args.output_dir) / METRICS_FILE))
        self.remove_callback(PrinterCallback)  # ~60 metrics a step: metrics.jsonl has them, not the console
        if self.pop_callback(ProgressCallback) is not None:
            self.add_callback(CompactProgressCallback())

    # ----- generation side: rewards, advantages, DAPO filter, controllers (once per generation batch) -----
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._rewards = rewards_per_func  # (N_global, F), gathered over ranks
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        out = self._generate_round(inputs)
        if not self.model.training or self._rewards is None:
            return out
        rewards = self._combined_rewards()  # (N_global,)
        refill_keep = None
        if self.setup.dynamic_sampling and self.setup.dynamic_sampling_mode == "refill":  # DAPO §3.2
            out, rewards, refill_keep = self._refill(out, rewards)
        n_local = out["completion_ids"].size(0)
        local = slice(self.accelerator.process_index * n_local, (self.accelerator.process_index + 1) * n_local)
        adv = compute_advantages(self.setup.advantage_estimator, rewards, group_size=self.num_generations)
        out["advantages"] = adv[local].to(out["advantages"].dtype)  # (B,) replaces TRL's estimator
        out["stare_rewards"] = rewards[local].to(out["advantages"].dtype)  # (B,) raw reward (needs_rewards methods)
        keep = torch.ones(n_local, device=rewards.device)
        if refill_keep is not None:
            keep = refill_keep[local].to(rewards.device)
        elif self.setup.dynamic_sampling:  # DAPO §3.2, mask mode: the constant groups leave the loss
            keep = dynamic_sampling_mask(rewards, group_size=self.num_generations)[local].float()
        if self.setup.dynamic_sampling:
            self._metrics["train"][DYNAMIC_SAMPLING + "kept"].append(float(keep.mean()))
        out["stare_keep"] = keep  # (B,) 1 = the row takes part in the loss
        mask = loss_mask(out)  # (B, T)
        out["stare_norm_tokens"], out["stare_norm_seqs"] = self._window_normalizers(mask)  # 0-dim each
        self._ctx = self._update_controllers(out)
        return out

    def _generate_round(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        """TRL's generation and scoring of ``inputs``; when TRL also computes the old policy's log-probs and the
        method needs the old policy's entropy (STEER) or the controllers measure this batch before training on
        it (``steps_per_generation > 1``), that same no-grad pass returns it as ``old_entropy``."""
        self._capture_old_entropy = (self.model.training and self._computes_old_logps()
                                     and (self.setup_needs_old_entropy or self._measures_at_generation()))
        self._old_entropy = None
        try:
            out = super()._generate_and_score_completions(inputs)
        finally:
            self._capture_old_entropy = False
        if self._old_entropy is not None and "old_per_token_logps" in out:
            out["old_entropy"] = self._old_entropy  # (B, T), the policy that generated (no update since)
        self._old_entropy = None
        return out

    @property
    def setup_needs_old_entropy(self) -> bool:
        return self.step_control.spec.needs_old_entropy

    def _computes_old_logps(self) -> bool:
        """TRL's own rule: an old log-prob pass runs when a generation batch spans optimizer steps, or for vLLM's
        importance-sampling correction (otherwise old = current, and the current forward's entropy is the old)."""
        generate_every = self.args.steps_per_generation * self.num_iterations
        return self.args.gradient_accumulation_steps % generate_every != 0 or bool(
            self.use_vllm and self.vllm_importance_sampling_correction)

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep,  # type: ignore[override]
                                           *args: Any, compute_entropy: bool = False, **kwargs: Any):
        """TRL's forward through its fused LM head, with the full-vocabulary entropy only when asked for.

        TRL 1.16 computes the entropy inside the same tile pass as the log-probs on every call; the adapter
        switches to a log-prob-only head when nobody needs it (:class:`LMHeadSwitch`). In a generation round,
        TRL's own no-grad old-log-prob pass keeps its entropies (``old_entropy``).
        """
        capture = getattr(self, "_capture_old_entropy", False) and model is self.model
        entropy = compute_entropy or capture
        head = getattr(self, "_head", None)
        with contextlib.nullcontext() if head is None else head.entropy(entropy):
            logps, entropies, aux = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, *args, compute_entropy=entropy, **kwargs)
        if capture:  # the first pass of a generation round with the policy itself: TRL's old log-prob pass
            self._old_entropy, self._capture_old_entropy = entropies.detach(), False
            entropies = entropies if compute_entropy else None
        return logps, entropies, aux

    def _combined_rewards(self) -> torch.Tensor:
        """``(N_global,)`` weighted sum of the reward functions of the last generation (NaN -> 0)."""
        weights = self.reward_weights.to(self._rewards.device)
        return torch.nan_to_num((self._rewards * weights).nansum(dim=1), nan=0.0)

    # ----- DAPO refill: generate more groups until the batch is full of informative ones -----
    def _refill(self, out: dict[str, Any], rewards: torch.Tensor) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor]:
        """DAPO §3.2 / the STARE script's ``filter_groups``: rounds of fresh prompts until the generation batch
        holds as many groups with reward spread as it has groups, at most ``max_num_gen_batches`` rounds.

        Returns this rank's rows of the final batch (same size as TRL's), the global rewards ``(N_global,)``
        and the global keep flags (0 only for constant groups used to fill a batch left short at the limit).
        """
        n_local = out["completion_ids"].size(0)
        refill = GroupRefill(
            group_size=self.num_generations, target_groups=rewards.numel() // self.num_generations,
            max_rounds=self.setup.max_num_gen_batches, left_pad_keys=_LEFT_PADDED,
            pad_values={"prompt_ids": self._tokenizer.pad_token_id, "completion_ids": self._tokenizer.pad_token_id},
        )
        refill.add(self._gather_rows(out), rewards)
        while not refill.done:
            more = self._generate_round(self._refill_prompts(refill.rounds))
            refill.add(self._gather_rows(more), self._combined_rewards())
        rows, rewards, keep, metrics = refill.result()
        for key, value in metrics.items():  # already dynamic_sampling/<key>
            self._metrics["train"][key].append(value)
        start = self.accelerator.process_index * n_local
        mine = take_rows(rows, torch.arange(start, start + n_local))
        mine["num_items_in_batch"] = self.accelerator.reduce(mine["completion_mask"].sum(), reduction="sum")
        return mine, rewards, keep

    def _gather_rows(self, out: dict[str, Any]) -> dict[str, Any]:
        """Every rank's rows of a TRL batch (row tensors padded to one length, lists gathered); totals dropped."""
        from accelerate.utils import gather_object, pad_across_processes

        rows: dict[str, Any] = {}
        for key, value in out.items():
            if isinstance(value, torch.Tensor):
                if value.dim() == 0:
                    continue  # a batch total, recomputed for the final batch
                if value.dim() >= 2:
                    pad = self._tokenizer.pad_token_id if key.endswith("_ids") else 0
                    value = pad_across_processes(value, dim=1, pad_index=pad, pad_first=key in _LEFT_PADDED)
                rows[key] = self.accelerator.gather(value)
            else:
                rows[key] = gather_object(list(value)) if self.accelerator.num_processes > 1 else list(value)
        return rows

    def _refill_prompts(self, round_index: int) -> list[dict[str, Any]]:
        """This rank's share of a refill round: ``refill_batch_multiplier`` generation batches of fresh prompts,
        each repeated ``num_generations`` times, drawn with a seed of (seed, generation index, round), so a
        resumed run draws the same prompts."""
        groups = self.args.generation_batch_size // self.num_generations * self.setup.refill_batch_multiplier
        gen = torch.Generator().manual_seed(self.args.seed * 1_000_003 + 7_919 * self._generation_index() + round_index)
        n = len(self.train_dataset)
        order = torch.cat([torch.randperm(n, generator=gen) for _ in range(-(-groups // n))])[:groups]  # (groups,)
        index = order.repeat_interleave(self.num_generations)  # (groups * G,) a group's rows are consecutive
        per_rank = index.numel() // self.accelerator.num_processes
        start = self.accelerator.process_index * per_rank
        return [self.train_dataset[int(i)] for i in index[start : start + per_rank]]

    def _window_normalizers(self, mask: torch.Tensor) -> torch.Tensor:
        """``[tokens, seqs]`` of one optimizer window per rank, as the aggregate() denominators.

        Each micro-batch loss is ``sum / (global window count / world)``: DDP averages over ranks and the
        accumulated micro-batches then sum to the global-window mean (verl's ``agg_loss`` semantics).
        """
        counts = torch.stack([mask.sum(), (mask.sum(-1) > 0).sum()]).float()  # tokens, non-empty rows
        counts = self.accelerator.reduce(counts, reduction="sum")  # whole generation batch, all ranks
        scale = self.current_gradient_accumulation_steps / self.args.steps_per_generation
        return counts * scale / self.accelerator.num_processes

    @torch.no_grad()
    def _update_controllers(self, out: dict[str, Any]) -> LossContext | None:
        """STARE §4.3: the step controller on this generation batch, as the policy is before any update on it.

        With ``steps_per_generation == 1`` the first training micro-batch *is* this rank's whole generation
        batch and its forward runs before any update on it, so the measurement is deferred to that forward
        (``None`` returned) instead of paying for an extra pass. Otherwise, when TRL made its own no-grad
        old-log-prob pass over this batch (``num_iterations > 1``, misaligned accumulation, vLLM importance
        sampling), its log-probs and entropies are the measurement (same model state, inputs and chunking:
        the same numbers); else one no-grad pass measures it here (the one forward plain TRL does not make).
        """
        if not self.step_control.active:
            return LossContext()
        if not self._measures_at_generation():
            return None  # measured by the first _compute_loss on this batch
        need = self._controllers_need_entropy(out)
        old, captured = out.get("old_per_token_logps"), out.get("old_entropy")
        if old is not None and (captured is not None or not need):
            logps, entropies = old, captured  # (B, T) each: TRL's pass, reused
        else:
            logps, entropies, _ = self._forward(self.model, out, compute_entropy=need)  # (B, T) each
        return self._begin_step(trl_step_batch(out, logps.float(), None if entropies is None else entropies.float()))

    def _measures_at_generation(self) -> bool:
        """Whether the controllers measure the generation batch before training on it (else: first forward)."""
        return self.step_control.active and self.args.steps_per_generation > 1

    def _controllers_need_entropy(self, inputs: dict[str, Any]) -> bool:
        """The measuring pass needs the current policy's entropy: controllers or the method's own need, or global
        statistics of a method reading the old policy's entropy when TRL did not capture it."""
        needs_old = self.step_control.spec.needs_old_entropy and inputs.get("old_entropy") is None
        return self.step_control.needs_entropy or (self.step_control.global_stats_enabled and needs_old)

    def _needs_entropy(self, inputs: dict[str, Any], measuring: bool) -> bool:
        """Whether this training forward needs the full-vocabulary entropy: the method (``needs_entropy``, or
        ``needs_old_entropy`` when TRL made no old-log-prob pass: old = current), the entropy bonus (its
        gradient), the quadrant diagnostics, or the controllers when this forward measures."""
        setup, spec = self.setup, self.step_control.spec
        return (
            spec.entropy_needed(setup.method_config)
            or (spec.needs_old_entropy and inputs.get("old_entropy") is None)
            or setup.quadrant_metrics
            or setup.entropy_bonus is not None
            or setup.adaptive_entropy is not None
            or (measuring and self._controllers_need_entropy(inputs))
        )

    @torch.no_grad()
    def _begin_step(self, batch: TokenBatch) -> LossContext:
        """StepController.begin_step on this rank's generation batch (detached); its metrics into TRL's buffer."""
        ctx = self.step_control.begin_step(batch, self._generation_index())
        for key, value in self.step_control.metrics().items():
            self._metrics["train"][control_metric(key)].append(float(value))
        return ctx

    def _generation_index(self) -> int:
        """0-based index of the current generation batch (TRL regenerates every steps_per_generation * num_iterations)."""
        return self._step // max(self.args.steps_per_generation * self.num_iterations, 1)

    # ----- update side: the loss on one micro-batch -----
    def _forward(self, model: Any, inputs: dict[str, Any], compute_entropy: bool, compute_aux_loss: bool = False
                 ) -> tuple[torch.Tensor, Any, Any]:
        """(log-probs, entropies, MoE router aux loss or None) of the completions, TRL's forward."""
        input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention_mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        return self._get_per_token_logps_and_entropies(
            model,
            input_ids,
            attention_mask,
            inputs["completion_ids"].size(1),
            batch_size=self.args.per_device_train_batch_size,
            compute_entropy=compute_entropy,
            compute_aux_loss=compute_aux_loss,
            **{k: inputs.get(k) for k in _FORWARD_KEYS},
        )

    def _compute_loss(self, model, inputs):  # type: ignore[override]
        if not self.model.training:  # evaluation loss: plain vanilla token-mean, no controller
            return super()._compute_loss(model, inputs)
        measuring = self._ctx is None
        logps, entropies, aux_loss = self._forward(model, inputs, compute_entropy=self._needs_entropy(inputs, measuring),
                                                   compute_aux_loss=self.aux_loss_enabled)  # (B, T), grad flows
        mask = loss_mask(inputs)  # (B, T)
        batch = trl_token_batch(inputs, logps, entropies)
        if measuring:  # first forward on a fresh generation batch (steps_per_generation == 1)
            self._ctx = self._begin_step(trl_step_batch(inputs, logps, entropies))
        ctx = dataclasses.replace(self._ctx, generator=self._generator())
        out = compute_loss(self.setup.method, batch, self.setup.method_config, self.setup.surrogate, ctx)
        bonus = None
        if self.setup.entropy_bonus is not None or self.setup.adaptive_entropy is not None:
            bonus = self.setup.entropy_bonus or EntropyBonusConfig()
        out, policy_token_loss = with_is_ratio_and_bonus(out, batch, inputs.get("importance_sampling_ratio"),
                                                         bonus, ctx)
        tokens, seqs = float(inputs["stare_norm_tokens"]), float(inputs["stare_norm_seqs"])
        agg = dict(mode=self.setup.surrogate.loss_agg_mode, global_tokens=tokens, global_seqs=seqs,
                   norm_length=self.max_completion_length)
        loss = aggregate(out.token_loss, mask, **agg)
        if aux_loss is not None:  # MoE load balancing, as TRL adds it (scaled for gradient accumulation)
            loss = loss + self.router_aux_loss_coef * aux_loss / self.current_gradient_accumulation_steps
            self._metrics["train"]["aux_loss"].append(self.accelerator.gather_for_metrics(aux_loss).mean().item())
        with torch.no_grad():
            pg_loss = aggregate(policy_token_loss, mask, **agg) * self.current_gradient_accumulation_steps
            self._log_step_metrics(batch, out, pg_loss)
        return loss

    def _generator(self) -> torch.Generator:
        """Per-micro-batch RNG for methods with random choices: a function of (seed, step), so resume-exact."""
        micro = self.state.global_step * self.current_gradient_accumulation_steps + self._step % max(
            self.current_gradient_accumulation_steps, 1
        )
        return torch.Generator(device=self.accelerator.device).manual_seed(self.args.seed * 1_000_003 + micro)

    def _log_step_metrics(self, batch: TokenBatch, out: Any, pg_loss: torch.Tensor) -> None:
        """Scalar metrics of one micro-batch, averaged over ranks, into TRL's metric buffer (one sync)."""
        valid = batch.mask_f
        n = valid.sum().clamp(min=1.0)
        m: dict[str, torch.Tensor] = {
            "actor/pg_loss": pg_loss,
            MEAN_WEIGHT: (out.token_weights * valid).sum() / n,
        }
        if batch.entropy is not None:  # computed when the method, a controller or the diagnostics need it
            m["actor/entropy"] = (batch.entropy.detach() * valid).sum() / n
        for key, sel in out.masks.items():  # every token selection the method returns
            m[mask_fraction_metric(key)] = (sel & batch.valid).sum() / n
        for key, value in out.metrics.items():
            m.setdefault(f"actor/{key}" if key in _ACTOR_METRICS else loss_metric(key), value)
        if self.setup.quadrant_metrics:
            m.update(quadrant_stats(batch.log_prob, batch.entropy, batch.advantages, batch.mask,
                                    selections=out.masks))
        names = list(m)
        values = torch.stack([torch.as_tensor(v, dtype=torch.float32, device=pg_loss.device).reshape(())
                              for v in m.values()])
        values = self.accelerator.reduce(values, reduction="mean")
        for name, value in zip(names, values.tolist(), strict=True):
            self._metrics["train"][name].append(value)

    # ----- logging and checkpoints -----
    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:  # type: ignore[override]
        mode = "train" if self.model.training else "eval"
        buffer = self._metrics[mode]
        for trl_name, verl_name in _VERL_NAMES.items():
            if trl_name in buffer:
                buffer[verl_name] = buffer.pop(trl_name)
            if trl_name in logs:
                logs[verl_name] = logs.pop(trl_name)
        super().log(logs, start_time)

    def controller_state(self) -> dict[str, Any]:
        return self.step_control.state_dict()

    def _save_checkpoint(self, model, trial):  # type: ignore[override]
        """HF's checkpoint with the controller state written *first*: HF writes ``trainer_state.json`` last and
        then rotates older checkpoints away (``save_total_limit``), so a checkpoint is complete before any older
        one is deleted. A failed write (disk full, quota, read-only, I/O error) removes the half-written
        checkpoint and raises :class:`~stare_rl.io.runlog.CheckpointWriteError`; the older ones stay as they were."""
        run_dir = Path(self._get_output_dir(trial=trial))
        checkpoint = run_dir / f"checkpoint-{self.state.global_step}"
        try:
            if self.args.should_save:
                self.step_control.save(checkpoint)
            super()._save_checkpoint(model, trial)
        except (OSError, RuntimeError, SafetensorError) as err:  # torch.save / safetensors wrap the OS error
            if not self.args.should_save:
                raise
            shutil.rmtree(checkpoint, ignore_errors=True)
            raise CheckpointWriteError(checkpoint, RunLayout(run_dir).last_checkpoint(), err) from err

    def train(self, resume_from_checkpoint: str | bool | None = None, *args: Any, **kwargs: Any) -> Any:
        """HF's ``train``; resuming, it first refuses a checkpoint whose controller settings differ from this run's
        (``StepController.check_checkpoint``: method, controllers, every state-defining setting), before any step."""
        checkpoint = resume_from_checkpoint
        if checkpoint is True:  # HF's "the last checkpoint in output_dir"
            from transformers.trainer_utils import get_last_checkpoint

            checkpoint = get_last_checkpoint(self.args.output_dir)  # None: HF raises its own error below
        if checkpoint:
            self.step_control.check_checkpoint(checkpoint)
        return super().train(resume_from_checkpoint, *args, **kwargs)

    def _load_optimizer_and_scheduler(self, checkpoint):  # type: ignore[override]
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None:
            self.step_control.load(checkpoint)


__all__ = ["TRL_HOOKS", "TRL_VERSION", "StareGRPOTrainer"]


def _stare_args(args: GRPOConfig | None, model: Any) -> StareGRPOConfig:
    """``args``, or TRL's default config (``<model name>-GRPO``) when ``None``; a plain GRPOConfig is refused."""
    if args is None:
        name = model if isinstance(model, str) else getattr(model.config, "_name_or_path", "") or "model"
        return StareGRPOConfig(output_dir=f"{name.split('/')[-1]}-GRPO")
    if not isinstance(args, StareGRPOConfig):
        raise TypeError(f"args is a {type(args).__name__}; StareGRPOTrainer needs a StareGRPOConfig (it carries the "
                        "method and its fields): replace GRPOConfig(...) with StareGRPOConfig(method=..., ...)")
    return args
