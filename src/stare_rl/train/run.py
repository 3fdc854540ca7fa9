"""``stare train``: GRPO with a stare-rl method on TRL.

    stare train                                   # embedded offline default (tiny model + arithmetic, STARE)
    stare train --config FILE.yaml [--key value ...]
    stare train --method steer --help             # every field, the chosen method's included

Everything is parsed and validated (config keys, method fields, files, batch arithmetic, data rows) before
any compute; a bad value is reported as ``stare train: error: ...`` with exit status 2.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import errno
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stare_rl.train.checks import (
    check_numbers,
    check_output_dir,
    coerce_config_values,
    join_negative_values,
    owners_of_field,
    raise_instead_of_exit,
)
from stare_rl.train.config import (
    DEFAULT_CONFIG,
    ModelTaskArgs,
    WarmStartArgs,
    load_task_config,
    load_yaml_config,
)

CONFIG_BASES = ("default", "none")
EPILOG = (
    "Fields come from TRL's GRPOConfig, the model/task and method sections, the shared clipped surrogate and "
    "the chosen method's own config (shown for --method, default stare). YAML keys and --flags use the same "
    "names. The embedded default (stare_rl/configs/default.yaml) is always the base: --config is layered on it. "
    "Docs: docs/train.md."
)


@dataclass
class Plan:
    """A fully parsed and validated run, before any compute."""

    grpo: Any
    task_args: ModelTaskArgs
    method_args: Any
    setup: Any
    explicit: dict[str, Any]
    warmstart: WarmStartArgs = dataclasses.field(default_factory=WarmStartArgs)
    base_note: str = ""  # which config(s) the run starts from


def _pre_parse(argv: list[str]) -> tuple[str | None, str, str | None, list[str], bool, str]:
    """``(config path, method, task, remaining argv, help requested, config base)`` without the full parser."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    pre.add_argument("--config_base", default="default", choices=CONFIG_BASES)
    pre.add_argument("--method", default=None)
    pre.add_argument("--task", default=None)
    pre.add_argument("-h", "--help", action="store_true")
    raise_instead_of_exit(pre)
    known, _ = pre.parse_known_args(argv)
    rest = _drop_flag(_drop_flag(argv, "--config"), "--config_base")
    return known.config, known.method, known.task, rest, known.help, known.config_base


def _drop_flag(argv: list[str], flag: str) -> list[str]:
    out, skip = [], False
    for i, tok in enumerate(argv):
        if skip:
            skip = False
        elif tok == flag:
            skip = i + 1 < len(argv)
        elif not tok.startswith(flag + "="):
            out.append(tok)
    return out


def build_parser(method: str) -> Any:
    """HfArgumentParser over GRPOConfig + ModelTaskArgs + MethodArgs + SurrogateConfig + the method's config
    + WarmStartArgs."""
    from transformers import HfArgumentParser

    from stare_rl.core.registry import get_method
    from stare_rl.core.surrogate import SurrogateConfig
    from stare_rl.engines.trl.trainer import SUPERSEDED_FIELDS, StareGRPOConfig
    from stare_rl.train.config import MethodArgs

    spec = get_method(method)
    parser = HfArgumentParser(
        (StareGRPOConfig, ModelTaskArgs, MethodArgs, SurrogateConfig, spec.config_cls, WarmStartArgs),
        prog="stare train",
        description=f"GRPO with a stare-rl method on TRL (method fields shown: {method}).",
        epilog=EPILOG,
        conflict_handler="error",
    )
    parser.add_argument("--config", default=None,
                        help="YAML file of field: value, layered on the embedded default (its keys win).")
    parser.add_argument("--config_base", default="default", choices=CONFIG_BASES,
                        help="What --config is layered on: 'default' (the embedded default.yaml) or 'none' (the "
                        "library defaults of each field, as `stare compare` cells do).")
    for action in parser._actions:
        if action.dest in SUPERSEDED_FIELDS:
            action.help = f"[not used by stare-rl; use {SUPERSEDED_FIELDS[action.dest][1]}] " + (action.help or "")
    return parser


def _known_fields(parser: Any) -> set[str]:
    """Field names (YAML keys) of the parser."""
    return {a.dest for a in parser._actions if a.dest not in ("help", "config", "config_base")}


