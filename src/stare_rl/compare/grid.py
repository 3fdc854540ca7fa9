"""The grid behind ``stare compare``: methods x seeds of ``stare train`` with identical budgets, side by side.

A grid file (YAML) names a shared ``base`` of ``stare train`` fields and, per method, the fields it
overrides; each (method, seed) cell is one ordinary ``stare train`` run directory. This module is the pure
part: parse and validate the grid, lay out the cells, decide which are finished / resumable, and turn the
runs' metrics into the results table. Running the cells and printing progress is ``commands/compare.py``.

Grid file::

    out: runs/compare              # where cells, report and results go (--out overrides)
    seeds: [0, 1, 2]
    parallel: 2                    # cells run at once (one torch thread each)
    target_entropy: 0.3            # target of every method holding one (a target_entropy field) + the band;
                                   # or relative, "0.5x": half of each run's first step-batch entropy
    band: 0.25                     # +-25 % of the target
    base: {task: countdown, learning_rate: 1.0e-4, ...}      # stare train fields shared by all cells
    methods:
      grpo: {method: vanilla, description: "GRPO, symmetric clip 0.2/0.2"}
      dapo: {method: vanilla, clip_ratio_high: 0.28, dynamic_sampling: true}
    smoke: {base: {max_steps: 2}, methods: [grpo, stare_o1], seeds: [0]}   # used by --smoke
    frontier: {reference: grpo, stare: stare_auto, ...}   # roles of the pre-registered hypotheses: read only by
                                   # the frontier study's analysis (studies/frontier/frontier.py), never by a cell
"""

from __future__ import annotations

import dataclasses
import logging
import math
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from stare_rl.control.target import parse_target
from stare_rl.core.legacy import current_settings
from stare_rl.core.metrics import MEAN_WEIGHT
from stare_rl.core.registry import declared_metrics, get_method, list_methods
from stare_rl.io.runlog import RunLayout, write_json_atomic, write_text_atomic

logger = logging.getLogger(__name__)

DONE_FILE = "compare_done.json"  # completion marker written by stare compare after a cell's run succeeded
LABEL_FILE = "run_config.json"  # read first by stare report: labels the run with its grid method name
CELL_CONFIG = "cell.yaml"


def _method_holds_target(train_method: Any) -> bool:
    """Whether a ``stare train`` method holds an entropy target: its config has a ``target_entropy`` field."""
    if train_method not in list_methods():
        return False
    return "target_entropy" in {f.name for f in dataclasses.fields(get_method(train_method).config_cls)}


def _holds_target(cell: Mapping[str, Any]) -> bool:
    """Whether a cell holds an entropy target: its method does, or its entropy bonus is adaptive
    (``target_entropy`` is the target of both)."""
    return cell.get("entropy_bonus") == "adaptive" or _method_holds_target(cell.get("method"))


_TOP_KEYS = {"out", "seeds", "parallel", "target_entropy", "band", "base", "methods", "smoke", "frontier"}
_SMOKE_KEYS = {"base", "methods", "seeds"}
_CELL_ONLY = {"output_dir", "seed", "resume_from_checkpoint"}  # set per cell by the grid, not by the file


@dataclass(frozen=True)
class Grid:
    """A validated grid: shared base fields, per-method overrides (in file order), seeds and run settings."""

    base: dict[str, Any]
    methods: dict[str, dict[str, Any]]
    seeds: tuple[int, ...]
    out: Path
    parallel: int = 2
    target_entropy: float | str | None = None  # absolute, or "<r>x" (relative to each run's start entropy)
    band: float = 0.25
    descriptions: dict[str, str] = field(default_factory=dict)
    frontier: dict[str, Any] = field(default_factory=dict)  # roles for studies/frontier/frontier_rules.py

    def cells(self) -> list[Cell]:
        """Every (method, seed) cell, seeds outermost: a partial grid has all methods of the first seeds."""
        return [Cell(m, s, self.out / "runs" / m / f"seed{s}") for s in self.seeds for m in self.methods]

    def cell_config(self, method: str) -> dict[str, Any]:
        """``stare train`` fields of one method's cells (without seed and output_dir)."""
        cfg = {**self.base, **self.methods[method]}
        if self.target_entropy is not None and _holds_target(cfg):
            cfg.setdefault("target_entropy", self.target_entropy)
        return cfg


