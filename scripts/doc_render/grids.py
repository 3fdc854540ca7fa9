"""The two method grids, `countdown` and `countdown_cot` (`stare compare`; docs/evidence.md, docs/compare.md)."""

from __future__ import annotations

import json
import re
import statistics

from .common import (
    RESULTS,
    gain_points,
    grid_metrics,
    int_range_text,
    load_json,
    load_metrics,
    mean_std,
    signed,
    thousands,
    weight_control_series,
)
from .frontier import frontier


def _grid_row(m: dict, cols: list[tuple[str, float, int]]) -> list[str]:
    out = []
    for key, scale, digits in cols:
        v = m["metrics"].get(key)
        out.append("–" if v is None else f"{v['mean'] * scale:.{digits}f} ± {v['std'] * scale:.{digits}f}")
    return out


COUNTDOWN_LABELS = {
    "warm_start": "warm start, no RL", "grpo": "GRPO (clip 0.2/0.2)", "dapo": "DAPO (clip-higher + dynamic sampling)",
    "stare_o1": "STARE O1, paper defaults", "stare_c2": "STARE C2, paper defaults", "steer": "STEER (exp, λ_min 0.8)",
    "stare_c2_w3": "STARE C2, W 3 / M 0.2 (tiny-scale setting, ours)", "stare_adaptive": "STARE, adaptive W/M schedule",
    "stare_sens": "**extension**: sensitivity-selected STARE, paper weights", "stare_sens_w3": "**extension**, W 3 / M 0.2",
    "clip_cov": "Clip-Cov", "kl_cov": "KL-Cov", "entropy_fixed": "entropy bonus, fixed",
    "entropy_adaptive": "entropy bonus, adaptive", "high_entropy": "80/20 high-entropy mask",
}


def render_countdown_table() -> str:
    d = load_json("compare/results.json")
    by = {m["method"]: m for m in d["methods"]}
    start = by["grpo"]["metrics"]["entropy_start"]["mean"]
    out = [f"| method | seeds | final entropy (start {start:.2f}) | steps in ±{100 * d['band']:.0f} % band % "
           "| held-out pass@1 (avg@8) % | held-out pass@8 % |", "|---|---:|---:|---:|---:|---:|"]
    cols = [("entropy_final", 1, 3), ("in_band_frac", 100, 1), ("avg@k", 100, 1), ("pass@k", 100, 1)]
    for name, label in COUNTDOWN_LABELS.items():
        out.append(f"| {label} | {by[name]['seeds']} | " + " | ".join(_grid_row(by[name], cols)) + " |")
    assert set(COUNTDOWN_LABELS) == set(by), set(by) ^ set(COUNTDOWN_LABELS)
    return "\n".join(out)


COT_LABELS = {
    "warm_start": "warm start, no RL", "grpo": "GRPO", "dapo": "DAPO (clip-higher + refill)",
    "stare_o1": "STARE O1, paper defaults", "stare_c2": "STARE C2, paper defaults",
    "stare_auto": "STARE C2, `weight_control: auto`", "steer": "STEER", "clip_cov": "Clip-Cov (`num_iterations: 2`)",
    "kl_cov": "KL-Cov (`num_iterations: 2`)", "vanilla_it2": "their control: vanilla, `num_iterations: 2`",
    "high_entropy": "80/20 high-entropy mask", "entropy_adaptive": "adaptive entropy bonus", "entropic": "EntroPIC",
}


def render_cot_table() -> str:
    d = load_json("compare_cot/results.json")
    by = {m["method"]: m for m in d["methods"]}
    out = ["| method | seeds | held-out entropy | held-out pass@1 % | held-out pass@32 % |", "|---|---:|---:|---:|---:|"]
    cols = [("eval_entropy", 1, 3), ("avg@k", 100, 1), ("pass@k", 100, 1)]
    for name, label in COT_LABELS.items():
        out.append(f"| {label} | {by[name]['seeds']} | " + " | ".join(_grid_row(by[name], cols)) + " |")
    assert set(COT_LABELS) == set(by), set(by) ^ set(COT_LABELS)
    return "\n".join(out)


def render_countdown_reading() -> str:
    by = grid_metrics("compare/results.json")
    g, w = by["grpo"], by["warm_start"]
    strong = ("stare_c2_w3", "stare_sens_w3")
    band = [100 * by[m]["in_band_frac"]["mean"] for m in strong]
    dk = [gain_points(by, m, "pass@k") for m in strong]
    d1 = [gain_points(by, m, "avg@k") for m in strong]
    paper = ("stare_o1", "stare_c2", "steer", "stare_sens")
    pos_high = [100 * by[m]["quadrant/pos_high_frac"]["mean"] for m in ("grpo", *paper)]
    kl_same = all(by["kl_cov"][k]["values"] == g[k]["values"] for k in ("avg@k", "pass@k", "entropy_final"))
    return (
        f"- **The collapse is real at this scale**: GRPO raises pass@1 ({100 * w['avg@k']['mean']:.1f} → "
        f"{100 * g['avg@k']['mean']:.1f}) while pass@8 falls from\n  {100 * w['pass@k']['mean']:.1f} to "
        f"{100 * g['pass@k']['mean']:.1f}: exploration is traded away. GRPO's final entropy is "
        f"{100 * g['entropy_ratio']['mean']:.0f} % of its start (the issue's < 30 %\n  target was not reached in 200 "
        f"steps).\n"
        f"- **At the papers' weights (W 1.1, M 0.9) STARE, STEER and our extension are within the seed spread of GRPO**"
        f"\n  on this model (pass@1 {', '.join(signed(gain_points(by, m, 'avg@k')) for m in paper)}, pass@8 "
        f"{', '.join(signed(gain_points(by, m, 'pass@k')) for m in paper)} for STARE O1, C2,\n  STEER and the extension): "
        f"the quadrant diagnostics show why: only {min(pos_high):.2f}-{max(pos_high):.2f} % of tokens are "
        f"entropy-raising with A > 0,\n  so L+ is mostly sharpening tokens.\n"
        f"- **With stronger weights (W 3 / M 0.2) STARE holds the ±25 % band** ({min(band):.1f}-{max(band):.1f} % of "
        f"steps) and keeps pass@8\n  {signed(min(dk))} to {signed(max(dk))} points over GRPO, but pays "
        f"{signed(max(d1))} to {signed(min(d1))} points of pass@1; the adaptive W/M schedule is the best\n  balance "
        f"here (pass@8 {signed(gain_points(by, 'stare_adaptive', 'pass@k'))}, pass@1 "
        f"{signed(gain_points(by, 'stare_adaptive', 'avg@k'))}). No STARE setting beat GRPO on pass@1.\n"
        f"- Every cell does one update per batch (ratio ≡ 1), so clip settings and KL-Cov's penalty have no effect\n"
        f"  here: KL-Cov reproduced GRPO {'exactly, value for value' if kl_same else 'NOT exactly'}. "
        f"Comparing them needs `num_iterations ≥ 2`: see the next grid."
    )


