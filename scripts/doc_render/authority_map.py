"""The second actuator and the authority map (issue #46; README.md, docs/controller.md, docs/methods.md)."""

from __future__ import annotations

import gzip
import json
import statistics
from fractions import Fraction

import yaml

from .common import RESULTS, ROOT, centred21, load_json, load_metrics, span_text


def render_auto_fallback() -> str:
    """docs/methods.md: the measured runs of `stare_sensitivity` auto at 0.7x on arithmetic at hidden 128: W alone,
    with ``auto_fallback: bonus`` at the bound 0.1 and at 1.0 (docs/results/auto_fallback: summary.json, each run's
    config.yaml and metrics)."""
    summary = load_json("auto_fallback/summary.json")
    lines = []
    for label, what in (("none", "W alone"), ("bonus", "with the bonus, bound 0.1"),
                        ("bonus_max1", "with the bonus, bound 1.0 (today's default)")):
        s = summary[label]
        rows = load_metrics(f"auto_fallback/runs/{label}/metrics.jsonl.gz")
        bound = float(yaml.safe_load((RESULTS / "auto_fallback" / "runs" / label / "config.yaml").read_text())
                      ["auto_bonus_max"])
        coef = [r.get("control/entropy_coef", 0.0) for r in rows]
        empty = sum(r.get("loss/l_plus_frac", 0.0) == 0.0 for r in rows)
        bonus = (f"; the bonus acted on {sum(c > 0 for c in coef)} steps, largest c {max(coef):.2f}, at its bound "
                 f"{bound:g} on {sum(c >= bound * (1 - 1e-9) for c in coef)}" if max(coef) > 0 else "")
        lines.append(
            f"- **{what}** ({s['steps']} steps, target {s['target']:.3f} from a start of {s['entropy_start']:.3f}): "
            f"the 21-step mean in the ±10 % band on {100 * s['band_fraction_smoothed']:.1f} % of steps after the "
            f"first crossing, each step's batch entropy on {100 * s['band_fraction']:.1f} % (the noise allows "
            f"{100 * s['noise_ceiling']:.1f} %), mean {s['mean_over_target']:.2f} of the target; W at its bound on "
            f"{s['steps_at_w_bound']} steps, L+ empty on {empty}{bonus}; held-out pass@1 {s['pass@1']:.3f}, "
            f"pass@k {s['pass@k']:.3f}.")
    return "\n".join(lines)


# Measured outside the map: the fallback's hand-off at W <= 3 against the map's own W <= 50 cells (same recipe).
HANDOFF_PAIRS = (("hidden 128, `stare_sensitivity`", "sens_h128"), ("hidden 256, `stare_sensitivity`", "sens_h256"),
                 ("hidden 128, C2", "c2_h128"))


HANDOFF_RUNS = {  # summary.json's label -> the run (under docs/results); the W <= 50 runs are the map's cells
    "sens_h128_alone": "authority_map/arithmetic/runs/sens_t07_h128/seed0",
    "sens_h256_alone": "authority_map/arithmetic/runs/sens_t07_h256/seed0",
    "c2_h128_alone": "authority_map/arithmetic/runs/c2_t07_h128/seed0",
    "sens_h128_w50": "authority_map/arithmetic/runs/sens_t07_fb_h128/seed0",
    "sens_h256_w50": "authority_map/arithmetic/runs/sens_t07_fb_h256/seed0",
    "c2_h128_w50": "authority_map/arithmetic/runs/c2_t07_fb_h128/seed0",
    "sens_h128_w3": "fallback_handoff/runs/sens_h128_w3",
    "sens_h256_w3": "fallback_handoff/runs/sens_h256_w3",
    "c2_h128_w3": "fallback_handoff/runs/c2_h128_w3",
}


