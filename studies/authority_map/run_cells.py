"""Issue #46's driver: run the authority map's missing cells in the registered order, two at a time, and commit each.

    export STARE_RL_CACHE=/work/runs/authority_map/cache
    nohup python studies/authority_map/run_cells.py > /work/runs/authority_map/driver.log 2>&1 &
    python studies/authority_map/run_cells.py --dry-run     # the cells in order and their state
    python studies/authority_map/run_cells.py --status      # + steps logged, checkpoints, seconds per step so far
    touch /work/runs/authority_map/STOP                      # start no new cell (running ones finish and are committed)

Order (studies/authority_map/HYPOTHESES.md, "Phases" and its run-order deviation of 2026-11-27), seed 0 first: per
task (arithmetic, countdown, countdown_cot), phase A (per width in the grid's order GRPO, C2 at 0.7x,
stare_sensitivity at 0.7x), then that task's phase B (both with auto_fallback bonus at 0.7x), then its phase B3 (phase
B with auto_w_max 3, the deviation of 2026-11-28), then its phase B3s (phase B3 with auto_bonus_span log 50, the
second deviation of 2026-11-28); then phase C (0.5x, both, without and with the fallback) at each task and width,
decided when the driver reaches it: its cells are queued only once that width's GRPO cell has finished and
rule R holds on it (GRPO's centred 21-step mean batch entropy at or below 0.5x of its start on some step); then
seeds 1 and 2 of the cells rule S selects from seed 0 (a rolling band in [80, 90) %, or a pair's d in [15, 25)
points), decided once that task's seed-0 cells have finished. R and S are analyze.py's own functions, so the driver
runs what the analysis reports. A wider width whose warm start did not learn the task (HYPOTHESES.md, "Warm
starts": its cells are not scored) has its remaining cells skipped once that warm start is known (analyze.py's check),
and so has a fallback cell identical to its finished twin (rule T, the deviation of 2026-11-28: the analysis reads
the twin's run for it).

Each cell is one `stare compare --config studies/authority_map/<task>.yaml --out RUN_ROOT/<task> --methods M --seeds S
--parallel 1` under `nice -n 19` with the frontier's kernel pins (ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2
OMP_NUM_THREADS=1); it resumes from its last checkpoint (every 100 steps). STARE_RL_CACHE must name the warm-start
cache (one warm start per task and width, shared by that width's cells). A finished cell's light files go to
docs/results/authority_map/<task>/runs/<method>/seed<S>/ and the grid's report beside runs/; then
`studies/authority_map/analyze.py --runs docs/results/authority_map --out docs/results/authority_map` re-runs
(authority_map.md, .json, .png) and exactly docs/results/authority_map is committed. The analysis reads the committed
cells (the one just exported among them), not the run root: a cell that finished beside it but is not committed yet
(the driver commits one at a time) would otherwise be in an analysis whose cells are not all committed. The driver is studies/cell_driver.py's; this file
declares the study.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # studies/: the shared driver
sys.path.insert(0, str(HERE))  # this study's modules, as when analyze.py runs as a script
import cell_driver  # noqa: E402, F401  (the module the blocks are built with: the tests drive it)
from authority_grids import GRIDS, REFERENCE, TASKS, default_width, methods, reference, slots, twin, widths  # noqa: E402
from cell_driver import DONE, ROOT, Block, Cell, Pick, Study, main, run_dir  # noqa: E402

DOCS = ROOT / "docs" / "results" / "authority_map"


def _finished(root: Path, c: Cell) -> Path | None:
    """The finished cell's directory: the run root's, else its committed copy, else (rule T) its twin's where the
    cell is not run for being identical to it; None while unfinished."""
    d = next((d for d in (run_dir(root, c), DOCS / c.part / "runs" / c.method / f"seed{c.seed}")
              if (d / DONE).is_file()), None)
    if d is None and twin(c.part, c.method) is not None and not run_dir(root, c).exists() and identical_twin(c, root):
        return _finished(root, twin_cell(c)[0])
    return d


def phase_c(task: str, width: int):
    """Rule R at (task, width), read on its GRPO cell (seed 0) once finished: all phase-C methods, or none."""
    def when(root: Path, running: frozenset[Cell] | None) -> Pick:
        grpo = Cell(task, reference(task, width), 0)
        d = _finished(root, grpo)
        if d is None:
            if running is None or grpo in running:
                return Pick(None, f"rule R: {grpo.method}/seed0 not finished yet")
            return Pick((), f"rule R not decided: {grpo.method}/seed0 did not finish")
        # reads metrics (imports stare_rl): only once a rule is decided
        from authority_values import cell_record

        r = cell_record(d, slots(task)[grpo.method]).get("R") or {}
        why = (f"rule R {r.get('verdict', 'not decided')}: GRPO's 21-step mean reaches "
               f"{r.get('min_mean_over_start') or float('nan'):.2f}x of its start")
        return Pick(methods(task, "C", width) if r.get("holds") else (), why)
    return when


def seeds_s(task: str):
    """Rule S on the task's seed-0 cells (phases A, B, and C where R picked it), once none of them is running."""
    def when(root: Path, running: frozenset[Cell] | None) -> Pick:
        deps = [Cell(task, m, 0) for phase in ("A", "B", "B3", "B3s") for m in methods(task, phase)]
        for w in widths(task):
            deps += [Cell(task, m, 0) for m in phase_c(task, w)(root, running).methods or ()]
        pending = [c for c in deps if _finished(root, c) is None and (running is None or c in running)]
        if pending:
            return Pick(None, f"rule S: {len(pending)} seed-0 cells of {task} not finished yet")
        picks = _analysis().evaluate(root, _cache(), DOCS)["rules"]["S"][task]
        return Pick(tuple(m for m in methods(task) if m in picks),
                    f"rule S selects {len(picks)} cells of {task} (authority_map.md lists why)")
    return when