def render_cot_reading() -> str:
    by = grid_metrics("compare_cot/results.json")
    g, w = by["grpo"], by["warm_start"]
    published = [m for m in by if m not in ("warm_start", "stare_auto")]
    ratios = [100 * by[m]["entropy_ratio"]["mean"] for m in published]
    ctl = "vanilla_it2"
    cov = {m: (gain_points(by, m, "avg@k", ctl), gain_points(by, m, "pass@k", ctl)) for m in ("clip_cov", "kl_cov")}
    return (
        f"GRPO reproduces the collapse's shape here: its entropy falls to {100 * g['entropy_ratio']['mean']:.0f} % of "
        f"its start, pass@32 falls\n{100 * (w['pass@k']['mean'] - g['pass@k']['mean']):.1f} points while pass@1 rises "
        f"{100 * (g['avg@k']['mean'] - w['avg@k']['mean']):.1f} and flattens "
        f"([calibration](results/countdown_cot/calibration.md)). No method at\nits published settings escapes it: "
        f"every cell but one ends at {min(ratios):.0f}-{max(ratios):.0f} % of the starting entropy (DAPO: pass@1 "
        f"{signed(gain_points(by, 'dapo', 'avg@k'))},\nseeing ~2x the samples; STARE O1 at the papers' weights: "
        f"{signed(gain_points(by, 'stare_o1', 'avg@k'))} / {signed(gain_points(by, 'stare_o1', 'pass@k'))}; the issue's "
        f"+3 / +5 targets are not met). The self-calibrating\ncontroller, aiming at the papers' absolute target 0.3 "
        f"(twice this policy's entropy), prevents the collapse and keeps\npass@32 near the warm start's level "
        f"({signed(gain_points(by, 'stare_auto', 'pass@k'))} over GRPO) at a cost of "
        f"{-gain_points(by, 'stare_auto', 'avg@k'):.1f} points of pass@1. Against their control\n(the same off-policy "
        f"updates without the covariance term), Clip-Cov is at pass@1 {signed(cov['clip_cov'][0], 2)} / pass@32 "
        f"{signed(cov['clip_cov'][1], 2)}\nand KL-Cov at {signed(cov['kl_cov'][0], 2)} / "
        f"{signed(cov['kl_cov'][1], 2)}, inside the seed spread."
    )


def countdown_rows() -> list[str]:
    """compare.md's countdown table ("What we saw"): each row's numeric tail (final batch entropy, final/start, steps
    in band, held-out avg@8, pass@8, greedy), from ``results.json``; DAPO's entropy columns carry the table's \\*."""
    out = []
    for m in load_json("compare/results.json")["methods"]:
        M = m["metrics"]
        tail = " | ".join(f"{M[k]['mean'] * 100:.1f} ± {M[k]['std'] * 100:.1f}" for k in ("avg@k", "pass@k", "greedy_acc"))
        if M["in_band_frac"] is None:
            out.append(f"| – | – | – | {tail} |")
            continue
        star = " \\*" if m["method"] == "dapo" else ""
        out.append(f"| {M['entropy_final']['mean']:.3f} ± {M['entropy_final']['std']:.3f}{star} | "
                   f"{M['entropy_ratio']['mean']:.2f}{star} | {100 * M['in_band_frac']['mean']:.1f} % | {tail} |")
    return out


