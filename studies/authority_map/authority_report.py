"""The authority map's report: authority_map.md (a table per task, then the rules with their numbers) and
authority_map.png (the rolling band fraction per cell, without and with the fallback, and the 90 % line), from
analyze.py's result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from authority_grids import REFERENCE, TASKS, slots, widths
from authority_rules import HOLD, pairs_phrase


def _f(v: Any, fmt: str = "{:.3f}") -> str:
    return "-" if v is None else fmt.format(v)


def _pct(v: float | None) -> str:
    return _f(None if v is None else 100 * v, "{:.1f} %")


def _mean(seeds: dict[Any, dict[str, Any]], key: str) -> float | None:
    xs = [r[key] for r in seeds.values() if r.get(key) is not None]
    return sum(xs) / len(xs) if xs else None


CELL_HEAD = ("| width | actuator | target | fallback | phase | state | n | H start | target H | first crossing | "
             "band ±10 % (step) | band of the 21-step mean | noise % of target | noise ceiling | mean / target | "
             "step H peak / target | W at bound | bonus at bound | largest c | L+ mean | L− mean | L+ empty | pass@1 | "
             "pass@8 | H |")


PHASE_LABEL = {"B3": " (W ≤ 3)", "B3s": " (W ≤ 3, span log 50)"}  # the fallback column's note per phase


def fallback_label(s: Any) -> str:
    """The fallback column: ``none``, ``bonus``, ``bonus (W ≤ 3)`` for phase B3, ``bonus (W ≤ 3, span log 50)`` for
    B3s."""
    return s.fallback + PHASE_LABEL.get(s.phase, "")


def _cell_row(task: str, m: str, cell: dict[str, Any], h: dict[str, Any] | None) -> str:
    s, seeds = slots(task)[m], {k: v for k, v in cell["seeds"].items() if "error" not in v}
    def g(key: str) -> float | None:
        return _mean(seeds, key)
    rd = cell.get("reading") or {}
    never = " (never crossed: 0)" if rd.get("never_crossed") else ""
    w = f"{_pct(g('w_at_bound_share'))} ({_f(g('w_at_bound_steps'), '{:.0f}')})"
    bonus = "" if s.fallback != "bonus" else f"{_pct(g('bonus_at_bound_share'))} ({_f(g('bonus_at_bound_steps'), '{:.0f}')})"
    # a running cell is "not run yet" here (the json says "started"): the page is the analysis of the finished cells
    state = cell["state"].removesuffix(" (started)")
    if cell.get("twin_seeds"):  # rule T: not run; its twin's run (seeds listed)
        state += f" (rule T: = {cell['twin'].split('/', 1)[1]}, seed {', '.join(map(str, cell['twin_seeds']))})"
    return (f"| {s.width} | {s.actuator} | {s.target or '-'} | {fallback_label(s)} | {s.phase} | {state} | "
            f"{len(seeds)} | {_f(g('entropy_start'))} | {_f(g('target'))} | {_f(g('first_crossing_step'), '{:.0f}')} | "
            f"{_pct(rd.get('step_band'))} | {_pct(rd.get('rolling'))}{never} | {_f(g('noise_pct_of_target'), '{:.1f}')} | "
            f"{_pct(g('noise_ceiling'))} | {_f(g('mean_over_target'), '{:.2f}')} | {_f(g('peak_over_target'), '{:.2f}')} | "
            f"{w if s.actuator != REFERENCE else '-'} | {bonus or '-'} | {_f(g('bonus_coef_max'), '{:.2f}')} | "
            f"{_f(g('l_plus_frac_mean'), '{:.4f}')} | {_f(g('l_minus_frac_mean'), '{:.4f}')} | "
            f"{_pct(g('l_plus_empty_share'))} | {_f(g('pass@1'))} | {_f(g('pass@k'))} | {(h or {}).get('verdict', '-')} |")


AT_BOUND_NOTED = 0.10  # "why it misses" names an actuator at its bound on >= 10 % of steps
OVERSHOOT_NOTED = 2.0  # ... and the step entropy's peak from the first crossing at >= 2x the target
L_PLUS_EMPTY_NOTED = 0.50  # ... and an L+ empty on >= half of the steps
AT_FLOOR_NOTED = 0.10  # ... and, with the entropy above the target, W at its floor 1 on >= 10 % of the steps


def why_missed(v: dict[str, Any], band: float = 0.1) -> str:
    """Why a cell's 21-step mean leaves the band (descriptive, not a registered rule), from its values: where the
    entropy sits on average against the target, and which actuator was at its bound (W, the bonus) or had nothing to
    act on (L+ empty), and a step entropy that overshot to >= 2x the target. Centred on the target with no actuator at
    its bound, what is left is the controller's tracking, not its authority. Above the band, or inside it with no
    actuator at its bound, W at its floor 1 (the selection off) on >= 10 % of the steps from the first crossing is
    named: there nothing raised the entropy, and neither actuator can lower it."""
    if v.get("never_crossed"):
        return "never reached the target: the entropy stayed above it (nothing to hold yet)"
    limits = []
    if (v.get("w_at_bound_share") or 0) >= AT_BOUND_NOTED:
        limits.append(f"W at its bound on {100 * v['w_at_bound_share']:.0f} % of steps")
    if (v.get("l_plus_empty_share") or 0) >= L_PLUS_EMPTY_NOTED:
        limits.append(f"L+ empty on {100 * v['l_plus_empty_share']:.0f} %")
    if (v.get("bonus_at_bound_share") or 0) >= AT_BOUND_NOTED:
        limits.append(f"the bonus at its bound on {100 * v['bonus_at_bound_share']:.0f} %")
    bonus_free = v.get("bonus_at_bound_share") is not None and (v.get("bonus_at_bound_share") or 0) < AT_BOUND_NOTED
    m, peak = v.get("mean_over_target"), v.get("peak_over_target")
    where = "" if m is None else f" (mean {m:.2f}x the target" + (
        f"; the step entropy up to {peak:.2f}x it" if peak is not None and peak >= OVERSHOOT_NOTED else "") + ")"
    if m is not None and m < 1 - band:
        return (f"below the band on average{where}: " +
                (f"out of authority, {', '.join(limits)}" if limits else "no actuator at its bound"))
    floor = v.get("w_at_floor_share")
    off = (f"W at its floor 1 (the selection off) on {100 * floor:.0f} % of the steps from the first crossing: there "
           "the entropy was above the target with no actuator raising it, and neither can lower it"
           if floor is not None and floor >= AT_FLOOR_NOTED else "")
    if m is not None and m > 1 + band:
        return f"above the band on average{where}" + (f": {', '.join([*limits, off] if off else limits)}"
                                                      if limits or off else "")
    inside = f"inside the band on average{where}, the 21-step mean leaves it"
    if limits and bonus_free:
        return (f"{inside}: {', '.join(limits)}, the bonus below its bound carries the rest: the controller's "
                "tracking, not its authority")
    if limits:
        last = ("both actuators out of authority on part of the run" if v.get("bonus_at_bound_share") is not None
                else "out of authority on part of the run")
        return f"{inside}: {', '.join(limits)}: {last}"
    noise = v.get("noise_pct_of_target")
    return (f"{inside} with no actuator at its bound"
            f"{'' if noise is None else f' (step noise {noise:.1f} % of the target)'}"
            f"{f'; {off}' if off else ''}: the controller's tracking, not its authority")


def _row_order(task: str):
    """Rows: width, then GRPO, then actuator, target (0.7x first), fallback (none first)."""
    def key(m: str) -> tuple:
        s = slots(task)[m]
        return (s.width, s.actuator != REFERENCE, s.actuator, -float((s.target or "1x")[:-1]), s.fallback != "none",
                s.phase in PHASE_LABEL, s.phase == "B3s")
    return key


def _task_section(task: str, t: dict[str, Any], rules: dict[str, Any]) -> list[str]:
    lines = [f"## {task}", "", "| width | warm start greedy acc | / default width's | learns the task | warm start | "
             "R: GRPO's 21-step mean min / start | R |", "|---|---|---|---|---|---|---|"]
    for w in widths(task):
        ws, r = t["warmstart"][w], t["R"][w]
        learns = {True: "yes", False: "no (cells not scored)", None: "not checked"}[ws["learns"]]
        reached = "" if r.get("first_step") is None else f" (at or below 0.5x from step {r['first_step']})"
        lines.append(f"| {w} | {_f(ws['greedy_acc'])} | {_f(ws['ratio_to_default'], '{:.2f}')} | {learns} | "
                     f"{ws['path'] or '-'} | {_f(r.get('min_mean_over_start'), '{:.2f}')}{reached} | "
                     f"{r['verdict']} |")
    lines += ["", CELL_HEAD, "|" + "---|" * (CELL_HEAD.count("|") - 1)]
    lines += [_cell_row(task, m, t["cells"][m], rules["H"].get(f"{task}/{m}")) for m in sorted(slots(task), key=_row_order(task))]
    missed = [(m, c) for m, c in sorted(t["cells"].items(), key=lambda mc: _row_order(task)(mc[0]))
              if (rules["H"].get(f"{task}/{m}") or {}).get("verdict") == "does not hold"]
    if missed:
        lines += ["", "Where the selection does not hold its target, why (descriptive, from the values above: the "
                  "entropy's mean against the target, and an actuator at its bound on >= 10 % of steps or L+ empty "
                  "on >= half; W at its floor 1 on >= 10 % of the steps from the first crossing, where the entropy "
                  "is not below the band):", ""]
        for m, c in missed:
            s, seeds = slots(task)[m], {k: v for k, v in c["seeds"].items() if "error" not in v}
            values = {k: _mean(seeds, k) for k in ("mean_over_target", "w_at_bound_share", "l_plus_empty_share",
                                                    "bonus_at_bound_share", "noise_pct_of_target", "peak_over_target",
                                                    "w_at_floor_share")}
            values["never_crossed"] = (c.get("reading") or {}).get("never_crossed")
            lines.append(f"- hidden {s.width}, {s.actuator} {s.target}, fallback {fallback_label(s)}: "
                         f"{why_missed(values)}.")
    multi = [(m, c) for m, c in t["cells"].items() if len(c["seeds"]) > 1]
    for m, c in multi:
        per = ", ".join(f"seed {s}: {_pct(r.get('band_fraction_smoothed'))} (pass@1 {_f(r.get('pass@1'))})"
                        for s, r in sorted(c["seeds"].items()))
        lines.append(f"\n- {m} per seed, band of the 21-step mean: {per}")
    return lines + [""]


def _rules_section(result: dict[str, Any]) -> list[str]:
    rules = result["rules"]
    lines = ["## Rules", "", "**R (0.5x is reachable)**, per task and width: see each task's first table.", "",
             "**H (the selection holds a target: band of the 21-step mean >= 90 %)**, per cell: the last column of "
             "each task's table.", "", "**F (what the fallback adds)**, per pair (d = band of the 21-step mean with "
             "the fallback − without, points):", "",
             "| pair | without | with | d (points) | Δ pass@1 (points) | Δ pass@8 (points) | verdict |",
             "|---|---|---|---|---|---|---|"]
    for key, p in rules["F"].items():
        lines.append(f"| {key} | {_pct(_get(result, p['without']))} | {_pct(_get(result, p['with']))} | "
                     f"{_f(p.get('d_points'), '{:+.1f}')} | {_f(p.get('d_pass@1_points'), '{:+.1f}')} | "
                     f"{_f(p.get('d_pass@k_points'), '{:+.1f}')} | {p['verdict']} |")
    for rule, title, short, against in (
            ("F3", "**F3 (what the fallback with `auto_w_max: 3` adds; phase B3, the deviation of 2026-11-28)**, per "
             "pair: F's definitions with B3 in place of B; beside it, descriptive, B3 − B (W ≤ 3 against W ≤ 50):",
             "W ≤ 3", "B3 − B"),
            ("F3s", "**F3s (what the fallback with `auto_w_max: 3` and `auto_bonus_span` log 50 adds; phase B3s, the "
             "second deviation of 2026-11-28)**, per pair: F's definitions with B3s in place of B; beside it, "
             "descriptive, B3s − B3 (the bonus's span log 50 against log 3):", "W ≤ 3, span log 50", "B3s − B3")):
        lines += ["", title, "", f"| pair | without | with ({short}) | d (points) | Δ pass@1 (points) | Δ pass@8 "
                  f"(points) | verdict | {against}: band, pass@1, pass@8 (points) |", "|---|---|---|---|---|---|---|---|"]
        for key, p in rules.get(rule, {}).items():
            ab = p.get("against_b") or {}
            lines.append(f"| {key} | {_pct(_get(result, p['without']))} | {_pct(_get(result, p['with']))} | "
                         f"{_f(p.get('d_points'), '{:+.1f}')} | {_f(p.get('d_pass@1_points'), '{:+.1f}')} | "
                         f"{_f(p.get('d_pass@k_points'), '{:+.1f}')} | {p['verdict']} | "
                         f"{_f(ab.get('d_rolling_points'), '{:+.1f}')}, {_f(ab.get('d_pass@1_points'), '{:+.1f}')}, "
                         f"{_f(ab.get('d_pass@k_points'), '{:+.1f}')} |")
    lines += ["", _d_line("D (the default of `auto_fallback`; on F, W ≤ 50)", rules["D"])]
    a = rules["D_amended"]
    state = " (provisional)" if a["provisional"] else ""
    lines += ["", _d_line("D's criterion on F3 (W ≤ 3)", rules["D3"]), "",
              _d_line("D's criterion on F3s (W ≤ 3, the bonus's span log 50)", rules["D3s"]), "",
              f"**D as amended (2026-11-28)**: **{hand_off_phrase(a)}**{state}: the criterion is met by "
              f"{', '.join(OPTION_LABEL[k] for k in a['meets']) or 'none of them'}; rescued pairs holding H: "
              + ", ".join(f"{a['rescued_pairs_holding_h'][k]} with {OPTION_LABEL[k]}" for k in OPTION_LABEL)
              + " (more than one met: the larger count wins, a tie keeps the first of W ≤ 50, W ≤ 3, W ≤ 3 with the "
              "span log 50)."]
    lines += ["", "**S (seeds 1 and 2 where the result is close)**, from seed 0:", ""]
    for task, picks in rules["S"].items():
        lines.append(f"- {task}: " + ("; ".join(
            f"{m} ({', '.join(why)}; seeds finished: {rules['H'][f'{task}/{m}']['seeds_finished']}, H and F read on "
            "their mean)" for m, why in picks.items()) or "none"))
    return lines


OPTION_LABEL = {"50": "W ≤ 50", "3": "W ≤ 3", "3s": "W ≤ 3 with the bonus's span log 50"}  # D amended's options


def hand_off_phrase(a: dict[str, Any]) -> str:
    """D amended's choice in words: ``none``, or ``bonus`` with its hand-off bound (and the bonus's span)."""
    if a["verdict"] != "bonus":
        return "`none`"
    span = f" and the bonus's span {a['bonus_span']}" if a.get("bonus_span") else ""
    return f"`bonus` with the hand-off at W {a['hand_off_w']:g}{span}"


def _d_line(title: str, d: dict[str, Any]) -> str:
    why = [f"{len(d['pairs_not_run_yet'])} pairs not run yet" if d["pairs_not_run_yet"] else "",
           f"rule S's seeds 1-2 not all finished in {len(d['seeds_open'])} close cells" if d.get("seeds_open") else ""]
    state = f" (provisional: {'; '.join(w for w in why if w)})" if d["provisional"] else ""
    return (f"**{title}**: **{d['verdict']}**{state} on {pairs_phrase(d)}: the selection alone misses in "
            f"{len(d['misses'])} "
            f"({', '.join(d['misses']) or 'none'}), the fallback rescues {len(d['rescued'])} of them "
            f"({', '.join(d['rescued']) or 'none'}); the selection alone holds in {len(d['selection_holds'])}, "
            f"the fallback costs {len(d['costs'])} of them ({', '.join(d['costs']) or 'none'}). `bonus` needs "
            ">= 3 misses, rescues >= 2/3 of them and no cost.")


def _get(result: dict[str, Any], cell: str) -> float | None:
    task, m = cell.split("/")
    return (result["tasks"][task]["cells"][m].get("reading") or {}).get("rolling")


def markdown(result: dict[str, Any]) -> str:
    skipped = result.get("seed0_skipped", [])
    lines = ["# Issue 46: the authority map (studies/authority_map, pre-registered)", "",
             f"Seed-0 cells finished: {result['n_seed0_finished']} of {result['n_seed0_cells'] - len(skipped)}"
             + (f" ({len(skipped)} more planned are not in the map: rule R does not hold at their width)" if skipped
                else "") + "; a cell not finished "
             "is \"not run yet\". Values over the finished seeds (n); "
             "band fractions from the first crossing, W / bonus at bound and L+ / L− over every step.", ""]
    for task in TASKS:
        lines += _task_section(task, result["tasks"][task], result["rules"])
    return "\n".join(lines + _rules_section(result)) + "\n"


VARIANTS = (("none", "A"), ("bonus", "B"), ("bonus", "B3"), ("bonus", "B3s"))  # fallback, and the phase
HATCH = {"A": None, "B": "//", "B3": "xx", "B3s": ".."}
BAR = 0.055  # four colours x four variants per width


def _variant(s: Any) -> tuple[str, str]:
    """A slot's bar in the figure: (fallback, the phase whose hatch it takes); phase C's cells take A's or B's."""
    return ("none", "A") if s.fallback == "none" else ("bonus", "B" if s.phase == "C" else s.phase)


def figure(result: dict[str, Any], path: Path) -> Path:
    """Per task, the band of the 21-step mean per (width, actuator, target), without (solid) and with the fallback
    (hatched; cross-hatched: with ``auto_w_max: 3``, phase B3; dotted: and ``auto_bonus_span`` log 50, phase B3s); a
    missing cell leaves its place empty; the 90 % line dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(len(TASKS), 1, figsize=(11, 3.4 * len(TASKS)), squeeze=False)
    colours = {("C2", "0.7x"): "tab:blue", ("sensitivity", "0.7x"): "tab:orange", ("C2", "0.5x"): "tab:cyan",
               ("sensitivity", "0.5x"): "tab:red"}
    for ax, task in zip(axes[:, 0], TASKS, strict=True):
        cells, ws = result["tasks"][task]["cells"], widths(task)
        for i, w in enumerate(ws):
            for j, ((act, tgt), colour) in enumerate(colours.items()):
                for k, (fb, phase) in enumerate(VARIANTS):
                    m = next((m for m, s in slots(task).items()
                              if (s.width, s.actuator, s.target, _variant(s)) == (w, act, tgt, (fb, phase))), None)
                    v = (cells[m].get("reading") or {}).get("rolling") if m else None
                    x = i + (len(VARIANTS) * j + k - (len(colours) * len(VARIANTS) - 1) / 2) * BAR
                    if v is not None:
                        ax.bar(x, 100 * v, width=BAR, color=colour, hatch=HATCH[phase], edgecolor="black",
                               linewidth=0.3)
        ax.axhline(100 * HOLD, ls="--", color="black", lw=0.8)
        ax.set_xticks(range(len(ws)), [f"hidden {w}" for w in ws])
        ax.set_xlim(-0.5, len(ws) - 0.5)
        ax.set_ylim(0, 105)
        ax.set_ylabel("band of the 21-step mean (%)")
        done = sum(c["state"] == "finished" for c in cells.values())
        ax.set_title(f"{task}: {done} of {len(cells)} seed-0 cells finished")
        if not any(c.get("reading") for c in cells.values()):
            ax.text(0.5, 0.5, "not run yet", transform=ax.transAxes, ha="center", va="center", color="grey")
    planned = {(x.actuator, x.target, _variant(x)) for t in TASKS for x in slots(t).values()}
    handles = [Patch(facecolor=colour, edgecolor="black", hatch=HATCH[phase],
                     label=f"{act} {tgt}, fallback {fb}{PHASE_LABEL.get(phase, '')}")
               for (act, tgt), colour in colours.items() for fb, phase in VARIANTS if (act, tgt, (fb, phase)) in planned]
    handles.append(Line2D([], [], ls="--", color="black", label="90 % (rule H)"))
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
