"""``stare train``: GRPO with a stare-rl method on TRL.

    stare train                                   # embedded offline default (tiny model + arithmetic, STARE)
    stare train --config FILE.yaml [--key value ...]
    stare train --method steer --help             # every field, the chosen method's included

Everything is parsed and validated (config keys, method fields, files, batch arithmetic, data rows) before
any compute; a bad value is reported as ``stare train: error: ...`` with exit status 2.

Everything a run has to say is logged (this module's logger): the notes and progress lines at INFO, warnings and
errors at WARNING / ERROR, each a whole line as the user reads it. ``stare`` shows them on stdout / stderr
(:mod:`stare_rl.commands.console`).
"""

from __future__ import annotations

import ast
import errno
import json
import logging
import os
import shutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import torch
import yaml

from stare_rl.engines.trl.callbacks import CheckpointOnSignal
from stare_rl.engines.trl.eval import HeldOutEvalCallback
from stare_rl.engines.trl.rewards import make_reward_func
from stare_rl.engines.trl.tools import make_tool_reward_func
from stare_rl.engines.trl.watch import TrainingWatch
from stare_rl.evaluation import heldout
from stare_rl.evaluation.tools import evaluate_tool_task
from stare_rl.io.cache import cache_dir
from stare_rl.io.runlog import (
    INITIAL_EVAL_FILE,
    METRICS_FILE,
    TRAIN_SUMMARY_FILE,
    TRAINER_STATE_FILE,
    CheckpointWriteError,
    RunLayout,
    describe_run_dir,
    write_json_atomic,
    write_text_atomic,
)
from stare_rl.tasks import is_tool_task
from stare_rl.train.checks import disk_warning
from stare_rl.train.eval_cache import cached_evaluation, eval_key
from stare_rl.train.model_card import model_card
from stare_rl.train.plan import plan_run
from stare_rl.train.prepare import Prepared, is_tool_run, load_model, prepare
from stare_rl.train.warmstart import TASK_INFO_FILE, WARMSTART_FILE, warm_start

logger = logging.getLogger(__name__)