def countdown_reading_numbers() -> list[str]:
    """compare.md's countdown prose ("What we saw", "Against the issue's targets"), from ``docs/results/compare/results.json``:
    gains over GRPO from the unrounded means, the collapse, the band fractions."""
    by = grid_metrics("compare/results.json")
    g = by["grpo"]
    paper = ("stare_o1", "stare_c2", "steer", "stare_sens")

    def d1(m: str) -> str:
        return signed(gain_points(by, m, "avg@k"))

    def dk(m: str) -> str:
        return signed(gain_points(by, m, "pass@k"))

    def mean(m: str, key: str, scale: float = 1.0) -> float:
        return by[m][key]["mean"] * scale

    p1 = [gain_points(by, m, "avg@k") for m in paper]
    pk = [gain_points(by, m, "pass@k") for m in paper]
    ef = [mean(m, "entropy_final") for m in paper]
    band = [mean(m, "in_band_frac", 100) for m in paper]
    min_ratio = statistics.mean(a / b for a, b in zip(g["entropy_min"]["values"], g["entropy_start"]["values"], strict=True))
    o1 = by["stare_o1"]
    gates = [mean(m, "stare/gate_on", 100) for m in ("stare_o1", "stare_c2")]
    c2w, sw = "stare_c2_w3", "stare_sens_w3"
    return [
        f"STARE C2 keeps the entropy at {mean(c2w, 'entropy_final'):.2f}",
        f"paper weights: **no** ({mean('stare_o1', 'in_band_frac', 100):.0f} % of steps); adaptive W/M: "
        f"{mean('stare_adaptive', 'in_band_frac', 100):.0f} %; W 3 / M 0.2: **yes** for C2 "
        f"({mean(c2w, 'in_band_frac', 100):.0f} %) and the extension ({mean(sw, 'in_band_frac', 100):.1f} %)",
        f"the gate switching off in {100 - mean(c2w, 'stare/gate_on', 100):.0f} % of steps) and the",
        f"gate off in {100 - mean(sw, 'stare/gate_on', 100):.0f} % of steps)",
        f"(L+ {mean(sw, 'stare/l_plus_frac', 100):.1f} % of tokens vs {mean(c2w, 'stare/l_plus_frac', 100):.1f} %; it "
        f"never up-weights an entropy-lowering token: mean token\nweight {mean(sw, 'stare/mean_weight'):.2f} vs "
        f"{mean(c2w, 'stare/mean_weight'):.2f})",
        f"although STARE's gate is on in {min(gates):.0f} % of steps",
        f"state's entropy: {mean('grpo', 'quadrant/pos_high_frac', 100):.1f} % of tokens; A<0 above it: "
        f"{mean('grpo', 'quadrant/neg_high_frac', 100):.1f} %)",
        f"surprisal, {o1['stare/l_plus_frac']['mean'] * 100:.1f} % of tokens) is mostly *entropy-lowering* tokens (it "
        f"carries {o1['quadrant/l_plus_share']['mean'] * 100:.0f} % of the summed |predicted",
        f"sampling entropy, which is comparable, is {mean_std(by['dapo']['eval_entropy']['values'], 1, 3)} vs GRPO's "
        f"{mean_std(g['eval_entropy']['values'], 1, 3)}.",
        f"GRPO's entropy falls from {mean('grpo', 'entropy_start'):.2f} to {mean('grpo', 'entropy_final'):.2f} "
        f"(minimum {mean('grpo', 'entropy_min'):.3f}) in 200 steps",
        f"held-out pass@1 rises {mean('warm_start', 'avg@k', 100):.0f} -> {mean('grpo', 'avg@k', 100):.0f} % and "
        f"**pass@8 falls {mean('warm_start', 'pass@k', 100):.0f} -> {mean('grpo', 'pass@k', 100):.0f} %**",
        f"final/start is {mean('grpo', 'entropy_ratio'):.2f} (the minimum is ~{min_ratio:.2f} of the start)",
        f"(final {min(ef):.2f}-{max(ef):.2f}, {min(band):.0f}-{max(band):.0f} % of steps in band,",
        f"against GRPO ({signed(min(p1))} to {signed(max(p1))} points",
        f"pass@1, {signed(min(pk))} to {signed(max(pk))} pass@8)",
        f"({mean('stare_c2_w3', 'entropy_ratio'):.2f} of start, {mean('stare_c2_w3', 'in_band_frac', 100):.0f} % of steps",
        f"extension at {mean('stare_sens_w3', 'entropy_final'):.2f} ({mean('stare_sens_w3', 'entropy_ratio'):.2f} of "
        f"start, {mean('stare_sens_w3', 'in_band_frac', 100):.1f} % in band",
        f"({dk('stare_c2_w3')} and {dk('stare_sens_w3')} points over GRPO",
        f"**lose pass@1** ({d1('stare_c2_w3')} and",
        f"{d1('stare_sens_w3')} points;",
        f"entropy ({mean('stare_sens', 'entropy_final'):.3f} vs {mean('stare_c2', 'entropy_final'):.3f} final, "
        f"{mean('stare_sens', 'in_band_frac', 100):.1f} vs {mean('stare_c2', 'in_band_frac', 100):.1f} % in band)",
        f"pass@8 ({mean_std(by['stare_sens']['pass@k']['values'], 100)} vs",
        f"{mean_std(by['stare_c2']['pass@k']['values'], 100)}) — within noise",
        f"more tightly than C2 ({mean('stare_sens_w3', 'in_band_frac', 100):.1f} vs "
        f"{mean('stare_c2_w3', 'in_band_frac', 100):.1f} %)",
        f"final entropy {mean('stare_adaptive', 'entropy_final'):.2f} ({mean('stare_adaptive', 'entropy_ratio'):.2f} of "
        f"start), pass@8 {mean('stare_adaptive', 'pass@k', 100):.1f} ({dk('stare_adaptive')} over GRPO) at pass@1 "
        f"{d1('stare_adaptive')}",
        f"({mean('high_entropy', 'entropy_final'):.2f}) at a pass@1 cost ({d1('high_entropy')})",
        f"**no**: {mean('grpo', 'entropy_ratio'):.2f} after 200 steps (minimum ≈ {min_ratio:.2f} of start)",
        f"adaptive W/M: {mean('stare_adaptive', 'in_band_frac', 100):.0f} %; W 3 / M 0.2: **yes** for C2 "
        f"({mean('stare_c2_w3', 'in_band_frac', 100):.0f} %) and the extension "
        f"({mean('stare_sens_w3', 'in_band_frac', 100):.1f} %)",
        f"(best: O1 {d1('stare_o1')}; W 3: {d1('stare_c2_w3')}; adaptive {d1('stare_adaptive')})",
        f"paper weights: **no** ({dk('stare_o1')} / {dk('stare_c2')}); adaptive W/M **yes** ({dk('stare_adaptive')}); "
        f"W 3: **yes** ({dk('stare_c2_w3')}; extension {dk('stare_sens_w3')})",
    ]


