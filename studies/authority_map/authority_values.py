"""The authority map's per-cell values (studies/authority_map/HYPOTHESES.md, "Per cell"), read from cell directories.

The definitions are docs/results/controller_authority/summarise.py's (imported: band fraction of each step and of
the centred 21-step mean from the first crossing, noise, noise ceiling, mean over target, pass@1 / pass@k through
studies/frontier/frontier.py's ``cell_values``). Added here, over every logged step:

- **W at its bound**: steps with ``control/reweight_w`` >= ``auto_w_max`` (the cell's config.yaml; with
  ``auto_fallback: bonus``, ``auto_saturated_high`` means the whole range is at its top, so W is counted itself);
- **the bonus at its bound**: steps with ``control/entropy_coef`` >= ``auto_bonus_max`` (fallback cells), and the
  steps it acted on (> 0);
- the mean ``loss/l_plus_frac`` and ``loss/l_minus_frac``, and the share of steps with L+ empty (``l_plus_frac`` 0);
- descriptive, for reading an overshoot (not in any rule): the highest step batch entropy from the first crossing over
  the target (``peak_over_target``), and the largest bonus coefficient (``bonus_coef_max``, fallback cells);
- descriptive, for reading an entropy above the target (not in any rule): the share of steps from the first crossing
  with W at its floor 1 (``w_at_floor_share``: the selection off; it can raise the entropy, not lower it);
- for GRPO, rule R's reading of its entropy (authority_rules.rule_r);
- the warm start: where its ``warmstart.json`` is (the run dir; else the path train.log names; else the cache entry
  whose recorded task, seed and settings are the cell's), and its final greedy accuracy.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from authority_grids import REFERENCE, Slot
from authority_rules import rule_r

from stare_rl.analysis.runs import read_run
from stare_rl.methods.stare.auto import AutoWeightConfig

_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_ROOT / "docs" / "results" / "controller_authority"))  # summarise.py (and the frontier's)
from summarise import BAND, WINDOW, summarise  # noqa: E402  (it puts studies/frontier on sys.path)

from frontier import ENTROPY_KEYS, cell_values  # noqa: E402, I001

DONE = "compare_done.json"
WARMSTART = "warmstart.json"  # stare_rl.train.warmstart.WARMSTART_FILE
# the controller's defaults, where a cell's resolved config does not say (it always does: stare train writes them)
DEFAULT_W_MAX, DEFAULT_BONUS_MAX = AutoWeightConfig().auto_w_max, AutoWeightConfig().auto_bonus_max


def config(run_dir: Path) -> dict[str, Any]:
    """The cell's resolved stare train config (config.yaml), {} where absent."""
    path = run_dir / "config.yaml"
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def _series(run: Any, *keys: str) -> list[float]:
    key = next((k for k in keys if run.series.get(k)), None)
    return [v for _, v in run.series[key]] if key else []


def _at(xs: list[float], bound: float) -> int:
    return sum(v >= bound * (1 - 1e-9) for v in xs)


