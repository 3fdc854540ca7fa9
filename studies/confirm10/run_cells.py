"""Issue #45's driver: run the study's missing cells in the registered order, two at a time, and commit each.

    nohup python studies/confirm10/run_cells.py --run-root /work/runs/confirm10 > /work/runs/confirm10/driver.log 2>&1 &
    python studies/confirm10/run_cells.py --dry-run          # the cells in order and their state
    python studies/confirm10/run_cells.py --status           # + steps logged, checkpoints, seconds per step so far
    touch /work/runs/confirm10/STOP                           # start no new cell (running ones finish and are committed)

Order (studies/confirm10/HYPOTHESES.md): seeds 3-9 of `grid_main.yaml` (per seed grpo, stare_auto_t03,
entropy_bonus_t03), then seeds 0-2 of `grid_fair.yaml`. Each cell is one
`stare compare --config GRID --out RUN_ROOT/<part> --methods M --seeds S --parallel 1` under `nice -n 19`, with the
frontier's kernel pins (ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 OMP_NUM_THREADS=1), so an interrupted cell resumes
from its last checkpoint (every 100 steps) when the driver is started again on the same run root. A cell already
committed under docs/results/confirm10/<part>/runs is skipped. When a cell finishes, the driver refreshes the grid's
report (`stare compare --report-only` over the finished seeds), copies the cell's light files (those of
docs/results/compare/export.py, metrics gzipped with a fixed header so an unchanged cell stays byte-identical) and
the report into docs/results/confirm10/<part>/, re-runs studies/confirm10/analyze.py and commits exactly
docs/results/confirm10 with a message naming the cell, its wall time and how many of the study's cells are done.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DOCS = ROOT / "docs" / "results" / "confirm10"
PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "OMP_NUM_THREADS": "1"}
PARTS = {"main": (HERE / "grid_main.yaml", (3, 4, 5, 6, 7, 8, 9), ("grpo", "stare_auto_t03", "entropy_bonus_t03")),
         "fair": (HERE / "grid_fair.yaml", (0, 1, 2), ("entropy_bonus_trl_t05", "entropy_bonus_trl_t07",
                                                       "entropic_hg_t03", "entropic_hg_t05", "entropic_hg_t07"))}
BIN = Path(sys.executable).parent


def _export_module():
    spec = importlib.util.spec_from_file_location("export", ROOT / "docs" / "results" / "compare" / "export.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EXPORT = _export_module()


def cells() -> list[tuple[str, str, int]]:
    return [(part, m, s) for part, (_, seeds, methods) in PARTS.items() for s in seeds for m in methods]


def committed(part: str, m: str, s: int) -> bool:
    return (DOCS / part / "runs" / m / f"seed{s}" / "compare_done.json").is_file()


def run_dir(root: Path, part: str, m: str, s: int) -> Path:
    return root / part / "runs" / m / f"seed{s}"


def env() -> dict[str, str]:
    """The caller's environment (its STARE_RL_CACHE, if set, names the warm start's cache) with the pins."""
    return {**os.environ, **PINS}


def stare(*args: str) -> list[str]:
    return ["nice", "-n", "19", str(BIN / "stare"), *args]


def launch(root: Path, part: str, m: str, s: int) -> subprocess.Popen:
    grid = PARTS[part][0]
    log = root / "logs" / f"{part}_{m}_seed{s}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = stare("compare", "--config", str(grid), "--out", str(root / part), "--methods", m, "--seeds", str(s),
                 "--parallel", "1")
    f = open(log, "a")  # noqa: SIM115  (closed by the child's exit; the driver keeps no handle of its own)
    f.write(f"$ {' '.join(argv)}\n")
    f.flush()
    return subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=env(), cwd=ROOT)


def export_cell(root: Path, part: str, m: str, s: int) -> None:
    """The cell's light files into docs/results/confirm10/<part>/runs (export.py's list), and the grid's report."""
    src, out = run_dir(root, part, m, s), DOCS / part / "runs" / m / f"seed{s}"
    out.mkdir(parents=True, exist_ok=True)
    for name in EXPORT.CELL_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, out / name)
    with open(src / "metrics.jsonl", "rb") as f, open(out / "metrics.jsonl.gz", "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as g:
        shutil.copyfileobj(f, g)
    grid_out = root / part
    for name in ("results.md", "results.json", "compare_run.json"):
        if (grid_out / name).is_file():
            shutil.copy2(grid_out / name, DOCS / part / name)
    for sub in ("report", "reference"):
        if (grid_out / sub).exists():
            if (DOCS / part / sub).exists():
                shutil.rmtree(DOCS / part / sub)
            shutil.copytree(grid_out / sub, DOCS / part / sub)


def refresh_report(root: Path, part: str) -> None:
    seeds = sorted({s for p, m, s in cells() if p == part
                    and (run_dir(root, part, m, s) / "compare_done.json").is_file()})
    if seeds:
        subprocess.run(stare("compare", "--config", str(PARTS[part][0]), "--out", str(root / part), "--report-only",
                             "--seeds", ",".join(map(str, seeds))),
                       env=env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def git_commit(message: str) -> str:
    for attempt in range(30):
        add = subprocess.run(["git", "add", "--", str(DOCS.relative_to(ROOT))], cwd=ROOT, capture_output=True, text=True)
        if add.returncode == 0:
            c = subprocess.run(["git", "commit", "-q", "-m", message, "--", str(DOCS.relative_to(ROOT))], cwd=ROOT,
                               capture_output=True, text=True)
            if c.returncode == 0:
                return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                      text=True).stdout.strip()
            if "nothing to commit" in c.stdout + c.stderr:
                return "(nothing to commit)"
            err = c.stderr
        else:
            err = add.stderr
        if "index.lock" not in err:
            print(f"git failed: {err.strip()}", flush=True)
            return "(failed)"
        time.sleep(2 + attempt)
    return "(index.lock: gave up)"


def finish(root: Path, part: str, m: str, s: int) -> None:
    done = json.loads((run_dir(root, part, m, s) / "compare_done.json").read_text())
    refresh_report(root, part)
    export_cell(root, part, m, s)
    subprocess.run([sys.executable, str(HERE / "analyze.py")], cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
    n_done = sum(committed(*c) for c in cells())
    wall = done.get("wall_s")
    msg = (f"#45 confirm10: cell {m}/seed{s} ({part} grid) finished in {wall:.0f} s wall"
           f"{' (resumed from a checkpoint)' if done.get('resumed') else ''}; {n_done} of {len(cells())} new cells "
           f"done; analyze.py re-run")
    print(f"{time.strftime('%H:%M:%S')} {msg}: commit {git_commit(msg)}", flush=True)


def status(root: Path) -> str:
    """One line per cell: committed / finished (wall s) / running or interrupted (steps logged, last checkpoint,
    mean step_time of the logged steps) / not started."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, run root {root}, load average {load} "
             f"(1/5/15 min) on {os.cpu_count()} CPUs"]
    for c in cells():
        part, m, s = c
        d = run_dir(root, *c)
        if committed(*c):
            wall = json.loads((DOCS / part / "runs" / m / f"seed{s}" / "compare_done.json").read_text()).get("wall_s")
            lines.append(f"{part} {m}/seed{s}: committed, {wall:.0f} s wall")
        elif (d / "compare_done.json").is_file():
            lines.append(f"{part} {m}/seed{s}: finished, not committed")
        elif (d / "metrics.jsonl").is_file():
            rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines() if x.strip()]
            times = [r["step_time"] for r in rows if isinstance(r.get("step_time"), (int, float))]
            ckpts = sorted(int(p.name.split("-")[1]) for p in d.glob("checkpoint-*"))
            last = ckpts[-1] if ckpts else None
            lines.append(f"{part} {m}/seed{s}: unfinished, {max((r.get('step', 0) for r in rows), default=0)} steps "
                         f"logged, last checkpoint {last}, mean step_time {sum(times) / len(times):.2f} s"
                         if times else f"{part} {m}/seed{s}: started, no step logged")
        else:
            lines.append(f"{part} {m}/seed{s}: not started")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python studies/confirm10/run_cells.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--run-root", type=Path, default=Path("/work/runs/confirm10"), help="run directories (outside the repo)")
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--status", action="store_true", help="with --dry-run's list, the progress of unfinished cells")
    args = p.parse_args(argv)
    root = args.run_root.resolve()
    if args.status:
        print(status(root))
        return 0
    todo = []
    for c in cells():
        part, m, s = c
        state = ("committed" if committed(*c) else "finished, not committed"
                 if (run_dir(root, *c) / "compare_done.json").is_file()
                 else "resume" if run_dir(root, *c).exists() else "fresh")
        if args.dry_run:
            print(f"{part:<5} {m}/seed{s}: {state}")
        if state != "committed":
            todo.append(c)
    if args.dry_run:
        return 0
    print(f"{time.strftime('%H:%M:%S')} {len(todo)} of {len(cells())} cells to run in {root}", flush=True)
    running: list[tuple[tuple[str, str, int], subprocess.Popen, float]] = []
    while todo or running:
        while todo and len(running) < args.parallel and not (root / "STOP").exists():
            c = todo.pop(0)
            if (run_dir(root, *c) / "compare_done.json").is_file():
                finish(root, *c)
                continue
            running.append((c, launch(root, *c), time.time()))
            print(f"{time.strftime('%H:%M:%S')} start {c[1]}/seed{c[2]} ({c[0]})", flush=True)
        if (root / "STOP").exists() and not running:
            print(f"{time.strftime('%H:%M:%S')} STOP: {len(todo)} cells not started", flush=True)
            break
        time.sleep(10)
        for item in list(running):
            c, proc, t0 = item
            if proc.poll() is None:
                continue
            running.remove(item)
            if proc.returncode == 0 and (run_dir(root, *c) / "compare_done.json").is_file():
                finish(root, *c)
            else:
                print(f"{time.strftime('%H:%M:%S')} FAILED {c[1]}/seed{c[2]} (exit {proc.returncode}) after "
                      f"{time.time() - t0:.0f} s; log {root / 'logs'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