def cot_curve_rows() -> list[str]:
    """compare.md's countdown_cot table ("What ran"), each row's numeric tail: seeds | held-out entropy (curve at
    the last step) | / start (each seed's last curve entropy over its step-0 one) | pass@1 | pass@8 (curve) |
    pass@32, per method, from ``results.json`` and the cells' ``metrics.jsonl.gz``; the warm start's curve
    columns are the step-0 points (the same warm start in every cell of a seed: GRPO's cells)."""
    out = []
    grid = load_json("compare_cot/results.json")["methods"]
    curves = {}
    for m in grid:
        if m["method"] == "warm_start":
            continue
        curves[m["method"]] = [
            [r for r in load_metrics(f"compare_cot/runs/{m['method']}/{seed_dir.name}/metrics.jsonl.gz") if "eval/entropy" in r]
            for seed_dir in sorted((RESULTS / "compare_cot" / "runs" / m["method"]).glob("seed*"))]
    for m in grid:
        M = m["metrics"]
        held = f"{M['avg@k']['mean'] * 100:.1f} ± {M['avg@k']['std'] * 100:.1f}"
        pk = f"{M['pass@k']['mean'] * 100:.1f} ± {M['pass@k']['std'] * 100:.1f}"
        if m["method"] == "warm_start":
            first = [c[0] for c in curves["grpo"]]
            assert all(r["step"] == 0 for r in first)
            out.append(f"| {len(first)} | {statistics.mean(r['eval/entropy'] for r in first):.3f} (step 0) | – | {held} | "
                       f"{mean_std([r['eval/pass@8'] for r in first], 100)} (step 0) | {pk} |")
            continue
        cs = curves[m["method"]]
        ent = mean_std([c[-1]["eval/entropy"] for c in cs], 1, 3)
        ratio = mean_std([c[-1]["eval/entropy"] / c[0]["eval/entropy"] for c in cs], 100)
        p8 = mean_std([c[-1]["eval/pass@8"] for c in cs], 100)
        out.append(f"| {len(cs)} | {ent} | {ratio} % | {held} | {p8} | {pk} |")
    return out


def cot_reading_numbers() -> list[str]:
    """compare.md's countdown_cot prose ("Calibration", "Against the issue's targets", "What this shows"): each
    method's gain over GRPO from the unrounded means of ``docs/results/compare_cot/results.json``, the collapse's start and end
    (the warm start evaluated like every cell; the held-out curve's entropy at step 0 and 1 000)."""
    cot = grid_metrics("compare_cot/results.json")
    rows = {m: cot_curve_cells(m) for m in cot if m != "warm_start"}

    def g(m: str, key: str = "avg@k", base: str = "grpo") -> str:
        return signed(gain_points(cot, m, key, base))

    def k(m: str) -> str:
        return g(m, "pass@k")

    ratios = {m: statistics.mean(r) for m, r in rows.items()}
    ent0 = statistics.mean(c[0]["eval/entropy"] for c in curves_of("grpo"))
    ent1 = statistics.mean(c[-1]["eval/entropy"] for c in curves_of("grpo"))
    p8 = [(c[0]["eval/pass@8"], c[-1]["eval/pass@8"]) for c in curves_of("grpo")]
    up8 = [100 * (b - a) for a, b in p8 if b > a]
    ws, gr, au = cot["warm_start"], cot["grpo"], cot["stare_auto"]
    paired = [m for m in ratios if m != "stare_auto"]
    return [
        f"{100 * gr['entropy_ratio']['mean']:.0f} ± {100 * gr['entropy_ratio']['std']:.0f} % of its start (3 seeds)",
        f"on {sum(b < a for a, b in p8)} of {len(p8)} seeds only (mean {100 * statistics.mean(a for a, _ in p8):.1f} -> "
        f"{100 * statistics.mean(b for _, b in p8):.1f}, one seed",
        f"{signed(up8[0])}), and only {100 * gr['quadrant/pos_high_frac']['mean']:.2f} % of tokens",
        f"entropy {statistics.mean(rows['grpo']):.0f} ± {statistics.stdev(rows['grpo']):.0f} % of start, pass@32 "
        f"{100 * ws['pass@k']['mean']:.1f} -> {100 * gr['pass@k']['mean']:.1f}, pass@1 {100 * ws['avg@k']['mean']:.1f} -> "
        f"{100 * gr['avg@k']['mean']:.1f}",
        f"O1 paper defaults {g('stare_o1')} (3 seeds); C2 {g('stare_c2')}; auto {g('stare_auto')} (3 seeds)",
        f"O1 {k('stare_o1')}; C2 {k('stare_c2')}; auto **{k('stare_auto')}** | auto only (with {g('stare_auto')} pass@1)",
        f"Entropy {ent0:.2f} -> {ent1:.2f} ({ratios['grpo']:.0f} % of start), pass@1 {ws['avg@k']['mean']:.2f} -> "
        f"{gr['avg@k']['mean']:.2f}",
        f"while pass@32 falls {ws['pass@k']['mean']:.2f} -> {gr['pass@k']['mean']:.2f}",
        f"it trades {100 * (ws['pass@k']['mean'] - gr['pass@k']['mean']):.0f} points of pass@32 for "
        f"{100 * (gr['avg@k']['mean'] - ws['avg@k']['mean']):.0f} of pass@1",
        f"held-out entropy of {min(ratios[m] for m in paired):.0f}-{max(ratios[m] for m in paired):.0f} % of its start",
        f"GRPO's: STARE O1 {g('stare_o1')} / {k('stare_o1')} (pass@1 / pass@32 against GRPO), C2 {g('stare_c2')} / "
        f"{k('stare_c2')}, STEER",
        f"{g('steer')} / {k('steer')}, 80/20 {g('high_entropy')} / {k('high_entropy')}, adaptive entropy bonus "
        f"{g('entropy_adaptive')} / {k('entropy_adaptive')}, EntroPIC",
        f"{g('entropic')} / {k('entropic')}. The STARE targets",
        f"the entropy is held at {ratios['stare_auto']:.1f} % of its",
        f"({100 * au['pass@k']['mean']:.1f} vs {100 * ws['pass@k']['mean']:.1f}; **{k('stare_auto')} points",
        f"pass@1 gains only {100 * (au['avg@k']['mean'] - ws['avg@k']['mean']):.0f} points over the warm start "
        f"(**{g('stare_auto')}",
        f"collapses *further* than GRPO ({ratios['dapo']:.0f} % of start)",
        f"({g('dapo')} over GRPO, 3 seeds; std {100 * cot['dapo']['avg@k']['std']:.1f} vs GRPO's "
        f"{100 * gr['avg@k']['std']:.1f}), with pass@32 {k('dapo')}",
        f"entropy {ratios['vanilla_it2']:.0f} % of start:",
        f"GRPO (pass@1 {g('clip_cov')} and {g('kl_cov')}, pass@32 {k('clip_cov')} and {k('kl_cov')})",
        dapo_refill_numbers(),
        entropic_cot_numbers(),
        cot_step_time_numbers(),
        *cot_grid_cost_numbers(),
        f"ends at pass@1 {mean_std(cot['vanilla_it2']['avg@k']['values'], 100)} / pass@32 "
        f"{mean_std(cot['vanilla_it2']['pass@k']['values'], 100)}, entropy",
        f"Clip-Cov is {signed(gain_points(cot, 'clip_cov', 'avg@k', 'vanilla_it2'), 2)} / "
        f"{signed(gain_points(cot, 'clip_cov', 'pass@k', 'vanilla_it2'), 2)} against it and KL-Cov "
        f"{signed(gain_points(cot, 'kl_cov', 'avg@k', 'vanilla_it2'), 2)} / {signed(gain_points(cot, 'kl_cov', 'pass@k', 'vanilla_it2'), 2)}",
    ]