def s_outlook(root: Path) -> str:
    """``--status``, while rule S's blocks are not decided: the cells rule S would select on the seed-0 cells
    finished so far (the analysis's own reading), and their runs of seeds 1-2 not finished yet, at the wall of each
    cell's seed-0 run. An outlook for planning: S decides once all of a task's seed-0 cells have finished."""
    picks = _analysis().evaluate(root, _cache(), DOCS)["rules"]["S"]
    runs, seconds = 0, 0.0
    for task, names in picks.items():
        for m in names:
            d = _finished(root, Cell(task, m, 0))
            wall = json.loads((d / DONE).read_text())["wall_s"] if d is not None else 0.0
            left = [s for s in (1, 2) if _finished(root, Cell(task, m, s)) is None]
            runs, seconds = runs + len(left), seconds + wall * len(left)
    per_task = ", ".join(f"{task} {len(names)}" for task, names in picks.items())
    hours = seconds / 3600
    return (f"rule S's outlook (on the seed-0 cells finished so far; S decides once a task's are all finished): it "
            f"would select {per_task} cells; {runs} runs of seeds 1-2 not finished, about {hours:.1f} h of cell time "
            f"at their seed-0 walls ({hours / 2:.1f} h at --parallel 2; less where rule T reads a twin)")


def _analysis():
    """analyze.py (rule S as the analysis applies it), loaded by path: another study's ``analyze`` may be imported."""
    name = "authority_map_analyze"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "analyze.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def _cache() -> Path | None:
    return Path(os.environ["STARE_RL_CACHE"]) if os.environ.get("STARE_RL_CACHE") else None


def order() -> tuple[Block, ...]:
    # per task, phase A then its phase B (the deviation of 2026-11-27 in HYPOTHESES.md: a task's pairs complete first),
    # then its phase B3 (the deviation of 2026-11-28: the fallback with auto_w_max 3)
    # and its phase B3s (the second deviation of 2026-11-28: B3 with auto_bonus_span log 50)
    ab = tuple(Block(t, (0,), methods(t, phase)) for t in TASKS for phase in ("A", "B", "B3", "B3s"))
    c = tuple(Block(t, (0,), methods(t, "C", w), phase_c(t, w)) for t in TASKS for w in widths(t))
    s = tuple(Block(t, (1, 2), tuple(m for m, x in slots(t).items() if x.actuator != REFERENCE), seeds_s(t))
              for t in TASKS)
    return ab + c + s


def unlearned_width(c: Cell, root: Path) -> str | None:
    """HYPOTHESES.md, "Warm starts": a wider width whose warm start does not learn the task is reported as such and
    its cells are not scored, so the driver does not run them. Known once a cell of the width (its GRPO cell, the
    first) has built the warm start; until then None, and the default width never. The analysis's own check."""
    w = slots(c.part)[c.method].width
    if w == default_width(c.part):
        return None
    rec = _analysis().warmstarts(root, c.part, _cache(), DOCS)[w]
    if rec.get("learns") is not False:
        return None
    return (f"the hidden-{w} warm start did not learn {c.part} (greedy accuracy {rec['greedy_acc']:.3f}, "
            f"{rec['ratio_to_default']:.2f}x the default width's, below {_analysis().LEARNS}): its cells are not "
            f"scored (HYPOTHESES.md, \"Warm starts\")")


