"""Issue 42 item 2: apply the pre-registered rules (studies/real_lm/HYPOTHESES.md) to the finished cells.

Reads every cell of ``grid.yaml`` under ``--runs`` (a cell counts when ``stare compare`` marked it done), takes the
frontier's per-cell values (``frontier.cell_values``, studies/frontier/frontier.py), and writes ``real_lm.json`` and
``real_lm.md`` into ``--out``: per-cell values, per-method spreads, the bound readings, and the verdicts of R0-R5.
Missing cells are listed; a rule whose pair has fewer than 2 seeds is "not tested".

    python studies/real_lm/analyze.py --runs /work/runs/real_lm --out docs/results/real_lm_grid
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from stare_rl.analysis.runs import read_run
from stare_rl.compare.grid import DONE_FILE, load_grid, restrict, spread

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontier"))  # studies/frontier: the frontier's code
from frontier import cell_values  # noqa: E402
from frontier_rules import at_target  # noqa: E402

HERE = Path(__file__).resolve().parent
GRID = HERE / "grid.yaml"

REFERENCE, CANDIDATE, BONUS, ENTROCRAFT = "grpo", "stare_auto_t05", "entropy_bonus_trl_t05", "entrocraft_t05"
CANDIDATE_07, BONUS_07 = "stare_auto_t07", "entropy_bonus_trl_t07"  # the amendment of 2026-11-27 (HYPOTHESES.md)
ACTUATORS = (CANDIDATE, BONUS, ENTROCRAFT, CANDIDATE_07, BONUS_07)
MIN_SEEDS = 2
FALL_RATIO = 0.8  # R0: final batch H <= 0.8x the first step-batch H
REACH_RATIO = 1.2  # R0b: GRPO's final batch H below 1.2x the target
COST_POINTS = 0.02  # R3/R4: pass@1 cost threshold, 2 points
TAIL_STEPS = 10  # bound readings: the last 10 logged steps
AT_BOUND = 0.99
# When each actuator acted (descriptive, added 2026-11-27 after 4 cells, no rule reads it): the step metric that is
# non-zero while the actuator changes the loss.
ACTING = {CANDIDATE: ("control/gate_on", lambda v: v > 0), BONUS: ("control/entropy_coef", lambda v: v > 0),
          ENTROCRAFT: ("control/entrocraft_mode", lambda v: v != 0)}
ACTING |= {CANDIDATE_07: ACTING[CANDIDATE], BONUS_07: ACTING[BONUS]}
BATCH_H = ("actor/entropy",)  # the same key in every cell (GRPO logs no control/batch_entropy)
BOUNDS = {CANDIDATE: (("loss/reweight_w", "control/reweight_w"), "auto_w_max", 50.0),
          BONUS: (("control/entropy_coef",), "bonus_coef_max", 1.0)}
BOUNDS |= {CANDIDATE_07: BOUNDS[CANDIDATE], BONUS_07: BOUNDS[BONUS]}


def _series(run_dir: Path, keys: tuple[str, ...]) -> list[float]:
    run = read_run(run_dir)
    if run is None:
        return []
    key = next((k for k in keys if run.series.get(k)), None)
    return [v for _, v in run.series.get(key, [])] if key else []


def cell_record(method: str, run_dir: Path, band: float, cfg: dict[str, Any]) -> dict[str, Any]:
    """The frontier's values plus the start batch entropy, response length, step time and the bound reading."""
    rec: dict[str, Any] = dict(cell_values(run_dir, band))
    h = _series(run_dir, ("control/batch_entropy", "actor/entropy"))
    rec["start_batch_entropy"] = h[0] if h else None
    for name, keys in (("response_length", ("response_length/mean", "completions/mean_length")),
                       ("step_time", ("step_time",))):
        s = _series(run_dir, keys)
        rec[f"mean_{name}"] = sum(s) / len(s) if s else None
    rec["bound"] = None
    if method in BOUNDS:
        keys, field, default = BOUNDS[method]
        bound = float(cfg.get(field, default))
        tail = _series(run_dir, keys)[-TAIL_STEPS:]
        mean = sum(tail) / len(tail) if tail else None
        rec["bound"] = {"field": field, "bound": bound, "tail_mean": mean,
                        "at_bound": None if mean is None else mean >= AT_BOUND * bound}
    return rec


def _steps(run_dir: Path, keys: tuple[str, ...]) -> dict[int, float]:
    run = read_run(run_dir)
    if run is None:
        return {}
    key = next((k for k in keys if run.series.get(k)), None)
    return dict(run.series.get(key, [])) if key else {}


