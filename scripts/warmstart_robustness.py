"""Robustness of the no-argument ``stare train``: seeds x kernel settings, each cold from an empty cache.

Another CPU perturbs a run the way these settings do: other vector kernels (``ATEN_CPU_CAPABILITY=avx2`` +
``MKL_CBWR=AVX2``, what an AVX2-only CPU dispatches to) or another thread count (2 torch threads). Each run is
``stare train --seed S --warmstart_seed S`` (S = 0 is exactly the no-argument default) with its own empty
``--cache_dir``, so the warm start is trained again every time.

Resumable: a run whose result file ``<out>/runs/<setting>-seed<S>.json`` exists is skipped, so partial results
can be committed and the rest run later; the table (``<out>/README.md`` table part, ``<out>/summary.json``) is
rebuilt from whatever results exist after every run. ``--table-only`` just rebuilds it.

    python scripts/warmstart_robustness.py                       # 3 seeds x 3 settings, 2 runs at a time
    python scripts/warmstart_robustness.py --seeds 0 --settings avx2 -- --max_steps 100   # a short probe
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS: dict[str, tuple[dict[str, str], list[str]]] = {  # name -> (environment, extra stare train flags)
    "default": ({"OMP_NUM_THREADS": "1"}, []),
    "avx2": ({"OMP_NUM_THREADS": "1", "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}, []),
    "threads2": ({"OMP_NUM_THREADS": "2"}, ["--torch_threads", "2"]),
}
TABLE_START, TABLE_END = "<!-- table:start -->", "<!-- table:end -->"


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model = next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "?")
        flags = next((line for line in out.splitlines() if line.startswith("Flags")), "")
    except OSError:
        model, flags = "?", ""
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{model} ({isa}), {os.cpu_count()} cores"


def git_commit() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "src"], capture_output=True, text=True)
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def start_run(setting: str, seed: int, work: Path, extra: list[str]) -> tuple[subprocess.Popen, dict]:
    env_extra, flags = SETTINGS[setting]
    name = f"{setting}-seed{seed}"
    cache, run = work / f"cache-{name}", work / f"run-{name}"
    for d in (cache, run):
        if d.exists():
            subprocess.run(["rm", "-rf", str(d)], check=True)
    cmd = ["nice", "-n", "5", sys.executable, "-m", "stare_rl.cli", "train", "--seed", str(seed),
           "--warmstart_seed", str(seed), "--cache_dir", str(cache), "--output_dir", str(run), *flags, *extra]
    env = {**os.environ, **env_extra}
    log = open(work / f"{name}.log", "w")  # noqa: SIM115 - closed when the run ends
    meta = {"name": name, "setting": setting, "seed": seed, "env": env_extra, "flags": flags + extra,
            "cache": str(cache), "run": str(run), "log": log, "start": time.time(), "load_start": os.getloadavg()[0]}
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT), meta


def collect(meta: dict, rc: int, out: Path, cpu_s: float | None = None) -> None:
    meta["log"].close()
    if rc != 0:
        print(f"{meta['name']}: exit {rc}; see {meta['log'].name} (no result written)", flush=True)
        return
    run, cache = Path(meta["run"]), Path(meta["cache"])
    final = json.loads((run / "eval.json").read_text())
    initial = json.loads((run / "eval_initial.json").read_text())
    entries = [p for p in cache.iterdir() if not p.name.startswith(".")]
    ws = json.loads((entries[0] / "warmstart.json").read_text())
    gate = [json.loads(line).get("control/gate_on") for line in (run / "metrics.jsonl").read_text().splitlines()]
    gate = [g for g in gate if g is not None]
    keys = ("avg@8", "pass@8", "greedy_acc", "entropy")
    result = {
        "setting": meta["setting"], "seed": meta["seed"], "env": meta["env"], "flags": meta["flags"],
        "final": {k: final[k] for k in keys}, "start": {k: initial[k] for k in keys},
        "warmstart": {"steps": ws["steps"], "final": ws["final"], "wall_time_s": ws["wall_time_s"]},
        "gate_on_frac": round(sum(gate) / len(gate), 4) if gate else None,
        "wall_s": round(time.time() - meta["start"], 1),
        "cpu_s": None if cpu_s is None else round(cpu_s, 1),  # user + system CPU seconds of the run's process tree
        "load": [round(meta["load_start"], 2), round(os.getloadavg()[0], 2)],
        "machine": machine(), "commit": meta["commit"],
    }
    path = out / "runs" / f"{meta['name']}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, path)
    print(f"{meta['name']}: {result['start']['avg@8']:.3f} -> {result['final']['avg@8']:.3f} avg@8, "
          f"{result['wall_s'] / 60:.1f} min", flush=True)


def _ms(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.3f}" if values else "-"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def build_table(out: Path) -> None:
    results = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))]
    order = list(SETTINGS)
    results.sort(key=lambda r: (order.index(r["setting"]) if r["setting"] in order else 99, r["seed"]))
    rows = ["| setting | seed | warm start: SFT steps, its avg@8 / greedy (held-out train prompts) | start (test): "
            "avg@8 / greedy / pass@8 / entropy | final (test): avg@8 / greedy / pass@8 / entropy | gate on | wall | "
            "CPU s | load (start, end) | commit |", "|" + "---|" * 10]
    for r in results:
        w, s, f = r["warmstart"], r["start"], r["final"]
        gate = "-" if r["gate_on_frac"] is None else f"{100 * r['gate_on_frac']:.0f} %"
        rows.append(
            f"| {r['setting']} | {r['seed']} | {w['steps']}: {w['final']['avg@8']:.3f} / {w['final']['greedy_acc']:.3f} "
            f"| {s['avg@8']:.3f} / {s['greedy_acc']:.3f} / {s['pass@8']:.3f} / {s['entropy']:.3f} "
            f"| **{f['avg@8']:.3f}** / {f['greedy_acc']:.3f} / {f['pass@8']:.3f} / {f['entropy']:.3f} "
            f"| {gate} "
            f"| {r['wall_s'] / 60:.1f} min | {'-' if r.get('cpu_s') is None else round(r['cpu_s'])} "
            f"| {r['load'][0]}, {r['load'][1]} | {r['commit']} |")
    keys = ("avg@8", "greedy_acc", "pass@8", "entropy")
    # The kernel settings of one seed are repeats of it, not samples: the spread is taken over the seeds (each
    # seed's mean over its settings), and wall / CPU time, which do differ per run, over the runs.
    col = {k: _per_seed(results, lambda r, k=k: r["final"][k]) for k in keys}
    start = {k: _per_seed(results, lambda r, k=k: r["start"][k]) for k in keys}
    ws_seeds = _per_seed(results, lambda r: r["warmstart"]["final"]["avg@8"])
    n_seeds = len(ws_seeds)
    if results:
        rows.append(f"| **{n_seeds} seeds** (mean ± std over the seeds) | | {_ms(ws_seeds)} "
                    f"| {_ms(start['avg@8'])} / {_ms(start['greedy_acc'])} / {_ms(start['pass@8'])} / "
                    f"{_ms(start['entropy'])} | **{_ms(col['avg@8'])}** / {_ms(col['greedy_acc'])} / "
                    f"{_ms(col['pass@8'])} / {_ms(col['entropy'])} | | "
                    f"{_ms([r['wall_s'] / 60 for r in results])} min (all {len(results)} runs) | "
                    f"{_ms([r['cpu_s'] for r in results if r.get('cpu_s') is not None])} | | |")
    machines = sorted({r["machine"] for r in results})
    text = "\n".join(rows) + f"\n\nMachine: {'; '.join(machines) or '-'}.\n"
    readme = out / "README.md"
    body = readme.read_text() if readme.exists() else f"# Warm-start robustness\n\n{TABLE_START}\n{TABLE_END}\n"
    head, _, rest = body.partition(TABLE_START)
    _, _, tail = rest.partition(TABLE_END)
    readme.write_text(f"{head}{TABLE_START}\n{text}{TABLE_END}{tail}")
    summary = {"runs": len(results), "seeds": n_seeds, "spread": "sample std over the seeds (a seed's kernel "
               "settings are repeats: each seed counts once, as the mean over its settings); wall_min and cpu_s over "
               "the runs", "machines": machines,
               **{f"final_{k}": _stats(v) for k, v in col.items()},
               **{f"start_{k}": _stats(v) for k, v in start.items()},
               "warmstart_avg@8": _stats(ws_seeds),
               "wall_min": _stats([r["wall_s"] / 60 for r in results]),
               "cpu_s": _stats([r["cpu_s"] for r in results if r.get("cpu_s") is not None])}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def _per_seed(results: list[dict], get) -> list[float]:
    """One value per seed: the mean over that seed's kernel settings (equal when the settings reproduce it)."""
    by_seed: dict[int, list[float]] = {}
    for r in results:
        by_seed.setdefault(r["seed"], []).append(get(r))
    return [statistics.mean(v) for _, v in sorted(by_seed.items())]