def cot_grid_cost_numbers() -> list[str]:
    """compare.md's cost of the countdown_cot grid: the cells' wall times (compare_done.json), the 33 method cells
    and the 3 control cells (vanilla_it2), in core-minutes and in hours at two cells at a time."""
    walls = {f: json.loads(f.read_text())["wall_s"] / 60
             for f in sorted((RESULTS / "compare_cot" / "runs").glob("*/seed*/compare_done.json"))}
    method = sum(w for f, w in walls.items() if f.parts[-3] != "vanilla_it2")
    control = [w for f, w in walls.items() if f.parts[-3] == "vanilla_it2"]
    n = len(walls) - len(control)
    return [f"the {n} method cells took {method:.0f} core-minutes (~{method / 120:.1f} h at `parallel: 2`); with the "
            f"{len(control)} control cells (~{statistics.mean(control):.0f} min each) {method + sum(control):.0f} "
            f"(~{(method + sum(control)) / 120:.1f} h)",
            f"The whole grid at `parallel: 2` is ~{method / 120:.1f} h on this machine (~{(method + sum(control)) / 120:.1f} h "
            f"with the {len(control)} control cells), above the issue's 3 h (missed by ~{100 * (method / 120 - 3) / 3:.0f} %)"]


def cot_step_time_numbers() -> str:
    """compare.md's split of a countdown_cot cell's time (seed 0): GRPO's summed step times and curve evaluations,
    Clip-Cov's (it generates on every other step), and the generation / update split that their difference gives."""
    grpo = load_metrics("compare_cot/runs/grpo/seed0/metrics.jsonl.gz")
    clip = load_metrics("compare_cot/runs/clip_cov/seed0/metrics.jsonl.gz")
    g = sum(r["step_time"] for r in grpo if "step_time" in r)
    c = sum(r["step_time"] for r in clip if "step_time" in r)
    steps = sum("step_time" in r for r in grpo)
    gen, step = (g - c) / (steps / 2), g / steps
    return (f"GRPO {g:.0f} s of training steps and {sum(r['eval/wall_s'] for r in grpo if 'eval/wall_s' in r):.0f} s of "
            f"curve evaluation; Clip-Cov, which generates on every other step only, {c:.0f} s. So generation is "
            f"~{gen:.2f} s of a {step:.2f} s step (~{100 * gen / step:.0f} %) and the update ~{step - gen:.2f} s")


