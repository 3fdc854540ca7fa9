"""Issue 46: apply the authority map's pre-registered rules (studies/authority_map/HYPOTHESES.md) to its cells.

    python studies/authority_map/analyze.py --runs /work/runs/authority_map --out docs/results/authority_map

Reads every cell of the three grids under ``--runs/<task>/runs/<method>/seed<S>`` (a cell counts once ``stare
compare`` marked it done; the committed copies under docs/results/authority_map/<task> read the same, and with
``--committed docs/results/authority_map`` a cell not finished under --runs is read from there), takes the
per-cell values of authority_values.py (summarise.py's and the frontier's definitions, imported), checks each
width's warm start against the default width's (``--cache``, default $STARE_RL_CACHE, is searched where a cell's
run dir does not name it), and decides R, H, F, D and S with authority_rules.py, and F3, F3s and the amended D of
the deviations of 2026-11-28 (phase B3: the fallback with ``auto_w_max: 3``; phase B3s: B3 with ``auto_bonus_span``
log 50). A cell that is not finished is
"not run yet"; a phase-C cell where R does not hold is "skipped (rule R)". Writes ``authority_map.json``,
``authority_map.md`` (a table per task: width x actuator x target x fallback, then each rule with its numbers) and
``authority_map.png`` (the rolling band fraction per cell, without and with the fallback, and the 90 % line) into
``--out``, and prints the markdown. Runs on an empty run root (everything "not run yet").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from authority_grids import REFERENCE, TASKS, default_width, methods, slots, twin, widths
from authority_report import figure, markdown
from authority_rules import rule_d, rule_d_amended, rule_f, rule_h, rule_s, seed_mean
from authority_values import DONE, cell_record, twin_record, warmstart_record

SEEDS = (0, 1, 2)
LEARNS = 0.5  # a wider width's warm start learns the task: greedy accuracy >= half the default width's
S_KEY = {"B": "", "B3": " (W ≤ 3)", "B3s": " (W ≤ 3, span log 50)"}  # rule S's pair key per phase (F's own
# keys are the pair's, in F, F3 and F3s alike)
AGAINST = {"B3": "B", "B3s": "B3"}  # descriptive beside F3 / F3s: B3 against B, B3s against B3


def pair_key(task: str, width: int, actuator: str, target: str | None) -> str:
    return f"{task} h{width} {actuator} {target}"


def _cell_dir(runs: Path, task: str, method: str, seed: int, committed: Path | None = None) -> Path:
    """A cell's directory under the run root; where it has not finished there and ``committed`` (the study's
    results folder) holds its finished copy, that copy: a fresh run root (a new machine) still reads every cell."""
    d = runs / task / "runs" / method / f"seed{seed}"
    if committed is None or (d / DONE).is_file():
        return d
    c = committed / task / "runs" / method / f"seed{seed}"
    return c if (c / DONE).is_file() else d


def warmstart_copy_name(width: int) -> str:
    """The warm start's record as committed beside a task's cells: ``<task>/warmstart_h<width>.json``."""
    return f"warmstart_h{width}.json"


def warmstart_record_from(path: Path) -> dict[str, Any]:
    final = json.loads(path.read_text()).get("final") or {}
    return {"path": str(path), "greedy_acc": final.get("greedy_acc"), "avg@k": final.get("avg@8"),
            "step": final.get("step")}


TIMINGS = ("wall_time_s", "cpu_time_s")  # a warm start's record, less these, is the same warm start on any machine


def same_warmstart(src: Path, dst: Path) -> bool:
    """``dst`` records the warm start ``src`` records, timings aside (a cache rebuilt on a new machine reproduces
    the committed warm start: its copy is kept, not rewritten with this machine's timings)."""
    if not dst.is_file():
        return False
    def strip(path: Path) -> dict[str, Any]:
        return {k: v for k, v in json.loads(path.read_text()).items() if k not in TIMINGS}
    try:
        return strip(src) == strip(dst)
    except ValueError:
        return False


def commit_warmstarts(result: dict[str, Any], out: Path) -> None:
    """Copy each width's warm-start record into ``out/<task>/`` (the cache is not committed) and report that copy,
    so that the report reads the same from the run root and from the committed folder."""
    for task, t in result["tasks"].items():
        for w, rec in t["warmstart"].items():
            if rec.get("path") is None:
                continue
            dst = out / task / warmstart_copy_name(w)
            src = Path(rec["path"])
            if src.resolve() != dst.resolve() and not same_warmstart(src, dst):
                dst.parent.mkdir(parents=True, exist_ok=True)
                tmp = dst.with_suffix(".tmp")
                shutil.copyfile(src, tmp)
                os.replace(tmp, dst)  # atomic
            rec["path"] = f"{task}/{warmstart_copy_name(w)}"


def warmstarts(runs: Path, task: str, cache: Path | None, committed: Path | None = None) -> dict[int, dict[str, Any]]:
    """Per width: its warm start's record (from the first cell of the width that names one) and the check."""
    out: dict[int, dict[str, Any]] = {}
    for w in widths(task):
        rec: dict[str, Any] = {"path": None, "via": "no cell of this width started", "greedy_acc": None}
        for m in methods(task, width=w):
            d = _cell_dir(runs, task, m, 0, committed)
            if d.is_dir():
                rec = warmstart_record(d, task, cache)
                if rec["path"]:
                    break
        # --runs is this study's results folder, or --committed is: its committed copy
        copies = [root / task / warmstart_copy_name(w) for root in (runs, committed) if root is not None]
        copy = next((c for c in copies if c.is_file()), None)
        if rec["path"] is None and copy is not None:
            rec = {**warmstart_record_from(copy), "via": "committed copy"}
        out[w] = rec
    ref = out[default_width(task)].get("greedy_acc")
    for w, rec in out.items():
        acc = rec.get("greedy_acc")
        rec["ratio_to_default"] = acc / ref if acc is not None and ref else None
        rec["learns"] = True if w == default_width(task) and acc is not None else (
            None if rec["ratio_to_default"] is None else rec["ratio_to_default"] >= LEARNS)
    return out


def reading(seeds: dict[int, dict[str, Any]]) -> dict[str, Any] | None:
    """The seed mean of a cell's rolling / step band fractions and pass@1 / pass@k (a seed that never crossed its
    target scores 0); None without a readable seed."""
    ok = {s: r for s, r in seeds.items() if "error" not in r}
    if not ok:
        return None
    def band(r: dict[str, Any], key: str) -> float:
        return 0.0 if r.get("first_crossing_step") is None else r.get(key) or 0.0
    return {"n": len(ok), "seeds": sorted(ok),
            "never_crossed": sorted(s for s, r in ok.items() if r.get("first_crossing_step") is None),
            "rolling": seed_mean(band(r, "band_fraction_smoothed") for r in ok.values()),
            "step_band": seed_mean(band(r, "band_fraction") for r in ok.values()),
            **{k: seed_mean(r.get(k) for r in ok.values()) for k in ("pass@1", "pass@k")}}


def collect(runs: Path, cache: Path | None, committed: Path | None = None) -> dict[str, Any]:
    """Every cell's per-seed values, each width's warm start and R, and each non-GRPO cell's reading."""
    tasks: dict[str, Any] = {}
    for task in TASKS:
        ws = warmstarts(runs, task, cache, committed)
        cells: dict[str, Any] = {}
        for m, slot in slots(task).items():
            seeds = {s: cell_record(_cell_dir(runs, task, m, s, committed), slot) for s in SEEDS
                     if (_cell_dir(runs, task, m, s, committed) / DONE).is_file()}
            cells[m] = {"slot": slot._asdict(), "phase": slot.phase, "seeds": seeds,
                        "started": _cell_dir(runs, task, m, 0).is_dir()}
        for m, slot in slots(task).items():  # rule T: a fallback cell not run, where its twin's run is its own
            t = twin(task, m)
            for s in SEEDS if t else ():
                if s in cells[m]["seeds"] or "error" in cells[t]["seeds"].get(s, {"error": "not finished"}):
                    continue
                rec = twin_record(_cell_dir(runs, task, t, s, committed), slot)
                if rec is not None:
                    cells[m]["seeds"][s] = rec
                    cells[m].setdefault("twin_seeds", []).append(s)
            if "twin_seeds" in cells[m]:
                cells[m]["twin"] = f"{task}/{t}"
        r = {w: (cells[next(m for m in methods(task, width=w) if slots(task)[m].actuator == REFERENCE)]
                 ["seeds"].get(0) or {}).get("R", {"verdict": "not run yet", "holds": None}) for w in widths(task)}
        for m, cell in cells.items():
            slot = slots(task)[m]
            cell["scored"] = ws[slot.width]["learns"] is not False
            cell["reading"] = reading(cell["seeds"]) if cell["scored"] and slot.actuator != REFERENCE else None
            cell["state"] = _state(cell, slot.phase, r[slot.width])
        tasks[task] = {"warmstart": ws, "R": r, "cells": cells}
    return tasks


def _state(cell: dict[str, Any], phase: str, r: dict[str, Any]) -> str:
    if 0 in cell["seeds"]:
        return "unreadable: " + cell["seeds"][0]["error"] if "error" in cell["seeds"][0] else "finished"
    if phase == "C" and r.get("holds") is False:
        return "skipped (rule R does not hold at this width)"
    return "not run yet" + (" (started)" if cell["started"] else "")


def decide(tasks: dict[str, Any]) -> dict[str, Any]:
    """R per width, H per cell, F per pair, D over the pairs, S per task (seed 0's values)."""
    h, s = {}, {}
    by_phase: dict[str, dict[str, Any]] = {"B": {}, "B3": {}, "B3s": {}}  # F, F3, F3s
    for task, t in tasks.items():
        pairs0: dict[str, tuple[str, str]] = {}  # pair -> (without, with the fallback)
        rolling0: dict[str, float | None] = {}
        for m, cell in t["cells"].items():
            slot = slots(task)[m]
            if slot.actuator == REFERENCE:
                continue
            rd = cell["reading"]
            h[f"{task}/{m}"] = {"verdict": rule_h(rd and rd["rolling"]) if cell["scored"] else
                                "not scored: the width's warm start did not learn the task",
                                "n": rd and rd["n"], "rolling": rd and rd["rolling"],
                                "never_crossed": bool(rd and rd["never_crossed"])}
            first = reading({0: cell["seeds"][0]}) if 0 in cell["seeds"] and cell["scored"] else None
            rolling0[m] = first and first["rolling"]
            if slot.fallback == "bonus":
                none = next(x for x, o in slots(task).items() if o.pair == slot.pair and o.fallback == "none")
                key = pair_key(*slot.pair)
                # F reads B and phase C's pairs; F3 / F3s: B3 / B3s against the selection alone, as F reads B
                out = by_phase.get(slot.phase, by_phase["B"])
                out[key] = {"without": f"{task}/{none}", "with": f"{task}/{m}",
                            **rule_f(t["cells"][none]["reading"], cell["reading"])}
                if out[key]["verdict"] == "not run yet" and cell["state"].startswith("skipped"):
                    out[key]["verdict"] = cell["state"]
                elif out[key]["verdict"] == "not run yet" and not cell["scored"]:
                    out[key]["verdict"] = "not scored (the width's warm start did not learn the task)"
                if slot.phase in AGAINST:  # descriptive: B3 against B (W <= 3 against W <= 50), B3s against B3
                    b = next(x for x, o in slots(task).items() if o.pair == slot.pair and o.phase == AGAINST[slot.phase])
                    out[key]["against_b"] = {"b": f"{task}/{b}", **_against(t["cells"][b]["reading"], cell["reading"])}
                pairs0[key + S_KEY.get(slot.phase, "")] = (none, m)
        d0 = {k: rule_f({"rolling": rolling0[a]}, {"rolling": rolling0[b]}).get("d_points") for k, (a, b) in pairs0.items()}
        s[task] = rule_s(rolling0, {k: (a, b, d0[k]) for k, (a, b) in pairs0.items()})
        for m in s[task]:  # H and F are read on the seed mean (n = 3) of these; until then, on what has finished
            h[f"{task}/{m}"]["seeds_finished"] = sorted(t["cells"][m]["seeds"])
    f, f3, f3s = by_phase["B"], by_phase["B3"], by_phase["B3s"]
    d, d3, d3s = rule_d(f), rule_d(f3), rule_d(f3s)
    # D waits for rule S's seeds too: H and F on a close cell are read on its seed mean (n = 3), so a verdict on
    # seed 0 alone may still turn (HYPOTHESES.md, rule S). Seeds read from a twin by rule T count as finished.
    seeds_open = sorted(f"{task}/{m}" for task, picks in s.items() for m in picks
                        if len(tasks[task]["cells"][m]["seeds"]) < len(SEEDS))
    for x in (d, d3, d3s):
        x["seeds_open"] = seeds_open
        x["provisional"] = x["provisional"] or bool(seeds_open)
    return {"R": {task: t["R"] for task, t in tasks.items()}, "H": h, "F": f, "D": d, "F3": f3, "D3": d3,
            "F3s": f3s, "D3s": d3s, "D_amended": rule_d_amended({"50": (d, f), "3": (d3, f3), "3s": (d3s, f3s)}),
            "S": s}


def _against(b: dict[str, Any] | None, b3: dict[str, Any] | None) -> dict[str, Any]:
    """B3 - B (or B3s - B3) in points: rolling band, pass@1, pass@k (None where either is missing)."""
    return {f"d_{k}_points": None if not b or not b3 or b.get(k) is None or b3.get(k) is None else 100 * (b3[k] - b[k])
            for k in ("rolling", "pass@1", "pass@k")}


def evaluate(runs: Path, cache: Path | None, committed: Path | None = None) -> dict[str, Any]:
    """The map's values and rules from the cells under ``runs``, and where a cell has not finished there, its
    finished copy under ``committed`` (if given)."""
    tasks = collect(runs, cache, committed)
    seed0 = [(task, m) for task, t in tasks.items() for m in t["cells"]]
    done = [x for x in seed0 if 0 in tasks[x[0]]["cells"][x[1]]["seeds"]]  # an unreadable one counts, as such
    # planned, but not in the map: rule R does not hold at their width (phase C's cells there never run)
    skipped = [f"{task}/{m}" for task, m in seed0 if tasks[task]["cells"][m]["state"].startswith("skipped")]
    return {"runs": str(runs), "cache": None if cache is None else str(cache), "tasks": tasks,
            "n_seed0_cells": len(seed0), "n_seed0_finished": len(done), "seed0_skipped": skipped,
            "rules": decide(tasks)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=Path, default=Path("/work/runs/authority_map"), help="the driver's run root")
    p.add_argument("--out", type=Path, default=Path("docs/results/authority_map"))
    p.add_argument("--cache", type=Path, default=os.environ.get("STARE_RL_CACHE"),
                   help="warm-start cache searched where a cell does not name its warm start (default $STARE_RL_CACHE)")
    p.add_argument("--committed", type=Path, default=None,
                   help="the study's results folder (e.g. docs/results/authority_map): a cell not finished under "
                        "--runs is read from its committed copy there (a run root on a new machine starts empty)")
    args = p.parse_args(argv)
    result = evaluate(args.runs, args.cache, args.committed)
    args.out.mkdir(parents=True, exist_ok=True)
    commit_warmstarts(result, args.out)
    (args.out / "authority_map.json").write_text(json.dumps(result, indent=2, sort_keys=True, default=str) + "\n")
    md = markdown(result)
    (args.out / "authority_map.md").write_text(md)
    figure(result, args.out / "authority_map.png")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
