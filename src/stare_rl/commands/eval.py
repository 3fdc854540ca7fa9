"""``stare eval``: avg@k, pass@k, greedy accuracy, response length and reflection words of a model.

Default: the held-out test split of the embedded task the model was warm-started / trained on (read from
its ``stare_task.json``; ``arithmetic`` if absent). ``--dataset`` evaluates a parquet/jsonl/HF dataset with
the math-verify ``\\boxed{}`` reward instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stare eval",
        description="Evaluate a model directory: avg@k and pass@k with sampling, greedy accuracy, mean response "
        "length, reflection-word counts. Prints a table and writes JSON.",
    )
    p.add_argument("--model", required=True, help="Hugging Face model directory (model + tokenizer).")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--task", help="Embedded task to evaluate on (its held-out test split). Default: the task "
                     "saved with the model (stare_task.json), else 'arithmetic'.")
    src.add_argument("--dataset", help="Dataset to evaluate on instead: .parquet/.jsonl file, HF dataset dir or "
                     "cached hub id; {prompt, answer} or verl/DAPO schema. Scored with math-verify on \\boxed{}.")
    p.add_argument("--split", default=None, help="Dataset split (with --dataset; default 'train').")
    p.add_argument("--k", type=int, default=8, help="Samples per prompt for avg@k and pass@k (default 8).")
    p.add_argument("--temperature", type=float, default=1.0, help="Sampling temperature (default 1.0).")
    p.add_argument("--top-p", type=float, default=1.0, help="Nucleus sampling top-p (default 1.0).")
    p.add_argument("--n", type=int, default=200, help="Number of prompts (default 200; all if fewer).")
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="Generation budget (default: task's longest answer + 1; 1024 for datasets).")
    p.add_argument("--batch-size", type=int, default=64, help="Prompts per generate call (default 64).")
    p.add_argument("--seed", type=int, default=0, help="Sampling seed (and test-split sampling seed).")
    p.add_argument("--reward-timeout", type=float, default=10.0,
                   help="Seconds before a dataset reward call is scored 0 as a timeout (default 10).")
    p.add_argument("--per-row", action="store_true", help="Include every prompt's completions in the JSON.")
    p.add_argument("--out", default=None, help="Write the metrics as JSON here (default: print only).")
    p.add_argument("--no-progress", action="store_true", help="Hide progress bars.")
    return p


def _rows_and_reward(args: argparse.Namespace) -> tuple[list[dict[str, Any]], Any, str, int]:
    """(rows, reward_fn, source description, max_new_tokens)."""
    if args.dataset:
        from stare_rl.tasks.data import load_dataset_rows
        from stare_rl.tasks.rewards import math_reward, safe_reward

        rows = load_dataset_rows(args.dataset, args.split)[: args.n]

        def reward(completion: str, answer: str) -> float:
            return safe_reward(math_reward, completion, answer, args.reward_timeout)[0]

        return rows, reward, f"dataset {args.dataset}", args.max_new_tokens or 1024
    from stare_rl.tasks import get_task
    from stare_rl.tasks.warmstart import read_task_info

    info = read_task_info(args.model) or {}
    name = args.task or info.get("task", "arithmetic")
    task = get_task(name, **(info.get("task_kwargs", {}) if name == info.get("task") else {}))
    rows = task.make_split("test", args.n, args.seed)
    return rows, task.reward, f"task {task!r} (test split)", args.max_new_tokens or task.max_completion_chars + 1


def format_table(metrics: dict[str, Any], source: str, model: str) -> str:
    k = metrics["k"]
    lines = [f"model:  {model}", f"source: {source}", f"prompts {metrics['n']}, k {k}, temperature "
             f"{metrics['temperature']}, top_p {metrics['top_p']}", ""]
    keys = [f"avg@{k}", f"pass@{k}", "greedy_acc", "mean_response_length", "entropy"]
    keys += [key for key in metrics if key.startswith(("reflection/", "tools/"))]
    width = max(len(key) for key in keys)
    for key in keys:
        value = metrics[key]
        lines.append(f"  {key:<{width}}  {'-' if value is None else f'{value:.4f}'}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name, value in (("--k", args.k), ("--n", args.n), ("--batch-size", args.batch_size)):
        if value < 1:
            print(f"stare eval: {name}={value} must be >= 1", file=sys.stderr)
            return 2
    if not (Path(args.model) / "config.json").is_file():
        print(f"stare eval: --model {args.model!r} is not a Hugging Face model directory (no config.json)",
              file=sys.stderr)
        return 2
    from stare_rl.evaluation import evaluate

    try:
        tool_task = _tool_task(args)
        if tool_task is not None:  # multi-turn episodes with the task's tools (tasks/tool_eval.py)
            return _finish(args, *_evaluate_tool_task(args, tool_task))
        rows, reward, source, max_new = _rows_and_reward(args)
        metrics = evaluate(args.model, None, rows, reward, k=args.k, temperature=args.temperature,
                           top_p=args.top_p, max_new_tokens=max_new, batch_size=args.batch_size,
                           seed=args.seed, per_row=args.per_row, progress=not args.no_progress)
    except (ValueError, FileNotFoundError) as err:
        print(f"stare eval: {err}", file=sys.stderr)
        return 2
    return _finish(args, metrics, source)


def _tool_task(args: argparse.Namespace) -> Any:
    """The embedded tool task to evaluate on (None for a dataset or a plain task)."""
    if args.dataset:
        return None
    from stare_rl.tasks import get_task, is_tool_task
    from stare_rl.tasks.warmstart import read_task_info

    info = read_task_info(args.model) or {}
    name = args.task or info.get("task", "arithmetic")
    task = get_task(name, **(info.get("task_kwargs", {}) if name == info.get("task") else {}))
    return task if is_tool_task(task) else None


def _evaluate_tool_task(args: argparse.Namespace, task: Any) -> tuple[dict[str, Any], str]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from stare_rl.tasks.tool_eval import evaluate_tool_task

    model, tokenizer = AutoModelForCausalLM.from_pretrained(args.model), AutoTokenizer.from_pretrained(args.model)
    rows = task.make_split("test", args.n, args.seed)
    metrics = evaluate_tool_task(model, tokenizer, task, rows, k=args.k, temperature=args.temperature,
                                 max_completion_length=args.max_new_tokens, batch_size=args.batch_size,
                                 seed=args.seed)
    return metrics, f"task {task!r} (test split, episodes with its tools)"


def _finish(args: argparse.Namespace, metrics: dict[str, Any], source: str) -> int:
    metrics = {"model": str(args.model), "source": source, **metrics}
    print(format_table(metrics, source, str(args.model)))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(metrics, indent=2))
        print(f"\nwrote {out}")
    return 0