def render_fallback_handoff() -> str:
    """docs/methods.md: with ``auto_fallback: bonus``, the steps between the first crossing and the bonus's first
    step, the rolling band and pass@1 / pass@8, at the default ``auto_w_max`` 50 (the authority map's arithmetic
    cells) and at 3 (docs/results/fallback_handoff: summary.json and each run's metrics)."""
    summary = load_json("fallback_handoff/summary.json")
    lines = []
    for what, key in HANDOFF_PAIRS:
        parts = []
        for w in ("w50", "w3"):
            label = f"{key}_{w}"
            if label not in summary:
                continue
            s, rows = summary[label], load_metrics(f"{HANDOFF_RUNS[label]}/metrics.jsonl.gz")
            w_max = yaml.safe_load((RESULTS / HANDOFF_RUNS[label] / "config.yaml").read_text())["auto_w_max"]
            first_bonus = next((r["step"] for r in rows if r.get("control/entropy_coef", 0.0) > 0), None)
            wait = "never acted" if first_bonus is None else (
                f"first acted {first_bonus - s['first_crossing_step']} steps after the first crossing")
            parts.append(f"W ≤ {w_max:g}: the 21-step mean in the band on "
                         f"{100 * s['band_fraction_smoothed']:.1f} % of steps, the bonus {wait}, step noise "
                         f"{s['noise_pct_of_target']:.1f} % of the target, pass@1 {s['pass@1']:.3f}, pass@8 "
                         f"{s['pass@k']:.3f}")
        alone = summary[f"{key}_alone"]
        lines.append(f"- **{what}** (the selection alone, W ≤ 50: {100 * alone['band_fraction_smoothed']:.1f} %, "
                     f"pass@1 {alone['pass@1']:.3f}): " + "; ".join(parts) + ".")
    return "\n".join(lines)