def activity(method: str, run_dir: Path, reference_dir: Path | None) -> dict[str, Any] | None:
    """When ``method``'s actuator acted: the first step and the number of steps its metric says it changed the loss,
    out of the logged steps, and the first step whose batch entropy differs from GRPO's run of the same seed (every
    cell starts from the same weights with the same seed, so before the actuator acts the two are the same run)."""
    if method not in ACTING:
        return None
    key, acting = ACTING[method]
    series = _steps(run_dir, (key,))
    on = sorted(s for s, v in series.items() if acting(v))
    first_diff = None
    if reference_dir is not None and (reference_dir / DONE_FILE).is_file():
        mine, ref = _steps(run_dir, BATCH_H), _steps(reference_dir, BATCH_H)
        first_diff = next((s for s in sorted(mine) if s in ref and mine[s] != ref[s]), None)
    return {"metric": key, "steps": len(series), "acting_steps": len(on), "first_acting_step": on[0] if on else None,
            "first_step_differs_from_grpo": first_diff}


def load(runs: Path) -> tuple[dict[str, dict[int, dict[str, Any]]], list[str], Any]:
    grid = restrict(load_grid(GRID), out=runs)
    values: dict[str, dict[int, dict[str, Any]]] = {}
    missing = []
    for cell in grid.cells():
        if not (cell.run_dir / DONE_FILE).is_file():
            missing.append(cell.name)
            continue
        values.setdefault(cell.method, {})[cell.seed] = cell_record(cell.method, cell.run_dir, grid.band,
                                                                     grid.cell_config(cell.method))
        reference = next((c.run_dir for c in grid.cells() if c.method == REFERENCE and c.seed == cell.seed), None)
        values[cell.method][cell.seed]["activity"] = activity(cell.method, cell.run_dir, reference)
    return values, missing, grid


def _std(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) >= 2 else 0.0


def paired(values: dict[str, dict[int, dict[str, Any]]], a: str, b: str, key: str) -> dict[str, Any] | None:
    """Per-seed d = a - b on ``key``, its mean m and tau = the larger seed std of a and b (None: < 2 seeds)."""
    seeds = sorted(s for s in values.get(a, {}) if s in values.get(b, {})
                   and values[a][s].get(key) is not None and values[b][s].get(key) is not None)
    if len(seeds) < MIN_SEEDS:
        return None
    xa, xb = [values[a][s][key] for s in seeds], [values[b][s][key] for s in seeds]
    d = [x - y for x, y in zip(xa, xb, strict=True)]
    return {"seeds": seeds, "n": len(seeds), "d": d, "m": sum(d) / len(d), "tau": max(_std(xa), _std(xb))}


def gain_rule(p: dict[str, Any] | None) -> str:
    if p is None:
        return "not tested"
    if p["m"] > p["tau"] and all(x > 0 for x in p["d"]):
        return "holds"
    if p["m"] < -p["tau"] and all(x < 0 for x in p["d"]):
        return "reversed"
    return "not separated"


def cost_rule(p: dict[str, Any] | None) -> str:
    if p is None:
        return "not tested"
    if p["m"] >= -COST_POINTS:
        return "holds"
    if p["m"] < -COST_POINTS - p["tau"]:
        return "does not hold"
    return "not separated"


def _mean_of(rows: list[dict[str, Any]], key: str) -> float | None:
    xs = [r[key] for r in rows if r.get(key) is not None]
    return sum(xs) / len(xs) if xs else None


