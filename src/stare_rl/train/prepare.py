"""``stare train``, step 2: a :class:`~stare_rl.train.plan.Plan` -> :class:`Prepared` (data loaded and checked
against the model and the reward, held-out rows split off, the resume point resolved), before any training."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stare_rl.io.runlog import MODEL_DIR, RunLayout
from stare_rl.models.pretrained import resolve_model as resolve_named_model
from stare_rl.models.tiny import TINY_MAX_POSITIONS
from stare_rl.models.tokenizer import WARMSTART_NEWLINE, build_char_tokenizer, load_tokenizer
from stare_rl.tasks import get_task, is_tool_task
from stare_rl.tasks.data import load_located_rows
from stare_rl.tasks.rewards import math_reward, number_reward
from stare_rl.train.checks import (
    check_characters,
    check_chat_template,
    check_duplicates,
    check_lengths,
    check_math_answers,
    check_number_answers,
    held_out_split,
    math_reward_warning,
)
from stare_rl.train.config import ModelTaskArgs
from stare_rl.train.plan import Plan

logger = logging.getLogger(__name__)


@dataclass
class Prepared:
    """Validated data and settings; everything :func:`execute` needs."""

    plan: Plan
    task: Any
    train_rows: list[dict[str, Any]]
    eval_rows: list[dict[str, Any]]
    reward_fn: Any
    resume: str | None
    model: Any = None  # loaded policy (None for "tiny": built by the warm start in execute)
    tokenizer: Any = None
    notes: list[str] = dataclasses.field(default_factory=list)  # shown before the run starts
    warnings: list[str] = dataclasses.field(default_factory=list)  # shown as warnings before the run starts
    restart: bool = False  # resume 'last' of a run stopped before its first checkpoint: start it again


def _rows(spec: str, what: str) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        rows, where = load_located_rows(spec)
    except ValueError as err:  # the loader says dataset=...; say when it came from another field
        raise ValueError(f"{what}: {err}" if what != "dataset" else str(err)) from err
    return rows, where


def _reward(ta: ModelTaskArgs, task: Any) -> tuple[Any, str]:
    """The reward function and a line saying what it scores."""
    if ta.reward == "number":
        return number_reward, ("reward: number (reward=number): 1 when the final number of a completion (the last "
                               "\\boxed{...} if it holds one, else the last number written) equals the row's answer, "
                               "else 0")
    if ta.reward == "math" or (ta.reward == "auto" and ta.dataset is not None):
        return math_reward, (f"reward: math (reward={ta.reward}): 1 when math-verify finds the last \\boxed{{...}} "
                             "of a completion equal to the row's answer, else 0")
    what = getattr(task, "reward_note", f"the {task.name} task's own check of the answer")
    return task.reward, f"reward: task (reward={ta.reward}): {what}, 1 or 0"


def prepare(plan: Plan) -> Prepared:
    """Load and check the data against the model and the reward, split off the held-out rows, resolve
    defaults that depend on the task, check the resume point. Raises ValueError on any problem."""
    ta, grpo = plan.task_args, plan.grpo
    needs_task = ta.model == "tiny" or ta.dataset is None or ta.reward == "task"
    task = get_task(ta.task) if needs_task else None
    if task is not None and getattr(task, "needs_chat_model", False) and ta.model == "tiny":
        raise ValueError(f"task={ta.task!r} asks chat questions in words, which model='tiny' cannot read; use a "
                         "real chat model (--model smollm2-135m-instruct, see `stare models list`)")
    reward_fn, reward_note = _reward(ta, task)
    if ta.dataset is None and "max_completion_length" not in plan.explicit:
        grpo.max_completion_length = getattr(task, "max_completion_tokens", None) or task.max_completion_chars + 1
    resume, restart = _resume_point(grpo)
    if resume is not None:  # one rule for every controller: changed settings are refused (control/step.py)
        grpo.loss_setup().step_controller().check_checkpoint(resume)
    model, tokenizer, max_positions = _model_for_checks(ta, task, grpo)
    train_rows, eval_rows, files, notes, warnings = _split_rows(ta, grpo.seed, task)
    if is_tool_run(task, ta):  # TRL plays the episodes from chat prompts
        train_rows = [{"prompt": task.chat_prompt(r), "answer": r["answer"]} for r in train_rows]
        if "max_tool_calling_iterations" not in plan.explicit:
            grpo.max_tool_calling_iterations = task.max_tool_calls  # the turn limit
    warnings += _check_data(files, tokenizer, max_positions, grpo.max_completion_length, ta.model,
                            reward=reward_fn.__name__)
    if ta.model == "tiny":
        model = tokenizer = None  # the warm start in execute builds them
    return Prepared(plan, task, train_rows, eval_rows, reward_fn, resume, model, tokenizer,
                    [plan.base_note, reward_note, *notes, *([restart] if restart else [])], warnings,
                    restart=restart is not None)


DataFile = tuple[str, list[dict[str, Any]], list[str]]  # (field=path, rows, where each row is)


def _split_rows(ta: ModelTaskArgs, seed: int, task: Any) -> tuple[list, list, list[DataFile], list[str], list[str]]:
    """``(train rows, evaluation rows, data files read, notes, warnings)``; the evaluation rows are never
    trained on: the task's test split, rows held out of ``dataset``, or ``eval_dataset``."""
    files: list[DataFile] = []
    notes, warnings = [], []
    eval_rows: list[dict[str, Any]] = []
    if ta.dataset is not None:
        rows, where = _rows(ta.dataset, "dataset")
        files.append((f"dataset={ta.dataset!r}", rows, where))
        dup = check_duplicates(rows, where, f"dataset={ta.dataset!r}")
        warnings += [dup] if dup else []
        train_rows = rows
        if ta.final_eval and not ta.eval_dataset:
            train_rows, eval_rows = held_out_split(rows, ta.eval_size, seed)
            notes.append(f"evaluation: {len(eval_rows)} rows held out from dataset (drawn with seed {seed}, "
                         f"not trained on; {len(train_rows)} left for training); --eval_dataset to choose them")
    else:
        train_rows = task.make_split("train", ta.train_size, seed)
        if not ta.eval_dataset:
            eval_rows = task.make_split("test", ta.eval_size, seed)
            notes.append(f"evaluation: {len(eval_rows)} prompts of the {task.name} task's test split (disjoint "
                         "from its train split)")
    if ta.eval_dataset:
        rows, where = _rows(ta.eval_dataset, "eval_dataset")
        files.append((f"eval_dataset={ta.eval_dataset!r}", rows, where))
        eval_rows = rows[: ta.eval_size]
        notes.append(f"evaluation: {len(eval_rows)} rows of eval_dataset={ta.eval_dataset!r}")
    return train_rows, eval_rows, files, notes, warnings


