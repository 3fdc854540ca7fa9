"""``stare train``: GRPO with a stare-rl method on TRL.

    stare train                                   # embedded offline default (tiny model + arithmetic, STARE)
    stare train --config FILE.yaml [--key value ...]
    stare train --method steer --help             # every field, the chosen method's included

Everything is parsed and validated (config keys, method fields, files, batch arithmetic, data rows) before
any compute; a bad value is reported as ``stare train: error: ...`` with exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stare_rl.train_config import ModelTaskArgs, WarmStartArgs, load_task_config, load_yaml_config

EPILOG = (
    "Fields come from TRL's GRPOConfig, the model/task and method sections, the shared clipped surrogate and "
    "the chosen method's own config (shown for --method, default stare). YAML keys and --flags use the same "
    "names. Without --config the embedded default (stare_rl/configs/default.yaml) is the base. "
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


def _pre_parse(argv: list[str]) -> tuple[str | None, str, str | None, list[str], bool]:
    """``(config path, method, task, remaining argv, help requested)`` without the full parser."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    pre.add_argument("--method", default=None)
    pre.add_argument("--task", default=None)
    pre.add_argument("-h", "--help", action="store_true")
    known, _ = pre.parse_known_args(argv)
    rest = _drop_flag(argv, "--config")
    return known.config, known.method, known.task, rest, known.help


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

    from stare_rl.engines.trl import SUPERSEDED_FIELDS, StareGRPOConfig
    from stare_rl.registry import get_method
    from stare_rl.surrogate import SurrogateConfig
    from stare_rl.train_config import MethodArgs

    spec = get_method(method)
    parser = HfArgumentParser(
        (StareGRPOConfig, ModelTaskArgs, MethodArgs, SurrogateConfig, spec.config_cls, WarmStartArgs),
        prog="stare train",
        description=f"GRPO with a stare-rl method on TRL (method fields shown: {method}).",
        epilog=EPILOG,
        conflict_handler="error",
    )
    parser.add_argument("--config", default=None, help="YAML file of field: value (default: the embedded one).")
    for action in parser._actions:
        if action.dest in SUPERSEDED_FIELDS:
            action.help = f"[not used by stare-rl; use {SUPERSEDED_FIELDS[action.dest][1]}] " + (action.help or "")
    return parser


def _known_fields(parser: Any) -> set[str]:
    """Field names (YAML keys) of the parser."""
    return {a.dest for a in parser._actions if a.dest not in ("help", "config")}


def _known_flags(parser: Any) -> set[str]:
    """Every ``--flag`` spelling (dashes, ``--no_x`` for booleans), without the leading dashes."""
    return {opt[2:] for a in parser._actions for opt in a.option_strings if opt.startswith("--")} - {"help"}


def _check_keys(keys: list[str], known: set[str], where: str) -> None:
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3)
            hint = f"; did you mean {close}?" if close else ""
            raise ValueError(f"unknown field {key!r} in {where}{hint} (see `stare train --help`)")


def _cli_keys(argv: list[str]) -> list[str]:
    return [tok[2:].split("=", 1)[0] for tok in argv if tok.startswith("--")]


