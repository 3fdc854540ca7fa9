"""The frontier study's pre-registered analysis: from whatever cells of a grid exist, the table and the
pass@1-vs-pass@32 figure.

    python studies/frontier/frontier.py --config studies/frontier/frontier_cot.yaml [--out DIR]

Per grid method (mean ± sample std over its finished seeds; the definitions are docs/compare.md's,
"Frontier (pre-registered)"):

- **pass@1**: held-out ``avg@k`` of ``eval.json`` (k samples per held-out prompt at the training temperature);
  **pass@k**: held-out ``pass@k`` of ``eval.json`` (k = 32 in the grid).
- **final H**: the held-out sampling entropy of the final evaluation (``eval.json`` ``entropy``: the same prompts
  and sampling for every method, so comparable across them; DAPO's batch entropy covers kept groups only).
- **final batch H**: mean training-batch token-mean entropy (``control/batch_entropy``, the signal the
  controllers act on and resolve their target from; else ``actor/entropy``) over the last ``FINAL_FRACTION`` of
  the logged steps.
- **target**: the absolute target the run resolved (``control/target_entropy``; ``-`` for methods without one).
- **band fraction** (of the batch entropy): from the first crossing (the first step inside ``target (1 ± band)`` or past the target
  from where the run started) to the end, the fraction of steps inside the band.
- **missing**: every (method, seed) of the grid without ``compare_done.json``; partial grids are reported as such.

Families: a grid method named ``<family>_t03`` (``_t05``, ``_t07``) is the point of ``<family>`` at the target its
cell config gives (``target_entropy`` or ``bonus_target_entropy``); the figure joins a family's points in target
order. When the grid file has a ``frontier:`` section (the roles of the pre-registered hypotheses), H1-H5 are
decided by ``frontier_rules`` (studies/frontier/frontier_rules.py: the rules as registered, applied to these
values) and written under the table. Reads only finished cells (``compare_done.json``); writes ``frontier.md``,
``frontier.json``, ``frontier.png`` and ``frontier_curves.png`` (per family, the seed-mean batch entropy relative
to its start against the step, each relative target dashed) into the grid's ``out``.

A study, not part of the library: run as a script, its folder is on ``sys.path`` and ``frontier_rules`` imports
by name; the scripts that reuse these values (studies/confirm10/analyze.py, studies/real_lm/analyze.py,
docs/results/controller_authority/summarise.py) put studies/frontier on ``sys.path`` and ``import frontier``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frontier_rules import Registration, at_target, decide, decisions_markdown, target_order
from stare_rl.analysis.runs import read_run
from stare_rl.compare.grid import Grid, cell_state, load_grid, restrict, spread
from stare_rl.control.target import parse_target
from stare_rl.io.runlog import write_text_atomic

FINAL_FRACTION = 0.1  # final H: the last 10 % of the logged steps (100 of the grid's 1000)
ENTROPY_KEYS = ("control/batch_entropy", "actor/entropy")  # what the controllers see; else verl's metric
TARGET_KEY = "control/target_entropy"
_FAMILY = re.compile(r"^(?P<family>.+)_t(?P<digits>\d+)$")
COLUMNS = (("pass@1", "held-out pass@1"), ("pass@k", "held-out pass@k"), ("final_entropy", "final H (held-out)"),
           ("final_batch_entropy", "final batch H"), ("target", "target H"), ("band_fraction", "band fraction"))


def family_of(grid: Grid, method: str) -> tuple[str, str | None]:
    """``(family, target spelling)`` of a grid method: ``stare_auto_t05`` -> ``("stare_auto", "0.5x")``."""
    cfg = grid.cell_config(method)
    target = cfg.get("target_entropy", cfg.get("bonus_target_entropy"))
    spelling = None if target is None else str(parse_target("target_entropy", target).spelling())
    m = _FAMILY.match(method)
    return (m.group("family") if m and target is not None else method), spelling


def registration(grid: Grid) -> Registration | None:
    """The roles of the grid's ``frontier:`` section, checked against its methods and families (ValueError
    naming the field and the value); ``None`` when the grid registers no hypotheses."""
    if not grid.frontier:
        return None
    families = {family_of(grid, m)[0] for m in grid.methods}
    return Registration.from_mapping(grid.frontier, families, grid.methods)


def _in_band(h: float, target: float, band: float) -> bool:
    return target * (1 - band) <= h <= target * (1 + band)


def first_crossing(entropy: Sequence[float], target: float, band: float) -> int | None:
    """Index of the first step inside ``target (1 ± band)`` or past the target from where the run started."""
    if not entropy:
        return None
    start = entropy[0]
    return next((i for i, h in enumerate(entropy)
                 if _in_band(h, target, band) or (h - target) * (start - target) < 0), None)


def band_fraction(entropy: Sequence[float], target: float, band: float) -> float | None:
    """Fraction of steps within ``target (1 ± band)`` from the first crossing on (None: it never crossed)."""
    first = first_crossing(entropy, target, band)
    if first is None:
        return None
    tail = entropy[first:]
    return sum(_in_band(x, target, band) for x in tail) / len(tail)


def cell_values(run_dir: Path, band: float) -> dict[str, float | None]:
    """One finished cell's values (``None`` where the run did not log what a column needs)."""
    run = read_run(run_dir)
    if run is None:
        return {k: None for k, _ in COLUMNS}
    key = next((k for k in ENTROPY_KEYS if run.series.get(k)), None)
    entropy = [v for _, v in run.series.get(key, [])] if key else []
    n_final = max(1, math.ceil(FINAL_FRACTION * len(entropy)))
    targets = [v for _, v in run.series.get(TARGET_KEY, []) if math.isfinite(v)]
    target = targets[-1] if targets else None
    k_keys = sorted((k for k in run.eval if re.fullmatch(r"pass@\d+", k)), key=lambda k: int(k.split("@")[1]))
    avg_keys = [k for k in run.eval if re.fullmatch(r"avg@\d+", k)]
    return {
        "pass@1": run.eval.get(avg_keys[0]) if avg_keys else None,
        "pass@k": run.eval.get(k_keys[-1]) if k_keys else None,
        "final_entropy": run.eval.get("entropy"),
        "final_batch_entropy": sum(entropy[-n_final:]) / n_final if entropy else None,
        "target": target,
        "band_fraction": band_fraction(entropy, target, band) if target is not None else None,
    }


