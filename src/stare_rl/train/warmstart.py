"""Supervised warm start of the tiny model on an embedded task, cached on disk.

RL from a random model gets no reward signal; from a converged one, no variance. The warm start fine-tunes
the tiny model with TRL's ``SFTTrainer`` (prompt-completion rows, loss on the completion only) and stops on
a metric measured every ``eval_every`` steps on held-out train-split prompts: as soon as greedy accuracy
reaches ``stop_greedy_acc`` or sampled avg@k reaches ``stop_avg_at_k`` (the transition is sharp, so a fixed
step count would over- or undershoot). ``max_steps`` caps it.

The result is a normal Hugging Face model directory (``save_pretrained`` model + tokenizer) under
``cache_dir/<task>-<hash>``, the hash covering the task settings, the model shape and the SFT settings. It
also holds ``warmstart.json`` (settings, metric history, wall time) and ``stare_task.json`` (which task and
settings the model was trained for, read by ``stare eval``). Written to a temporary directory, then renamed.
Processes that share a cache train each setting once: the first takes ``.lock-<task>-<hash>`` beside the entry
(``flock``, released by the kernel if the process dies; the file is deleted when the lock is let go) and the others
wait for it, then read its result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import random
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stare_rl.evaluation import heldout
from stare_rl.evaluation.tools import evaluate_tool_task
from stare_rl.models.tiny import build_tiny_model
from stare_rl.models.tokenizer import WARMSTART_NEWLINE, build_char_tokenizer
from stare_rl.tasks import Task, get_task, is_tool_task

try:
    import fcntl
except ImportError:  # not POSIX: no lock; two processes may then train the same setting (the rename keeps one)
    fcntl = None

logger = logging.getLogger(__name__)

CACHE_FORMAT = 1  # bump when the saved layout or the training recipe changes meaning
TASK_INFO_FILE = "stare_task.json"
WARMSTART_FILE = "warmstart.json"
LR_SCHEDULERS = ("constant_with_warmup", "cosine", "linear", "warmup_stable_decay")


@dataclass(frozen=True)
class WarmStartConfig:
    """Model shape and SFT settings of the warm start (all part of the cache key)."""

    hidden_size: int = field(
        default=128,
        metadata={"help": "Width of the tiny Qwen2 model (128: ~1M parameters; must divide by num_heads). Each size "
                  "is warm-started once. Wider models want a smaller learning rate: on arithmetic, 512 stalled at "
                  "2e-3 (avg@8 0.003 after 475 SFT steps) and reached the stop metric in 200 steps at 5e-4 "
                  "(2e-3 x 128/512; docs/compare.md)."},
    )
    num_layers: int = field(default=4, metadata={"help": "Decoder layers of the tiny model."})
    num_heads: int = field(default=4, metadata={"help": "Attention heads of the tiny model."})
    learning_rate: float = field(default=1e-3, metadata={"help": "SFT learning rate (constant after warmup)."})
    warmup_steps: int = field(default=20, metadata={"help": "Linear warmup steps of the SFT learning rate."})
    batch_size: int = field(default=256, metadata={"help": "SFT rows per optimiser step."})
    max_steps: int = field(default=3000, metadata={"help": "Cap on SFT steps if the stop metric is never met."})
    train_rows: int = field(default=20000, metadata={"help": "Distinct train-split rows used for SFT."})
    eval_every: int = field(default=25, metadata={"help": "Evaluate the stop metric every this many steps."})
    eval_rows: int = field(default=128, metadata={"help": "Held-out train-split prompts for the stop metric."})
    k: int = field(default=8, metadata={"help": "Samples per prompt (temperature 1) for avg@k."})
    stop_greedy_acc: float = field(
        default=0.5, metadata={"help": "Stop once greedy accuracy on the held-out prompts reaches this."}
    )
    stop_avg_at_k: float = field(
        default=0.3, metadata={"help": "Stop once sampled avg@k on the held-out prompts reaches this."}
    )
    stop_on_metric: bool = field(
        default=True,
        metadata={"help": "Stop as soon as a stop metric is met. False: train exactly max_steps (the metrics are "
                  "measured every eval_every steps and reported, never used to stop)."},
    )
    correct_frac: float = field(
        default=1.0,
        metadata={"help": "Fraction of SFT rows whose completion is correct; the others get one of the task's "
                  "plausible wrong answers (arithmetic: one digit off by one). Below 1, trained to convergence "
                  "(stop_on_metric false), the policy's accuracy is set by the data, not by when training stops."},
    )
    lr_scheduler: str = field(
        default="constant_with_warmup",
        metadata={"help": "SFT learning-rate schedule after the warmup: constant_with_warmup; cosine / linear "
                  "(decay to 0 at max_steps from the start); warmup_stable_decay (constant, then a cosine decay "
                  "to 0 over the last decay_frac of the steps: the weights settle instead of stopping mid-update)."},
    )
    decay_frac: float = field(
        default=0.25,
        metadata={"help": "warmup_stable_decay: fraction of the steps after the warmup spent decaying the learning "
                  "rate to 0."},
    )

    def __post_init__(self) -> None:
        for name in ("hidden_size", "num_layers", "num_heads", "batch_size", "max_steps", "train_rows",
                     "eval_every", "eval_rows", "k"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size={self.hidden_size} must be divisible by num_heads={self.num_heads}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps={self.warmup_steps!r} must be >= 0")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate={self.learning_rate!r} must be > 0")
        if not isinstance(self.stop_on_metric, bool):
            raise ValueError(f"stop_on_metric={self.stop_on_metric!r} must be true or false")
        if self.lr_scheduler not in LR_SCHEDULERS:
            raise ValueError(f"lr_scheduler={self.lr_scheduler!r} is not one of {list(LR_SCHEDULERS)}")
        for name in ("stop_greedy_acc", "stop_avg_at_k", "correct_frac", "decay_frac"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
                note = " (0 = stop at the first evaluation)" if name.startswith("stop_") else ""
                raise ValueError(f"{name}={value!r} must be in [0, 1]{note}")


# Fields added after models were cached: left out of the key at their default, so those models keep their key.
_KEYED_ONLY_WHEN_SET = {"stop_on_metric": True, "correct_frac": 1.0, "lr_scheduler": "constant_with_warmup",
                        "decay_frac": 0.25}


def cache_key(task: Task, config: WarmStartConfig, seed: int) -> str:
    """A short stable hash of everything that determines the warm-started model."""
    settings = {k: v for k, v in dataclasses.asdict(config).items()
                if k not in _KEYED_ONLY_WHEN_SET or v != _KEYED_ONLY_WHEN_SET[k]}
    payload = {"format": CACHE_FORMAT, "task": task.name, "task_settings": task.settings(),
               "config": settings, "seed": seed}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def read_task_info(model_dir: str | Path) -> dict[str, Any] | None:
    """``{"task": name, "task_kwargs": {...}}`` saved with a warm-started model, or None if absent."""
    path = Path(model_dir) / TASK_INFO_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _is_complete(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / WARMSTART_FILE).is_file()


def warm_start(
    task_name: str,
    cache_dir: str | Path,
    *,
    seed: int = 0,
    force: bool = False,
    config: WarmStartConfig | None = None,
    task_kwargs: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> Path:
    """Return the directory of the warm-started model for ``task_name``, training it if not cached.

    Args:
        task_name: an embedded task (``stare_rl.tasks.list_tasks()``).
        cache_dir: where cached models live (created if missing).
        seed: model init, data order and row sampling seed.
        force: retrain even if a cached model exists (the cached one is replaced).
        config: model shape and SFT settings (default :class:`WarmStartConfig`).
        task_kwargs: task settings, e.g. ``{"num_count": 4}`` for countdown.
        progress: show progress bars.
    """
    config = config or WarmStartConfig()
    task_kwargs = dict(task_kwargs or {})
    task = get_task(task_name, **task_kwargs)
    if config.correct_frac < 1.0 and type(task).sft_wrong_target is Task.sft_wrong_target:
        raise ValueError(f"correct_frac={config.correct_frac}: task {task.name!r} defines no wrong completions to "
                         "mix in (Task.sft_wrong_target); use correct_frac=1.0")
    cache_dir = Path(cache_dir)
    final = cache_dir / f"{task.name}-{cache_key(task, config, seed)}"
    if _is_complete(final) and not force:
        logger.info("warm start: cache hit %s", final)
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _training_lock(cache_dir, final.name):
        if _is_complete(final) and not force:  # another process trained it while this one waited
            logger.info("warm start: cache hit %s (trained by another process)", final)
            return final
        tmp = cache_dir / f".tmp-{final.name}-{os.getpid()}"
        _remove_orphans(cache_dir, final.name)
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            info = _train(task, config, seed, tmp, progress)
            (tmp / WARMSTART_FILE).write_text(json.dumps(info, indent=2))
            (tmp / TASK_INFO_FILE).write_text(json.dumps({"task": task.name, "task_kwargs": task.settings()}))
            if final.exists() and (force or not _is_complete(final)):
                shutil.rmtree(final)
            try:
                os.rename(tmp, final)
            except OSError:  # without a lock (not POSIX), another process finished first: keep theirs
                if not _is_complete(final):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info("warm start: saved %s", final)
    return final


@contextlib.contextmanager
def _training_lock(cache_dir: Path, name: str) -> Iterator[None]:
    """Hold ``cache_dir/.lock-<name>`` exclusively: one process trains a setting, the others sharing the cache
    wait here (it names the holder's pid) instead of training the same model beside it. The holder deletes the file
    before it lets go, so a finished cache holds none; a waiter that then holds a deleted file's lock opens the
    path again (the usual flock-and-unlink pattern: two processes never both hold the path's lock)."""
    if fcntl is None:
        yield
        return
    path = cache_dir / f".lock-{name}"
    while True:
        f = open(path, "a+")  # noqa: SIM115  (closed below, or when the lock is released)
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            logger.warning("warm start: pid %s is training %s in this cache; waiting for it", holder, name)
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            current = os.stat(path).st_ino == os.fstat(f.fileno()).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        f.close()  # the holder deleted it while this one waited: lock the path's new file
    try:
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        yield
    finally:
        path.unlink(missing_ok=True)
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


def sft_rows(task: Task, rows: list[dict[str, str]], seed: int, correct_frac: float = 1.0) -> list[dict[str, str]]:
    """The supervised rows ``{"prompt", "completion"}``: one per completion of ``task.sft_targets`` (several
    per prompt for a task that samples among many valid completions), deterministic in ``seed``.

    With ``correct_frac < 1``, exactly ``len(out) - round(correct_frac * len(out))`` rows (drawn with the seed)
    get ``task.sft_wrong_target`` instead: the data, not the stopping step, sets the converged accuracy."""
    rng = random.Random(f"sft:{seed}")
    out = [{"prompt": r["prompt"], "completion": c, "answer": r["answer"]} for r in rows
           for c in task.sft_targets(r, rng)]
    if correct_frac < 1.0:
        wrong_rng = random.Random(f"sft-wrong:{seed}")
        for i in sorted(wrong_rng.sample(range(len(out)), len(out) - round(correct_frac * len(out)))):
            out[i]["completion"] = task.sft_wrong_target(out[i], wrong_rng)
    return [{"prompt": r["prompt"], "completion": r["completion"]} for r in out]


def _remove_orphans(cache_dir: Path, name: str) -> None:
    """Delete ``.tmp-<name>-<pid>`` dirs left by a killed warm start (their process is gone); they are never
    used as a cache entry (only the atomic rename to ``<name>`` publishes one), only disk to reclaim."""
    for tmp in cache_dir.glob(f".tmp-{name}-*"):
        pid = tmp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            logger.info("warm start: removing %s left by a killed run", tmp)
            shutil.rmtree(tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _train(task: Task, config: WarmStartConfig, seed: int, out: Path, progress: bool) -> dict[str, Any]:
    """SFT the tiny model until the stop metric is met; save model + tokenizer to ``out``; return the info."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    start, cpu_start = time.perf_counter(), time.process_time()
    tool_task = is_tool_task(task)
    # A tool task brings its own tokenizer (chat template + tool-call tokens): models/tool_tokenizer.py.
    tokenizer = task.build_tokenizer() if tool_task else build_char_tokenizer(task.alphabet, newline=WARMSTART_NEWLINE)
    model = build_tiny_model(tokenizer, config.hidden_size, config.num_layers, config.num_heads, seed=seed)
    # Small tasks may hold fewer train prompts than asked for: take them all, the first eval_rows held out.
    rows = task.make_split("train", config.train_rows + config.eval_rows, seed, allow_fewer=True)
    if len(rows) < 2 * config.eval_rows:
        raise ValueError(f"task {task!r} has only {len(rows)} train prompts; eval_rows={config.eval_rows} "
                         "needs at least twice as many")
    held_out, train = rows[: config.eval_rows], rows[config.eval_rows :]
    if tool_task:  # whole episodes (calls and tool results); the loss sees only the assistant turns
        dataset = Dataset.from_list([{"messages": task.sft_messages(r)} for r in train])
    else:
        dataset = Dataset.from_list(sft_rows(task, train, seed, config.correct_frac))
    stopper = _StopOnMetric(task, tokenizer, held_out, config, progress)
    args = SFTConfig(
        output_dir=str(out / "_trainer"),
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler,
        lr_scheduler_kwargs=({"num_decay_steps": decay_steps(config)} if config.lr_scheduler == "warmup_stable_decay"
                             else {}),
        warmup_steps=config.warmup_steps,
        weight_decay=0.0,
        completion_only_loss=None if tool_task else True,
        assistant_only_loss=tool_task,
        max_length=128,
        packing=False,
        logging_steps=config.eval_every,
        save_strategy="no",
        report_to="none",
        seed=seed,
        data_seed=seed,
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        dataloader_pin_memory=False,
        bf16=False,
        fp16=False,
        # TRL's SFTConfig turns it on by default; a tiny model has no activations worth saving, and recomputing
        # them cost ~25 % of each step (measured: the same weights to the bit after 120 steps, CPU 35.4 -> 28.8 s)
        gradient_checkpointing=False,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         callbacks=[stopper])
    _quiet_progress(trainer)
    try:
        trainer.train()
    finally:
        _release_accelerator_state()
    if not stopper.history or stopper.history[-1]["step"] != trainer.state.global_step:
        stopper.measure(model, trainer.state.global_step)
    shutil.rmtree(out / "_trainer", ignore_errors=True)
    model.generation_config.max_new_tokens = task.max_completion_chars + 1
    trainer.model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    last = stopper.history[-1]
    if config.stop_on_metric and not stopper.reached:
        logger.warning("warm start: stop metric not reached in max_steps=%d (last %s)", config.max_steps, last)
    return {
        "task": task.name, "task_kwargs": task.settings(), "seed": seed, "config": dataclasses.asdict(config),
        "steps": trainer.state.global_step, "reached_stop_metric": stopper.reached, "final": last,
        "history": stopper.history, "wall_time_s": round(time.perf_counter() - start, 1),
        "cpu_time_s": round(time.process_time() - cpu_start, 1),
        "num_parameters": sum(p.numel() for p in model.parameters()),
    }


def decay_steps(config: WarmStartConfig) -> int:
    """Steps of warmup_stable_decay's final decay: ``decay_frac`` of the steps after the warmup."""
    return round(config.decay_frac * max(config.max_steps - config.warmup_steps, 0))


def _release_accelerator_state() -> None:
    """Forget the accelerate state the warm start's trainer fixed for this process, so that the GRPO trainer that
    follows in the same process sets up its own: the warm start runs in float32, while on a GPU the GRPO run is
    bf16 by default, and accelerate refuses to change the mixed precision of an initialised state ("AcceleratorState
    has already been initialized"). Only the accelerator's part is cleared; the process / device state stays.
    transformers does the same between the trials of a hyper-parameter search (``Trainer._hp_search_setup``)."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=False)


def _quiet_progress(trainer: Any) -> None:
    """The SFT progress bar without the loss dicts it prints every ``eval_every`` steps and at the end: the stop
    metric line (``_StopOnMetric``) and ``warmstart.json`` carry what matters."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    class _BarOnly(ProgressCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            return None

    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(_BarOnly())


def _make_callback_base() -> type:
    from transformers import TrainerCallback

    return TrainerCallback


class _StopOnMetric(_make_callback_base()):  # type: ignore[misc]
    """Every ``eval_every`` steps: greedy accuracy and avg@k on held-out prompts; stop once either is met."""

    def __init__(self, task: Task, tokenizer: Any, rows: list[dict[str, str]], config: WarmStartConfig,
                 progress: bool) -> None:
        self.task, self.tokenizer, self.rows, self.config = task, tokenizer, rows, config
        self.history: list[dict[str, Any]] = []
        self.reached = False
        self.progress = progress

    def measure(self, model: Any, step: int) -> dict[str, Any]:
        if is_tool_task(self.task):
            result = evaluate_tool_task(model, self.tokenizer, self.task, self.rows, k=self.config.k, seed=step)
            return self._record(step, result)
        result = heldout.evaluate(model, self.tokenizer, self.rows, self.task.reward, k=self.config.k,
                                  max_new_tokens=self.task.max_completion_chars + 1, seed=step, progress=False)
        return self._record(step, result)

    def _record(self, step: int, result: dict[str, Any]) -> dict[str, Any]:
        k = self.config.k
        entry = {"step": step, "greedy_acc": result["greedy_acc"], f"avg@{k}": result[f"avg@{k}"],
                 f"pass@{k}": result[f"pass@{k}"], "entropy": result["entropy"],
                 "mean_response_length": result["mean_response_length"],
                 **{key: value for key, value in result.items() if key.startswith("tools/")}}
        self.history.append(entry)
        logger.info("warm start step %d: %s", step, entry)
        return entry

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> Any:
        if state.global_step % self.config.eval_every:
            return control
        entry = self.measure(model, state.global_step)
        if self.progress:
            from tqdm.auto import tqdm

            tqdm.write(f"warm start step {entry['step']}: greedy {entry['greedy_acc']:.3f} "
                       f"avg@{self.config.k} {entry[f'avg@{self.config.k}']:.3f} entropy {entry['entropy']:.3f}")
        if self.config.stop_on_metric and (entry["greedy_acc"] >= self.config.stop_greedy_acc
                or entry[f"avg@{self.config.k}"] >= self.config.stop_avg_at_k):
            self.reached = True
            control.should_training_stop = True
        return control