def render_authority_map() -> str:
    """docs/controller.md "The authority map": what the authority map (studies/authority_map, issue #46) supports (so
    far, while it is not complete), from ``docs/results/authority_map/authority_map.json``. Two tables, a row per task and target: which cells
    hold their target (rule H for the selection alone; rules F, F3 and F3s for each fallback's pairs) with the range
    of their rolling band, and what each costs in pass@1 / pass@8; then rule D's reading (where to turn the fallback
    on by hand while it reads none: the README's ``authority-map-readme``)."""
    a = load_json("authority_map/authority_map.json")
    rules = a["rules"]
    provisional = rules["D_amended"]["provisional"]  # until the map is complete
    settings = (("F", "+ bonus, W ≤ 50"), ("F3", "+ bonus, W ≤ 3"), ("F3s", "+ bonus, W ≤ 3, span log 50"))
    head = ("| task (hidden), target | selection alone (C2 or `stare_sensitivity`, `auto`) | "
            + " | ".join(name for _, name in settings) + " |\n|---|---|---|---|---|")
    held_rows, cost_rows = [], []
    for task, t in a["tasks"].items():
        cells = {n: c for n, c in t["cells"].items() if c["state"] == "finished" and c["scored"]}
        grpo = {c["slot"]["width"]: {k: statistics.mean(x[k] for x in c["seeds"].values()) for k in ("pass@1", "pass@k")}
                for c in cells.values() if c["slot"]["actuator"] == "grpo"}
        alone = {n: c for n, c in cells.items() if _selection_alone(c)}
        for target in sorted({c["slot"]["target"] for c in alone.values()}, reverse=True):
            mine = {n: c for n, c in alone.items() if c["slot"]["target"] == target}
            widths = ", ".join(map(str, sorted({c["slot"]["width"] for c in mine.values()})))
            holds = sum(rules["H"][f"{task}/{n}"]["verdict"] == "holds" for n in mine)
            held = [f"held {holds} of {len(mine)} ({span_text([100 * c['reading']['rolling'] for c in mine.values()])} %)"]
            vs = {k: [100 * (c["reading"][k] - grpo[c["slot"]["width"]][k]) for c in mine.values()
                      if c["slot"]["width"] in grpo] for k in ("pass@1", "pass@k")}
            cost = [f"{span_text(vs['pass@1'], '{:+.1f}')} / {span_text(vs['pass@k'], '{:+.1f}')} vs GRPO" if vs["pass@1"]
                    else "-"]
            for rule, _ in settings:
                planned = [f for k, f in rules.get(rule, {}).items()
                           if k.startswith(f"{task} ") and k.endswith(f" {target}")]
                pairs = [f for f in planned if "rescue" in f]
                if not pairs:  # phases B3 and B3s run at 0.7x only
                    held.append("not run yet" if planned else "not in the map")
                    cost.append("-")
                    continue
                band = span_text([100 * t["cells"][f["with"].split("/", 1)[1]]["reading"]["rolling"] for f in pairs])
                twins = sum(bool(t["cells"][f["with"].split("/", 1)[1]].get("twin_seeds")) for f in pairs)
                held.append(f"held {sum(bool(f['with_fallback_holds']) for f in pairs)} of {len(pairs)} ({band} %), "
                            f"rescued {sum(f['verdict'] == 'rescues' for f in pairs)}"
                            + (f"; {twins} by rule T" if twins else ""))
                cost.append(f"{span_text([f['d_pass@1_points'] for f in pairs], '{:+.1f}')} / "
                            f"{span_text([f['d_pass@k_points'] for f in pairs], '{:+.1f}')} vs alone")
            row = f"| `{task}` ({widths}), {target} | "
            held_rows.append(row + " | ".join(held) + " |")
            cost_rows.append(row + " | ".join(cost) + " |")
    r = _authority_rules()
    lines = [f"The authority map{' so far' if provisional else ''} (issue #46, pre-registered; {_map_progress(a)}; [its table](results/authority_map/authority_map.md)). \"Held k of n\": of n "
             f"finished cells (with a fallback: pairs), k kept the 21-step mean of the batch entropy within ±10 % of the target on ≥ {100 * r.HOLD:.0f} % of steps after "
             "the first crossing (rule H; in brackets, that share's range over the cells); \"rescued\": of the pairs "
             "where the selection alone does not hold, those where the fallback holds or adds "
             f"≥ {r.RESCUE_POINTS:.0f} points of that share (rule F, "
             "[HYPOTHESES.md](../studies/authority_map/HYPOTHESES.md#rules)); \"by rule T\": fallback cells not run, "
             "being their twin without the fallback step for step (its demand never reached the hand-off bound):",
             "", head, *held_rows, "",
             "pass@1 / pass@8 change in points (the selection alone against GRPO at the same width; with the "
             "fallback, against the selection alone):", "", head, *cost_rows, ""]
    both = []  # the cost of the second actuator: against the selection alone where both hold their target
    for rule, name in settings:
        pairs = [f for f in rules.get(rule, {}).values() if f.get("selection_alone_holds") and f.get("with_fallback_holds")]
        if pairs:
            task_cell = [f["with"].split("/", 1) for f in pairs]
            acted = sum(any((x.get("bonus_acted_steps") or 0) > 0 for x in a["tasks"][task]["cells"][cell]["seeds"].values())
                        for task, cell in task_cell)
            both.append(f"{name.removeprefix('+ ')}: {len(pairs)} pair{'s' if len(pairs) > 1 else ''} (the bonus acted "
                        f"in {acted}), "
                        f"{span_text([f['d_pass@1_points'] for f in pairs], '{:+.1f}')} / "
                        f"{span_text([f['d_pass@k_points'] for f in pairs], '{:+.1f}')}")
    lines += ["Where both hold (the selection alone and with the fallback), the fallback's pass@1 / pass@8 change "
              "against the selection alone: " + ("; ".join(both) if both else "no such pair yet") + ".", ""]
    d, a = rules["D"], rules["D_amended"]
    bound = "" if a["hand_off_w"] is None else f" with the hand-off at W {a['hand_off_w']:g}" + (
        f" and the bonus's span {a['bonus_span']}" if a.get("bonus_span") else "")
    lines.append(f"Rule D (`auto_fallback`'s default){' so far' if a['provisional'] else ''}: **{a['verdict']}**"
                 f"{bound}. "
                 f"With W ≤ 50, on {r.pairs_phrase(d)}, the fallback rescues "
                 f"{len(d['rescued'])} of the {len(d['misses'])} where the selection alone misses and costs "
                 f"{len(d['costs'])} of the {len(d['selection_holds'])} where it holds"
                 + _d3_clause(rules["D3"], "W ≤ 3 (phase B3)")
                 + _d3_clause(rules["D3s"], "W ≤ 3 and the bonus's span log 50 (phase B3s)")
                 + " (`bonus` needs ≥ 3 misses, ≥ 2/3 rescued, no cost)"
                 + ("; provisional: the library's default stays `none` until the map is complete." if a["provisional"]
                    else "."))
    return "\n".join(lines)