def collect(grid: Grid) -> dict[str, Any]:
    """Every grid method's per-seed values and spreads, its family and target, and the missing cells."""
    methods: dict[str, Any] = {}
    missing = []
    for cell in grid.cells():
        family, target = family_of(grid, cell.method)
        entry = methods.setdefault(cell.method, {"family": family, "target_spec": target, "seeds": {},
                                                 "description": grid.descriptions.get(cell.method, "")})
        if cell_state(cell) != "done":
            missing.append(cell.name)
            continue
        entry["seeds"][cell.seed] = cell_values(cell.run_dir, grid.band)
    for entry in methods.values():
        runs = list(entry["seeds"].values())
        entry["stats"] = {k: spread([r[k] for r in runs]) for k, _ in COLUMNS}
    results = {"band": grid.band, "expected_seeds": list(grid.seeds), "methods": methods, "missing": missing,
               "n_cells": len(grid.cells()), "n_done": len(grid.cells()) - len(missing)}
    roles = registration(grid)
    if roles is not None:  # the grid registers its hypotheses' roles: apply the rules to the values above
        results["decisions"] = decide(results, roles)
    return results


def _fmt(s: dict[str, Any] | None, digits: int = 3, pct: bool = False) -> str:
    if s is None:
        return "-"
    scale = 100.0 if pct else 1.0
    d = 1 if pct else digits
    if s.get("n", 2) < 2:  # one seed: no spread to show (a "± 0.0" would read as a measured zero)
        return f"{s['mean'] * scale:.{d}f} (1 seed)"
    return f"{s['mean'] * scale:.{d}f} ± {s['std'] * scale:.{d}f}"