def identical_twin(c: Cell, root: Path) -> str | None:
    """Rule T (HYPOTHESES.md, the deviation of 2026-11-28 "a fallback cell identical to its twin"): a fallback cell
    whose twin (the same cell without the fallback, the same seed) has finished with its demand and integral below
    log of the cell's hand-off bound on every step is its twin step for step, so it is not run; the analysis reads
    the twin's run for it (authority_values.twin_record, the one test). None otherwise, or while the twin runs."""
    t = twin(c.part, c.method)
    if t is None:
        return None
    d = _analysis()._cell_dir(root, c.part, t, c.seed, DOCS)
    if not (d / DONE).is_file():
        return None
    # reads metrics (imports stare_rl): only once the twin has finished
    from authority_values import twin_record

    rec = twin_record(d, slots(c.part)[c.method])
    if rec is None:
        return None
    r = rec["rule_t"]
    return (f"identical to its twin {t}/seed{c.seed} (rule T, HYPOTHESES.md: the twin's demand and integral stayed "
            f"below log {slots(c.part)[c.method].w_max:g} = {r['bound']:.3f} on every step, at most "
            f"{r['u_max']:.3f} and {r['integral_max']:.3f}): the map reads the twin's run for it")


def twin_cell(c: Cell) -> tuple[Cell, ...]:
    """The cell whose finished run may make ``c`` redundant (rule T): its twin at the same seed; () without one."""
    t = twin(c.part, c.method)
    return () if t is None else (Cell(c.part, t, c.seed),)


def skip_cell(c: Cell, root: Path) -> str | None:
    """The registered reasons not to run a cell: its width's warm start did not learn the task, or rule T."""
    return unlearned_width(c, root) or identical_twin(c, root)


def warm_start_of(c: Cell) -> tuple[str, int]:
    """The warm start a cell starts from: one per task and width (cells of a new width wait for its first cell)."""
    return c.part, slots(c.part)[c.method].width


def warm_start_cost(c: Cell, root: Path) -> float:
    """Seconds to build the cell's warm start where the cache (STARE_RL_CACHE) lacks it: the committed record's
    ``wall_time_s`` (``<task>/warmstart_h<width>.json``, a copy of the cache's warmstart.json); 0 once the cache
    holds a warm start of the same task, seed and settings, or with no committed record to go by."""
    task, width = warm_start_of(c)
    copy = DOCS / task / _analysis().warmstart_copy_name(width)
    if not copy.is_file():
        return 0.0
    rec = json.loads(copy.read_text())
    cache = _cache()
    for p in sorted(cache.glob(f"{task}-*/warmstart.json")) if cache is not None and cache.is_dir() else ():
        try:
            info = json.loads(p.read_text())
        except ValueError:  # a warm start being written
            continue
        if all(info.get(k) == rec.get(k) for k in ("task", "seed", "config", "task_kwargs")):
            return 0.0
    return float(rec.get("wall_time_s") or 0.0)


# Study's defaults: the frontier's kernel pins (KERNEL_PINS) and two cells at a time
STUDY = Study(
    tag="#46 authority_map",
    grids=GRIDS,
    order=order(),
    docs=DOCS,
    needs_env={"STARE_RL_CACHE": "the warm-start cache of the map's widths (e.g. /work/runs/authority_map/cache)"},
    analyze=HERE / "analyze.py",
    analyze_args=("--runs", "{docs}", "--out", "{docs}"),  # the committed cells only (docstring)
    run_root=Path("/work/runs/authority_map"),
    cells_noun="cells planned so far",
    # README.md "Which setting to start with" and methods.md "A span of its own", re-rendered with each cell
    doc_blocks=("authority-map", "authority-map-readme", "fallback-bounds-readme", "bonus-span"),
    start_group=warm_start_of,
    skip=skip_cell,
    waits_for=twin_cell,  # rule S's seeds: a fallback cell waits for its running twin, then rule T decides
    start_cost=warm_start_cost,
    outlook=s_outlook,
)

if __name__ == "__main__":
    sys.exit(main(STUDY, __file__, __doc__))