def render_authority_map_readme() -> str:
    """README "Which setting to start with": the authority map (studies/authority_map, issue #46) as one table, from
    ``docs/results/authority_map/authority_map.json``. A row per task and target: how many cells the selection alone
    held (rule H); per fallback bound with a pair measured, how many of its cells held with the bonus, how many of the
    selection's misses it rescued and of its holds it cost (rule F, as rule D counts them), naming the cells where
    only some did. Then each bound's pass@1 change on the misses it rescued, rule D's reading and, while it reads
    none, the tasks where a bound rescued every miss. The tables behind it are docs/controller.md's
    ``authority-map`` block."""
    a = load_json("authority_map/authority_map.json")
    rules, r = a["rules"], _authority_rules()
    provisional = rules["D_amended"]["provisional"]
    alone: dict[tuple[str, str], list[bool]] = {}  # (task, target) -> rule H per finished selection-alone cell
    for task, t in a["tasks"].items():
        for name, c in t["cells"].items():
            if c["state"] == "finished" and c["scored"] and _selection_alone(c):
                alone.setdefault((task, c["slot"]["target"]), []).append(rules["H"][f"{task}/{name}"]["verdict"] == "holds")
    bounds = [b for b in (("D", "F", "W ≤ 50"), ("D3", "F3", "W ≤ 3"), ("D3s", "F3s", "W ≤ 3, span log 50"))
              if rules[b[0]]["pairs_measured"]]
    order = list(a["tasks"])
    rows = [f"| `{task}`, {target} | {sum(held)} of {len(held)} | "
            + " | ".join(_bound_cell(rules, d_rule, f_rule, task, target) for d_rule, f_rule, _ in bounds) + " |"
            for (task, target), held in sorted(alone.items(),  # the map's task order, the higher target first
                                               key=lambda kv: (order.index(kv[0][0]), -float(kv[0][1].rstrip("x"))))]
    lines = [f"**Where the autopilot holds its target**: the authority map (issue #46, pre-registered: the tiny model "
             f"on 3 tasks at 3 widths, C2 and `stare_sensitivity` with `weight_control=\"auto\"`; "
             f"{'so far ' if provisional else ''}{_map_progress(a)}). Per task and target, of its cells: how many "
             "held the target with the selection alone, and with the second actuator (`auto_fallback=\"bonus\"`) at "
             "each hand-off bound, how many held, how many of the selection's misses it rescued and of its holds it "
             "cost:", "",
             "| task, target | selection alone: held | " + " | ".join(f"+ bonus, {name}" for *_, name in bounds)
             + " |", "|---|---|" + "---|" * len(bounds), *rows, ""]
    drops = []
    for d_rule, f_rule, name in bounds:
        drop = [rules[f_rule][k]["d_pass@1_points"] for k in rules[d_rule]["rescued"]]
        if drop:
            drops.append(f"{name}: {span_text(drop, '{:+.1f}')}")
    lines.append(f"A cell holds when the 21-step mean of the batch entropy is within ±10 % of the target on "
                 f"≥ {100 * r.HOLD:.0f} % of steps after the first crossing (rule H). The bonus rescues a miss where it "
                 f"holds the cell or adds ≥ {r.RESCUE_POINTS:.0f} points of that share, and costs a hold where the "
                 f"share falls by more than {r.COST_BAND_POINTS:.0f} points or pass@1 by more than "
                 f"{r.COST_PASS1_POINTS:.0f} (rule F)"
                 + (f"; on the misses it rescued, its pass@1 against the selection alone: {'; '.join(drops)} points"
                    if drops else "") + ".")
    v = rules["D_amended"]
    counts = "; ".join(f"{name}: rescued {len(rules[d_rule]['rescued'])} of {len(rules[d_rule]['misses'])} and cost "
                       f"{len(rules[d_rule]['costs'])} of {len(rules[d_rule]['selection_holds'])}"
                       for d_rule, _, name in bounds)
    criterion = (f"`bonus` needs ≥ {r.D_MIN_MISSES} misses, ≥ {Fraction(r.D_SHARE).limit_denominator(10)} of them rescued and no "
                 f"cost{'; ' + counts if counts else ''}")
    if v["verdict"] == "none":
        whole = []  # per task with a miss: the bounds that rescued every one of its misses
        for task in a["tasks"]:
            names = [name for d_rule, _, name in bounds
                     if (m := [k for k in rules[d_rule]["misses"] if k.split()[0] == task])
                     and all(k in rules[d_rule]["rescued"] for k in m)]
            if names:
                whole.append(f"`{task}` with " + ("every bound" if len(names) == len(bounds) > 1 else
                                                   " and with ".join(names)))
        lines += ["", f"So `auto_fallback` is off by default (rule D{' so far' if provisional else ''}: none; "
                  f"{criterion}). Turn it on by hand where W sits at its bound and the table shows a rescue"
                  + (f"; it rescued every miss of {', and of '.join(whole)}" if whole else "") + "."]
    else:
        lines += ["", f"So `auto_fallback` defaults to `{v['verdict']}` with the hand-off at W {v['hand_off_w']:g}"
                  + (f" and the bonus's span {v['bonus_span']}" if v.get("bonus_span") else "")
                  + f" (rule D: {criterion})."]
    lines += ["", "The tables with each setting's pass@1 and pass@8 cost and the band's range: "
              "[docs/controller.md](docs/controller.md#the-authority-map-issue-46); every cell's values, and why each "
              "miss misses: [authority_map.md](docs/results/authority_map/authority_map.md)."]
    return "\n".join(lines)


