"""``stare eval``: avg@k, pass@k, maj@k, greedy accuracy, response length and reflection words of a model.

Default: the held-out test split of the embedded task the model was warm-started / trained on (read from
its ``stare_task.json``; ``arithmetic`` if absent). ``--dataset`` evaluates a parquet/jsonl/HF dataset with
the math-verify ``\\boxed{}`` reward instead (rows with a ``data_source`` also get one table per source).
``--protocol stare|steer|FILE.yaml --data-dir DIR`` runs a paper's protocol (:mod:`stare_rl.evaluation.protocol`):
every benchmark with its own number of samples, one table row per benchmark.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from stare_rl.evaluation import heldout
from stare_rl.evaluation.protocol import TASK_PREFIX, load_protocol
from stare_rl.io.runlog import write_json_atomic

# The tasks, tokenizers, the warm-start reader and the tool evaluation are imported when the command runs:
# they load transformers, which `stare eval --help` does not.

DEFAULT_PROMPTS = 200


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stare eval",
        description="Evaluate a model directory: avg@k and pass@k with sampling, greedy accuracy, mean response "
        "length, reflection-word counts. Prints a table and writes JSON.",
    )
    p.add_argument("--model", required=True, help="Hugging Face model directory (model + tokenizer).")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--protocol", help="A paper's evaluation protocol: 'stare', 'steer' (packaged, see "
                     "stare_rl/recipes/eval/) or a YAML file. Sets datasets, samples per dataset, temperature, "
                     "top_p and the generation budget; --k/--temperature/--top-p/--pass-k/--maj-k do not apply.")
    src.add_argument("--task", help="Embedded task to evaluate on (its held-out test split). Default: the task "
                     "saved with the model (stare_task.json), else 'arithmetic'.")
    src.add_argument("--dataset", help="Dataset to evaluate on instead: .parquet/.jsonl file, HF dataset dir or "
                     "cached hub id; {prompt, answer} or verl/DAPO schema. Scored with math-verify on \\boxed{}.")
    p.add_argument("--data-dir", default=None, help="With --protocol: folder holding the protocol's dataset files.")
    p.add_argument("--split", default=None, help="Dataset split (with --dataset; default 'train').")
    p.add_argument("--k", type=int, default=8, help="Samples per prompt for avg@k and pass@k (default 8).")
    p.add_argument("--pass-k", type=int, nargs="+", default=None,
                   help="k of each unbiased pass@k, each <= --k (default: --k).")
    p.add_argument("--maj-k", type=int, nargs="+", default=[],
                   help="k of each maj@k (majority vote over the extracted answers), each <= --k (default: none).")
    p.add_argument("--temperature", type=float, default=1.0, help="Sampling temperature (default 1.0).")
    p.add_argument("--top-p", type=float, default=1.0, help="Nucleus sampling top-p (default 1.0).")
    p.add_argument("--n", type=int, default=None,
                   help="Number of prompts (default 200; all if fewer; with --protocol: all of each dataset).")
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


def _dataset_reward(timeout: float, kind: str = "math") -> Any:
    from stare_rl.tasks.rewards import math_reward, number_reward, safe_reward

    fn = number_reward if kind == "number" else math_reward

    def reward(completion: str, answer: str) -> float:
        return safe_reward(fn, completion, answer, timeout)[0]

    return reward


def _number_text(final_number: Any) -> Any:
    """The answer a completion gives, as text, for maj@k under the number reward."""
    def answer(text: str) -> str | None:
        value = final_number(text)
        return None if value is None else f"{value:g}"

    return answer


def _rows_and_reward(args: argparse.Namespace) -> tuple[list[dict[str, Any]], Any, Any, str, int]:
    """(rows, reward_fn, answer_fn, source description, max_new_tokens)."""
    n = args.n or DEFAULT_PROMPTS
    if args.dataset:
        from stare_rl.tasks.data import load_dataset_rows
        from stare_rl.tasks.rewards import last_boxed

        rows = load_dataset_rows(args.dataset, args.split)[:n]
        return (rows, _dataset_reward(args.reward_timeout), last_boxed, f"dataset {args.dataset}",
                args.max_new_tokens or 1024)
    from stare_rl.tasks import get_task
    from stare_rl.tasks.base import clean_completion
    from stare_rl.train.warmstart import read_task_info

    info = read_task_info(args.model) or {}
    name = args.task or info.get("task", "arithmetic")
    task = get_task(name, **(info.get("task_kwargs", {}) if name == info.get("task") else {}))
    rows = task.make_split("test", n, args.seed)
    return (rows, task.reward, clean_completion, f"task {task!r} (test split)",
            args.max_new_tokens or task.max_completion_chars + 1)


def _accuracy_keys(metrics: dict[str, Any]) -> list[str]:
    return [key for key in metrics if key.split("@")[0] in ("avg", "pass", "maj") and "@" in key]


def format_table(metrics: dict[str, Any], source: str, model: str) -> str:
    k = metrics["k"]
    lines = [f"model:  {model}", f"source: {source}", f"prompts {metrics['n']}, k {k}, temperature "
             f"{metrics['temperature']}, top_p {metrics['top_p']}", ""]
    keys = [*_accuracy_keys(metrics), "greedy_acc", "mean_response_length", "entropy"]
    keys += [key for key in metrics if key.startswith(("reflection/", "tools/"))]
    width = max(len(key) for key in keys)
    for key in keys:
        value = metrics[key]
        lines.append(f"  {key:<{width}}  {'-' if value is None else f'{value:.4f}'}")
    if metrics.get("by_source"):
        lines += ["", format_source_table(metrics["by_source"])]
    return "\n".join(lines)


def format_source_table(by_source: dict[str, dict[str, Any]]) -> str:
    """One row per data source: prompts and every avg@/pass@/maj@ column any source has ('-' elsewhere)."""
    columns: list[str] = []
    for metrics in by_source.values():
        columns += [key for key in _accuracy_keys(metrics) if key not in columns]
    width = max(len("source"), *(len(name) for name in by_source))
    head = f"  {'source':<{width}}  {'prompts':>7}" + "".join(f"  {c:>8}" for c in columns)
    rows = [head]
    for name, metrics in by_source.items():
        cells = "".join(f"  {metrics[c]:>8.4f}" if c in metrics else f"  {'-':>8}" for c in columns)
        rows.append(f"  {name:<{width}}  {metrics['n']:>7}" + cells)
    return "\n".join(rows)


def _protocol_rows(protocol: Any, dataset: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """A protocol dataset's rows: its file, or an embedded task's whole test split (``file: task:<name>``)."""
    from stare_rl.tasks.data import load_dataset_rows

    if dataset.file.startswith(TASK_PREFIX):
        from stare_rl.tasks import get_task

        return get_task(dataset.file[len(TASK_PREFIX):]).make_split("test", 10**6, args.seed, allow_fewer=True)
    return load_dataset_rows(protocol.path_of(dataset, args.data_dir), args.split)


def run_protocol(args: argparse.Namespace) -> dict[str, Any]:
    """Every dataset of ``args.protocol`` with its own sample count; the per-dataset metrics and their mean."""
    from stare_rl.tasks.rewards import final_number, last_boxed

    protocol = load_protocol(args.protocol)
    reward = _dataset_reward(args.reward_timeout, protocol.reward)
    answer_fn = last_boxed if protocol.reward == "math" else _number_text(final_number)
    loaded = [(d, _protocol_rows(protocol, d, args)) for d in protocol.datasets]
    by_source: dict[str, dict[str, Any]] = {}
    for dataset, rows in loaded:
        rows = rows[: args.n] if args.n else rows
        result = heldout.evaluate(args.model, None, rows, reward, k=dataset.samples, temperature=protocol.temperature,
                                  top_p=protocol.top_p, max_new_tokens=args.max_new_tokens or protocol.max_new_tokens,
                                  batch_size=args.batch_size, seed=args.seed, greedy=False, pass_ks=dataset.pass_k,
                                  maj_ks=dataset.maj_k, answer_fn=answer_fn, per_row=args.per_row,
                                  progress=not args.no_progress)
        result.pop("by_source", None)
        by_source[dataset.name] = result
    headline = [m[f"avg@{m['k']}"] for m in by_source.values()]
    return {"protocol": protocol.name, "temperature": protocol.temperature, "top_p": protocol.top_p,
            "average": sum(headline) / len(headline), "by_source": by_source}


def _tool_task(args: argparse.Namespace) -> Any:
    """The embedded tool task to evaluate on (None for a dataset or a plain task)."""
    if args.dataset:
        return None
    from stare_rl.tasks import get_task, is_tool_task
    from stare_rl.train.warmstart import read_task_info

    info = read_task_info(args.model) or {}
    name = args.task or info.get("task", "arithmetic")
    task = get_task(name, **(info.get("task_kwargs", {}) if name == info.get("task") else {}))
    return task if is_tool_task(task) else None


def _evaluate_tool_task(args: argparse.Namespace, task: Any) -> tuple[dict[str, Any], str]:
    from transformers import AutoModelForCausalLM

    from stare_rl.evaluation.tools import evaluate_tool_task
    from stare_rl.models.tokenizer import load_tokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(args.model), load_tokenizer(args.model)
    rows = task.make_split("test", args.n or DEFAULT_PROMPTS, args.seed)
    metrics = evaluate_tool_task(model, tokenizer, task, rows, k=args.k, temperature=args.temperature,
                                 max_completion_length=args.max_new_tokens, batch_size=args.batch_size,
                                 seed=args.seed)
    return metrics, f"task {task!r} (test split, episodes with its tools)"


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name, value in (("--k", args.k), ("--n", args.n), ("--batch-size", args.batch_size)):
        if value is not None and value < 1:
            print(f"stare eval: {name}={value} must be >= 1", file=sys.stderr)
            return 2
    if not (Path(args.model) / "config.json").is_file():
        print(f"stare eval: --model {args.model!r} is not a Hugging Face model directory (no config.json)",
              file=sys.stderr)
        return 2

    try:
        tool_task = None if args.protocol else _tool_task(args)
        if args.protocol:
            metrics = {"model": str(args.model), **run_protocol(args)}
            text = (f"model:    {args.model}\nprotocol: {metrics['protocol']} (temperature {metrics['temperature']}, "
                    f"top_p {metrics['top_p']})\n\n{format_source_table(metrics['by_source'])}\n\n"
                    f"  average of the avg@n column: {metrics['average']:.4f}")
        elif tool_task is not None:  # multi-turn episodes with the task's tools (evaluation/tools.py)
            metrics, source = _evaluate_tool_task(args, tool_task)
            metrics = {"model": str(args.model), "source": source, **metrics}
            text = format_table(metrics, source, str(args.model))
        else:
            rows, reward, answer_fn, source, max_new = _rows_and_reward(args)
            metrics = heldout.evaluate(args.model, None, rows, reward, k=args.k, temperature=args.temperature,
                                       top_p=args.top_p, max_new_tokens=max_new, batch_size=args.batch_size,
                                       seed=args.seed, pass_ks=args.pass_k, maj_ks=args.maj_k, answer_fn=answer_fn,
                                       per_row=args.per_row, progress=not args.no_progress)
            metrics = {"model": str(args.model), "source": source, **metrics}
            text = format_table(metrics, source, str(args.model))
    except (ValueError, FileNotFoundError) as err:
        print(f"stare eval: {err}", file=sys.stderr)
        return 2
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out, metrics)
        print(f"\nwrote {out}")
    return 0