def main(argv: list[str]) -> int:
    """Entry point of ``stare train``; returns the exit status."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download at run time
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        plan = plan_run(list(argv))
        if plan is None:
            return 0
        prepared = prepare(plan)
    except ValueError as err:
        logger.error("stare train: error: %s", _one_line(err))
        return 2
    for line in prepared.notes:
        logger.info(line)
    for line in prepared.warnings:
        logger.warning("stare train: warning: %s", line)
    try:
        run_dir, stopped = execute(prepared)
    except CheckpointWriteError as err:  # disk full / quota / read-only while checkpointing
        logger.error("stare train: error: %s", err)
        return 1
    except OSError as err:
        if err.errno not in DISK_ERRNOS:
            raise
        logger.error("stare train: error: %s", _disk_error(err, prepared.plan.grpo.output_dir))
        return 1
    logger.info(describe_run_dir(run_dir))
    if isinstance(stopped, SignalStop):
        logger.warning("stare train: %s", stopped.message())
        return 128 + stopped.signum  # the shell's status for "ended by this signal"
    if stopped:
        logger.error("stare train: error: %s", stopped)
        return 1
    return 0


@dataclass(frozen=True)
class SignalStop:
    """Training stopped by a signal (SIGTERM) after checkpointing ``step`` into ``checkpoint``."""

    signum: int
    step: int
    checkpoint: Path

    def message(self) -> str:
        return (f"stopped by {signal.Signals(self.signum).name} after step {self.step}: {self.checkpoint} holds it "
                "(no final model or evaluation yet); re-run the same command with --resume_from_checkpoint last to "
                "go on exactly from there")


DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO)  # the disk, not the program


def _disk_error(err: OSError, output_dir: str) -> str:
    """One line for a write the disk refused outside a checkpoint (metrics, model, evaluation, warm start)."""
    what = f"could not write {err.filename}" if err.filename else "a write failed"
    last = RunLayout(Path(output_dir)).last_checkpoint()
    then = (f"the last complete checkpoint {last} is intact: free space, then re-run with "
            "--resume_from_checkpoint last" if last is not None else "free space, then re-run")
    return f"{what}: [Errno {err.errno}] {err.strerror}; {then}"


def _one_line(err: Exception) -> str:
    return "; ".join(line.strip() for line in str(err).splitlines() if line.strip())


def _write_config(path: Path, explicit: dict[str, Any]) -> None:
    header = "# Resolved configuration of this run; re-run with: stare train --config config.yaml\n"
    plain = {k: v.value if isinstance(v, Enum) else v for k, v in explicit.items()}  # e.g. save_strategy "no"
    write_text_atomic(path, header + yaml.safe_dump(plain, sort_keys=True))


def execute(prep: Prepared) -> tuple[Path, str | SignalStop | None]:
    """Warm start (cached) -> GRPO with the method -> save -> held-out evaluation.

    Returns:
        The run dir, and why training stopped early or ``None``: a non-finite loss (a string; nothing saved), or
        a SIGTERM (:class:`SignalStop`; the step in progress finished and checkpointed).
    """
    import datasets
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_warning()
    datasets.disable_progress_bars()  # TRL's dataset map bars: one bar per phase is enough
    hf_logging.disable_progress_bar()  # "Loading weights" / "Writing model shards" at every load and checkpoint
    plan, ta, grpo = prep.plan, prep.plan.task_args, prep.plan.grpo
    layout = RunLayout(Path(grpo.output_dir))
    # resume_from_checkpoint is what this invocation did, not part of the run's configuration
    saved = {k: v for k, v in plan.explicit.items() if k != "resume_from_checkpoint"}
    _write_config(layout.config, {**saved, "output_dir": grpo.output_dir})
    if prep.restart:  # the stopped run's per-step log would be appended to
        for name in (METRICS_FILE, TRAIN_SUMMARY_FILE):
            (layout.root / name).unlink(missing_ok=True)
    model, tokenizer = prep.model, prep.tokenizer
    with torch_threads(ta.torch_threads):
        if ta.model == "tiny":
            cache = cache_dir(ta.cache_dir)
            logger.info("warm start: tiny model on %s (cached in %s)", ta.task, cache)
            ws = plan.warmstart
            path = warm_start(ta.task, cache, seed=ws.warmstart_seed,
                              config=ws.warmstart_config())
            logger.info("warm start: %s", path)
            unlearned = warmstart_warning(path)
            if unlearned:
                logger.warning("stare train: warning: %s", unlearned)
            model, tokenizer = load_model(str(path), grpo.model_init_kwargs)
        stopped = _train_and_evaluate(prep, model, tokenizer, layout)
    return layout.root, stopped


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block on ``n`` torch threads (None: torch's current setting), restoring the count afterwards.
    The warm start, GRPO and evaluation all run under it, so a cached warm start gets the same bits whichever
    command trained it."""
    before = torch.get_num_threads()
    torch.set_num_threads(n or before)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _evaluate(prep: Prepared, model: Any, tokenizer: Any, out: Path, label: str, cache: Path | None = None
              ) -> dict[str, Any]:
    """Evaluate ``model`` on the held-out rows into ``out`` (:func:`evaluate_policy`), and log it."""
    result, hit = evaluate_policy(prep, model, tokenizer, cache)
    write_json_atomic(out, result)
    shown = {k: v for k, v in result.items() if isinstance(v, int | float) and not k.startswith("reflection/")}
    logger.info("%s%s: %s", label, f" (the same evaluation, cached: {hit})" if hit else "", json.dumps(shown))
    return result


def evaluate_policy(prep: Prepared, model: Any, tokenizer: Any, cache: Path | None = None
                    ) -> tuple[dict[str, Any], Path | None]:
    """``model`` on the run's held-out rows, as ``stare train`` evaluates it (the task's tools where it has them);
    with ``cache``, an identical earlier evaluation is read from it instead (train/eval_cache.py: keyed on the
    weights, tokenizer, rows, reward and every setting). Returns the result and the cache file it came from (None:
    computed). ``stare compare``'s reference evaluation of the starting model calls it too."""
    ta, grpo = prep.plan.task_args, prep.plan.grpo
    tools = is_tool_run(prep.task, ta)

    def run() -> dict[str, Any]:
        if tools:  # multi-turn episodes with the task's tools
            return evaluate_tool_task(model, tokenizer, prep.task, prep.eval_rows, k=ta.eval_k,
                                      temperature=grpo.temperature, max_completion_length=grpo.max_completion_length,
                                      max_tool_calls=grpo.max_tool_calling_iterations, seed=grpo.seed)
        return heldout.evaluate(model, tokenizer, prep.eval_rows, prep.reward_fn, k=ta.eval_k,
                                temperature=grpo.temperature, top_p=grpo.top_p,
                                max_new_tokens=grpo.max_completion_length, seed=grpo.seed)

    if cache is None:
        result, hit = run(), None
    else:
        settings = {"k": ta.eval_k, "temperature": grpo.temperature, "top_p": grpo.top_p, "seed": grpo.seed,
                    "max_new_tokens": grpo.max_completion_length, "tools": tools, "task": prep.task.name,
                    "max_tool_calls": grpo.max_tool_calling_iterations if tools else None,
                    "reward": next((n for n in prep.notes if n.startswith("reward:")), "")}
        key = eval_key(model, tokenizer, prep.eval_rows, prep.reward_fn, settings,
                       code=(evaluate_tool_task if tools else heldout, prep.reward_fn))
        result, hit = cached_evaluation(cache, key, run)
    return result, hit