@dataclass(frozen=True)
class Cell:
    method: str
    seed: int
    run_dir: Path

    @property
    def name(self) -> str:
        return f"{self.method}/seed{self.seed}"


def _fail(where: str, msg: str) -> ValueError:
    return ValueError(f"{where}: {msg}")


def _mapping(value: Any, name: str, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(where, f"{name} must be a mapping of field: value, got {type(value).__name__}")
    return dict(value)


def _seeds(value: Any, where: str, name: str = "seeds") -> tuple[int, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise _fail(where, f"{name}={value!r} must be a non-empty list of integers")
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value):
        raise _fail(where, f"{name}={value!r} must hold integers >= 0")
    if len(set(value)) != len(value):
        raise _fail(where, f"{name}={value!r} has duplicates")
    return tuple(value)


def parse_grid(data: Any, where: str = "<grid>", smoke: bool = False) -> Grid:
    """Validate a grid mapping (see the module docstring); ``smoke`` applies its ``smoke`` section."""
    if not isinstance(data, Mapping):
        raise _fail(where, f"a grid file must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise _fail(where, f"unknown key(s) {unknown}; known keys: {sorted(_TOP_KEYS)}")
    base = current_settings(_mapping(data.get("base"), "base", where), f"{where}: base")
    raw_methods = _mapping(data.get("methods"), "methods", where)
    if not raw_methods:
        raise _fail(where, "methods is empty: name at least one method (name: {field: value, ...})")
    methods, descriptions = {}, {}
    for name, overrides in raw_methods.items():
        if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
            raise _fail(where, f"method name {name!r} must be letters, digits, '_' or '-'")
        overrides = current_settings(_mapping(overrides, f"methods.{name}", where), f"{where}: methods.{name}")
        descriptions[name] = str(overrides.pop("description", ""))
        methods[name] = overrides
    for section, mapping in [("base", base), *((f"methods.{n}", o) for n, o in methods.items())]:
        bad = sorted(_CELL_ONLY & set(mapping))
        if bad:
            raise _fail(where, f"{section} sets {bad}: the grid sets these per cell (use seeds / --out)")
    seeds = _seeds(data.get("seeds", [0]), where)
    if smoke:
        sm = _mapping(data.get("smoke"), "smoke", where)
        bad = sorted(set(sm) - _SMOKE_KEYS)
        if bad:
            raise _fail(where, f"smoke has unknown key(s) {bad}; known: {sorted(_SMOKE_KEYS)}")
        base = {**base, **current_settings(_mapping(sm.get("base"), "smoke.base", where), f"{where}: smoke.base")}
        if "methods" in sm:
            methods = {n: methods[n] for n in _names(sm["methods"], methods, where, "smoke.methods")}
        if "seeds" in sm:
            seeds = _seeds(sm["seeds"], where, "smoke.seeds")
    parallel = data.get("parallel", 2)
    if not isinstance(parallel, int) or isinstance(parallel, bool) or parallel < 1:
        raise _fail(where, f"parallel={parallel!r} must be an integer >= 1")
    target = data.get("target_entropy")
    if target is not None:
        try:
            spec = parse_target("target_entropy", target)
        except ValueError as err:
            raise _fail(where, str(err)) from err
        if not (spec.relative or spec.absolute > 0):  # type: ignore[operator]
            raise _fail(where, f"target_entropy={target!r} must be a number > 0 or '<ratio>x'")
        target = spec.spelling()
    band = data.get("band", 0.25)
    if not (isinstance(band, int | float) and 0 < band < 1):
        raise _fail(where, f"band={band!r} must be in (0, 1)")
    return Grid(base=base, methods=methods, seeds=seeds, out=Path(str(data.get("out", "runs/compare"))),
                parallel=parallel, target_entropy=target, band=float(band),
                descriptions=descriptions, frontier=dict(_mapping(data.get("frontier"), "frontier", where)))


def _names(value: Any, known: Mapping[str, Any], where: str, what: str) -> list[str]:
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise _fail(where, f"{what}={value!r}: unknown method(s) {unknown}; the grid has {list(known)}")
    return names


def load_grid(path: str | Path, smoke: bool = False) -> Grid:
    """Read and validate a grid YAML file. Raises ValueError naming the file and the problem."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ValueError(f"config={str(path)!r}: no such file")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as err:
        raise ValueError(f"config={str(path)!r} is not valid YAML: {err}") from err
    return parse_grid(data, str(p), smoke)


def restrict(grid: Grid, methods: str | Sequence[str] | None = None, seeds: Sequence[int] | None = None,
             out: str | Path | None = None, parallel: int | None = None) -> Grid:
    """The grid limited to some methods / seeds (command-line overrides), with another out / parallel."""
    changes: dict[str, Any] = {}
    if methods is not None:
        changes["methods"] = {n: grid.methods[n] for n in _names(methods, grid.methods, "--methods", "methods")}
    if seeds is not None:
        changes["seeds"] = _seeds(list(seeds), "--seeds")
    if out is not None:
        changes["out"] = Path(out)
    if parallel is not None:
        if parallel < 1:
            raise ValueError(f"--parallel: parallel={parallel} must be >= 1")
        changes["parallel"] = parallel
    return dataclasses.replace(grid, **changes)


# ----- cell state on disk -----
def cell_state(cell: Cell) -> str:
    """``done`` (marker present), ``resume`` (a checkpoint to resume from), ``fresh`` (nothing usable)."""
    if (cell.run_dir / DONE_FILE).is_file():
        return "done"
    if RunLayout(cell.run_dir).last_checkpoint() is not None:  # a half-written checkpoint does not count
        return "resume"
    return "fresh"


def prepare_cell(grid: Grid, cell: Cell) -> tuple[Path, bool]:
    """Write the cell's config (and its report label); a fresh cell's old partial files are removed first.

    Returns:
        ``(config path, resume?)``.
    """
    state = cell_state(cell)
    if state == "done":
        raise ValueError(f"cell {cell.name} is already finished ({cell.run_dir / DONE_FILE})")
    if state == "fresh" and cell.run_dir.exists():
        logger.info("%s: no checkpoint in %s; restarting it", cell.name, cell.run_dir)
        shutil.rmtree(cell.run_dir)
    cell.run_dir.mkdir(parents=True, exist_ok=True)
    cfg = {**grid.cell_config(cell.method), "seed": cell.seed}
    path = cell.run_dir / CELL_CONFIG
    header = f"# stare compare cell {cell.name}: stare train --config {CELL_CONFIG} --output_dir <this dir>\n"
    write_text_atomic(path, header + yaml.safe_dump(cfg, sort_keys=True))
    write_label(grid, cell)
    return path, state == "resume"


def write_label(grid: Grid, cell: Cell) -> None:
    """``run_config.json``: the grid's method name, seed and target, so that stare report groups by cell."""
    label = {"method": cell.method, "seed": cell.seed, "target_entropy": grid.target_entropy,
             "train_method": grid.cell_config(cell.method).get("method"),
             "description": grid.descriptions.get(cell.method, "")}
    write_json_atomic(cell.run_dir / LABEL_FILE, label)


def mark_done(cell: Cell, info: Mapping[str, Any]) -> None:
    """Write the cell's finished marker (atomically: a half-written marker would be read as finished)."""
    write_json_atomic(cell.run_dir / DONE_FILE, dict(info))


# ----- results table -----
# (column key, heading, higher is better?) in table order; values per run from run_metrics().
COLUMNS: tuple[tuple[str, str], ...] = (
    ("entropy_start", "H start"),
    ("entropy_final", "H final"),
    ("entropy_min", "H min"),
    ("entropy_ratio", "H final / start"),
    ("in_band_frac", "steps in band"),
    ("in_band_after_cross", "in band after first < target"),
    ("avg@k", "held-out avg@k (pass@1)"),
    ("pass@k", "held-out pass@k"),
    ("greedy_acc", "held-out greedy"),
    ("eval_length", "held-out length"),
    ("eval_entropy", "held-out entropy"),
    ("reward_final", "train reward (final)"),
    ("wall_s", "wall s"),
)


# Quadrant diagnostics (mean over the logged steps): why a method moves the entropy the way it does.
DIAGNOSTICS: tuple[tuple[str, str], ...] = (
    ("quadrant/pos_high_frac", "A>0, s>H tokens"),
    ("quadrant/neg_high_frac", "A<0, s>H tokens"),
    (MEAN_WEIGHT, "mean token weight"),
)
DIAGNOSTICS += tuple((m.key, m.label) for m in declared_metrics())  # what each method declares at registration


def diagnostic_means(series: Mapping[str, Sequence[tuple[int, float]]]) -> dict[str, float | None]:
    """Mean over logged steps of each :data:`DIAGNOSTICS` metric (``None`` when the run did not log it)."""
    out: dict[str, float | None] = {}
    for key, _ in DIAGNOSTICS:
        vals = [v for _, v in series.get(key, [])]
        out[key] = sum(vals) / len(vals) if vals else None
    return out


def scored_target(target: float | str | None, series: Mapping[str, Sequence[tuple[int, float]]],
                  entropy: Sequence[float]) -> float | None:
    """The absolute target a run is scored against: the grid's absolute target; for a relative one (``"0.5x"``)
    the value the run resolved (its logged ``control/target_entropy``), else ``ratio x`` its first logged batch
    entropy (a method holding no target: the same rule, applied to its own start)."""
    if target is None:
        return None
    spec = parse_target("target_entropy", target)
    if not spec.relative:
        return spec.absolute
    resolved = [v for _, v in series.get("control/target_entropy", []) if math.isfinite(v)]
    if resolved:
        return resolved[-1]
    return spec.ratio * entropy[0] if entropy else None  # type: ignore[operator]


def run_metrics(summary_row: Mapping[str, Any], entropy: Sequence[float], target: float | None, band: float,
                wall_s: float | None = None) -> dict[str, float | None]:
    """One run's table values from its ``stare report`` summary row and its per-step entropy series.

    ``in_band_after_cross``: from the first step whose entropy is below the target (where the STARE gate first
    engages; the same rule for every method) to the end, the fraction of steps within ``target * (1 +- band)``.
    """
    def num(key: str) -> float | None:
        v = summary_row.get(key)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    def eval_num(prefix: str) -> float | None:
        keys = [k for k in summary_row if k.startswith(f"eval:{prefix}")]
        return num(keys[0]) if len(keys) == 1 else None

    start, final = num("entropy_start"), num("entropy_final")
    after = None
    if target is not None:
        crossed = [i for i, h in enumerate(entropy) if h < target]
        if crossed:
            tail = entropy[crossed[0]:]
            after = sum(abs(h - target) <= band * target for h in tail) / len(tail)
    return {
        "entropy_start": start, "entropy_final": final, "entropy_min": num("entropy_min"),
        "entropy_ratio": final / start if start and final is not None else None,
        "in_band_frac": num("in_band_frac"), "in_band_after_cross": after,
        "avg@k": eval_num("avg@"), "pass@k": eval_num("pass@"), "greedy_acc": num("eval:greedy_acc"),
        "eval_length": num("eval:mean_response_length"), "eval_entropy": num("eval:entropy"),
        "reward_final": num("reward_final"), "wall_s": wall_s,
    }


def spread(values: Sequence[float | None]) -> dict[str, Any] | None:
    """mean, sample std (0 for one value), min, max and the values; ``None`` when no run has the value."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    mean = sum(vals) / len(vals)
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
    return {"mean": mean, "std": std, "min": min(vals), "max": max(vals), "n": len(vals), "values": vals}


def results_table(per_run: Mapping[str, Sequence[Mapping[str, float | None]]], grid: Grid,
                  baseline: str = "grpo") -> dict[str, Any]:
    """Per method: mean / std / min / max over seeds of every column; deltas and the targets vs GRPO.

    Args:
        per_run: method -> the :func:`run_metrics` of each of its seeds.
        grid: the grid (descriptions, target, band).
        baseline: the method the deltas are taken against (skipped when absent).
    """
    methods = []
    for name, rows in per_run.items():
        stats = {key: spread([r.get(key) for r in rows]) for key, _ in (*COLUMNS, *DIAGNOSTICS)}
        methods.append({"method": name, "description": grid.descriptions.get(name, ""),
                        "train_method": grid.cell_config(name).get("method") if name in grid.methods else None,
                        "seeds": len(rows), "metrics": stats})
    base = next((m for m in methods if m["method"] == baseline), None)
    for m in methods:
        m["vs_" + baseline] = _deltas(m, base) if base is not None and m is not base else None
    return {"target_entropy": grid.target_entropy, "band": grid.band, "baseline": baseline, "methods": methods,
            "targets": _targets(methods, base, baseline)}


def _mean(m: Mapping[str, Any], key: str) -> float | None:
    s = m["metrics"].get(key)
    return None if s is None else s["mean"]


def _deltas(m: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, float | None]:
    out = {}
    for key in ("avg@k", "pass@k", "greedy_acc", "entropy_final", "entropy_min"):
        a, b = _mean(m, key), _mean(base, key)
        out[key] = None if a is None or b is None else a - b
    return out


def _targets(methods: list[dict[str, Any]], base: Mapping[str, Any] | None, baseline: str) -> dict[str, Any]:
    """The targets, measured (not forced): GRPO collapse; STARE in band; STARE accuracy gains."""
    out: dict[str, Any] = {}
    if base is not None:
        ratio = _mean(base, "entropy_ratio")
        out[f"{baseline}_final_entropy_below_30pct_of_start"] = None if ratio is None else ratio < 0.3
        out[f"{baseline}_entropy_ratio"] = ratio
    for m in methods:
        if not _method_holds_target(m["train_method"]):
            continue
        d = m.get("vs_" + baseline) or {}
        after = _mean(m, "in_band_after_cross")
        out[m["method"]] = {
            "in_band_after_cross": after,
            "pass@1_gain_vs_baseline": d.get("avg@k"), "pass@k_gain_vs_baseline": d.get("pass@k"),
            "pass@1_gain_ge_3pts": None if d.get("avg@k") is None else d["avg@k"] >= 0.03,
            "pass@k_gain_ge_5pts": None if d.get("pass@k") is None else d["pass@k"] >= 0.05,
        }
    return out


def _cell(s: Mapping[str, Any] | None, pct: bool = False, digits: int | None = None) -> str:
    if s is None:
        return "–"
    f = 100.0 if pct else 1.0
    digits = digits if digits is not None else (1 if pct else 3)
    if s["n"] == 1:
        return f"{s['mean'] * f:.{digits}f}"
    return f"{s['mean'] * f:.{digits}f} ± {s['std'] * f:.{digits}f}"


_DIGITS = {"wall_s": 0, "eval_length": 2}
_PCT = {"in_band_frac", "in_band_after_cross", "avg@k", "pass@k", "greedy_acc", "reward_final"}


def results_markdown(results: Mapping[str, Any]) -> str:
    """The results table as markdown: one row per method, ``mean ± std`` over seeds (percent where marked)."""
    heads = [h + (" %" if k in _PCT else "") for k, h in COLUMNS]
    lines = ["| method | seeds | " + " | ".join(heads) + " |", "|---|---:|" + "---:|" * len(COLUMNS)]
    for m in results["methods"]:
        cells = [_cell(m["metrics"].get(k), k in _PCT, _DIGITS.get(k)) for k, _ in COLUMNS]
        lines.append(f"| {m['method']} | {m['seeds']} | " + " | ".join(cells) + " |")
    diag = [m for m in results["methods"] if any(m["metrics"].get(k) for k, _ in DIAGNOSTICS)]
    if diag:
        lines += ["", "Token diagnostics, mean over steps (fractions of valid tokens; shares of the summed "
                  "absolute predicted entropy change):", "",
                  "| method | " + " | ".join(h for _, h in DIAGNOSTICS) + " |", "|---|" + "---:|" * len(DIAGNOSTICS)]
        for m in diag:
            lines.append(f"| {m['method']} | " + " | ".join(_cell(m["metrics"].get(k)) for k, _ in DIAGNOSTICS) + " |")
    base = results["baseline"]
    deltas = [m for m in results["methods"] if m.get("vs_" + base)]
    if deltas:
        lines += ["", f"Differences of the means against `{base}` (points for accuracies):", "",
                  "| method | Δ avg@k (pass@1) | Δ pass@k | Δ greedy | Δ H final | Δ H min |",
                  "|---|---:|---:|---:|---:|---:|"]
        for m in deltas:
            d = m["vs_" + base]

            def f(key: str, pts: bool, d: Mapping[str, Any] = d) -> str:
                return "–" if d[key] is None else (f"{d[key] * 100:+.1f}" if pts else f"{d[key]:+.3f}")

            lines.append(f"| {m['method']} | {f('avg@k', True)} | {f('pass@k', True)} | {f('greedy_acc', True)} "
                         f"| {f('entropy_final', False)} | {f('entropy_min', False)} |")
    return "\n".join(lines) + "\n"
