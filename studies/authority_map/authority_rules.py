"""The authority map's rules R, H, F, D and S (studies/authority_map/HYPOTHESES.md, "Rules"), as registered, on
numbers: pure functions, no file read. Fractions are in [0, 1]; "points" are percentage points.

A cell that never crossed its target has no band fraction (the definitions start at the first crossing); the rules
score it 0 (no step of it was ever in the band) and every report says "never crossed".
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

HOLD = 0.90  # H: the rolling mean's band fraction >= 90 % (the target)
REACH = 0.5  # R: GRPO's 21-step mean at or below 0.5x its start
RESCUE_POINTS = 20.0  # F: d >= +20 points rescues
COST_BAND_POINTS = 5.0  # F: the rolling band falls by more than 5 points: a cost
COST_PASS1_POINTS = 2.0  # F: pass@1 falls by more than 2 points: a cost
D_SHARE, D_MIN_MISSES = 2 / 3, 3  # D: rescues >= 2/3 of the misses, at least 3 misses, no cost
CLOSE = (0.80, 0.90)  # S: a cell's rolling band in [80 %, 90 %)
CLOSE_D = (15.0, 25.0)  # S: a pair's d in [15, 25) points
EPS = 1e-9  # thresholds compared with this slack: 0.95 - 0.80 is 14.999999999999996 points in floats


def centred_mean(xs: Sequence[float], window: int) -> list[float]:
    """Centred moving mean, the window cut at both ends (summarise.py's 21-step mean, over a whole series)."""
    half = window // 2
    return [statistics.fmean(xs[max(0, i - half):i + half + 1]) for i in range(len(xs))]


def rule_r(entropy: Sequence[float], window: int) -> dict[str, Any]:
    """R: GRPO's centred ``window``-step mean batch entropy at or below 0.5x of its start on some step."""
    if not entropy:
        return {"verdict": "not run yet", "holds": None}
    start, smooth = entropy[0], centred_mean(entropy, window)
    step = next((i for i, m in enumerate(smooth) if m <= REACH * start + EPS), None)
    return {"holds": step is not None, "verdict": "holds" if step is not None else "does not hold",
            "start": start, "min_mean_over_start": min(smooth) / start if start else None,
            "first_step": None if step is None else step + 1, "steps": len(entropy)}


def rule_h(rolling: float | None) -> str:
    """H: the actuator holds its target if its rolling mean's band fraction is >= 90 %."""
    if rolling is None:
        return "not run yet"
    return "holds" if rolling >= HOLD - EPS else "does not hold"


def rule_f(none: Mapping[str, Any] | None, bonus: Mapping[str, Any] | None) -> dict[str, Any]:
    """F on one pair's readings (keys ``rolling``, ``pass@1``, ``pass@k``): d in points, rescue or cost."""
    if none is None or bonus is None or none.get("rolling") is None or bonus.get("rolling") is None:
        return {"verdict": "not run yet"}
    d = 100 * (bonus["rolling"] - none["rolling"])
    dp = {k: None if none.get(k) is None or bonus.get(k) is None else 100 * (bonus[k] - none[k])
          for k in ("pass@1", "pass@k")}
    alone, fallback = rule_h(none["rolling"]) == "holds", rule_h(bonus["rolling"]) == "holds"
    rescue = not alone and (fallback or d >= RESCUE_POINTS - EPS)
    cost_band = alone and d < -COST_BAND_POINTS - EPS
    cost_pass = alone and dp["pass@1"] is not None and dp["pass@1"] < -COST_PASS1_POINTS - EPS
    verdict = ("rescues" if rescue else "does not rescue") if not alone else (
        "costs" if cost_band or cost_pass else "costs nothing")
    return {"verdict": verdict, "d_points": d, "selection_alone_holds": alone, "with_fallback_holds": fallback,
            "rescue": rescue, "cost": cost_band or cost_pass, "cost_band": cost_band, "cost_pass@1": cost_pass,
            "d_pass@1_points": dp["pass@1"], "d_pass@k_points": dp["pass@k"]}


def rule_d(pairs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """D over every measured pair's F: ``bonus`` if it rescues >= 2/3 of the misses (>= 3 misses) and costs none
    of the pairs the selection holds alone; otherwise ``none``, with the pairs where it rescues. Provisional while
    a pair is "not run yet" (pairs skipped by rule R or not scored do not count)."""
    tested = {k: p for k, p in pairs.items() if "rescue" in p}
    open_ = sorted(k for k, p in pairs.items() if p.get("verdict") == "not run yet")  # still to be measured
    misses = sorted(k for k, p in tested.items() if not p["selection_alone_holds"])
    rescued = sorted(k for k in misses if tested[k]["rescue"])
    holds = sorted(k for k, p in tested.items() if p["selection_alone_holds"])
    costs = sorted(k for k in holds if tested[k]["cost"])
    bonus = len(misses) >= D_MIN_MISSES and len(rescued) >= D_SHARE * len(misses) - EPS and not costs
    return {"verdict": "bonus" if bonus else "none", "provisional": bool(open_), "pairs_measured": len(tested),
            "pairs_not_run_yet": open_, "pairs_planned": len(pairs),
            "misses": misses, "rescued": rescued, "selection_holds": holds, "costs": costs,
            "turn_it_on_in": rescued}


# D as amended: the options in the order a tie keeps (the registered 50 first, then phase B3's, then B3s's)
HAND_OFFS = {"50": {"hand_off_w": 50.0, "bonus_span": None}, "3": {"hand_off_w": 3.0, "bonus_span": None},
             "3s": {"hand_off_w": 3.0, "bonus_span": "log 50"}}


def pairs_phrase(d: Mapping[str, Any]) -> str:
    """Rule D's pairs in words: "m of n pairs", n the pairs measured or still to be run. A planned pair the map
    skips (rule R does not hold at its width, or its width's warm start did not learn) is named apart, so that a
    complete map does not read as one with pairs missing."""
    left_out = d["pairs_planned"] - d["pairs_measured"] - len(d["pairs_not_run_yet"])
    text = f"{d['pairs_measured']} of {d['pairs_planned'] - left_out} pairs"
    return text + (f" ({left_out} more planned are skipped: authority_map.md says why)" if left_out else "")


def rule_d_amended(options: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Mapping[str, Any]]]]
                   ) -> dict[str, Any]:
    """D as amended on 2026-11-28 (phases B3 and B3s): D's criterion on F (the fallback with W <= 50), on F3 (W <= 3)
    and on F3s (W <= 3, the bonus's span log 50). ``options``: "50" / "3" / "3s" -> (that rule_d, its F pairs). One
    meets it: ``bonus`` with that hand-off. Several: the one whose rescued pairs hold H in more pairs; a tie keeps the
    first in HAND_OFFS's order (50, then 3, then 3s). None: ``none``. Provisional while any is."""
    holds = {k: sum(bool(f[p].get("with_fallback_holds")) for p in d["rescued"]) for k, (d, f) in options.items()}
    meets = [k for k in HAND_OFFS if k in options and options[k][0]["verdict"] == "bonus"]
    best = max(meets, key=lambda k: (holds[k], -list(HAND_OFFS).index(k))) if meets else None
    return {"verdict": "bonus" if best else "none", "choice": best,
            "hand_off_w": None if best is None else HAND_OFFS[best]["hand_off_w"],
            "bonus_span": None if best is None else HAND_OFFS[best]["bonus_span"], "meets": meets,
            "provisional": any(d["provisional"] for d, _ in options.values()), "rescued_pairs_holding_h": holds}


def rule_s(rolling: Mapping[str, float | None], pairs: Mapping[str, tuple[str, str, float | None]]
           ) -> dict[str, list[str]]:
    """S: cell -> why it gets seeds 1 and 2. ``rolling``: seed 0's rolling band per cell; ``pairs``: pair ->
    (cell without the fallback, cell with it, d in points)."""
    out: dict[str, list[str]] = {}
    for cell, r in rolling.items():
        if r is not None and CLOSE[0] - EPS <= r < CLOSE[1] - EPS:
            out.setdefault(cell, []).append(f"rolling band {100 * r:.1f} % in [80, 90)")
    for pair, (none, bonus, d) in pairs.items():
        if d is not None and CLOSE_D[0] - EPS <= d < CLOSE_D[1] - EPS:
            for cell in (none, bonus):
                out.setdefault(cell, []).append(f"pair {pair}: d {d:+.1f} points in [15, 25)")
    return out


def seed_mean(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.fmean(xs) if xs else None