def _known_flags(parser: Any) -> set[str]:
    """Every ``--flag`` spelling (dashes, ``--no_x`` for booleans), without the leading dashes."""
    return {opt[2:] for a in parser._actions for opt in a.option_strings if opt.startswith("--")} - {"help"}


def _check_keys(keys: list[str], known: set[str], where: str, method: str) -> None:
    from stare_rl.core.registry import get_method, list_methods

    for key in keys:
        if key in known:
            continue
        owners = owners_of_field(key.replace("-", "_"), list_methods(), lambda m: get_method(m).config_cls)
        if owners:
            others = f" (and {', '.join(owners[1:])})" if len(owners) > 1 else ""
            raise ValueError(f"{key} belongs to {owners[0]}{others}, not to method={method!r} (in {where}); "
                             f"add --method {owners[0]} or drop {key}")
        close = difflib.get_close_matches(key, sorted(known), n=3)
        hint = f"; did you mean {close}?" if close else ""
        raise ValueError(f"unknown field {key!r} in {where}{hint} (see `stare train --help`)")


def _cli_keys(argv: list[str]) -> list[str]:
    return [tok[2:].split("=", 1)[0] for tok in argv if tok.startswith("--")]


def _layered_config(config: str | None, config_base: str = "default",
                    task: str | None = None) -> tuple[dict[str, Any], dict[str, str], str]:
    """``(values, origin of each key, note)``: the embedded default, with ``config``'s keys on top (or
    ``config`` alone with ``config_base='none'``). Without ``config``, an embedded task's own defaults
    (``configs/<task>.yaml``) go on top of the default."""
    embedded = f"the embedded default ({DEFAULT_CONFIG})"
    default = load_yaml_config(None)
    if config is None:
        name = task or str(default.get("task", ModelTaskArgs.task))
        own = load_task_config(name)
        origin = {**dict.fromkeys(default, embedded), **dict.fromkeys(own, f"the embedded {name}.yaml")}
        note = f"config: {embedded}" + (f" + the embedded {name}.yaml" if own else "")
        return {**default, **own}, origin, note
    own = load_yaml_config(config)
    if config_base == "none":
        return own, dict.fromkeys(own, config), f"config: {config} alone (config_base none: library defaults below)"
    origin = {**dict.fromkeys(default, embedded), **dict.fromkeys(own, config)}
    return {**default, **own}, origin, f"config: {config} on top of {embedded}"


def _plain(value: Any) -> Any:
    """A YAML-safe value (enums as their value)."""
    return getattr(value, "value", value)


def plan_run(argv: list[str]) -> Plan | None:
    """Parse and validate ``argv`` (``None`` after printing --help). Raises ValueError on bad input."""
    argv = join_negative_values(list(argv))
    config, method, task, rest, want_help, config_base = _pre_parse(argv)
    base, origin, base_note = _layered_config(config, config_base, task)
    method = method or str(base.get("method", "stare"))
    parser = build_parser(method)
    raise_instead_of_exit(parser)
    if want_help:
        parser.print_help()
        return None
    known = _known_fields(parser)
    own_keys = [k for k in base if origin[k] == config]
    _check_keys(own_keys, known, config or "", method)
    base = {k: v for k, v in base.items() if k in known}  # the default's keys of another method are dropped
    _check_keys(_cli_keys(rest), _known_flags(parser), "the command line", method)
    task = task or str(base.get("task", ModelTaskArgs.task))
    run_name = f"{method}-{task}-{time.strftime('%Y%m%d-%H%M%S')}"
    parser.set_defaults(**{"output_dir": str(Path("runs") / run_name), **coerce_config_values(base, parser, origin)})
    parsed = parser.parse_args_into_dataclasses(args=rest, look_for_args_file=False)
    grpo, task_args, method_args, surrogate, method_cfg, warmstart = parsed[:6]  # [6]: --config namespace
    from stare_rl.engines.trl.trainer import check_superseded

    check_superseded(grpo)
    check_numbers(grpo, (task_args, method_args, surrogate, method_cfg, warmstart))
    check_output_dir(grpo.output_dir, resuming=grpo.resume_from_checkpoint is not None)
    setup = method_args.loss_setup(method_cfg, surrogate)
    explicit = {**base, **{k: getattr(grpo, k, None) for k in _cli_keys(rest) if hasattr(grpo, k)}}
    for obj in (task_args, method_args, surrogate, method_cfg, warmstart):
        explicit.update(dataclasses.asdict(obj))
    for key in load_yaml_config(None):  # pin the default's keys: config.yaml re-runs the same on any base
        if key not in explicit and hasattr(grpo, key):
            explicit[key] = _plain(getattr(grpo, key))
    return Plan(grpo=grpo, task_args=task_args, method_args=method_args, setup=setup, explicit=explicit,
                warmstart=warmstart, base_note=base_note)


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
        print(f"stare train: error: {_one_line(err)}", file=sys.stderr)
        return 2
    for line in prepared.notes:
        print(line, flush=True)
    for line in prepared.warnings:
        print(f"stare train: warning: {line}", file=sys.stderr, flush=True)
    from stare_rl.io.runlog import CheckpointWriteError, describe_run_dir

    try:
        run_dir, stopped = execute(prepared)
    except CheckpointWriteError as err:  # disk full / quota / read-only while checkpointing
        print(f"stare train: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        if err.errno not in DISK_ERRNOS:
            raise
        print(f"stare train: error: {_disk_error(err, prepared.plan.grpo.output_dir)}", file=sys.stderr)
        return 1
    print(describe_run_dir(run_dir))
    if stopped:
        print(f"stare train: error: {stopped}", file=sys.stderr)
        return 1
    return 0


DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO)  # the disk, not the program


