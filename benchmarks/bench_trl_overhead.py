"""Overhead of the stare-rl TRL adapter: step time of StareGRPOTrainer vs plain TRL GRPOTrainer.

Same tiny model (~1M parameters, the project's tiny Qwen2 at default size), same arithmetic prompts,
16 prompts x 8 samples per step, same seed. Runs are interleaved (plain, vanilla, stare, plain, ...) to
even out a shared CPU, and each configuration reports the median step time over the timed steps of its
best repeat. Printed: seconds per step and the ratio to plain TRL.

    OMP_NUM_THREADS=2 python benchmarks/bench_trl_overhead.py [--steps 30] [--repeats 2] [--model DIR]

``vanilla`` measures the adapter itself (registered loss, metrics, DAPO-ready masks, verl names);
``stare`` adds the once-per-generation-batch entropy pass of the gate (one no-grad forward).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _reward(prompts: list, completions: list, answer: list, **kwargs: Any) -> list[float]:
    return [float(c.strip() == a) for c, a in zip(completions, answer, strict=True)]


def _digits(prompts: list, completions: list, **kwargs: Any) -> list[float]:
    return [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in completions]


def _parts(model_dir: str | None) -> tuple[Any, Any, Any]:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer
    from stare_rl.tasks import get_task

    task = get_task("arithmetic")
    if model_dir:
        tok = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir)
    else:
        tok = build_char_tokenizer(task.alphabet)
        model = build_tiny_model(tok, seed=0)
    return model, tok, Dataset.from_list(task.make_split("train", 2048, 0))


class _Timer:
    """Wall-clock and process CPU time at the end of every optimizer step."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, float]] = []

    def callback(self) -> Any:
        from transformers import TrainerCallback

        timer = self

        class Mark(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
                timer.marks.append((time.perf_counter(), time.process_time()))

        return Mark()


def run_once(kind: str, steps: int, warmup: int, model_dir: str | None, batch: int = 128) -> tuple[float, float]:
    """Median (wall, CPU) seconds per optimizer step after ``warmup`` steps."""
    from trl import GRPOConfig, GRPOTrainer

    from stare_rl.trl import StareGRPOConfig, StareGRPOTrainer

    model, tok, ds = _parts(model_dir)
    reward = _reward if model_dir else _digits
    timer = _Timer()
    common = dict(
        output_dir=tempfile.mkdtemp(prefix=f"bench-{kind}-"), per_device_train_batch_size=batch, num_generations=8,
        max_completion_length=5, learning_rate=1e-4, lr_scheduler_type="constant", max_steps=steps + warmup,
        save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True, report_to="none", logging_steps=1,
        gradient_checkpointing=False, bf16=False, dataloader_pin_memory=False,
    )
    if kind == "plain":  # TRL's own DAPO-style loss: token-mean, clip-higher, same as the surrogate defaults
        args = GRPOConfig(**common, loss_type="dapo", epsilon=0.2, epsilon_high=0.28)
        trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=ds, processing_class=tok,
                              callbacks=[timer.callback()])
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # the adapter does not print every log either
    else:
        trainer = StareGRPOTrainer(model=model, reward_funcs=reward, args=StareGRPOConfig(**common, method=kind),
                                   train_dataset=ds, processing_class=tok, callbacks=[timer.callback()])
    trainer.train()
    marks = timer.marks[warmup:]
    pairs = list(zip(marks, marks[1:], strict=False))
    return (statistics.median(b[0] - a[0] for a, b in pairs), statistics.median(b[1] - a[1] for a, b in pairs))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="timed optimizer steps per run")
    parser.add_argument("--warmup", type=int, default=3, help="untimed first steps per run")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved repeats per configuration")
    parser.add_argument("--model", default=None, help="HF model dir (default: random tiny model, digit reward)")
    parser.add_argument("--batch", type=int, default=128, help="completions per step (8 per prompt; default 16 x 8)")
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error(f"--steps={args.steps} must be >= 2 (a step time is the gap between two step ends)")
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    kinds = ("plain", "vanilla", "stare")
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for rep in range(args.repeats):
        for kind in kinds:
            w, c = run_once(kind, args.steps, args.warmup, args.model, args.batch)
            wall[kind], cpu[kind] = min(wall.get(kind, float("inf")), w), min(cpu.get(kind, float("inf")), c)
            print(f"repeat {rep + 1}: {kind:<8} wall {w:.4f} s/step  cpu {c:.4f} s/step", flush=True)
    print(f"\ntorch threads {torch.get_num_threads()}, {args.steps} timed steps, {args.batch // 8} prompts x 8 samples "
          "(CPU time is the robust number on a shared machine)")
    for kind in kinds:
        print(f"{kind:<8} wall {wall[kind]:.4f} s/step (x{wall[kind] / wall['plain']:.3f})   "
              f"cpu {cpu[kind]:.4f} s/step (x{cpu[kind] / cpu['plain']:.3f} of plain TRL)")

if __name__ == "__main__":
    main()