def plan_run(argv: list[str]) -> Plan | None:
    """Parse and validate ``argv`` (``None`` after printing --help). Raises ValueError on bad input."""
    config, method, task, rest, want_help = _pre_parse(argv)
    base = load_yaml_config(config)
    if config is None:  # an embedded task may ship its own defaults on top (configs/<task>.yaml)
        base.update(load_task_config(task or str(base.get("task", ModelTaskArgs.task))))
    method = method or str(base.get("method", "stare"))
    parser = build_parser(method)
    if want_help:
        parser.print_help()
        return None
    known = _known_fields(parser)
    _check_keys(list(base), known, config or "the embedded default config")
    _check_keys(_cli_keys(rest), _known_flags(parser), "the command line")
    task = task or str(base.get("task", ModelTaskArgs.task))
    run_name = f"{method}-{task}-{time.strftime('%Y%m%d-%H%M%S')}"
    parser.set_defaults(**{"output_dir": str(Path("runs") / run_name), **base})
    try:
        parsed = parser.parse_args_into_dataclasses(args=rest, look_for_args_file=False)
        grpo, task_args, method_args, surrogate, method_cfg, warmstart = parsed[:6]  # [6]: --config namespace
    except SystemExit as exit_:  # argparse already printed the problem
        raise ValueError("invalid command line (see the message above)") from exit_
    from stare_rl.engines.trl import check_superseded

    check_superseded(grpo)
    setup = method_args.loss_setup(method_cfg, surrogate)
    explicit = {**base, **{k: getattr(grpo, k, None) for k in _cli_keys(rest) if hasattr(grpo, k)}}
    for obj in (task_args, method_args, surrogate, method_cfg, warmstart):
        explicit.update(dataclasses.asdict(obj))
    return Plan(grpo=grpo, task_args=task_args, method_args=method_args, setup=setup, explicit=explicit,
                warmstart=warmstart)


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
        print(f"stare train: error: {err}", file=sys.stderr)
        return 2
    run_dir = execute(prepared)
    from stare_rl.runlog import describe_run_dir

    print(describe_run_dir(run_dir))
    return 0


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


def _rows(spec: str, what: str) -> list[dict[str, Any]]:
    from stare_rl.tasks.data import load_dataset_rows

    rows = load_dataset_rows(spec)
    if not rows:
        raise ValueError(f"{what}={spec!r} has no rows")
    return rows


def prepare(plan: Plan) -> Prepared:
    """Build the data and reward, resolve defaults that depend on the task, check the resume point."""
    from stare_rl.runlog import RunLayout
    from stare_rl.tasks import get_task, is_tool_task

    ta, grpo = plan.task_args, plan.grpo
    needs_task = ta.model == "tiny" or ta.dataset is None or ta.reward == "task"
    task = get_task(ta.task) if needs_task else None
    if ta.dataset is not None:
        train_rows = _rows(ta.dataset, "dataset")
        eval_rows = _rows(ta.eval_dataset, "eval_dataset") if ta.eval_dataset else train_rows[: ta.eval_size]
    else:
        train_rows = task.make_split("train", ta.train_size, grpo.seed)
        eval_rows = _rows(ta.eval_dataset, "eval_dataset") if ta.eval_dataset else task.make_split(
            "test", ta.eval_size, grpo.seed)
    if ta.reward == "math" or (ta.reward == "auto" and ta.dataset is not None):
        from stare_rl.tasks.rewards import math_reward

        reward_fn = math_reward
    else:
        reward_fn = task.reward
    if ta.dataset is None and "max_completion_length" not in plan.explicit:
        grpo.max_completion_length = task.max_completion_chars + 1  # embedded task: answer + <eos>
    if task is not None and is_tool_task(task) and ta.dataset is None:  # TRL plays the episodes from chat prompts
        train_rows = [{"prompt": task.chat_prompt(r), "answer": r["answer"]} for r in train_rows]
        if "max_tool_calling_iterations" not in plan.explicit:
            grpo.max_tool_calling_iterations = task.max_tool_calls  # the turn limit
    resume = grpo.resume_from_checkpoint
    if resume is not None and str(resume).lower() in ("last", "true"):
        last = RunLayout(Path(grpo.output_dir)).last_checkpoint()
        if last is None:
            raise ValueError(f"resume_from_checkpoint={resume!r}: no checkpoint-* in output_dir={grpo.output_dir!r}")
        resume = str(last)
    elif resume is not None and not Path(resume).is_dir():
        raise ValueError(f"resume_from_checkpoint={resume!r}: no such checkpoint directory")
    model = tokenizer = None
    if ta.model != "tiny":
        model, tokenizer = _load_model(ta.model, grpo.model_init_kwargs)
    return Prepared(plan, task, train_rows, eval_rows, reward_fn, resume, model, tokenizer)


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

    header = "# Resolved configuration of this run; re-run with: stare train --config config.yaml\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + yaml.safe_dump(explicit, sort_keys=True))