def _bound_cell(rules: dict, d_rule: str, f_rule: str, task: str, target: str) -> str:
    """One fallback bound at one task and target, for the README's table: of its measured pairs, how many held with
    the bonus (rule H on the fallback cell), how many of the selection's misses it rescued and of its holds it cost
    (rule D's lists), naming the cells (width, actuator) where only some did; pairs planned but not run yet."""
    mine = lambda keys: [k for k in keys if k.split()[0] == task and k.split()[3] == target]  # noqa: E731
    planned = [k for k in mine(rules.get(f_rule, {}))  # rule R keeps some pairs out of the map: not planned
               if not str(rules[f_rule][k].get("verdict", "")).startswith("skipped")]
    if not planned:
        return "not in the map"
    measured = [k for k in planned if "rescue" in rules[f_rule][k]]
    if not measured:
        return "not run yet"
    d = rules[d_rule]
    parts = [f"held {sum(bool(rules[f_rule][k]['with_fallback_holds']) for k in measured)} of {len(measured)}"]
    for verb, hits, of in (("rescued", mine(d["rescued"]), mine(d["misses"])),
                           ("cost", mine(d["costs"]), mine(d["selection_holds"]))):
        if of:
            parts.append(f"{verb} {len(hits)} of {len(of)}" + (
                f" ({', '.join(_cell_name(k) for k in _by_width(hits))})" if 0 < len(hits) < len(of) else ""))
    if len(measured) < len(planned):
        parts.append(f"{len(planned) - len(measured)} not run yet")
    return "; ".join(parts)


def _by_width(keys: list[str]) -> list[str]:
    """Rule F's pair keys (``"arithmetic h64 C2 0.7x"``) by width, then actuator."""
    return sorted(keys, key=lambda k: (int(k.split()[1][1:]), k.split()[2]))


def _cell_name(key: str) -> str:
    """A pair key's width and actuator: ``"h64 C2"``."""
    return " ".join(key.split()[1:3])


