"""``stare compare``: a grid of methods x seeds of ``stare train`` with identical budgets, then one report.

    stare compare --config src/stare_rl/configs/compare.yaml                # the full grid
    stare compare --config FILE.yaml --out DIR --seeds 0,1 --methods grpo,stare_o1 --parallel 2
    stare compare --config FILE.yaml --smoke                                # the file's smoke section
    stare compare --config FILE.yaml --dry-run                              # list the cells and their state

Every cell is validated by ``stare train``'s own parser before any compute; the shared warm start runs once;
cells then run as ``stare train`` processes (``--parallel`` at a time, one torch thread each). A finished
cell (``compare_done.json``) is skipped on a re-run, a cell with a checkpoint resumes from it, anything else
restarts. The end: ``stare report`` of all runs plus ``results.md`` / ``results.json`` in ``--out``.

What the command has to say (the grid, a line per cell, the results table) is logged by this module's logger,
INFO for progress and ERROR for a bad input; ``stare`` shows it on stdout / stderr (:mod:`stare_rl.commands.console`).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import logging
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch
import yaml

from stare_rl.analysis.plots import ENTROPY_KEYS, pick_key
from stare_rl.analysis.report import build_report
from stare_rl.analysis.runs import read_run
from stare_rl.compare.grid import (
    CELL_CONFIG,
    Cell,
    Grid,
    cell_state,
    diagnostic_means,
    load_grid,
    mark_done,
    prepare_cell,
    restrict,
    results_markdown,
    results_table,
    run_metrics,
    scored_target,
)
from stare_rl.io.cache import cache_dir
from stare_rl.io.process import PARENT_PID_ENV
from stare_rl.io.runlog import metrics_path, write_json_atomic, write_text_atomic
from stare_rl.models.pretrained import resolve_model
from stare_rl.train import warmstart
from stare_rl.train.plan import plan_run
from stare_rl.train.prepare import load_model, prepare
from stare_rl.train.run import evaluate_policy, torch_threads

logger = logging.getLogger(__name__)

RESULTS_JSON, RESULTS_MD, RUN_INFO = "results.json", "results.md", "compare_run.json"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stare compare", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Grid file format and results: docs/compare.md.")
    p.add_argument("--config", required=True, help="grid YAML (e.g. stare_rl/configs/compare.yaml)")
    p.add_argument("--out", default=None, help="output directory (default: the grid's `out`)")
    p.add_argument("--seeds", default=None, help="comma-separated seeds, e.g. 0,1,2 (default: the grid's)")
    p.add_argument("--methods", default=None, help="comma-separated grid method names (default: all)")
    p.add_argument("--parallel", type=int, default=None, help="cells at once (default: the grid's, 2)")
    p.add_argument("--smoke", action="store_true", help="apply the grid's smoke section (tiny budget)")
    p.add_argument("--dry-run", action="store_true", help="validate and list the cells, run nothing")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: report and tabulate the finished cells of the grid")
    return p


def _seed_list(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError as err:
        raise ValueError(f"--seeds={text!r} must be comma-separated integers") from err


def validate_cells(grid: Grid) -> dict[str, Any]:
    """Parse every method's cell with ``stare train``'s parser (no compute); returns one plan per method."""
    plans = {}
    with tempfile.TemporaryDirectory() as tmp:
        for method in grid.methods:
            cfg = Path(tmp) / f"{method}.yaml"
            cfg.write_text(yaml.safe_dump({**grid.cell_config(method), "seed": grid.seeds[0]}))
            try:
                plans[method] = plan_run(["--config", str(cfg), "--config_base", "none",
                                          "--output_dir", str(Path(tmp) / method)])
            except ValueError as err:
                raise ValueError(f"grid method {method!r}: {err}") from err
    return plans


def _starting_model(plan: Any) -> str:
    """The model a plan starts from: for ``model: tiny`` the cached warm start, called as ``stare train`` does; a
    ``stare models`` name (``smollm2-135m-instruct``) its built dir, as ``stare train`` resolves it."""
    ta = plan.task_args
    if ta.model != "tiny":
        return resolve_model(str(ta.model), cache_dir(ta.cache_dir))
    ws = getattr(plan, "warmstart", None)  # stare train's warm-start settings (None: WarmStartConfig defaults)
    kwargs = {} if ws is None else {"seed": ws.warmstart_seed, "config": ws.warmstart_config()}
    # the grid's torch_threads, as stare train applies it: the same thread count gives the same cached bits, and
    # torch's default (every core) thrashes beside the cells of another grid on a small machine
    with torch_threads(ta.torch_threads):
        return str(warmstart.warm_start(ta.task, cache_dir(ta.cache_dir), **{"seed": 0, **kwargs}))


def _warm_starts(plans: dict[str, Any]) -> None:
    """The shared warm start (once per distinct setting), before the cells run in parallel."""
    done = set()
    for plan in plans.values():
        ta = plan.task_args
        key = (ta.task, cache_dir(ta.cache_dir), repr(getattr(plan, "warmstart", None)))
        if ta.model == "tiny" and key not in done:
            logger.info("warm start: tiny model on %s (cached in %s)", ta.task, key[1])
            logger.info("  -> %s", _starting_model(plan))
            done.add(key)


def _launch(grid: Grid, cell: Cell) -> tuple[subprocess.Popen, Any, bool, float]:
    cfg, resume = prepare_cell(grid, cell)
    # config_base none: a cell is the grid's config on the library defaults, not on stare train's default.yaml
    argv = [sys.executable, "-m", "stare_rl.cli", "train", "--config", str(cfg), "--config_base", "none",
            "--output_dir", str(cell.run_dir), "--disable_tqdm", "true"]
    if resume:
        argv += ["--resume_from_checkpoint", "last"]
    # PARENT_PID_ENV: the cell ends when this process dies, even by SIGKILL (cli.exit_with_parent); a re-run
    # never finds an orphaned cell still writing into the run dir it resumes
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
           "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", PARENT_PID_ENV: str(os.getpid())}
    log = open(cell.run_dir / "train.log", "a")  # noqa: SIM115  (closed when the process ends)
    log.write(f"$ {shlex.join(argv)}\n")
    log.flush()
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    return proc, log, resume, time.time()


def _headline(cell: Cell) -> str:
    run = read_run(cell.run_dir)
    parts = []
    if run is not None and run.series.get("actor/entropy"):
        ent = [v for _, v in run.series["actor/entropy"]]
        parts.append(f"entropy {ent[0]:.3f} -> {ent[-1]:.3f} (min {min(ent):.3f})")
    if run is not None and run.eval:
        parts += [f"{k} {v:.3f}" for k, v in run.eval.items() if k.startswith(("avg@", "pass@"))]
    return ", ".join(parts)


def run_cells(grid: Grid, cells: list[Cell]) -> list[Cell]:
    """Run the cells ``grid.parallel`` at a time; log a line per started and finished cell. Returns the failed
    ones."""
    pending = list(cells)
    running: list[tuple[Cell, subprocess.Popen, Any, bool, float]] = []
    previous = signal.signal(signal.SIGTERM, _interrupt)  # `kill PID` stops the cells like Ctrl-C
    failed: list[Cell] = []
    total, finished = len(cells), 0
    try:
        while pending or running:
            while pending and len(running) < grid.parallel:
                cell = pending.pop(0)
                proc, log, resume, t0 = _launch(grid, cell)
                logger.info("start  %s%s", cell.name, " (resuming from its last checkpoint)" if resume else "")
                running.append((cell, proc, log, resume, t0))
            time.sleep(0.5)
            for item in list(running):
                cell, proc, log, resume, t0 = item
                if proc.poll() is None:
                    continue
                running.remove(item)
                log.close()
                finished += 1
                wall = time.time() - t0
                if proc.returncode == 0:
                    mark_done(cell, {"wall_s": round(wall, 1), "resumed": resume, "finished": time.time()})
                    logger.info("[%d/%d] done   %s in %.0f s: %s", finished, total, cell.name, wall, _headline(cell))
                elif proc.returncode == 128 + signal.SIGTERM:  # stare train stopped by a SIGTERM sent to it alone
                    failed.append(cell)
                    logger.info("[%d/%d] stopped %s by SIGTERM after %.0f s: its step in progress is checkpointed; "
                                "re-run the same command to resume it", finished, total, cell.name, wall)
                else:
                    failed.append(cell)
                    tail = (cell.run_dir / "train.log").read_text(errors="replace").splitlines()[-8:]
                    logger.info("[%d/%d] FAILED %s (exit %d) after %.0f s; log %s:\n  %s", finished, total, cell.name,
                                proc.returncode, wall, cell.run_dir / "train.log", "\n  ".join(tail))
    except KeyboardInterrupt:
        for _, proc, _, _, _ in running:  # only the processes this command started; SIGTERM: each one finishes
            proc.terminate()  # its step in progress and checkpoints it (stare train's CheckpointOnSignal)
        for cell, proc, log, _, _ in running:
            logger.info("stopping %s: its step in progress finishes and is checkpointed", cell.name)
            proc.wait()
            log.close()
            logger.info("interrupted %s: re-run the same command to resume", cell.name)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    return failed


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


REFERENCE = "warm_start"  # the starting model, evaluated like every cell's final model (no RL)


def reference_evals(grid: Grid, plans: dict[str, Any]) -> dict[int, Path]:
    """Evaluate the shared starting model on each seed's held-out prompts, exactly as ``stare train`` evaluates.

    Uses the first method's plan (the grid gives every method the same model, task and evaluation); the result
    per seed is kept in ``<out>/reference/warm_start/seed<N>/eval.json``. It is ``stare train``'s own evaluation
    (:func:`stare_rl.train.run.evaluate_policy`, tools included), so with ``initial_eval_cache`` (the default) a
    cell's evaluation of the same start on the same seed is read back instead of computed again.
    """
    plan0 = plans[next(iter(grid.methods))]
    out: dict[int, Path] = {}
    for seed in grid.seeds:
        path = grid.out / "reference" / REFERENCE / f"seed{seed}" / "eval.json"
        out[seed] = path
        if path.is_file() or not plan0.task_args.final_eval:
            continue
        grpo = copy.copy(plan0.grpo)  # GRPOConfig: set the seed without re-running its __post_init__
        grpo.seed = seed
        plan = dataclasses.replace(plan0, grpo=grpo)
        prep = prepare(plan)
        ta, grpo = plan.task_args, plan.grpo
        model_path = _starting_model(plan)
        model, tokenizer = (prep.model, prep.tokenizer) if prep.model is not None else \
            load_model(model_path, grpo.model_init_kwargs)
        if torch.cuda.is_available() and not grpo.use_cpu:  # where the cells' trainer puts it
            model = model.to("cuda")
        with torch_threads(ta.torch_threads or 1):  # as the cells evaluate (OMP_NUM_THREADS=1), and key the cache
            result, hit = evaluate_policy(prep, model, tokenizer,
                                          cache_dir(ta.cache_dir) if ta.initial_eval_cache else None)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"model": model_path, **result})
        logger.info("reference: starting model on seed %d's held-out prompts%s: avg@%d %.3f, pass@%d %.3f", seed,
                    f" (a cell's evaluation of the same start, cached: {hit})" if hit else "",
                    ta.eval_k, result[f"avg@{ta.eval_k}"], ta.eval_k, result[f"pass@{ta.eval_k}"])
    return out


def summarise(grid: Grid, cells: list[Cell],
              references: dict[int, Path] | None = None) -> tuple[Path | None, dict[str, Any] | None]:
    """``stare report`` of every cell with metrics, then the results table (markdown + JSON) in ``grid.out``."""
    # metrics.jsonl, or the gzipped copy of a committed cell (a results folder re-reported: --report-only)
    with_metrics = [c for c in cells if cell_state(c) == "done" and metrics_path(c.run_dir).is_file()]
    if not with_metrics:  # only finished cells are scored: a half-run cell would distort the table
        return None, None
    page = build_report([c.run_dir for c in with_metrics], grid.out / "report", band_rel=grid.band)
    summary = json.loads((page.parent / "summary.json").read_text())
    rows = {(r["method"], r["seed"]): r for r in summary["runs"]}
    runs = {c: read_run(c.run_dir) for c in with_metrics}
    key = pick_key([r for r in runs.values() if r is not None], ENTROPY_KEYS)
    per_run: dict[str, list[dict[str, float | None]]] = {}
    for cell, run in runs.items():
        if run is None or (cell.method, cell.seed) not in rows:
            continue
        done = cell.run_dir / "compare_done.json"
        wall = json.loads(done.read_text()).get("wall_s") if done.is_file() else None
        entropy = [v for _, v in run.series.get(key, [])] if key else []
        target = scored_target(grid.target_entropy, run.series, entropy)  # a relative grid target: per run
        values = run_metrics(rows[(cell.method, cell.seed)], entropy, target, grid.band, wall)
        per_run.setdefault(cell.method, []).append({**values, **diagnostic_means(run.series)})
    refs = [json.loads(p.read_text()) for p in (references or {}).values() if p.is_file()]
    if refs:  # the starting model's held-out numbers, first row (no training metrics)
        ref_rows = [run_metrics({f"eval:{k}": v for k, v in r.items()}, [], None, grid.band) for r in refs]
        per_run = {REFERENCE: ref_rows, **per_run}
    results = results_table(per_run, grid)
    write_text_atomic(grid.out / RESULTS_JSON, json.dumps(results, indent=2))
    write_text_atomic(grid.out / RESULTS_MD, results_markdown(results))
    return page, results


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("stare-rl", "torch", "trl", "transformers", "accelerate", "datasets", "matplotlib"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _record_invocation(grid: Grid, cells: list[Cell], argv: list[str], config: str, ran: list[Cell],
                       failed: list[Cell], wall_s: float) -> None:
    """Append this invocation (command, cells run, wall time, versions) to ``compare_run.json`` in ``grid.out``."""
    path = grid.out / RUN_INFO
    history = json.loads(path.read_text()).get("invocations", []) if path.is_file() else []
    scored = [c.name for c in cells if cell_state(c) == "done"]
    history.append({"command": "stare compare " + shlex.join(argv), "config": str(Path(config).resolve()),
                    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - wall_s)),
                    "wall_s": round(wall_s, 1), "ran": [c.name for c in ran], "failed": [c.name for c in failed],
                    "parallel": grid.parallel, "cpu_count": os.cpu_count()})
    info = {"cells": len(cells), "scored": scored, "not_scored": [c.name for c in cells if c.name not in scored],
            "wall_s_total": round(sum(h["wall_s"] for h in history), 1), "versions": _versions(),
            "invocations": history}
    write_text_atomic(path, json.dumps(info, indent=2))


def main(argv: list[str]) -> int:
    """Entry point of ``stare compare``; returns the exit status (2 = bad input, 1 = a cell failed)."""
    args = _parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        grid = load_grid(args.config, smoke=args.smoke)
        grid = restrict(grid, methods=args.methods, seeds=_seed_list(args.seeds), out=args.out,
                        parallel=args.parallel)
        plans = validate_cells(grid)
    except ValueError as err:
        logger.error("stare compare: error: %s", err)
        return 2
    cells = grid.cells()
    states = {c: cell_state(c) for c in cells}
    todo = [c for c in cells if states[c] != "done"]
    logger.info("grid: %d method(s) x %d seed(s) = %d cells in %s; %d finished, %d to resume, %s",
                len(grid.methods), len(grid.seeds), len(cells), grid.out, len(cells) - len(todo),
                sum(s == "resume" for s in states.values()), parallel_note(grid))
    if args.dry_run:
        for c in cells:
            logger.info("  %-28s %-7s %s", c.name, states[c], c.run_dir / CELL_CONFIG)
        return 0
    grid.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    if not args.report_only:
        _warm_starts(plans)
    todo = [] if args.report_only else todo
    failed = run_cells(grid, todo)
    references = reference_evals(grid, plans)
    page, results = summarise(grid, cells, references)
    _record_invocation(grid, cells, argv, args.config, todo, failed, time.time() - t0)
    if results is not None:
        logger.info((grid.out / RESULTS_MD).read_text())
        logger.info("report: %s\nresults: %s, %s", page, grid.out / RESULTS_MD, grid.out / RESULTS_JSON)
    return 1 if failed else 0


def parallel_note(grid: Grid) -> str:
    return f"{grid.parallel} at a time, one torch thread each"