def control_values(run: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    """W's and the bonus's time at their bounds, the L+ / L- fractions, over every logged step."""
    w = _series(run, "control/reweight_w", "loss/reweight_w")
    coef = _series(run, "control/entropy_coef")
    lp, lm = _series(run, "loss/l_plus_frac"), _series(run, "loss/l_minus_frac")
    w_max = float(cfg.get("auto_w_max") or DEFAULT_W_MAX)
    bonus_max = float(cfg.get("auto_bonus_max") or DEFAULT_BONUS_MAX)
    fallback = cfg.get("auto_fallback") == "bonus"
    return {
        "auto_w_max": w_max, "w_at_bound_steps": _at(w, w_max) if w else None,
        "w_at_bound_share": _at(w, w_max) / len(w) if w else None,
        "auto_bonus_max": bonus_max if fallback else None,
        "bonus_at_bound_steps": _at(coef, bonus_max) if fallback and coef else None,
        "bonus_at_bound_share": _at(coef, bonus_max) / len(coef) if fallback and coef else None,
        "bonus_acted_steps": sum(c > 0 for c in coef) if fallback and coef else None,
        "bonus_coef_max": max(coef) if fallback and coef else None,
        "l_plus_frac_mean": sum(lp) / len(lp) if lp else None,
        "l_minus_frac_mean": sum(lm) / len(lm) if lm else None,
        "l_plus_empty_share": sum(v == 0.0 for v in lp) / len(lp) if lp else None,
    }


def cell_record(run_dir: Path, slot: Slot) -> dict[str, Any]:
    """One finished cell's values; ``{"error": ...}`` where it cannot be read (never raises)."""
    try:
        run = read_run(run_dir)
        if run is None:
            return {"error": f"no readable metrics in {run_dir}"}
        if slot.actuator == REFERENCE:
            r = rule_r(_series(run, *ENTROPY_KEYS), WINDOW)
            return {**cell_values(run_dir, BAND), "entropy_start": r.get("start"), "steps": r.get("steps"), "R": r}
        cfg = config(run_dir)
        rec = summarise(run_dir)
        rec.pop("steps_at_w_bound", None)  # counted below from the cell's own auto_w_max
        first, h = rec.get("first_crossing_step"), _series(run, *ENTROPY_KEYS)
        peak = None if first is None or not rec.get("target") else max(h[first:]) / rec["target"]
        w = _series(run, "control/reweight_w", "loss/reweight_w")[first or 0:]
        floor = sum(v <= 1.0 + 1e-9 for v in w) / len(w) if w and first is not None else None
        return {**rec, "peak_over_target": peak, "w_at_floor_share": floor, **control_values(run, cfg)}
    except Exception as err:  # noqa: BLE001  (a half-written cell is reported, not fatal)
        return {"error": f"{type(err).__name__}: {err}"}


def twin_record(twin_dir: Path, slot: Slot) -> dict[str, Any] | None:
    """Rule T: the record of a fallback cell (``slot``: its hand-off bound ``w_max``) read from its twin's finished
    run (the same cell without the fallback, the same seed), if the twin's demand ``control/auto_strength`` and
    integral ``control/auto_integral`` stayed below log ``w_max`` on every logged step. Then the bonus's
    coefficient is 0 on every step, W and M are the twin's, and neither anti-windup clip binds: the fallback cell is
    its twin step for step (measured: every logged value and eval.json identical in the five committed cells of this
    kind; tests/studies/test_authority_map.py). None where the condition fails or cannot be read."""
    import math

    if slot.fallback != "bonus" or not slot.w_max:
        return None
    run = read_run(twin_dir)
    if run is None:
        return None
    u, integral = _series(run, "control/auto_strength"), _series(run, "control/auto_integral")
    logged = {step for series in run.series.values() for step, _ in series}  # every step the twin logged
    bound = math.log(slot.w_max)
    if not u or len(u) != len(logged) or len(integral) != len(logged) or max(u) >= bound or max(integral) >= bound:
        return None
    rec = cell_record(twin_dir, slot._replace(fallback="none", w_max=None, span=None))
    if "error" in rec:
        return None
    return {**rec, "auto_w_max": slot.w_max, "w_at_bound_steps": 0, "w_at_bound_share": 0.0,
            "auto_bonus_max": rec.get("auto_bonus_max") or DEFAULT_BONUS_MAX, "bonus_at_bound_steps": 0,
            "bonus_at_bound_share": 0.0, "bonus_acted_steps": 0, "bonus_coef_max": 0.0,
            "rule_t": {"u_max": max(u), "integral_max": max(integral), "bound": bound}}


def _matches(info: dict[str, Any], cfg: dict[str, Any], task: str) -> bool:
    """Whether a cached warm start's warmstart.json records the task, seed and settings of the cell's config."""
    from stare_rl.train.config import (
        WarmStartArgs,  # the training code: only where the cache must be searched
    )

    names = {f.name for f in dataclasses.fields(WarmStartArgs)}
    want = WarmStartArgs(**{k: v for k, v in cfg.items() if k in names})
    return (info.get("task") == task and info.get("seed") == want.warmstart_seed
            and info.get("config") == dataclasses.asdict(want.warmstart_config()))


def find_warmstart(run_dir: Path, task: str, cache: Path | None) -> tuple[Path | None, str]:
    """Where the cell's warm start's warmstart.json is, and how it was found."""
    if (run_dir / WARMSTART).is_file():
        return run_dir / WARMSTART, "run dir"
    log = run_dir / "train.log"
    if log.is_file():
        named = [line.split("warm start:", 1)[1].strip() for line in log.read_text(errors="replace").splitlines()
                 if "warm start:" in line]
        for p in reversed(named):
            if (Path(p) / WARMSTART).is_file():
                return Path(p) / WARMSTART, "train.log"
    if cache is not None and cache.is_dir():
        cfg = config(run_dir)
        for d in sorted(cache.glob(f"{task}-*")):
            try:
                if (d / WARMSTART).is_file() and _matches(json.loads((d / WARMSTART).read_text()), cfg, task):
                    return d / WARMSTART, "cache (matched on task, seed and settings)"
            except (ValueError, TypeError):
                continue
    return None, "not found (run dir, train.log, cache)"


def warmstart_record(run_dir: Path, task: str, cache: Path | None) -> dict[str, Any]:
    path, via = find_warmstart(run_dir, task, cache)
    if path is None:
        return {"path": None, "via": via, "greedy_acc": None}
    final = json.loads(path.read_text()).get("final") or {}
    return {"path": str(path), "via": via, "greedy_acc": final.get("greedy_acc"), "avg@k": final.get("avg@8"),
            "step": final.get("step")}