def render_fallback_bounds_readme() -> str:
    """README "Which setting to start with": the fallback's bullet, with which of its two hand-off bounds held more
    cells at 0.7x on each task: over the pairs with both finished (phase B3, W <= 3, against phase B, W <= 50; the F3
    pairs' ``against_b``), the cells each bound held (rule H). Read from
    ``docs/results/authority_map/authority_map.json`` (seed means), so a seed that turns a cell turns the sentence;
    the counts themselves are the README's table (block ``authority-map-readme``)."""
    a = load_json("authority_map/authority_map.json")
    rules = a["rules"]
    by_task: dict[str, list[tuple[bool, bool]]] = {}
    for key, f in rules.get("F3", {}).items():
        b = f.get("against_b") or {}
        if b.get("d_rolling_points") is None:
            continue  # a cell of the pair not finished
        by_task.setdefault(key.split()[0], []).append(
            (rules["H"][f["with"]]["verdict"] == "holds", rules["H"][b["b"]]["verdict"] == "holds"))
    more: dict[str, list[str]] = {"W ≤ 3": [], "W ≤ 50": [], "neither": []}
    for task in a["tasks"]:
        if task in by_task:
            w3, w50 = (sum(p[i] for p in by_task[task]) for i in (0, 1))
            more["W ≤ 3" if w3 > w50 else "W ≤ 50" if w50 > w3 else "neither"].append(f"`{task}`")
    said = ""
    if by_task:
        parts = [f"{bound} on {', '.join(tasks)}" for bound, tasks in more.items() if tasks and bound != "neither"]
        tie = f", as many with either on {', '.join(more['neither'])}" if more["neither"] else ""
        where = "the authority map at 0.7x, the bound that held more cells was " + "; ".join(parts or ["neither"])
        said = (f"Which bound works depends on the task: in {where}" if len(parts) > 1 else f"In {where}") + (
            f"{tie} (the table below). ")
    return ("- If W still sits at its bound (its selection has run out of tokens to act on, as on a wider model of the "
            "arithmetic task), `auto_fallback=\"bonus\"` hands the rest of the demand to an entropy bonus at the same "
            f"target, once W reaches `auto_w_max`. {said}How it works, and `auto_bonus_span` (the bonus's own span, "
            "log 50 with W ≤ 3): "
            "[docs/methods.md](docs/methods.md#when-the-selection-runs-out-of-authority-auto_fallback-bonus).")


def render_bonus_span() -> str:
    """docs/methods.md, "A span of its own": per pair measured in the authority map's phase B3s, the cell with
    ``auto_w_max`` 3 alone (B3) beside the same cell with ``auto_bonus_span`` log 50 (B3s): the rolling band, the
    step entropy's peak over the target from the first crossing, the largest bonus coefficient and pass@1 (means
    over each cell's finished seeds, n stated); then how many pairs each holds (rule H) and where the span lowered
    the peak (``docs/results/authority_map/authority_map.json``: its F3s pairs name both cells)."""
    a = load_json("authority_map/authority_map.json")
    f3s = {k: f for k, f in a["rules"].get("F3s", {}).items() if "rescue" in f}
    if not f3s:
        return "No pair of phase B3s has been measured yet."

    def values(ref: str) -> dict:
        task, name = ref.split("/", 1)
        c = a["tasks"][task]["cells"][name]
        seeds = list(c["seeds"].values())
        return {"band": 100 * c["reading"]["rolling"], "n": c["reading"]["n"], "pass@1": c["reading"]["pass@1"],
                **{k: statistics.mean(x[k] for x in seeds) for k in ("peak_over_target", "bonus_coef_max")}}

    def show(v: dict) -> str:
        return (f"{v['band']:.1f} % (peak {v['peak_over_target']:.2f}x, largest c {v['bonus_coef_max']:.2f}, "
                f"pass@1 {v['pass@1']:.3f}, n {v['n']})")

    order = list(a["tasks"])  # the map's task order, then width, then actuator (keys: "task hW actuator target")
    lines, held, lower = [], {"B3": 0, "B3s": 0, "both": 0}, 0
    for key, f in sorted(f3s.items(), key=lambda kv: (order.index(kv[0].split()[0]), int(kv[0].split()[1][1:]),
                                                       kv[0].split()[2])):
        b3, b3s = values(f["against_b"]["b"]), values(f["with"])
        h3, h3s = a["rules"]["H"][f["against_b"]["b"]]["verdict"] == "holds", bool(f["with_fallback_holds"])
        held["B3"], held["B3s"], held["both"] = held["B3"] + h3, held["B3s"] + h3s, held["both"] + (h3 and h3s)
        lower += b3s["peak_over_target"] < b3["peak_over_target"]
        lines.append(f"- `{key}`: W ≤ 3 {show(b3)}; with the span {show(b3s)}.")
    return "\n".join([*lines, "",
                      f"Of these {len(f3s)} pairs, the 21-step mean held the band (≥ {100 * _authority_rules().HOLD:.0f} "
                      f"% of steps) in {held['B3']} with W ≤ 3 alone and in {held['B3s']} with the span (in both: "
                      f"{held['both']}); the span "
                      f"lowered the step entropy's peak in {lower}."])