def target_rules(values: dict[str, dict[int, dict[str, Any]]], candidate: str, bonus: str,
                 label: str) -> dict[str, Any]:
    """R0b and R2-R5 of HYPOTHESES.md for one target: ``candidate`` (STARE auto) against GRPO and ``bonus``."""
    out: dict[str, Any] = {}
    grpo = list(values.get(REFERENCE, {}).values())
    h = _mean_of(grpo, "final_batch_entropy")
    t = _mean_of(list(values.get(candidate, {}).values()), "target")  # grpo holds no target: the candidate's
    reach = None if h is None or t is None else h < REACH_RATIO * t
    out["R0b"] = {"claim": f"GRPO falls to the {label} target (final batch H < 1.2x target)", "grpo_final_H": h,
                  "target": t, "verdict": "not tested" if reach is None else "holds" if reach else "does not hold"}
    gate = "not tested: GRPO did not fall to the target; " if out["R0b"]["verdict"] == "does not hold" else ""
    pk_g, p1_g = paired(values, candidate, REFERENCE, "pass@k"), paired(values, candidate, REFERENCE, "pass@1")
    pk_b, p1_b = paired(values, candidate, bonus, "pass@k"), paired(values, candidate, bonus, "pass@1")
    out["R2"] = {"claim": f"STARE auto {label} has a higher pass@8 than GRPO", "pair": pk_g,
                 "verdict": gain_rule(pk_g)}
    out["R3"] = {"claim": f"STARE auto {label} costs GRPO less than 2 points of pass@1", "pair": p1_g,
                 "verdict": cost_rule(p1_g)}
    out["R4"] = {"claim": f"STARE auto {label} beats the adaptive bonus {label}: higher pass@8, < 2 points pass@1 "
                          "cost",
                 "pass@k": {"pair": pk_b, "verdict": gain_rule(pk_b)},
                 "pass@1": {"pair": p1_b, "verdict": cost_rule(p1_b)}}
    parts = (out["R2"]["verdict"], out["R3"]["verdict"], out["R4"]["pass@k"]["verdict"],
             out["R4"]["pass@1"]["verdict"])
    if "not tested" in parts:
        r5 = "not tested"
    elif all(v == "holds" for v in parts):
        r5 = "holds"
    elif "reversed" in (parts[0], parts[2]) or "does not hold" in (parts[1], parts[3]):
        r5 = "does not carry over"
    else:
        r5 = "not separated"
    out["R5"] = {"claim": f"the countdown_cot ordering carries over ({label})", "verdict": r5}
    if gate:
        for k in ("R2", "R3", "R5"):
            out[k]["verdict"] = gate + out[k]["verdict"]
        for k in ("pass@k", "pass@1"):
            out["R4"][k]["verdict"] = gate + out["R4"][k]["verdict"]
    return out