def _disk_error(err: OSError, output_dir: str) -> str:
    """One line for a write the disk refused outside a checkpoint (metrics, model, evaluation, warm start)."""
    from stare_rl.io.runlog import RunLayout

    what = f"could not write {err.filename}" if err.filename else "a write failed"
    last = RunLayout(Path(output_dir)).last_checkpoint()
    then = (f"the last complete checkpoint {last} is intact: free space, then re-run with "
            "--resume_from_checkpoint last" if last is not None else "free space, then re-run")
    return f"{what}: [Errno {err.errno}] {err.strerror}; {then}"


def _one_line(err: Exception) -> str:
    return "; ".join(line.strip() for line in str(err).splitlines() if line.strip())


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
    notes: list[str] = dataclasses.field(default_factory=list)  # printed before the run starts
    warnings: list[str] = dataclasses.field(default_factory=list)  # printed as warnings before the run starts
    restart: bool = False  # resume 'last' of a run stopped before its first checkpoint: start it again


def _rows(spec: str, what: str) -> tuple[list[dict[str, Any]], list[str]]:
    from stare_rl.tasks.data import load_located_rows

    try:
        rows, where = load_located_rows(spec)
    except ValueError as err:  # the loader says dataset=...; say when it came from another field
        raise ValueError(f"{what}: {err}" if what != "dataset" else str(err)) from err
    return rows, where


def _reward(ta: ModelTaskArgs, task: Any) -> tuple[Any, str]:
    """The reward function and a line saying what it scores."""
    if ta.reward == "math" or (ta.reward == "auto" and ta.dataset is not None):
        from stare_rl.tasks.rewards import math_reward

        return math_reward, (f"reward: math (reward={ta.reward}): 1 when math-verify finds the last \\boxed{{...}} "
                             "of a completion equal to the row's answer, else 0")
    return task.reward, f"reward: task (reward={ta.reward}): the {task.name} task's own check of the answer, 1 or 0"