def _check_data(files: list[DataFile], tokenizer: Any, max_positions: int | None, max_completion_length: int,
                model: str, reward: str) -> list[str]:
    """Refuse data the model cannot read or the reward cannot score (ValueError); return the warnings."""
    warnings = []
    for what, rows, where in files:
        check_chat_template(rows, where, tokenizer, model, what)
        check_characters(rows, where, tokenizer, model, what)
        long = check_lengths(rows, where, tokenizer, max_positions, max_completion_length, model, what)
        warnings += [long] if long else []
        if reward == "math_reward":
            check_math_answers(rows, where, what)
        elif reward == "number_reward":
            check_number_answers(rows, where, what)
    cannot = math_reward_warning(tokenizer, model) if reward == "math_reward" else None
    return warnings + ([cannot] if cannot else [])


def is_tool_run(task: Any, ta: ModelTaskArgs) -> bool:
    """An embedded multi-turn tool task played by TRL's tool loop (not with a dataset)."""
    return task is not None and is_tool_task(task) and ta.dataset is None


def _resume_point(grpo: Any) -> tuple[str | None, str | None]:
    """``(checkpoint to resume from or None, note)``. ``last`` in a run directory killed before its first complete
    checkpoint (during the warm start, the initial evaluation or the first steps: ``config.yaml`` there, no
    complete checkpoint, no final model) restarts that run from step 0 (the note says so)."""
    resume = grpo.resume_from_checkpoint
    if resume is not None and str(resume).lower() in ("last", "true"):
        layout = RunLayout(Path(grpo.output_dir))
        last = layout.last_checkpoint()
        if last is not None:
            return str(last), None
        if layout.config.is_file() and not (layout.root / MODEL_DIR).exists() and not layout.eval.exists():
            return None, (f"resume: output_dir={grpo.output_dir!r} holds a run stopped before its first complete "
                          "checkpoint; starting it again from step 0")
        raise ValueError(f"resume_from_checkpoint={resume!r}: no checkpoint-* in output_dir={grpo.output_dir!r}")
    if resume is not None and not Path(resume).is_dir():
        raise ValueError(f"resume_from_checkpoint={resume!r}: no such checkpoint directory")
    return resume, None


def _model_for_checks(ta: ModelTaskArgs, task: Any, grpo: Any) -> tuple[Any, Any, int | None]:
    """``(model or None, tokenizer, max positions)``: for ``tiny`` the task's character tokenizer (the model
    is built by the warm start later), else the loaded model."""
    if ta.model == "tiny":
        return None, build_char_tokenizer(task.alphabet, newline=WARMSTART_NEWLINE), TINY_MAX_POSITIONS
    model, tokenizer = load_model(resolve_model(ta), grpo.model_init_kwargs)
    rows = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > rows:  # more tokens than embedding rows: an index error at the first such token
        raise ValueError(f"model={ta.model!r}: the tokenizer has {len(tokenizer)} tokens but the model's embedding "
                         f"has {rows} rows (vocab_size); model and tokenizer do not belong together")
    return model, tokenizer, getattr(model.config, "max_position_embeddings", None)


def resolve_model(ta: ModelTaskArgs) -> str:
    """The model dir or id to load: a name of ``stare models list`` is built into the cache on first use (its
    progress lines logged at INFO)."""
    return resolve_named_model(ta.model, ta.cache_dir, say=logger.info)


def load_model(path: str, init_kwargs: dict[str, Any] | None) -> tuple[Any, Any]:
    """Policy and tokenizer from a local dir or the local HF cache; a clear ValueError if that fails."""
    from transformers import AutoModelForCausalLM

    if Path(path).suffix.lower() == ".gguf":
        raise ValueError(f"model={path!r} is a GGUF file, not a Hugging Face model dir; for the known ones use a "
                         "name of `stare models list`, else convert it once with transformers "
                         "(AutoModelForCausalLM.from_pretrained(dir, gguf_file=...).save_pretrained(out))")
    try:
        tokenizer = load_tokenizer(path)
        model = AutoModelForCausalLM.from_pretrained(path, **(init_kwargs or {}))
    except Exception as err:  # noqa: BLE001 - a corrupt dir fails in many ways (OSError, SafetensorError, JSON)
        raise ValueError(f"model={path!r} cannot be loaded offline: {type(err).__name__}: {err}") from err
    if tokenizer.pad_token is None:  # GRPO pads completions
        if tokenizer.eos_token is None:
            raise ValueError(f"model={path!r}: its tokenizer has neither a pad_token nor an eos_token, so completions "
                             "can be neither padded nor ended; set pad_token and eos_token in its "
                             "tokenizer_config.json")
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