def _selection_alone(cell: dict) -> bool:
    """A map cell of STARE C2 or `stare_sensitivity` with `auto` and no fallback (not GRPO, not a fallback's pair)."""
    return cell["slot"]["actuator"] != "grpo" and cell["slot"]["fallback"] == "none"


def _map_progress(a: dict) -> str:
    """How far the authority map is: its seed-0 cells, then rule S's extra seeds (1 and 2 for each close cell) once
    any cell is close: those run or read by rule T from the twin's run."""
    skipped = a.get("seed0_skipped", [])
    text = f"seed 0, {a['n_seed0_finished']} of {a['n_seed0_cells'] - len(skipped)} cells"
    if skipped:  # planned, but phase C does not run where GRPO's entropy never falls to 0.5x (rule R)
        by_task = {}
        for x in skipped:
            by_task.setdefault(x.split("/")[0], []).append(x)
        text += (f" ({len(skipped)} more planned are not in it: rule R does not hold where they would run, "
                 + ", ".join(f"{len(v)} of `{t}`" for t, v in by_task.items()) + ")")
    close = [(task, name) for task, names in a["rules"].get("S", {}).items() for name in names]
    if close:
        done = sum(len({*c["reading"]["seeds"], *c.get("twin_seeds", [])} - {0}) if c["reading"] else 0
                   for c in (a["tasks"][task]["cells"][name] for task, name in close))
        r = _authority_rules()
        text += (f"; rule S adds seeds 1 and 2 to the {len(close)} close cells (a band in [{100 * r.CLOSE[0]:.0f}, "
                 f"{100 * r.CLOSE[1]:.0f}) % or a pair's gain in [{r.CLOSE_D[0]:.0f}, {r.CLOSE_D[1]:.0f}) points), "
                 f"{done} of {2 * len(close)} finished; a value is the mean over a cell's finished seeds")
    return text


