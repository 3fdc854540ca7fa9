"""Where a grid cell's GRPO step goes, and what TRL's own speed options do to it, measured side by side.

    OMP_NUM_THREADS=1 python benchmarks/bench_cell_speed.py [--config src/stare_rl/configs/countdown_cot.yaml]
        [--variants baseline,static_cache,torch_compile] [--steps 8] [--warmup 2] [--repeats 2] [-- --key value ...]

What runs: ``stare train`` itself (its parser, data, cached warm start, ``StareGRPOTrainer``, callbacks), on the
config's settings with no held-out evaluation (``eval_every 0``, no initial/final evaluation, no checkpoint), for
``--warmup + --steps`` optimizer steps; anything after ``--`` is passed to every run (e.g. a smaller warm start).
Each run is a fresh process; runs are interleaved round-robin over ``--repeats`` so that the drift of a shared
CPU hits every variant alike.

Variants (each is ``stare train`` arguments on top of the config; ``--variants`` picks among them):

- ``baseline``: the config as it is.
- ``static_cache``: ``cache_implementation static`` (TRL passes it to ``generate``: a pre-allocated KV cache).
- ``continuous_batching``: ``use_transformers_continuous_batching true`` (TRL's paged / continuous-batching
  generation through ``generate_batch``; the old ``use_transformers_paged``).
- ``torch_compile``: ``torch_compile true`` (the Trainer compiles the model for the training forward/backward;
  TRL's generation config sets ``disable_compile=True``, so generation stays eager).
- ``eager_attention``: ``model_init_kwargs {"attn_implementation": "eager"}`` instead of SDPA.

Measured per run: CPU seconds (``time.process_time``; one torch thread, what a shared machine inflates least)
and wall seconds per optimizer step over the timed steps (mean), split into generation (``model.generate`` /
``generate_batch``), the training forward (TRL's ``_get_per_token_logps_and_entropies``), the backward
(``Accelerator.backward``) and the rest (rewards, advantages, controllers, statistics, optimizer, logging); the
one-off cost of the first ``--warmup`` steps (a compile lands there). Per variant the median over repeats;
``x base`` is the ratio of CPU s/step to ``baseline``'s. Semantics: the first logged step's metrics of every
run are compared with ``baseline``'s (same seed): ``same`` when equal to 6 significant digits.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VARIANTS: dict[str, list[str]] = {
    "baseline": [],
    "static_cache": ["--cache_implementation", "static"],
    "continuous_batching": ["--use_transformers_continuous_batching", "true"],
    "torch_compile": ["--torch_compile", "true"],
    "eager_attention": ["--model_init_kwargs", '{"attn_implementation": "eager"}'],
}
PARTS = ("generate", "forward", "backward")
# step-1 metrics compared across variants (the same seed: the same prompts, samples and loss up to rounding)
CHECKED = ("loss", "critic/score/mean", "response_length/mean", "actor/entropy", "actor/grad_norm")


def _timed(totals: dict[str, list[float]], name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            entry = totals.setdefault(name, [0.0, 0.0])
            entry[0] += time.perf_counter() - t0
            entry[1] += time.process_time() - c0
    return wrapper


def child(argv: list[str], warmup: int, out: Path) -> None:
    """One ``stare train`` run with timers around its parts; writes a JSON summary to ``out``."""
    import accelerate
    from transformers import TrainerCallback
    from transformers.generation.utils import GenerationMixin

    from stare_rl.commands.console import show_progress
    from stare_rl.engines.trl.trainer import StareGRPOTrainer
    from stare_rl.train import run as train_run
    from stare_rl.train.plan import plan_run
    from stare_rl.train.prepare import prepare

    show_progress()  # the run's progress lines, as `stare train` shows them
    totals: dict[str, list[float]] = {}
    marks: list[tuple[float, float]] = []
    snapshot: list[dict[str, list[float]]] = []
    GenerationMixin.generate = _timed(totals, "generate", GenerationMixin.generate)
    if hasattr(GenerationMixin, "generate_batch"):
        GenerationMixin.generate_batch = _timed(totals, "generate", GenerationMixin.generate_batch)
    StareGRPOTrainer._get_per_token_logps_and_entropies = _timed(
        totals, "forward", StareGRPOTrainer._get_per_token_logps_and_entropies)
    accelerate.Accelerator.backward = _timed(totals, "backward", accelerate.Accelerator.backward)

    class Marks(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
            marks.append((time.perf_counter(), time.process_time()))
            if len(marks) == warmup:
                snapshot.append({k: list(v) for k, v in totals.items()})

    curve = train_run._curve_callbacks
    train_run._curve_callbacks = lambda prep, tok: [Marks(), *curve(prep, tok)]
    prepared = prepare(plan_run(argv))
    start = (time.perf_counter(), time.process_time())
    train_run.execute(prepared)
    timed = len(marks) - warmup
    if timed < 1:
        raise SystemExit(f"only {len(marks)} steps ran; need more than --warmup={warmup}")
    before = snapshot[0] if snapshot else {}
    parts = {k: [(v[i] - before.get(k, [0.0, 0.0])[i]) / timed for i in (0, 1)] for k, v in totals.items()}
    first = marks[warmup - 1] if warmup else start
    metrics = [json.loads(line) for line in (Path(prepared.plan.grpo.output_dir) / "metrics.jsonl").open()]
    step1 = next((m for m in metrics if m.get("step") == 1 and "loss" in m), {})
    out.write_text(json.dumps({
        "wall": (marks[-1][0] - first[0]) / timed, "cpu": (marks[-1][1] - first[1]) / timed,
        "warmup_wall": first[0] - start[0], "warmup_cpu": first[1] - start[1], "parts": parts,
        "step1": {k: step1.get(k) for k in CHECKED},
    }))


def _run(variant: str, config: str, extra: list[str], steps: int, warmup: int, tmp: Path, rep: int) -> dict[str, Any]:
    out = tmp / f"{variant}-{rep}.json"
    argv = ["--config", config, "--config_base", "none", "--eval_every", "0", "--initial_eval", "false",
            "--final_eval", "false", "--save_strategy", "no", "--max_steps", str(steps + warmup),
            "--output_dir", str(tmp / f"run-{variant}-{rep}"), *VARIANTS[variant], *extra]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, __file__, "--child", str(out), "--warmup", str(warmup), "--", *argv],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(out.read_text())


def _same(a: dict[str, Any], b: dict[str, Any]) -> str:
    diff = [k for k in CHECKED if a.get(k) is not None and b.get(k) is not None
            and f"{a[k]:.6g}" != f"{b[k]:.6g}"]
    return "same" if not diff else "differs: " + ", ".join(f"{k} {b[k]:.6g} vs {a[k]:.6g}" for k in diff)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "src/stare_rl/configs/countdown_cot.yaml"))
    parser.add_argument("--variants", default="baseline,static_cache,torch_compile",
                        help=f"comma-separated, from {list(VARIANTS)}; the first is the reference")
    parser.add_argument("--steps", type=int, default=8, help="timed optimizer steps per run")
    parser.add_argument("--warmup", type=int, default=2, help="untimed first steps per run (one-off costs)")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved runs per variant")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(extra, args.warmup, Path(args.child))
        return
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        parser.error(f"--variants={args.variants!r}: unknown {unknown}; choose from {list(VARIANTS)}")
    if args.steps < 1 or args.warmup < 0 or args.repeats < 1:
        parser.error(f"--steps={args.steps} (>= 1), --warmup={args.warmup} (>= 0), --repeats={args.repeats} (>= 1)")
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="bench-cell-") as tmp:
        for rep in range(args.repeats):
            for v in variants:
                r = _run(v, args.config, extra, args.steps, args.warmup, Path(tmp), rep)
                runs[v].append(r)
                print(f"repeat {rep + 1}: {v:<20} cpu {r['cpu']:.3f} s/step  wall {r['wall']:.3f} s/step", flush=True)
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    base = statistics.median(r["cpu"] for r in runs[variants[0]])
    print(f"\n{Path(args.config).name} {' '.join(extra)}; {args.steps} timed steps after {args.warmup}, "
          f"{args.repeats} repeats (interleaved, fresh process each); torch threads {os.environ.get('OMP_NUM_THREADS')}")
    print(f"load average (1, 5, 15 min): before {', '.join(load_before)}; after {', '.join(load_after)}; "
          f"cpus={os.cpu_count()}")
    print(f"{'variant':<20} {'cpu s/step':>10} {'x base':>7} {'wall s/step':>11} "
          + " ".join(f"{p:>9}" for p in PARTS) + f" {'other':>7} {'one-off s':>9}  step 1 vs {variants[0]}")
    for v in variants:
        rs = runs[v]
        cpu = statistics.median(r["cpu"] for r in rs)
        parts = [statistics.median(r["parts"].get(p, [0.0, 0.0])[1] for r in rs) for p in PARTS]
        print(f"{v:<20} {cpu:>10.3f} {cpu / base:>7.3f} {statistics.median(r['wall'] for r in rs):>11.3f} "
              + " ".join(f"{x:>9.3f}" for x in parts) + f" {cpu - sum(parts):>7.3f} "
              f"{statistics.median(r['warmup_cpu'] for r in rs):>9.1f}  {_same(runs[variants[0]][0]['step1'], rs[0]['step1'])}")
    print("(parts: CPU s/step in generation, the training forward, the backward; other = the rest of the step)")


if __name__ == "__main__":
    main()