def _train_and_evaluate(prep: Prepared, model: Any, tokenizer: Any, layout: Any) -> str | SignalStop | None:
    """GRPO with the method, save the final model, evaluate it on the held-out rows; the early-stop reason."""
    from datasets import Dataset

    from stare_rl.engines.trl.trainer import StareGRPOTrainer  # imports TRL: only a run needs it

    plan, ta, grpo = prep.plan, prep.plan.task_args, prep.plan.grpo
    watch = TrainingWatch(patience=ta.warn_after_steps,
                          reward_note=next((n for n in prep.notes if n.startswith("reward:")), ""))
    if is_tool_run(prep.task, ta):  # TRL's own multi-turn tool loop plays the episodes (engines/trl/tools.py)
        reward_func, extra = make_tool_reward_func(prep.reward_fn, ta.reward_timeout_s), {"tools": list(prep.task.tools)}
    else:
        reward_func, extra = make_reward_func(prep.reward_fn, ta.reward_timeout_s), {}
    trainer = StareGRPOTrainer(
        model=model,
        reward_funcs=reward_func,
        args=grpo,
        train_dataset=Dataset.from_list(prep.train_rows),
        processing_class=tokenizer,
        # curve before the metrics.jsonl writer; SIGTERM finishes the step, checkpoints it and stops
        callbacks=[watch, preempt := CheckpointOnSignal(), *_curve_callbacks(prep, tokenizer)],
        **extra,
    )
    short = disk_warning(trainer.model, grpo, grpo.output_dir)
    if short:
        logger.warning("stare train: warning: %s", short)
    before, before_path = None, layout.root / INITIAL_EVAL_FILE
    if ta.initial_eval and ta.final_eval and prep.resume is None:
        cache = cache_dir(ta.cache_dir) if ta.initial_eval_cache else None
        before = _evaluate(prep, trainer.model, tokenizer, before_path, "held-out evaluation before training", cache)
        silent = zero_start_warning(before, ta.eval_k, watch.reward_note)
        if silent:
            logger.warning("stare train: warning: %s", silent)
    elif before_path.is_file():  # resumed: the interrupted run measured the start
        before = json.loads(before_path.read_text())
    if _finished(prep.resume, grpo.max_steps):  # killed after its last step (e.g. in the final evaluation)
        logger.info("training: %s is the last step; saving and evaluating it", prep.resume)
        trainer.model.load_state_dict(load_model(prep.resume, grpo.model_init_kwargs)[0].state_dict())
    else:
        logger.info("training: method=%s, run dir %s", grpo.method, layout.root)
        with _quiet_tied_weight_warning(trainer.model):
            trainer.train(resume_from_checkpoint=prep.resume)
    if watch.stopped:
        return watch.stopped
    if preempt.stopped_at is not None and preempt.received is not None:
        (layout.root / TRAIN_SUMMARY_FILE).unlink(missing_ok=True)  # the run is not finished: it looks like one killed
        return SignalStop(preempt.received, preempt.stopped_at, layout.root / f"checkpoint-{preempt.stopped_at}")
    _save_final_model(trainer, tokenizer, prep.task, layout.model)
    after = _evaluate(prep, trainer.model, tokenizer, layout.eval, "held-out evaluation") if ta.final_eval else None
    steps = trainer.state.global_step or _checkpoint_step(prep.resume)
    card = model_card(plan, prep.notes, steps, before, after, layout.root.name)
    for where in (layout.root, layout.model):  # replaces TRL's generic card ("fine-tuned version of [None]")
        write_text_atomic(where / "README.md", card)
    return None


WARMSTART_LEARNED_GREEDY = 0.1  # held-out greedy accuracy below this: the warm start did not learn its task