def _authority_rules():
    """studies/authority_map/authority_rules.py (pure, no stare_rl import), loaded by path: its registered thresholds."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("authority_rules_for_docs",
                                                  ROOT / "studies" / "authority_map" / "authority_rules.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _d3_clause(d3: dict, how: str) -> str:
    """Rule D's criterion on phase B3's (or B3s's) pairs, ``how`` naming it, once one of them is measured."""
    if not d3["pairs_measured"]:
        return f"; with {how}, 0 of {d3['pairs_planned']} pairs measured yet"
    return (f"; with {how}, on {_authority_rules().pairs_phrase(d3)}, it rescues "
            f"{len(d3['rescued'])} of {len(d3['misses'])} and costs {len(d3['costs'])} of "
            f"{len(d3['selection_holds'])}")


def methods_handoff_overshoot_numbers() -> list[str]:
    """methods.md's reading of phase B3 on countdown at hidden 512 (``stare_sensitivity``): the step entropy's peak
    over the target (the cell's committed metrics) and the 21-step mean's mean over the target (authority_map.json)."""
    cell = "countdown/runs/sens_t07_fb3_h512/seed0"
    rows = [json.loads(x) for x in gzip.open(RESULTS / "authority_map" / cell / "metrics.jsonl.gz", "rt") if x.strip()]
    target = rows[-1]["control/target_entropy"]
    peak = max(r["control/batch_entropy"] for r in rows) / target
    c_max = max(r["control/entropy_coef"] for r in rows)
    mean = load_json("authority_map/authority_map.json")["tasks"]["countdown"]["cells"]["sens_t07_fb3_h512"]
    return [f"the bonus rose within a few steps (to {c_max:g} at its highest)",
            f"{peak:.2f}x the target at its highest), and the demand fell back to 0",
            f"The 21-step mean sat at {mean['seeds']['0']['mean_over_target']:.2f}x the target on average"]


def auto_fallback_readme_numbers() -> list[str]:
    """auto_fallback/README.md: the shared warm start (each run's config.yaml and eval_initial.json) and the steps the
    bonus sat at its bound in ``bonus`` (its metrics, as block ``auto-fallback`` counts them)."""
    runs = ("none", "bonus", "bonus_max1")
    cfg = {r: yaml.safe_load((RESULTS / "auto_fallback" / "runs" / r / "config.yaml").read_text()) for r in runs}
    greedy = {load_json(f"auto_fallback/runs/{r}/eval_initial.json")["greedy_acc"] for r in runs}
    assert len(greedy) == 1 and len({(c["tiny_hidden_size"], c["warmstart_max_steps"]) for c in cfg.values()}) == 1
    bound = float(cfg["bonus"]["auto_bonus_max"])
    coef = [r.get("control/entropy_coef", 0.0) for r in load_metrics("auto_fallback/runs/bonus/metrics.jsonl.gz")]
    return [f"seed 0, {cfg['none']['max_steps']} steps",
            f"(hidden {cfg['none']['tiny_hidden_size']}, SFT at 1e-3, held-out greedy {greedy.pop():.1f} after "
            f"{cfg['none']['warmstart_max_steps']} steps)",
            f"sat at its bound {bound:g} for {sum(c >= bound * (1 - 1e-9) for c in coef)} steps in\n  `bonus`"]


def fallback_handoff_readme_numbers() -> list[str]:
    """fallback_handoff/README.md: where the map's W <= 50 `stare_sensitivity` cell (hidden 128) lost its steps (the
    first crossing, the step from which its 21-step mean stays in the band), the steps its C2 twin's bonus sat at
    its bound, and how often W exceeded 3 where the selection alone held countdown (the map's committed cells)."""
    sens = load_metrics(f"{HANDOFF_RUNS['sens_h128_w50']}/metrics.jsonl.gz")
    target = sens[-1]["control/target_entropy"]
    h = [r["control/batch_entropy"] for r in sens]
    smooth = centred21(h)
    inside = [abs(m - target) <= 0.1 * target + 1e-12 for m in smooth]
    settled = next(i for i in range(len(inside)) if all(inside[i:])) + 1  # the logged step (steps start at 1)
    first = load_json("fallback_handoff/summary.json")["sens_h128_w50"]["first_crossing_step"]
    c2 = load_metrics(f"{HANDOFF_RUNS['c2_h128_w50']}/metrics.jsonl.gz")
    bound = yaml.safe_load((RESULTS / HANDOFF_RUNS["c2_h128_w50"] / "config.yaml").read_text())["auto_bonus_max"]
    at_bound = sum(r.get("control/entropy_coef", 0.0) >= bound * (1 - 1e-9) for r in c2)
    above = []
    for cell in ("c2_t07_h128", "sens_t07_h128", "c2_t07_h256", "sens_t07_h256"):
        w = [r["control/reweight_w"] for r in load_metrics(f"authority_map/countdown/runs/{cell}/seed0/metrics.jsonl.gz")]
        above.append(100 * sum(x > 3 for x in w) / len(w))
    return [f"From step {settled} on", f"(step {first}) and step {settled}", f"bound {bound:.1f} for {at_bound} steps",
            f"W above 3 on {min(above):.0f}-{max(above):.0f} % of its steps"]


BLOCKS = {  # name -> (page, renderer)
    "auto-fallback": ("docs/methods.md", render_auto_fallback),
    "fallback-handoff": ("docs/methods.md", render_fallback_handoff),
    "bonus-span": ("docs/methods.md", render_bonus_span),
    "authority-map": ("docs/controller.md", render_authority_map),
    "authority-map-readme": ("README.md", render_authority_map_readme),
    "fallback-bounds-readme": ("README.md", render_fallback_bounds_readme),
}


def inline_checks() -> list[tuple[str, str]]:
    """(page, text) quoted in running text from the fallback's runs and the map."""
    return [*(("docs/methods.md", text) for text in methods_handoff_overshoot_numbers()),
            *(("docs/results/auto_fallback/README.md", text) for text in auto_fallback_readme_numbers()),
            *(("docs/results/fallback_handoff/README.md", text) for text in fallback_handoff_readme_numbers())]