def prepare(plan: Plan) -> Prepared:
    """Load and check the data against the model and the reward, split off the held-out rows, resolve
    defaults that depend on the task, check the resume point. Raises ValueError on any problem."""
    from stare_rl.tasks import get_task

    ta, grpo = plan.task_args, plan.grpo
    needs_task = ta.model == "tiny" or ta.dataset is None or ta.reward == "task"
    task = get_task(ta.task) if needs_task else None
    reward_fn, reward_note = _reward(ta, task)
    if ta.dataset is None and "max_completion_length" not in plan.explicit:
        grpo.max_completion_length = task.max_completion_chars + 1  # embedded task: answer + <eos>
    resume, restart = _resume_point(grpo)
    model, tokenizer, max_positions = _model_for_checks(ta, task, grpo)
    train_rows, eval_rows, files, notes, warnings = _split_rows(ta, grpo.seed, task)
    if _is_tool_task(task, ta):  # TRL plays the episodes from chat prompts
        train_rows = [{"prompt": task.chat_prompt(r), "answer": r["answer"]} for r in train_rows]
        if "max_tool_calling_iterations" not in plan.explicit:
            grpo.max_tool_calling_iterations = task.max_tool_calls  # the turn limit
    warnings += _check_data(files, tokenizer, max_positions, grpo.max_completion_length, ta.model,
                            math=reward_fn.__name__ == "math_reward")
    if ta.model == "tiny":
        model = tokenizer = None  # the warm start in execute builds them
    return Prepared(plan, task, train_rows, eval_rows, reward_fn, resume, model, tokenizer,
                    [plan.base_note, reward_note, *notes, *([restart] if restart else [])], warnings,
                    restart=restart is not None)


DataFile = tuple[str, list[dict[str, Any]], list[str]]  # (field=path, rows, where each row is)


def _split_rows(ta: ModelTaskArgs, seed: int, task: Any) -> tuple[list, list, list[DataFile], list[str], list[str]]:
    """``(train rows, evaluation rows, data files read, notes, warnings)``; the evaluation rows are never
    trained on: the task's test split, rows held out of ``dataset``, or ``eval_dataset``."""
    from stare_rl.train import checks as preflight

    files: list[DataFile] = []
    notes, warnings = [], []
    eval_rows: list[dict[str, Any]] = []
    if ta.dataset is not None:
        rows, where = _rows(ta.dataset, "dataset")
        files.append((f"dataset={ta.dataset!r}", rows, where))
        dup = preflight.check_duplicates(rows, where, f"dataset={ta.dataset!r}")
        warnings += [dup] if dup else []
        train_rows = rows
        if ta.final_eval and not ta.eval_dataset:
            train_rows, eval_rows = preflight.held_out_split(rows, ta.eval_size, seed)
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
                model: str, math: bool) -> list[str]:
    """Refuse data the model cannot read or the reward cannot score (ValueError); return the warnings."""
    from stare_rl.train import checks as preflight

    warnings = []
    for what, rows, where in files:
        preflight.check_chat_template(rows, where, tokenizer, model, what)
        preflight.check_characters(rows, where, tokenizer, model, what)
        long = preflight.check_lengths(rows, where, tokenizer, max_positions, max_completion_length, model, what)
        warnings += [long] if long else []
        if math:
            preflight.check_math_answers(rows, where, what)
    cannot = preflight.math_reward_warning(tokenizer, model) if math else None
    return warnings + ([cannot] if cannot else [])


def _is_tool_task(task: Any, ta: ModelTaskArgs) -> bool:
    """An embedded multi-turn tool task played by TRL's tool loop (not with a dataset)."""
    from stare_rl.tasks import is_tool_task

    return task is not None and is_tool_task(task) and ta.dataset is None


def _resume_point(grpo: Any) -> tuple[str | None, str | None]:
    """``(checkpoint to resume from or None, note)``. ``last`` in a run directory killed before its first complete
    checkpoint (during the warm start, the initial evaluation or the first steps: ``config.yaml`` there, no
    complete checkpoint, no final model) restarts that run from step 0 (the note says so)."""
    from stare_rl.io.runlog import MODEL_DIR, RunLayout

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
        from stare_rl.models.tiny import TINY_MAX_POSITIONS
        from stare_rl.models.tokenizer import build_char_tokenizer

        return None, build_char_tokenizer(task.alphabet), TINY_MAX_POSITIONS
    model, tokenizer = _load_model(ta.model, grpo.model_init_kwargs)
    rows = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > rows:  # more tokens than embedding rows: an index error at the first such token
        raise ValueError(f"model={ta.model!r}: the tokenizer has {len(tokenizer)} tokens but the model's embedding "
                         f"has {rows} rows (vocab_size); model and tokenizer do not belong together")
    return model, tokenizer, getattr(model.config, "max_position_embeddings", None)