def frontier_markdown(results: dict[str, Any]) -> str:
    """The table (percent for accuracies and band fraction) and the list of missing cells."""
    head = ("| method | family | target | seeds | held-out pass@1 % | held-out pass@k % | final H (held-out) | "
            "final batch H | target H (resolved) | band fraction % |")
    lines = [f"# Frontier: {results['n_done']} of {results['n_cells']} cells finished", "",
             "mean ± sample std over the finished seeds; definitions in docs/compare.md, \"Frontier "
             f"(pre-registered)\"; band ±{results['band'] * 100:.0f} % of the resolved target.", "", head,
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, m in results["methods"].items():
        st = m["stats"]
        lines.append(f"| {name} | {m['family']} | {m['target_spec'] or '-'} | {len(m['seeds'])}/"
                     f"{len(results['expected_seeds'])} | {_fmt(st['pass@1'], pct=True)} | {_fmt(st['pass@k'], pct=True)}"
                     f" | {_fmt(st['final_entropy'])} | {_fmt(st['final_batch_entropy'])} | {_fmt(st['target'])} | "
                     f"{_fmt(st['band_fraction'], pct=True)} |")
    lines += ["", "Missing cells (not finished): " + (", ".join(results["missing"]) if results["missing"] else "none")]
    rules = "\n" + decisions_markdown(results["decisions"]) if "decisions" in results else ""
    return "\n".join(lines) + "\n" + rules


def frontier_figure(results: dict[str, Any], path: Path) -> Path | None:
    """pass@1 (x) against pass@k (y), mean ± std error bars; a family's points joined in target order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families: dict[str, list[tuple[float, dict[str, Any], str]]] = {}
    for name, m in results["methods"].items():
        if m["stats"]["pass@1"] is None or m["stats"]["pass@k"] is None:
            continue
        order = target_order(m["target_spec"]) if m["target_spec"] else 0.0
        families.setdefault(m["family"], []).append((float(order), m, m["target_spec"] or name))
    if not families:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    missed_any = False
    for i, (family, pts) in enumerate(families.items()):
        pts.sort(key=lambda p: p[0])
        stats = [p[1]["stats"] for p in pts]
        xs = [100 * st["pass@1"]["mean"] for st in stats]
        ys = [100 * st["pass@k"]["mean"] for st in stats]
        # one colour per family, fixed here: the hollow markers below would otherwise advance the colour cycle
        # and give two families the same colour; methods without a target (single points) drawn as squares
        color = f"C{i % 10}"
        ax.errorbar(xs, ys, xerr=[100 * st["pass@1"]["std"] for st in stats],
                    yerr=[100 * st["pass@k"]["std"] for st in stats], marker="o" if pts[0][1]["target_spec"] else "s",
                    capsize=3, color=color, linestyle="-" if len(pts) > 1 else "none", label=family)
        for x, y, p in zip(xs, ys, pts, strict=True):
            if p[1]["target_spec"] is not None:
                ax.annotate(p[2], (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
                if not at_target(p[1]):  # hollow: the point missed its target (the rule's ±20 %)
                    missed_any = True
                    ax.plot([x], [y], marker="o", markersize=7, markerfacecolor="white", markeredgecolor=color,
                            linestyle="none", zorder=3)
    ax.set_xlabel("held-out pass@1 (%)")
    ax.set_ylabel("held-out pass@k (%)")
    ax.set_title(f"Frontier: {results['n_done']} of {results['n_cells']} cells"
                 + ("  (hollow: missed its target)" if missed_any else ""))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def entropy_curves(grid: Grid) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Per family (methods without a target together, as ``references``), per grid method: the seed-mean batch
    entropy / start entropy at each step (finished cells)."""
    curves: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for method in grid.methods:
        per_step: dict[int, list[float]] = {}
        for cell in (c for c in grid.cells() if c.method == method and cell_state(c) == "done"):
            run = read_run(cell.run_dir)
            key = next((k for k in ENTROPY_KEYS if run is not None and run.series.get(k)), None)
            if key is None:
                continue
            series = run.series[key]
            for step, h in series:
                per_step.setdefault(step, []).append(h / series[0][1] if series[0][1] > 0 else math.nan)
        if per_step:
            family, spec = family_of(grid, method)
            family = family if spec is not None else "references"  # GRPO, DAPO, STEER, 80/20: one panel
            curves.setdefault(family, {})[method] = [(s, sum(v) / len(v)) for s, v in sorted(per_step.items())]
    return curves


def curves_figure(grid: Grid, path: Path) -> Path | None:
    """One panel per family: seed-mean batch entropy relative to its start against the step; a relative
    target's level dashed (0.3x sits at 0.3)."""
    curves = entropy_curves(grid)
    if not curves:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(3.6 * len(curves), 3.2), squeeze=False, sharey=True)
    for ax, (family, methods) in zip(axes[0], curves.items(), strict=True):
        for method, pts in methods.items():
            line = ax.plot([s for s, _ in pts], [v for _, v in pts], label=family_of(grid, method)[1] or method)
            spec = family_of(grid, method)[1]
            if spec is not None and parse_target("target", spec).relative:
                ax.axhline(parse_target("target", spec).ratio, color=line[0].get_color(), ls="--", lw=0.8)
        ax.set_title(family, fontsize=9)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("batch H / start H (seed mean)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_frontier(grid: Grid) -> dict[str, Any]:
    """Collect, then write ``frontier.json``, ``frontier.md`` and (when a cell is finished) ``frontier.png`` and
    ``frontier_curves.png``."""
    results = collect(grid)
    write_text_atomic(grid.out / "frontier.json", json.dumps(results, indent=2, sort_keys=True))
    write_text_atomic(grid.out / "frontier.md", frontier_markdown(results))
    figure = frontier_figure(results, grid.out / "frontier.png")
    results["figure"] = None if figure is None else str(figure)
    curves = curves_figure(grid, grid.out / "frontier_curves.png")
    results["curves"] = None if curves is None else str(curves)
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python studies/frontier/frontier.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="the grid YAML (studies/frontier/frontier_cot.yaml)")
    p.add_argument("--out", default=None, help="the grid's output directory (default: the grid's `out`)")
    args = p.parse_args(argv)
    try:
        grid = restrict(load_grid(args.config), out=args.out)
        registration(grid)  # a bad frontier: section fails here, before any run is read
    except ValueError as err:
        print(f"frontier: error: {err}", file=sys.stderr)
        return 2
    results = write_frontier(grid)
    print(f"{results['n_done']} of {results['n_cells']} cells finished; wrote {grid.out / 'frontier.md'}"
          + (f", {results['figure']} and {results['curves']}" if results["figure"] else " (no finished cell: no figure)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