def warmstart_warning(path: Path) -> str | None:
    """A plain warning when the cached warm start at ``path`` ended without learning its task (held-out greedy
    accuracy below :data:`WARMSTART_LEARNED_GREEDY`): GRPO on it has almost no correct sample to reinforce."""
    info_path = Path(path) / WARMSTART_FILE
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    final = info.get("final") or {}
    greedy = final.get("greedy_acc")
    if greedy is None or greedy >= WARMSTART_LEARNED_GREEDY:
        return None
    return (f"the warm start did not learn its task: held-out greedy accuracy {greedy:.3f} after {info.get('steps')} "
            f"SFT steps ({info_path}); GRPO from it will find almost no correct sample to reinforce. Fix the recipe "
            "for this model (warmstart_learning_rate, warmstart_max_steps) before spending the GRPO budget")


def zero_start_warning(before: dict[str, Any], k: int, reward_note: str) -> str | None:
    """A plain warning when the starting policy scored 0 on every held-out sample: GRPO's advantages are all 0."""
    score = before.get(f"avg@{k}")
    if score is None or score > 0:
        return None
    return (f"the starting policy scored 0 on all {before.get('n', '?')} x {k} held-out samples: every advantage "
            f"will be 0 and GRPO learns nothing unless some training sample scores. The reward cannot read what this "
            f"model writes, or the task is too hard for it. In use: {reward_note}")


def _save_final_model(trainer: Any, tokenizer: Any, task: Any, final: Path) -> None:
    """Save the policy (+ tokenizer, + ``stare_task.json`` so that ``stare eval --model run/model`` finds the task)
    into ``.model.partial`` and rename it to ``final``: a kill while saving never leaves a half-written ``model/``
    (the re-run with ``--resume_from_checkpoint last`` saves it again)."""
    partial = final.with_name(f".{final.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    trainer.save_model(str(partial))
    tokenizer.save_pretrained(str(partial))
    if task is not None:
        write_json_atomic(partial / TASK_INFO_FILE, {"task": task.name, "task_kwargs": task.settings()})
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)


def _finished(checkpoint: str | None, max_steps: int) -> bool:
    """True when ``checkpoint`` holds the run's last step: HF's loop would train one step past ``max_steps``."""
    return checkpoint is not None and max_steps >= 1 and _checkpoint_step(checkpoint) >= max_steps


def _checkpoint_step(checkpoint: str | None) -> int:
    """The global step saved in ``checkpoint`` (0 for None)."""
    if checkpoint is None:
        return 0
    return int(json.loads((Path(checkpoint) / TRAINER_STATE_FILE).read_text()).get("global_step", 0))


class _quiet_tied_weight_warning:  # noqa: N801 - used as a context manager
    """Drops transformers' "missing keys ['lm_head.weight']" on resume when that weight is tied to the input
    embeddings (it is not saved separately and is restored by the tie; results are identical)."""

    def __init__(self, model: Any) -> None:
        out, inp = model.get_output_embeddings(), model.get_input_embeddings()
        tied = out is not None and inp is not None and out.weight is inp.weight
        self.tied = {"lm_head.weight"} if tied else set()
        self.logger = logging.getLogger("transformers.trainer")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        prefix = "There were missing keys in the checkpoint model loaded: "
        if not message.startswith(prefix):
            return True
        try:
            missing = set(ast.literal_eval(message[len(prefix):].rstrip(".")))
        except (ValueError, SyntaxError):
            return True
        return not (missing and missing <= self.tied)

    def __enter__(self) -> _quiet_tied_weight_warning:
        self.logger.addFilter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeFilter(self)


def _curve_callbacks(prep: Prepared, tokenizer: Any) -> list[Any]:
    """The held-out learning-curve callback when ``eval_every > 0`` (``stare_rl.engines.trl.eval``)."""
    ta, grpo = prep.plan.task_args, prep.plan.grpo
    if not ta.eval_every:
        return []
    if prep.task is not None and is_tool_task(prep.task) and ta.dataset is None:
        logger.info("held-out curve: eval_every is not supported for tool-use tasks yet; no curve")
        return []

    def show(step: int, m: dict[str, float]) -> None:
        shown = ", ".join(f"{k[5:]} {v:.3f}" for k, v in m.items() if k.startswith(("eval/pass@", "eval/greedy")))
        logger.info("held-out curve, step %d: %s", step, shown)

    return [HeldOutEvalCallback(tokenizer, prep.eval_rows[: ta.eval_prompts], prep.reward_fn, every=ta.eval_every,
                                n=ta.eval_samples, temperature=grpo.temperature, top_p=grpo.top_p,
                                max_new_tokens=grpo.max_completion_length, seed=grpo.seed, on_result=show)]