def entropic_cot_numbers() -> str:
    """compare.md's EntroPIC at its defaults on countdown_cot (seed 0's cell): where the batch entropy crosses the
    target, alpha at step 900 and at the end, the final batch entropy."""
    rows = load_metrics("compare_cot/runs/entropic/seed0/metrics.jsonl.gz")
    alpha = {r["step"]: r["stare/entropic_alpha"] for r in rows if "stare/entropic_alpha" in r}
    entropy = [(r["step"], r["stare/batch_entropy"]) for r in rows if "stare/batch_entropy" in r]
    cross = next(step for step, h in entropy if h < 0.1)
    last = max(alpha)
    return (f"the batch entropy crosses 0.1 at step {cross} and the integral term needs until step 900 to bring\n"
            f"  alpha to {signed(alpha[900], 2)} ({signed(alpha[last], 2)} at step {last:,}".replace(",", " ")
            + f"), while the batch entropy keeps falling, to {entropy[-1][1]:.3f}.")


def dapo_refill_numbers() -> str:
    """compare.md's DAPO refill (seed 0's countdown_cot cell): the informative share of generated groups over the
    first 100 and the last 500 steps, and the generation rounds per step over the last 500."""
    rows = [r for r in load_metrics("compare_cot/runs/dapo/seed0/metrics.jsonl.gz")
            if "stare/dynamic_sampling/informative_frac" in r]
    share = [r["stare/dynamic_sampling/informative_frac"] for r in rows]
    rounds = [r["stare/dynamic_sampling/gen_rounds"] for r in rows]
    return (f"falls (seed 0) from {100 * statistics.mean(share[:100]):.0f} % (first\n  100 steps) to "
            f"{100 * statistics.mean(share[-500:]):.0f} % (last 500), so a step needs {statistics.mean(rounds[-500:]):.1f} "
            "generation rounds")


def curves_of(method: str) -> list[list[dict]]:
    """The held-out curve points of each seed's countdown_cot cell of ``method``."""
    return [[r for r in load_metrics(f"compare_cot/runs/{method}/{d.name}/metrics.jsonl.gz") if "eval/entropy" in r]
            for d in sorted((RESULTS / "compare_cot" / "runs" / method).glob("seed*"))]


def cot_curve_cells(method: str) -> list[float]:
    """Each seed's held-out entropy at the last curve point over its step-0 one, in %."""
    return [100 * c[-1]["eval/entropy"] / c[0]["eval/entropy"] for c in curves_of(method)]


def short_answer_seed_numbers(a: dict) -> str:
    """methods.md: stare_sensitivity auto at 0.7x on countdown and its 2x wider model, 3 seeds each."""
    cd = [a[k] for k in ("countdown_sens_t07", "countdown_sens_t07_s1", "countdown_sens_t07_s2")]
    w2 = [a[k] for k in ("countdown_wide2x_sens_t07", "countdown_wide2x_sens_t07_s1", "countdown_wide2x_sens_t07_s2")]

    def ms(rs: list[dict], field: str) -> str:
        return mean_std([r[field] for r in rs], 100)

    worst = max(abs(r["mean_over_target"] - 1) for r in cd + w2)
    return (f"countdown 0.7x {ms(cd, 'band_fraction')} % (noise ceiling {ms(cd, 'noise_ceiling').replace(' ± ', ' ±' + chr(10))} %), "
            f"the 2x wider model {ms(w2, 'band_fraction')} % ({ms(w2, 'noise_ceiling')} %), the mean within "
            f"{100 * worst:.1f} % of the target in every run")


def countdown_grpo_control_row() -> str:
    """compare.md's weight_control table, its countdown GRPO row: the grid's ``grpo`` cell, seed 0 and the 3 seeds
    (``docs/results/compare/results.json``)."""
    g = grid_metrics("compare/results.json")["grpo"]

    def val(key: str, scale: float = 1.0) -> list[float]:
        return [x * scale for x in g[key]["values"]]

    es, ef, band = val("entropy_start"), val("entropy_final"), val("in_band_frac", 100)
    a, pk = val("avg@k"), val("pass@k")
    return (f"| 200 | {es[0]:.3f} → {ef[0]:.3f} | - | - | {band[0]:.1f} % ({mean_std(band)} %) | - | - | {a[0]:.3f} "
            f"({mean_std(a, 1, 3)}) | {pk[0]:.3f} ({mean_std(pk, 1, 3)}) |")


def countdown_grid_setup_numbers() -> list[str]:
    """compare.md's countdown grid ("Setup", "Against the issue's targets", "Cost"), from ``docs/results/compare/``:
    the warm start's size, the step-1 entropy, the gate's share of steps, the cells' wall times (``results.json``),
    the held-out seed spread and the invocations of ``compare_run.json``."""
    by = grid_metrics("compare/results.json")
    run = load_json("compare/compare_run.json")
    walls = [w for m in by.values() if m["wall_s"] for w in m["wall_s"]["values"]]
    paper = [100 * by[m]["stare/gate_on"]["mean"] for m in ("stare_o1", "stare_c2")]
    w3 = [100 * by[m]["stare/gate_on"]["mean"] for m in ("stare_c2_w3", "stare_sens_w3")]
    spread = [100 * m[k]["std"] for m in by.values() for k in ("avg@k", "pass@k")]
    ran = [i for i in run["invocations"] if i["ran"]]
    seeds = len(by["grpo"]["avg@k"]["values"])

    def s(x: float) -> str:
        return f"{x:,.0f}".replace(",", " ")

    return [
        f"the project's ~{load_json('compare/warmstart.json')['num_parameters'] / 1e6:.2f}M-parameter Qwen2",
        f"a cell took {min(walls):.0f}-{max(walls):.0f} s on a shared 2-core CPU",
        f"the post-warm-start entropy ({by['grpo']['entropy_start']['mean']:.2f})",
        f"(~{statistics.mean(paper):.0f} % of steps at the paper's\n  W)",
        f"(gate on {min(w3):.0f}-{max(w3):.0f} % of steps)",
        f"Seed spread of the held-out numbers is {min(spread):.0f}-{max(spread):.0f} points",
        f"Whole grid: {run['cells']} cells, {s(run['wall_s_total'])} s wall in `stare compare` (two invocations: the "
        f"{len(ran[0]['ran']) // seeds} priority methods, {s(ran[0]['wall_s'])} s;\nthe other {len(ran[1]['ran']) // seeds}, "
        f"{s(ran[1]['wall_s'])} s;",
        f"A cell took {min(walls):.0f}-{max(walls):.0f} s depending on the load",
    ]


