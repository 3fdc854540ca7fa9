"""``stare verl-dryrun <recipe> [hydra overrides]``: a verl recipe for N steps on the CPU, offline.

Builds a tiny Qwen2 model and arithmetic data under ``--out`` (kept for the next run), then runs the recipe's
entry point (``stare_rl.engines.verl.main`` when the recipe asks for ``trainer.v1.trainer_mode=stare_rl``,
else ``verl.trainer.main_ppo``) with the CPU overrides of :mod:`stare_rl.engines.verl.cpu.dryrun` and yours
last, under ``VERL_PLATFORM=stare_cpu``. verl's per-step metrics go to ``<out>/metrics.jsonl`` (verl's file
logger; ``stare report <out>`` renders them, labelled by ``<out>/run_config.json``) and its checkpoints to
``<out>/checkpoints`` (a second run with more steps resumes there, and rewrites ``metrics.jsonl``). Exit status: verl's.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from stare_rl.engines.verl.cpu import check_verl_version
from stare_rl.io.runlog import METRICS_FILE
from stare_rl.models.pretrained import resolve_model

# stare_rl.engines.verl.cpu.dryrun is imported when the command runs: it loads transformers, which
# `stare verl-dryrun --help` does not.


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stare verl-dryrun",
        description="Dry-run a verl recipe on the CPU: a tiny model and data are built offline, the recipe runs "
        "for --steps steps through verl's real trainer (Ray local, FSDP2 on CPU, a transformers rollout).",
    )
    p.add_argument("recipe", help="a shipped recipe name (e.g. stare_qwen25_math_1p5b, grpo_ds_qwen25_math_1p5b) "
                   "or the path of your own verl YAML config")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, applied after the CPU ones (they win)")
    p.add_argument("--steps", type=int, default=2, help="training steps (default 2)")
    p.add_argument("--out", type=Path, default=Path("verl_dryrun"), help="assets, checkpoints, metrics")
    p.add_argument("--model", default=None,
                   help="a real chat model instead of the tiny one: a name of `stare models list` (built into the "
                   "cache on first use) or a Hugging Face model dir; the data become chat questions "
                   "(chat_arithmetic, reward: the final number written) with lengths and a learning rate that fit it")
    p.add_argument("--cache-dir", dest="cache_dir", default=None, help="where --model NAME is built (stare models)")
    p.add_argument("--print-only", action="store_true", help="print the environment and command, run nothing")
    return p


def _model_dir(model: str, cache: str | None) -> Path:
    """The dir of ``--model``: a name of ``stare models list`` is built on first use; a dir must hold a model."""
    path = Path(resolve_model(model, cache, say=lambda line: print(line, flush=True))).expanduser().resolve()
    if not (path / "config.json").is_file():
        raise ValueError(f"--model={model!r}: neither a name of `stare models list` nor a Hugging Face model dir "
                         "(no config.json)")
    return path


def main(argv: list[str]) -> int:
    args = build_parser().parse_intermixed_args(argv)  # overrides may follow the options
    if args.steps < 1:
        print(f"stare verl-dryrun: error: --steps={args.steps} must be >= 1", file=sys.stderr)
        return 2
    from stare_rl.engines.verl.cpu.dryrun import dryrun_command, dryrun_env

    try:
        check_verl_version()
        model = _model_dir(args.model, args.cache_dir) if args.model else None
        command, _ = dryrun_command(args.recipe, args.out, args.steps, args.overrides, model=model)
    except (ValueError, RuntimeError) as err:
        print(f"stare verl-dryrun: error: {err}", file=sys.stderr)
        return 2
    env = dryrun_env(metrics_path=args.out / METRICS_FILE)  # verl's file logger: `stare report <out>` reads it
    shown = {k: env[k] for k in ("VERL_PLATFORM", "OMP_NUM_THREADS", "VERL_FILE_LOGGER_PATH")}
    print(" ".join(f"{k}={shlex.quote(v)}" for k, v in shown.items()), shlex.join(command), flush=True)
    if args.print_only:
        return 0
    return subprocess.run(command, env=env).returncode