def execute(prep: Prepared) -> Path:
    """Warm start (cached) -> GRPO with the method -> save -> held-out evaluation. Returns the run dir."""
    import torch
    from transformers.utils import logging as hf_logging

    from stare_rl.runlog import RunLayout

    hf_logging.set_verbosity_warning()
    plan, ta, grpo = prep.plan, prep.plan.task_args, prep.plan.grpo
    layout = RunLayout(Path(grpo.output_dir))
    _write_config(layout.config, {**plan.explicit, "output_dir": grpo.output_dir})
    model, tokenizer = prep.model, prep.tokenizer
    threads = torch.get_num_threads()
    torch.set_num_threads(ta.torch_threads or threads)
    try:
        if ta.model == "tiny":
            from stare_rl.tasks.warmstart import warm_start

            print(f"warm start: tiny model on {ta.task} (cached in {ta.cache_dir})", flush=True)
            ws = plan.warmstart
            path = warm_start(ta.task, Path(ta.cache_dir).expanduser(), seed=ws.warmstart_seed,
                              config=ws.warmstart_config())
            model, tokenizer = _load_model(str(path), grpo.model_init_kwargs)
        _train_and_evaluate(prep, model, tokenizer, layout)
    finally:
        torch.set_num_threads(threads)
    return layout.root


def _train_and_evaluate(prep: Prepared, model: Any, tokenizer: Any, layout: Any) -> None:
    """GRPO with the method, save the final model, evaluate it on the held-out rows."""
    from datasets import Dataset

    from stare_rl.engines.trl import StareGRPOTrainer, make_reward_func
    from stare_rl.runlog import write_json_atomic
    from stare_rl.tasks import is_tool_task

    plan, ta, grpo = prep.plan, prep.plan.task_args, prep.plan.grpo
    tool_task = prep.task is not None and is_tool_task(prep.task) and ta.dataset is None
    if tool_task:  # TRL's own multi-turn tool loop plays the episodes (engines/trl_tools.py)
        from stare_rl.engines.trl_tools import make_tool_reward_func

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
        **extra,
    )
    print(f"training: method={plan.setup.method}, run dir {layout.root}", flush=True)
    trainer.train(resume_from_checkpoint=prep.resume)
    trainer.save_model(str(layout.model))
    tokenizer.save_pretrained(str(layout.model))
    if prep.task is not None:  # lets `stare eval --model run/model` find the task
        from stare_rl.tasks.warmstart import TASK_INFO_FILE

        write_json_atomic(layout.model / TASK_INFO_FILE, {"task": prep.task.name, "task_kwargs": prep.task.settings()})
    if ta.final_eval and tool_task:
        from stare_rl.tasks.tool_eval import evaluate_tool_task

        result = evaluate_tool_task(trainer.model, tokenizer, prep.task, prep.eval_rows, k=ta.eval_k,
                                    temperature=grpo.temperature, max_completion_length=grpo.max_completion_length,
                                    max_tool_calls=grpo.max_tool_calling_iterations, seed=grpo.seed)
        write_json_atomic(layout.eval, result)
        print("held-out evaluation: " + json.dumps({k: v for k, v in result.items() if isinstance(v, int | float)}))
    elif ta.final_eval:
        from stare_rl.evaluation import evaluate

        result = evaluate(trainer.model, tokenizer, prep.eval_rows, prep.reward_fn, k=ta.eval_k,
                          temperature=grpo.temperature, top_p=grpo.top_p,
                          max_new_tokens=grpo.max_completion_length, seed=grpo.seed)
        write_json_atomic(layout.eval, result)
        shown = {k: v for k, v in result.items() if isinstance(v, int | float)}
        print("held-out evaluation: " + json.dumps(shown))