def cot_setup_numbers() -> list[str]:
    """compare.md's countdown_cot section beyond ``cot_reading_numbers``: the warm start's last 1 000 SFT steps
    (``countdown_cot/warmstart_3000.json``), every cell's starting batch entropy, the step auto's W reaches its
    bound, the off-policy second updates of Clip-Cov / KL-Cov (their |KL| and Clip-Cov's clip fraction, from the
    cells' metrics), the cells' wall times (``compare_done.json``), the ideal policy's ceiling (``branching.md``) and
    the frontier's opening (its absolute target against the start, GRPO's collapse)."""
    ws = load_json("countdown_cot/warmstart_3000.json")
    late = [h["avg@8"] for h in ws["history"] if h["step"] > ws["steps"] - 1000]
    cot = grid_metrics("compare_cot/results.json")
    starts = [x for m in cot.values() if m.get("entropy_start") for x in m["entropy_start"]["values"]]
    first = [min(s for s, x in weight_control_series(f"auto_c2_cot_s{i}")[1].items() if x >= 50 * (1 - 1e-9)) for i in range(3)]
    second = {m: [r for s in range(3) for r in load_metrics(f"compare_cot/runs/{m}/seed{s}/metrics.jsonl.gz")
                  if "actor/ppo_kl" in r and r["step"] % 2 == 0] for m in ("clip_cov", "kl_cov")}
    kl = statistics.fmean(abs(r["actor/ppo_kl"]) for rs in second.values() for r in rs)
    clip = statistics.fmean(r["actor/pg_clipfrac"] for r in second["clip_cov"])
    walls: dict[str, list[float]] = {}
    for f in sorted((RESULTS / "compare_cot" / "runs").glob("*/seed*/compare_done.json")):
        walls.setdefault(f.parts[-3], []).append(json.loads(f.read_text())["wall_s"] / 60)
    like = [w for m in ("grpo", "stare_o1", "stare_c2", "stare_auto", "steer", "high_entropy", "entropy_adaptive",
                        "entropic") for w in walls[m]]
    refill = sum(d - g for d, g in zip(walls["dapo"], walls["grpo"], strict=True))
    ideal = float(re.search(r"^\| as is \(with lists\) \| char \|[^|]*\|[^|]*\| ([\d.]+) % \|$",
                            (RESULTS / "countdown_cot" / "branching.md").read_text(), re.M).group(1))
    rows = int(re.search(r"^identical: (\d+) logged rows", (RESULTS / "compare_cot" / "repro_check.txt").read_text(),
                         re.M).group(1))
    grpo = load_metrics("compare_cot/runs/grpo/seed0/metrics.jsonl.gz")
    step = statistics.fmean(r["step_time"] for r in grpo if "step_time" in r)
    points = sum("eval/entropy" in r for r in grpo)
    return [
        f"(its avg@8 stays at {min(late):.2f}-{max(late):.2f} over the last 1 000 of them on this "
        f"{ws['num_parameters'] / 1e3:.0f} k-parameter model",
        f"every run starts at {min(starts):.3f}-{max(starts):.3f}",
        f"(twice the warm start's {cot['grpo']['entropy_start']['mean']:.2f}), W goes to its bound 50 by step "
        f"{int_range_text(first)}",
        f"~{statistics.mean(walls['dapo']):.0f} min against GRPO's ~{statistics.mean(walls['grpo']):.0f} (the cells'",
        f"|KL| {kl:.1e}, clip fraction {100 * clip:.1f} %, over the second updates)".replace("e-04", "e-4"),
        f"A GRPO-like cell takes {min(like):.0f}-{max(like):.0f} min on one core ({step:.1f} s per step plus {points} "
        "curve points",
        f"Clip-Cov/KL-Cov ~{statistics.mean(walls['clip_cov'] + walls['kl_cov']):.0f} min, DAPO "
        f"~{statistics.mean(walls['dapo']):.0f} min",
        f"DAPO's refill alone adds ~{refill:.0f} core-minutes",
        f"starting entropy\n({cot['grpo']['entropy_start']['mean']:.3f}), so `weight_control: auto` held the entropy at "
        f"its start and paid {-gain_points(cot, 'stare_auto', 'avg@k'):.0f} points of pass@1",
        f"GRPO's own collapse ends at ~{cot['grpo']['entropy_ratio']['mean']:.2f}x",
        f"all {rows:,} logged rows and the final evaluation identical".replace(",", " "),
        f"(A > 0, s > H) {100 * cot['grpo']['quadrant/pos_high_frac']['mean']:.2f} %",
        f"acts on the {100 * cot['grpo']['quadrant/pos_high_frac']['mean']:.2f} % of tokens",
        "(target >= 2.5 %: ~{} % of a derivation's".format(re.search(
            r"~(\d+) % of the positions of\na derivation are", (RESULTS / "countdown_cot" / "calibration.md").read_text()
        ).group(1)),
        # branching.md: the ideal policy's s > H share; A > 0 on at most about half of the tokens
        f"(the ideal policy's ceiling on this task is ~{ideal / 2:.0f} %",
    ]