def _load_model(path: str, init_kwargs: dict[str, Any] | None) -> tuple[Any, Any]:
    """Policy and tokenizer from a local dir or the local HF cache; a clear ValueError if that fails."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, **(init_kwargs or {}))
    except (OSError, ValueError) as err:
        raise ValueError(f"model={path!r} cannot be loaded offline: {err}") from err
    if tokenizer.pad_token is None:  # GRPO pads completions
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def _write_config(path: Path, explicit: dict[str, Any]) -> None:
    import yaml

    from stare_rl.io.runlog import write_text_atomic

    header = "# Resolved configuration of this run; re-run with: stare train --config config.yaml\n"
    write_text_atomic(path, header + yaml.safe_dump(explicit, sort_keys=True))


def execute(prep: Prepared) -> tuple[Path, str | None]:
    """Warm start (cached) -> GRPO with the method -> save -> held-out evaluation.

    Returns:
        The run dir, and why training stopped early (a non-finite loss; nothing saved) or ``None``.
    """
    import datasets
    from transformers.utils import logging as hf_logging

    from stare_rl.io.runlog import METRICS_FILE, TRAIN_SUMMARY_FILE, RunLayout

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
            from stare_rl.train.warmstart import warm_start

            print(f"warm start: tiny model on {ta.task} (cached in {ta.cache_dir})", flush=True)
            ws = plan.warmstart
            path = warm_start(ta.task, Path(ta.cache_dir).expanduser(), seed=ws.warmstart_seed,
                              config=ws.warmstart_config())
            print(f"warm start: {path}", flush=True)
            model, tokenizer = _load_model(str(path), grpo.model_init_kwargs)
        stopped = _train_and_evaluate(prep, model, tokenizer, layout)
    return layout.root, stopped


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block on ``n`` torch threads (None: torch's current setting), restoring the count afterwards.
    The warm start, GRPO and evaluation all run under it, so a cached warm start gets the same bits whichever
    command trained it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n or before)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _evaluate(prep: Prepared, model: Any, tokenizer: Any, out: Path, label: str) -> dict[str, Any]:
    from stare_rl.evaluation.heldout import evaluate
    from stare_rl.io.runlog import write_json_atomic

    ta, grpo = prep.plan.task_args, prep.plan.grpo
    if _is_tool_task(prep.task, ta):  # multi-turn episodes with the task's tools
        from stare_rl.evaluation.tools import evaluate_tool_task

        result = evaluate_tool_task(model, tokenizer, prep.task, prep.eval_rows, k=ta.eval_k,
                                    temperature=grpo.temperature, max_completion_length=grpo.max_completion_length,
                                    max_tool_calls=grpo.max_tool_calling_iterations, seed=grpo.seed)
    else:
        result = evaluate(model, tokenizer, prep.eval_rows, prep.reward_fn, k=ta.eval_k,
                          temperature=grpo.temperature, top_p=grpo.top_p, max_new_tokens=grpo.max_completion_length,
                          seed=grpo.seed)
    write_json_atomic(out, result)
    shown = {k: v for k, v in result.items() if isinstance(v, int | float) and not k.startswith("reflection/")}
    print(f"{label}: " + json.dumps(shown), flush=True)
    return result


def _train_and_evaluate(prep: Prepared, model: Any, tokenizer: Any, layout: Any) -> str | None:
    """GRPO with the method, save the final model, evaluate it on the held-out rows; the early-stop reason."""
    from datasets import Dataset

    from stare_rl.engines.trl.trainer import StareGRPOTrainer, make_reward_func
    from stare_rl.engines.trl.watch import TrainingWatch
    from stare_rl.io.runlog import INITIAL_EVAL_FILE, write_text_atomic
    from stare_rl.train.model_card import model_card

    plan, ta, grpo = prep.plan, prep.plan.task_args, prep.plan.grpo
    watch = TrainingWatch(patience=ta.warn_after_steps,
                          reward_note=next((n for n in prep.notes if n.startswith("reward:")), ""))
    if _is_tool_task(prep.task, ta):  # TRL's own multi-turn tool loop plays the episodes (engines/trl_tools.py)
        from stare_rl.engines.trl.tools import make_tool_reward_func

        reward_func, extra = make_tool_reward_func(prep.reward_fn, ta.reward_timeout_s), {"tools": list(prep.task.tools)}
    else:
        reward_func, extra = make_reward_func(prep.reward_fn, ta.reward_timeout_s), {}
    trainer = StareGRPOTrainer(
        model=model,
        reward_funcs=reward_func,
        args=grpo,
        train_dataset=Dataset.from_list(prep.train_rows),
        processing_class=tokenizer,
        setup=plan.setup,
        callbacks=[watch, *_curve_callbacks(prep, tokenizer)],  # curve before the metrics.jsonl writer
        **extra,
    )
    before, before_path = None, layout.root / INITIAL_EVAL_FILE
    if ta.initial_eval and ta.final_eval and prep.resume is None:
        before = _evaluate(prep, trainer.model, tokenizer, before_path, "held-out evaluation before training")
    elif before_path.is_file():  # resumed: the interrupted run measured the start
        before = json.loads(before_path.read_text())
    if _finished(prep.resume, grpo.max_steps):  # killed after its last step (e.g. in the final evaluation)
        print(f"training: {prep.resume} is the last step; saving and evaluating it", flush=True)
        trainer.model.load_state_dict(_load_model(prep.resume, grpo.model_init_kwargs)[0].state_dict())
    else:
        print(f"training: method={plan.setup.method}, run dir {layout.root}", flush=True)
        with _quiet_tied_weight_warning(trainer.model):
            trainer.train(resume_from_checkpoint=prep.resume)
    if watch.stopped:
        return watch.stopped
    _save_final_model(trainer, tokenizer, prep.task, layout.model)
    after = _evaluate(prep, trainer.model, tokenizer, layout.eval, "held-out evaluation") if ta.final_eval else None
    steps = trainer.state.global_step or _checkpoint_step(prep.resume)
    card = model_card(plan, prep.notes, steps, before, after, layout.root.name)
    for where in (layout.root, layout.model):  # replaces TRL's generic card ("fine-tuned version of [None]")
        write_text_atomic(where / "README.md", card)
    return None


def _save_final_model(trainer: Any, tokenizer: Any, task: Any, final: Path) -> None:
    """Save the policy (+ tokenizer, + ``stare_task.json`` so that ``stare eval --model run/model`` finds the task)
    into ``.model.partial`` and rename it to ``final``: a kill while saving never leaves a half-written ``model/``
    (the re-run with ``--resume_from_checkpoint last`` saves it again)."""
    import shutil

    from stare_rl.io.runlog import write_json_atomic

    partial = final.with_name(f".{final.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    trainer.save_model(str(partial))
    tokenizer.save_pretrained(str(partial))
    if task is not None:
        from stare_rl.train.warmstart import TASK_INFO_FILE

        write_json_atomic(partial / TASK_INFO_FILE, {"task": task.name, "task_kwargs": task.settings()})
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)


def _finished(checkpoint: str | None, max_steps: int) -> bool:
    """True when ``checkpoint`` holds the run's last step: HF's loop would train one step past ``max_steps``."""
    return checkpoint is not None and max_steps >= 1 and _checkpoint_step(checkpoint) >= max_steps


def _checkpoint_step(checkpoint: str | None) -> int:
    """The global step saved in ``checkpoint`` (0 for None)."""
    from stare_rl.io.runlog import TRAINER_STATE_FILE

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
    from stare_rl.tasks import is_tool_task

    if prep.task is not None and is_tool_task(prep.task) and ta.dataset is None:
        print("held-out curve: eval_every is not supported for tool-use tasks yet; no curve", flush=True)
        return []
    from stare_rl.engines.trl.eval import HeldOutEvalCallback

    def show(step: int, m: dict[str, float]) -> None:
        shown = ", ".join(f"{k[5:]} {v:.3f}" for k, v in m.items() if k.startswith(("eval/pass@", "eval/greedy")))
        print(f"held-out curve, step {step}: {shown}", flush=True)

    return [HeldOutEvalCallback(tokenizer, prep.eval_rows[: ta.eval_prompts], prep.reward_fn, every=ta.eval_every,
                                n=ta.eval_samples, temperature=grpo.temperature, top_p=grpo.top_p,
                                max_new_tokens=grpo.max_completion_length, seed=grpo.seed, on_result=show)]