def decide(values: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    grpo = list(values.get(REFERENCE, {}).values())
    falls = [r["final_batch_entropy"] <= FALL_RATIO * r["start_batch_entropy"] for r in grpo
             if r.get("final_batch_entropy") is not None and r.get("start_batch_entropy")]
    out["R0"] = {"claim": "GRPO's entropy falls on the real LM within the budget", "per_seed": falls,
                 "verdict": "not tested" if len(falls) < MIN_SEEDS else
                 "holds" if all(falls) else "does not hold" if not any(falls) else "mixed"}
    out.update(target_rules(values, CANDIDATE, BONUS, "0.5x"))
    out["R1"] = {}
    for m in ACTUATORS:
        rows = list(values.get(m, {}).values())
        if len(rows) < MIN_SEEDS:
            out["R1"][m] = {"verdict": "not tested", "n": len(rows)}
            continue
        summary = {"stats": {"final_batch_entropy": {"mean": _mean_of(rows, "final_batch_entropy")},
                             "target": {"mean": _mean_of(rows, "target")}}}
        bounds = [r["bound"]["at_bound"] for r in rows if r.get("bound")]
        held = at_target(summary) and not any(bounds)
        out["R1"][m] = {"claim": f"{m} holds its target", "n": len(rows), "at_target": at_target(summary),
                        "at_bound_seeds": bounds, "verdict": "holds" if held else "does not hold"}
    # the amendment of 2026-11-27: the same rules R0b and R2-R5 for the 0.7x pair
    out["at_0.7x"] = target_rules(values, CANDIDATE_07, BONUS_07, "0.7x")
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = ["# Issue 42: real-LM comparison (studies/real_lm, pre-registered)", "",
             f"Cells finished: {result['n_done']} of {result['n_cells']}; missing: "
             f"{', '.join(result['missing']) or 'none'}.", "",
             "| cell | seeds | pass@1 | pass@8 | final batch H | target | band fraction | response length | s / step |",
             "|---|---|---|---|---|---|---|---|---|"]
    for m, st in result["stats"].items():
        def f(k: str, st: dict[str, Any] = st) -> str:
            s = st.get(k)
            return "-" if not s else f"{s['mean']:.3f}" + (f" ± {s['std']:.3f}" if s.get("n", 0) > 1 else "")
        lines.append(f"| {m} | {len(result['values'].get(m, {}))} | {f('pass@1')} | {f('pass@k')} | "
                     f"{f('final_batch_entropy')} | {f('target')} | {f('band_fraction')} | "
                     f"{f('mean_response_length')} | {f('mean_step_time')} |")
    lines += ["", "± = sample std over seeds.", "", "## When the actuators acted", "",
              "Descriptive, added after the registration (2026-11-27, with 4 cells done); no rule reads it. Every cell "
              "starts from the same weights, so a cell and GRPO's run of the same seed are the same run until its "
              "actuator first changes the loss.", "",
              "| cell | seed | logged steps | steps acting | first acting step | first step its batch H differs "
              "from GRPO's |", "|---|---|---|---|---|---|"]
    for m, by_seed in result["values"].items():
        for seed, rec in sorted(by_seed.items()):
            a = rec.get("activity")
            if a:
                lines.append(f"| {m} | {seed} | {a['steps']} | {a['acting_steps']} (`{a['metric']}`) | "
                             f"{a['first_acting_step'] or '-'} | {a['first_step_differs_from_grpo'] or '-'} |")
    lines += ["", "## Verdicts", ""]
    d = result["decisions"]
    lines.append(f"- **R0** {d['R0']['claim']}: {d['R0']['verdict']}")
    for label, rules in (("", d), (" (0.7x, amendment)", d["at_0.7x"])):
        for k in ("R0b", "R2", "R3", "R5"):
            lines.append(f"- **{k}{label}** {rules[k]['claim']}: {rules[k]['verdict']}")
        lines.append(f"- **R4{label}** {rules['R4']['claim']}: pass@8 {rules['R4']['pass@k']['verdict']}, pass@1 "
                     f"{rules['R4']['pass@1']['verdict']}")
    for m, r in d["R1"].items():
        lines.append(f"- **R1** {m}: {r['verdict']}")
    return "\n".join(lines) + "\n"


def figure(runs: Path, grid: Any, values: dict[str, dict[int, dict[str, Any]]], path: Path) -> Path:
    """real_lm.png: per seed, each finished cell's batch entropy (10-step moving mean) with the targets; and every
    finished cell's held-out pass@1 against pass@8 (small: per seed, large: the seed mean)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seeds = sorted({s for by_seed in values.values() for s in by_seed}) or [0]
    fig, axes = plt.subplots(1, len(seeds) + 1, figsize=(4.4 * (len(seeds) + 1), 3.8), squeeze=False)
    colors = {m: f"C{i}" for i, m in enumerate(grid.methods)}
    for ax, seed in zip(axes[0][:-1], seeds, strict=True):
        for cell in grid.cells():
            if cell.seed != seed or cell.method not in values or seed not in values[cell.method]:
                continue
            h = _steps(cell.run_dir, BATCH_H)
            steps = sorted(h)
            smooth = [sum(h[t] for t in steps[max(0, i - 9):i + 1]) / len(steps[max(0, i - 9):i + 1])
                      for i in range(len(steps))]
            ax.plot(steps, smooth, color=colors[cell.method], lw=1.2, label=cell.method)
            target = values[cell.method][seed].get("target")
            if target:
                ax.axhline(target, color=colors[cell.method], lw=0.8, ls="--")
        ax.set_title(f"seed {seed}: batch entropy (10-step mean); dashed: targets", fontsize=8)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel("nats", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    ax = axes[0][-1]
    for m, by_seed in values.items():
        pts = [(r["pass@1"], r["pass@k"]) for r in by_seed.values() if r.get("pass@1") is not None]
        if not pts:
            continue
        ax.scatter([100 * a for a, _ in pts], [100 * b for _, b in pts], color=colors[m], s=14, alpha=0.5)
        ax.scatter([100 * sum(a for a, _ in pts) / len(pts)], [100 * sum(b for _, b in pts) / len(pts)],
                   color=colors[m], s=60, edgecolor="k", label=f"{m} (n = {len(pts)})")
    ax.set_xlabel("held-out pass@1 %", fontsize=8)
    ax.set_ylabel("held-out pass@8 %", fontsize=8)
    ax.set_title("pass@1 against pass@8 (small: a seed, large: the mean)", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=Path, default=Path("runs/real_lm"), help="the grid's --out")
    p.add_argument("--out", type=Path, default=Path("docs/results/real_lm_grid"))
    args = p.parse_args(argv)
    values, missing, grid = load(args.runs)
    stats = {m: {k: spread([r.get(k) for r in values.get(m, {}).values()])
                 for k in ("pass@1", "pass@k", "final_batch_entropy", "target", "band_fraction",
                           "mean_response_length", "mean_step_time")} for m in grid.methods}
    result = {"grid": str(GRID.relative_to(HERE.parents[1])), "n_cells": len(grid.cells()),
              "n_done": len(grid.cells()) - len(missing), "missing": missing, "values": values, "stats": stats,
              "decisions": decide(values)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "real_lm.json").write_text(json.dumps(result, indent=2, default=str))
    (args.out / "real_lm.md").write_text(markdown(result))
    figure(args.runs, restrict(load_grid(GRID), out=args.runs), values, args.out / "real_lm.png")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