def _stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"mean": round(statistics.mean(values), 4), "std": round(statistics.stdev(values), 4) if len(values) > 1
            else 0.0, "min": round(min(values), 4), "max": round(max(values), 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "warmstart_robustness")
    parser.add_argument("--work", type=Path, default=Path("/tmp/stare-warmstart-robustness"),
                        help="run dirs, caches and logs (each cache starts empty)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--parallel", type=int, default=2, help="runs at a time")
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("extra", nargs="*", help="after --: extra `stare train` flags (then results are not the "
                        "default's: use another --out)")
    args = parser.parse_args(argv)
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.table_only:
        build_table(args.out)
        return 0
    todo = [(st, s) for s in args.seeds for st in args.settings
            if not (args.out / "runs" / f"{st}-seed{s}.json").exists()]
    print(f"{len(todo)} runs to do: {todo}", flush=True)
    commit = git_commit()
    running: list[tuple[subprocess.Popen, dict]] = []
    failed = 0
    while todo or running:
        while todo and len(running) < args.parallel:
            proc, meta = start_run(*todo.pop(0), args.work, args.extra)
            meta["commit"] = commit
            running.append((proc, meta))
            print(f"started {meta['name']}", flush=True)
        time.sleep(5)
        for proc, meta in list(running):
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)  # reaps it: the CPU time of its whole tree
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                running.remove((proc, meta))
                failed += proc.returncode != 0
                collect(meta, proc.returncode, args.out, usage.ru_utime + usage.ru_stime)
                build_table(args.out)
    build_table(args.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