def evidence_grid_sizes() -> list[str]:
    """evidence.md's grid sizes: the countdown grid's methods (the warm start is a row, not a method) and seeds, the
    countdown_cot grid's methods besides its control, the frontier's cells."""
    cd, cot = load_json("compare/results.json")["methods"], load_json("compare_cot/results.json")["methods"]
    seeds = {m["seeds"] for m in cd if m["method"] != "warm_start"}
    assert len(seeds) == 1, seeds
    fr = frontier()
    return [f"{len(cd) - 1} methods × {next(iter(seeds))} seeds from one warm-started",
            f"{len(cot) - 2} methods plus `vanilla_it2`",
            f"{fr['n_done']} cells, {len(fr['expected_seeds'])} seeds each"]


def compare_cot_readme_numbers() -> list[str]:
    """compare_cot/README.md: the grid's size (runs/), the cells' wall times (compare_done.json), the warm start's
    wall time (countdown_cot/warmstart_3000.json: the same warm start, cache key and final metrics as
    repro_check.txt's) and the reproduction checks' rows and times (the committed cell, repro_check.txt)."""
    runs = RESULTS / "compare_cot" / "runs"
    walls = {f.parent: json.loads(f.read_text())["wall_s"] / 60 for f in sorted(runs.glob("*/seed*/compare_done.json"))}
    method = {c: w for c, w in walls.items() if c.parent.name != "vanilla_it2"}
    control = [w for c, w in walls.items() if c.parent.name == "vanilla_it2"]
    seeds = {len(list(m.glob("seed*"))) for m in runs.iterdir() if m.name != "vanilla_it2"}
    assert len(seeds) == 1, seeds

    def span(cells: list[str]) -> str:
        w = [x for c, x in method.items() if c.parent.name in cells]
        return f"{min(w):.0f}-{max(w):.0f}"

    names = {c.parent.name for c in method}
    log = (RESULTS / "compare_cot" / "repro_check.txt").read_text()
    warm = load_json("countdown_cot/warmstart_3000.json")
    assert f"avg@8 {warm['final']['avg@8']:.4f}, greedy {warm['final']['greedy_acc']:.4f}" in log
    ws = int(re.search(r"# ([\d ]+) s\n", log).group(1).replace(" ", ""))
    whole = int(re.search(r"whole command: ([\d ]+) s wall", log).group(1).replace(" ", ""))
    rows = len(load_metrics("compare_cot/runs/grpo/seed0/metrics.jsonl.gz"))
    assert log.count(f"identical: {rows} logged rows") == 2
    return [f"— all {len(walls)} cells", f"has {len(names)} methods x {seeds.pop()} seeds = {len(method)} cells",
            f"(~{warm['wall_time_s'] / 60:.0f} min wall: `../countdown_cot/warmstart_3000.json`",
            f"took\n{span(names - {'dapo'})} min of wall time (Clip-Cov/KL-Cov {span(['clip_cov', 'kl_cov'])}, DAPO "
            f"{span(['dapo'])}); the {len(method)} method cells took {sum(method.values()):.0f} core-minutes, the "
            f"{len(control)}\ncontrol cells {sum(control):.0f} more",
            f"all {thousands(rows)} logged rows",
            f"(3 000 SFT steps, {ws / 60:.0f} min)", f"in all {thousands(rows)} rows and the final evaluation "
                                                     f"({whole / 60:.0f} min for the whole\ncommand)"]


BLOCKS = {  # name -> (page, renderer)
    "countdown-table": ("docs/evidence.md", render_countdown_table),
    "cot-table": ("docs/evidence.md", render_cot_table),
    "countdown-reading": ("docs/evidence.md", render_countdown_reading),
    "cot-reading": ("docs/evidence.md", render_cot_reading),
}


def inline_checks() -> list[tuple[str, str]]:
    """(page, text) quoted in running text from the two grids' artifacts."""
    cot, cd = grid_metrics("compare_cot/results.json"), grid_metrics("compare/results.json")
    ctl = "vanilla_it2"
    p1 = [gain_points(cd, m, "avg@k") for m in ("stare_o1", "stare_c2", "steer", "stare_sens")]
    pos_high = 100 * cot["grpo"]["quadrant/pos_high_frac"]["mean"]
    warm = cot["warm_start"]["pass@k"]
    compare = [*countdown_grid_setup_numbers(), *cot_setup_numbers(), *countdown_rows(), countdown_grpo_control_row(),
               *countdown_reading_numbers(), *cot_curve_rows(), *cot_reading_numbers(),
               f"({signed(min(p1))} to {signed(max(p1))} points\npass@1,",
               f"Clip-Cov is {signed(gain_points(cot, 'clip_cov', 'avg@k', ctl), 2)} / "
               f"{signed(gain_points(cot, 'clip_cov', 'pass@k', ctl), 2)} against it and KL-Cov "
               f"{signed(gain_points(cot, 'kl_cov', 'avg@k', ctl), 2)} / {signed(gain_points(cot, 'kl_cov', 'pass@k', ctl), 2)}",
               f"only {pos_high:.2f} % of tokens are (A > 0, surprisal > H)",
               f"close to the warm start's {warm['mean']:.3f} ± {warm['std']:.3f} ({warm['n']} seeds)"]
    return [*(("docs/compare.md", text) for text in compare),
            *(("docs/evidence.md", text) for text in evidence_grid_sizes()),
            *(("docs/results/compare_cot/README.md", text) for text in compare_cot_readme_numbers())]
