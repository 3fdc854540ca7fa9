"""The pre-registered frontier (issue #28; docs/compare.md, docs/evidence.md, results/frontier_cot)."""

from __future__ import annotations

import gzip
import json
import math
import re
import statistics
from collections.abc import Callable
from pathlib import Path

from .common import RESULTS, load_json, load_metrics, mean_std, sci, signed, thousands

FRONTIER_BAND = 0.2  # "missed": the final batch entropy is not within ±20 % of the target (the table's rule)


def frontier() -> dict:
    return load_json("frontier_cot/frontier.json")


def _seed_values(method: dict, key: str) -> list[float]:
    return [method["seeds"][s][key] for s in sorted(method["seeds"], key=int)]


def _reached(method: dict) -> float:
    return statistics.mean(_seed_values(method, "final_batch_entropy")) / statistics.mean(
        _seed_values(method, "target"))


def _missed(method: dict) -> bool:
    if method["seeds"][next(iter(method["seeds"]))]["target"] is None:
        return False
    return abs(_reached(method) - 1) > FRONTIER_BAND


def _cell(method: dict) -> str:
    text = (f"{mean_std(_seed_values(method, 'pass@1'), 100)} / {mean_std(_seed_values(method, 'pass@k'), 100)}")
    return text + (f" (missed: {_reached(method):.2f})" if _missed(method) else "")


def _bonus_at_cap(method_name: str, cap: float = 0.01) -> list[int]:
    """Steps (of each seed's run) at which the adaptive bonus's coefficient sat at its cap."""
    out = []
    for seed_dir in sorted((RESULTS / "frontier_cot" / "runs" / method_name).glob("seed*")):
        with gzip.open(seed_dir / "metrics.jsonl.gz", "rt") as f:
            coefs = [r["control/entropy_coef"] for r in map(json.loads, f) if r.get("control/entropy_coef") is not None]
        out.append(sum(c >= cap - 1e-12 for c in coefs))
    return out


def render_frontier_table() -> str:
    d = frontier()["methods"]
    rows = [("**STARE C2, `weight_control: auto`**", "stare_auto"), ("adaptive entropy bonus", "entropy_bonus"),
            ("EntroPIC", "entropic"), ("Entrocraft", "entrocraft"),
            ("`stare_sensitivity` `auto` (added after the registration)", "stare_sens_auto")]
    out = ["| method (held-out pass@1 / pass@32 %, mean ± sample std over 3 seeds) | 0.3x | 0.5x | 0.7x |",
           "|---|---|---|---|"]
    for label, fam in rows:
        out.append(f"| {label} | " + " | ".join(_cell(d[f"{fam}_t{t}"]) for t in ("03", "05", "07")) + " |")
    free = " · ".join(f"{label} {_cell(d[m])}" for label, m in (("GRPO", "grpo"), ("DAPO", "dapo"), ("STEER", "steer"),
                                                               ("80/20", "high_entropy")))
    out.append(f"| no target: {free} | | | |")
    n = {len(m["seeds"]) for m in d.values()}
    assert n == {3}, f"seeds per frontier cell: {n}"
    return "\n".join(out)


def render_frontier_reading() -> str:
    d = frontier()["methods"]

    def m(name: str, key: str) -> float:
        return 100 * statistics.mean(_seed_values(d[name], key))

    def gain(name: str, key: str) -> float:
        return m(name, key) - m("grpo", key)

    ent = {k: statistics.mean(_seed_values(d[k], "final_entropy")) for k in ("steer", "high_entropy", "grpo", "dapo")}
    spans = {fam: [m(f"{fam}_t{t}", "pass@k") for t in ("03", "05", "07")]
             for fam in ("entropy_bonus", "entropic", "entrocraft")}
    span = max(max(v) - min(v) for v in spans.values())
    sens_band = statistics.mean(_seed_values(d["stare_sens_auto_t07"], "band_fraction"))
    return (
        f"Where more than one mechanism holds the target (0.3x, near GRPO's own collapse) STARE costs the same\n"
        f"pass@1 as the adaptive bonus and buys {m('stare_auto_t03', 'pass@k') - m('entropy_bonus_t03', 'pass@k'):.2f} "
        f"points more pass@32; Entrocraft costs more pass@1 and EntroPIC misses. Asking the\nrivals for more entropy "
        f"moves their pass@32 by at most {span:.1f} points across the three targets; STARE's cost in pass@1\ngrows with "
        f"the target ({signed(gain('stare_auto_t05', 'pass@1'))} at 0.5x) while pass@32 rises "
        f"({signed(gain('stare_auto_t05', 'pass@k'))}). **No pre-registered actuator reaches 0.7x**:\nC2 stops at "
        f"{_reached(d['stare_auto_t07']):.2f} of it with W at its bound 50. The right-signed selection "
        f"`stare_sensitivity` (this project's\nextension, its L+/L− chosen by the predicted entropy change; "
        f"exploratory) holds all three targets, 0.7x with\n{100 * sens_band:.1f} % of the steps in the ±10 % band, "
        f"and is the grid's one monotone frontier: at 0.7x, {-gain('stare_sens_auto_t07', 'pass@1'):.1f} points of\n"
        f"pass@1 for {gain('stare_sens_auto_t07', 'pass@k'):.1f} of pass@32 against GRPO. STEER and 80/20 collapse "
        f"like GRPO (held-out H {ent['steer']:.3f} and\n{ent['high_entropy']:.3f} vs {ent['grpo']:.3f}), as "
        f"pre-registered; DAPO has the most pass@1 ({signed(gain('dapo', 'pass@1'))}) and the least entropy "
        f"({ent['dapo']:.3f})."
    )


def frontier_rows() -> list[str]:
    """The numeric tail of each method's row in the frontier's results table (compare.md "Results: all 57 cells"),
    from ``frontier.json``: seeds, pass@1, pass@k, final H, final batch H, target H, band fraction."""
    out = []
    for name, m in frontier()["methods"].items():
        st = m["stats"]

        def cell(key: str, scale: float, digits: int, st: dict = st) -> str:
            return "-" if st.get(key) is None else f"{st[key]['mean'] * scale:.{digits}f} ± {st[key]['std'] * scale:.{digits}f}"

        p1, pk = cell("pass@1", 100, 1), cell("pass@k", 100, 1)
        if name == "stare_auto_t03":
            p1, pk = f"**{p1}**", f"**{pk}**"
        n = len(m["seeds"])
        out.append(f"| {n}/{len(frontier()['expected_seeds'])} | {p1} | {pk} | {cell('final_entropy', 1, 3)} | "
                   f"{cell('final_batch_entropy', 1, 3)} | {cell('target', 1, 3)} | {cell('band_fraction', 100, 1)} |")
    return out


def frontier_reading_numbers() -> list[str]:
    """compare.md's reading of the frontier by the registered rules ("What the pre-registered rules say"), from
    ``docs/results/frontier_cot/frontier.json``: means ± sample std over the 3 seeds, differences from unrounded
    means, paired differences by seed, final batch entropy against the target, share of steps in the band."""
    fr = frontier()["methods"]

    def v(m: str, key: str, scale: float = 100) -> list[float]:
        return [x * scale for x in _seed_values(fr[m], key)]

    def ms(m: str, key: str) -> str:
        return mean_std(v(m, key), 1)

    def d(a: str, b: str, key: str) -> str:
        return signed(statistics.mean(v(a, key)) - statistics.mean(v(b, key)))

    def paired(a: str, b: str, key: str, sep: str = ", ") -> str:
        return sep.join(signed(x - y) for x, y in zip(v(a, key), v(b, key), strict=True))

    def h(m: str) -> float:
        return statistics.mean(v(m, "final_batch_entropy", 1))

    def tgt(m: str) -> float:
        return statistics.mean(v(m, "target", 1))

    def band(m: str) -> float:
        return statistics.mean(v(m, "band_fraction"))

    st3, st5, st7 = "stare_auto_t03", "stare_auto_t05", "stare_auto_t07"
    b3, b5, b7 = "entropy_bonus_t03", "entropy_bonus_t05", "entropy_bonus_t07"
    return [
        f"pass@1 **{ms(st3, 'pass@1')}\n  vs {ms('grpo', 'pass@1')}** ({d(st3, 'grpo', 'pass@1')}, above",
        f"pass@32 **{ms(st3, 'pass@k')} vs\n  {ms('grpo', 'pass@k')}** ({d(st3, 'grpo', 'pass@k')}, above",
        f"pass@1 {paired(st3, 'grpo', 'pass@1')}; pass@32 {paired(st3, 'grpo', 'pass@k')}. The point is at its target",
        f"batch H {h(st3):.3f} for {tgt(st3):.3f}), {band(st3):.0f} % of the steps",
        f"({d(st5, 'grpo', 'pass@1')} and {d(st7, 'grpo', 'pass@1')} against GRPO) for far more pass@32 "
        f"({d(st5, 'grpo', 'pass@k')} and {d(st7, 'grpo', 'pass@k')})",
        f"pass@32 and {paired(st7, st5, 'pass@1', ' / ')} pass@1",
        f"0.5x → 0.7x is {paired(st7, st5, 'pass@k', ' / ')}",
        f"0.7x ended at {h(st7):.3f}",
        f"for {tgt(st7):.3f} ({h(st7) / tgt(st7):.2f} of it: outside the ±20 % rule), {band(st7):.0f} % of steps",
        f"STARE C2 `auto` ends at {h(st5) / tgt(st5):.2f} of it ({h(st5):.3f} for {tgt(st5):.3f})",
        f"defaults: {h(b5):.3f} ({h(b5) / tgt(b5):.2f} of the target), {band(b5):.1f} % of steps",
        f"pass@1 {ms(b5, 'pass@1')} and pass@32 {ms(b5, 'pass@k')}, within",
        f"gains: {h('entropic_t05'):.3f} ({h('entropic_t05') / tgt('entropic_t05'):.2f}), "
        f"{band('entropic_t05'):.1f} % in the band",
        f"{h('entrocraft_t05'):.3f} ({h('entrocraft_t05') / tgt('entrocraft_t05'):.2f}), "
        f"{band('entrocraft_t05'):.1f} % in the band",
        f"{ms('entrocraft_t05', 'pass@1')}, **{-statistics.mean(v('entrocraft_t05', 'pass@1')) + statistics.mean(v('grpo', 'pass@1')):.1f} "
        "below GRPO",
        f"({d('entrocraft_t05', 'grpo', 'pass@k')}, within the spread)",
        f"on {band('entrocraft_t05'):.1f} % of steps at 0.5x, barely above the bonus ({band(b5):.1f} %) and EntroPIC "
        f"({band('entropic_t05'):.1f} %",
        f"far below STARE ({band(st5):.1f} %, the highest)",
        f"The bonus ends at {h(b3):.3f} for {tgt(b3):.3f} ({h(b3) / tgt(b3):.2f}), {band(b3):.1f} % of steps in the band",
        f"pass@1 **{ms(b3, 'pass@1')} vs STARE's {ms(st3, 'pass@1')}**",
        f"**{ms(b3, 'pass@k')} vs {ms(st3, 'pass@k')}**",
        f"pass@1 {paired(st3, b3, 'pass@1', ' / ')},",
        f"pass@32 {paired(st3, b3, 'pass@k', ' / ')} for STARE",
        f"(3 seeds: {h('entropic_t03'):.3f} for {tgt('entropic_t03'):.3f},",
        f"{h('entropic_t03') / tgt('entropic_t03'):.2f} of it, just outside the ±20 % rule; "
        f"{band('entropic_t03'):.0f} % of steps in the band)",
        f"Held-out H: STEER {mean_std(v('steer', 'final_entropy', 1), 1, 3)}, 80/20 "
        f"{mean_std(v('high_entropy', 'final_entropy', 1), 1, 3)}, GRPO",
        f"STARE C2 `auto` gets closest ({h(st7):.3f}, {h(st7) / tgt(st7):.2f} of the target",
        f"the adaptive bonus ends at {h(b7):.3f} ({h(b7) / tgt(b7):.2f})",
        f"EntroPIC at {h('entropic_t07'):.3f} ({h('entropic_t07') / tgt('entropic_t07'):.2f})",
        f"Entrocraft {h('entrocraft_t07'):.3f} ({h('entrocraft_t07') / tgt('entrocraft_t07'):.2f}; pass@1 "
        f"{ms('entrocraft_t07', 'pass@1')}, pass@32 {ms('entrocraft_t07', 'pass@k')})",
        "(bonus " + " → ".join(f"{statistics.mean(v(m, 'pass@k')):.1f}" for m in (b3, b5, b7)),
        "EntroPIC " + " → ".join(f"{statistics.mean(v(f'entropic_t0{x}', 'pass@k')):.1f}" for x in "357")
        + ", Entrocraft\n  " + " → ".join(f"{statistics.mean(v(f'entrocraft_t0{x}', 'pass@k')):.1f}" for x in "357")
        + ", within the seed spreads; STARE: " + " → ".join(f"{statistics.mean(v(m, 'pass@k')):.1f}" for m in (st3, st5, st7))
        + ")",
        "(pass@1 " + " → ".join(f"{statistics.mean(v(f'entrocraft_t0{x}', 'pass@1')):.1f}" for x in "357") + ")",
        "In the means pass@32 rises " + " → ".join(f"{statistics.mean(v(m, 'pass@k')):.1f}" for m in (st3, st5))
        + " →\n  " + f"{statistics.mean(v(st7, 'pass@k')):.1f} and pass@1 falls "
        + " → ".join(f"{statistics.mean(v(m, 'pass@1')):.1f}" for m in (st3, st5, st7)),
        f"pass@1 {ms('entropic_t05', 'pass@1')}, pass@32 " + ms("entropic_t05", "pass@k").replace(" ± ", " ±\n    ")
        + ", GRPO's own numbers",
        f"0.5x is at its target only just ({h(st5) / tgt(st5):.2f} of it)",
        f"({tgt(b3):.3f} vs GRPO's {h('grpo'):.3f}: {h('grpo') / tgt(b3):.2f} of it)",
        f"{h('entrocraft_t03') / tgt('entrocraft_t03'):.2f} of its target, pass@1 {ms('entrocraft_t03', 'pass@1')}, "
        f"pass@32 {ms('entrocraft_t03', 'pass@k')})",
        f"(reached {h('entropic_t03') / tgt('entropic_t03'):.2f} of it)",
        f"pass@1 / pass@32: STEER {ms('steer', 'pass@1')} / {ms('steer', 'pass@k')}, 80/20",
        f"{ms('high_entropy', 'pass@1')} / {ms('high_entropy', 'pass@k')}, GRPO {ms('grpo', 'pass@1')} / "
        f"{ms('grpo', 'pass@k')}, as on",
        f"{mean_std(v('grpo', 'final_entropy', 1), 1, 3)}; pass@1 / pass@32",
        f"at 0.7x: bonus {ms(b7, 'pass@1')} / {ms(b7, 'pass@k')}, EntroPIC",
        f"{ms('entropic_t07', 'pass@1')} / {ms('entropic_t07', 'pass@k')}, within the seed spread of GRPO's (STARE: "
        f"{ms(st7, 'pass@1')} /",
        f"{ms(st7, 'pass@k')}).",
        *(f"(missed: reached {h(m):.3f}) | 3/3 |" for m in fr if _missed(fr[m])),
        # DAPO, a reference point
        f"pass@1 **{ms('dapo', 'pass@1')}**, pass@32",
        f"{ms('dapo', 'pass@k')}, held-out H {mean_std(v('dapo', 'final_entropy', 1), 1, 3)}, the lowest of the grid (GRPO "
        f"{ms('grpo', 'pass@1')} / {ms('grpo', 'pass@k')}, H {mean_std(v('grpo', 'final_entropy', 1), 1, 3)})",
        f"Against GRPO, by the grid's rule: {d('dapo', 'grpo', 'pass@1')} pass@1",
        f"paired by seed {paired('dapo', 'grpo', 'pass@1', ' / ').split(' / ', 1)[0]} /",
        f"{paired('dapo', 'grpo', 'pass@1', ' / ').split(' / ', 1)[1]}) and {d('dapo', 'grpo', 'pass@k')} pass@32 (within the spread; "
        f"paired {paired('dapo', 'grpo', 'pass@k', ' / ')})",
        f"Its batch entropy ({h('dapo'):.3f}) covers",
        # stare_sensitivity auto
        f"final batch H {h('stare_sens_auto_t03'):.3f}\n  for {tgt('stare_sens_auto_t03'):.3f}, "
        f"{h('stare_sens_auto_t05'):.3f} for {tgt('stare_sens_auto_t05'):.3f} and {h('stare_sens_auto_t07'):.3f} for "
        f"{tgt('stare_sens_auto_t07'):.3f}, with "
        + ", ".join(mean_std(v(f"stare_sens_auto_t0{x}", "band_fraction"), 1) for x in "35")
        + f" and {mean_std(v('stare_sens_auto_t07', 'band_fraction'), 1)} % of the steps",
        "(seeds " + " / ".join(f"{x:.1f}" for x in v("stare_sens_auto_t07", "band_fraction")) + " %)",
        f"pass@1 {paired('stare_sens_auto_t03', st3, 'pass@1', ' / ')} and "
        f"{paired('stare_sens_auto_t05', st5, 'pass@1', ' / ')});",
        f"{-statistics.mean(v('stare_sens_auto_t07', 'pass@1')) + statistics.mean(v(st7, 'pass@1')):.1f} points",
        f"less pass@1 (paired {paired('stare_sens_auto_t07', st7, 'pass@1', ' / ')}) for "
        f"{statistics.mean(v('stare_sens_auto_t07', 'pass@k')) - statistics.mean(v(st7, 'pass@k')):.1f} more pass@32 "
        f"({paired('stare_sens_auto_t07', st7, 'pass@k', ' / ')})",
        f"(pass@1 {d('stare_sens_auto_t03', 'grpo', 'pass@1')}, pass@32 {d('stare_sens_auto_t03', 'grpo', 'pass@k')}; paired",
        f"pass@32 {paired('stare_sens_auto_t03', 'grpo', 'pass@k', ' / ')}) and its 0.7x point trades "
        f"{-statistics.mean(v('stare_sens_auto_t07', 'pass@1')) + statistics.mean(v('grpo', 'pass@1')):.1f} points of "
        f"pass@1 (paired {paired('stare_sens_auto_t07', 'grpo', 'pass@1', ' / ')}) for "
        f"{statistics.mean(v('stare_sens_auto_t07', 'pass@k')) - statistics.mean(v('grpo', 'pass@k')):.1f}",
        f"of pass@32 ({paired('stare_sens_auto_t07', 'grpo', 'pass@k', ' / ')})",
        # against the targets (#28)
        f"`stare_sensitivity` `auto` at 0.3x ({d('stare_sens_auto_t03', 'grpo', 'pass@1')} / "
        f"{d('stare_sens_auto_t03', 'grpo', 'pass@k')})",
        f"(C2: {d(st5, 'grpo', 'pass@1')} / {d(st5, 'grpo', 'pass@k')} and {d(st7, 'grpo', 'pass@1')} / "
        f"{d(st7, 'grpo', 'pass@k')})",
    ]


def frontier_w_bound_numbers() -> list[tuple[str, str]]:
    """The frontier's W bounds from the cells' metrics: stare_sensitivity auto's largest W over every target and
    seed; C2 auto 0.7x's share of steps with W at its bound 50, per seed (methods.md and compare.md)."""
    sens = max(r.get("control/reweight_w", 0.0)
               for x in "357" for s in range(3)
               for r in load_metrics(f"frontier_cot/runs/stare_sens_auto_t0{x}/seed{s}/metrics.jsonl.gz"))
    shares = []
    for s in range(3):
        w = [r["control/reweight_w"] for r in load_metrics(f"frontier_cot/runs/stare_auto_t07/seed{s}/metrics.jsonl.gz")
             if "control/reweight_w" in r]
        shares.append(100 * sum(x >= 50 * (1 - 1e-9) for x in w) / len(w))
    fr = frontier()["methods"]
    band = [mean_std([100 * b for b in _seed_values(fr[f"stare_sens_auto_t0{x}"], "band_fraction")], 1) for x in "357"]
    return [
        ("docs/methods.md", f"{band[0]}, {band[1]} and {band[2]} % of the steps in the band at 0.3x, 0.5x and\n0.7x, "
                            f"W at most {sens:.1f} in any seed"),
        ("docs/methods.md", f"with W at 50 on {min(shares):.0f}-{max(shares):.0f} %\nof the steps"),
        ("docs/compare.md", "W sits at its bound 50 on " + " / ".join(f"{x:.0f}" for x in shares[:2]) + " /\n  "
                            + f"{shares[2]:.0f} % of the steps"),
    ]


def selection_sign_rows() -> list[str]:
    """compare.md's table of the selection's sign (the frontier's ``stare_auto_t05`` seed 0, 100-step windows): the
    entropy over its start, the A > 0 / A < 0 tokens with s > H, L+ and L− (% of tokens), W; and the share of L+
    that is right-signed early and late."""
    rows = [r for r in load_metrics("frontier_cot/runs/stare_auto_t05/seed0/metrics.jsonl.gz") if "control/batch_entropy" in r]
    start = rows[0]["control/start_entropy"]
    out, shares = [], []
    for lo, hi in ((1, 100), (401, 500), (801, 900)):
        window = [r for r in rows if lo <= r["step"] <= hi]

        def m(key: str, window: list[dict] = window) -> float:
            return statistics.fmean(r[key] for r in window)

        shares.append(m("quadrant/pos_high_frac") / m("loss/l_plus_frac"))
        out.append(f"| {lo}-{hi} | {m('control/batch_entropy') / start:.2f} | {100 * m('quadrant/pos_high_frac'):.2f} | "
                   f"{100 * m('loss/l_plus_frac'):.2f} | {100 * m('quadrant/neg_high_frac'):.2f} | "
                   f"{100 * m('loss/l_minus_frac'):.2f} | {m('control/reweight_w'):.1f} |")
    wide = [r for r in load_metrics("controller_authority/runs/countdown_cot_widenP_from500/metrics.jsonl.gz")
            if r.get("loss/top_p_ratio", 0.0) >= 0.5 - 1e-9]
    widened = (f"on the {len(wide)} steps at P 0.5, L+ was "
               f"{100 * statistics.fmean(r['loss/l_plus_frac'] for r in wide):.1f} % of the tokens and the s > H positives "
               f"{100 * statistics.fmean(r['quadrant/pos_high_frac'] for r in wide):.2f} %")
    return [*out, f"So at most {100 * shares[0]:.0f} % (early) to {100 * shares[-1]:.0f} % (late) of L+ is right-signed",
            widened]


def _fr(m: str, key: str, scale: float = 100) -> list[float]:
    """One frontier cell's per-seed values of ``key`` (scaled; pass@ and band fractions in %)."""
    return [x * scale for x in _seed_values(frontier()["methods"][m], key)]


def _fr_ratio(m: str) -> float:
    """A frontier cell's final batch entropy over its target (means over the seeds)."""
    return statistics.mean(_fr(m, "final_batch_entropy", 1)) / statistics.mean(_fr(m, "target", 1))


def _cells_last(method: str, key: str, n: int = 100) -> list[list[float]]:
    """Each seed's last ``n`` logged values of ``key`` in a frontier cell's metrics."""
    out = []
    for seed_dir in sorted((RESULTS / "frontier_cot" / "runs" / method).glob("seed*")):
        vals = [r[key] for r in load_metrics(f"frontier_cot/runs/{method}/{seed_dir.name}/metrics.jsonl.gz") if key in r]
        out.append(vals[-n:])
    return out


def _cells_mean(method: str, key: str) -> list[float]:
    """Each seed's mean of ``key`` over a frontier cell's run."""
    return [statistics.fmean(v) for v in _cells_last(method, key, 10**9)]


def frontier_verdict_numbers() -> list[str]:
    """compare.md's frontier verdicts ("The pre-registered hypotheses, decided", "What the pre-registered rules say")
    beyond ``frontier_reading_numbers``: differences from the unrounded means, the larger seed std of a comparison,
    per-seed band fractions, the rivals' last-100-step control state and STEER's / 80/20's token statistics from
    the cells' metrics, and the H1 verdict at 0.3x as ``frontier.md`` prints it (frontier_rules.py)."""
    def mean(m: str, key: str) -> float:
        return statistics.mean(_fr(m, key))

    def d(a: str, key: str, b: str = "grpo") -> str:
        return signed(mean(a, key) - mean(b, key))

    def ms(m: str, key: str) -> str:
        return mean_std(_fr(m, key), 1)

    def larger_std(a: str, b: str, key: str = "pass@1") -> str:
        return f"{max(statistics.stdev(_fr(a, key)), statistics.stdev(_fr(b, key))):.1f}"

    st5, st7, ec5 = "stare_auto_t05", "stare_auto_t07", "entrocraft_t05"
    holders = [statistics.mean(_fr(m, "final_batch_entropy", 1)) for m in ("grpo", "entropy_bonus_t03", "entrocraft_t03")]
    h1 = re.search(r"^- \*\*H1 at 0\.3x\*\*: (.*)$", (RESULTS / "frontier_cot" / "frontier.md").read_text(), re.M).group(1)
    steer = [f"{x:.4f}" for x in _cells_mean("steer", "loss/mean_weight")]
    share = statistics.mean(_cells_mean("high_entropy", "loss/high_entropy_frac"))
    thr = statistics.mean(_cells_mean("high_entropy", "loss/entropy_threshold"))
    integral = [statistics.fmean(v) for v in _cells_last("entropic_t07", "control/entropic_integral")]
    coef = [statistics.fmean(v) for v in _cells_last("entropy_bonus_t07", "control/entropy_coef")]
    nsr = all(x == -1 for v in _cells_last("entrocraft_t07", "control/entrocraft_mode") for x in v)
    spans = [max(v) - min(v) for v in ([mean(f"{fam}_t0{x}", "pass@k") for x in "357"]
                                      for fam in ("entropy_bonus", "entropic", "entrocraft"))]
    w_max = [max(r.get("control/reweight_w", 0.0) for r in load_metrics(f"frontier_cot/runs/stare_sens_auto_t0{x}/seed{s}/"
                                                                     "metrics.jsonl.gz")) for x in "357" for s in range(3)]
    nsr0 = [r["control/entrocraft_mode"] for r in load_metrics(f"frontier_cot/runs/{ec5}/seed0/metrics.jsonl.gz")
            if "control/entrocraft_mode" in r and r["step"] > 200]
    sens = [f"{ms(f'stare_sens_auto_t0{x}', 'pass@1')} / {ms(f'stare_sens_auto_t0{x}', 'pass@k')}" for x in "357"]
    return [
        f"STARE gets\nclosest, {_fr_ratio(st7):.2f} of it)",
        f"target ({d(st5, 'pass@1')} at 0.5x, {d(st7, 'pass@1')} at 0.7x against GRPO) while pass@32 rises "
        f"({d(st5, 'pass@k')}, {d(st7, 'pass@k')}).",
        f"near GRPO's own collapse ({statistics.mean(_fr('grpo', 'final_batch_entropy', 1)):.3f})",
        f"{statistics.mean(_fr(ec5, 'band_fraction')):.1f} % in the band (seeds "
        + " / ".join(f"{x:.0f}" for x in _fr(ec5, "band_fraction")[:2]) + "\n    / "
        + f"{_fr(ec5, 'band_fraction')[2]:.0f} %)",
        f"beyond the larger seed std ({larger_std(ec5, 'grpo')})**, for pass@32 {ms(ec5, 'pass@k')}",
        f"The bonus's pass@32 is within GRPO's spread ({mean('entropy_bonus_t03', 'pass@k'):.1f} vs {ms('grpo', 'pass@k')})",
        f"at pass@1 {ms('entropic_t03', 'pass@1')} and pass@32 " + ms("entropic_t03", "pass@k").replace(" ± ", " ±\n  "),
        h1,
        f"end where GRPO ends (final batch H {min(holders):.3f}-{max(holders):.3f})",
        "its mean token weight is " + (steer[0] if len(set(steer)) == 1 else f"{min(steer)}-{max(steer)}")
        + " over the\n  run in every seed",
        f"on {100 * share:.1f} % of the tokens (entropy threshold ~{thr:.3f})",
        f"(last-100-step mean {min(integral):.0f} to {max(integral):.0f})",
        "at this project's cap 0.01 (`bonus_coef_max`; TRL's own bound is 1.0) in "
        + ("every seed" if all(c >= 0.01 - 1e-12 for c in coef) else "NOT every seed"),
        f"in NSR mode on every one of the last 100 steps in {'every seed' if nsr else 'NOT every seed'}",
        f"less than {math.ceil(max(spans))} points",
        f"(beyond the larger seed std, {larger_std('dapo', 'grpo')}: higher",
        f"(at most {min(w_max):.1f}-{max(w_max):.1f} per cell",
        f"**{sens[0]}** (0.3x),\n  {sens[1]} (0.5x), **{sens[2]}** (0.7x)",
        f"where C2 stops at {_fr_ratio(st7):.2f} of the target",
        "(from step " + " / ".join(str(next(r["step"] for r in load_metrics(f"frontier_cot/runs/{st7}/seed{s}/metrics.jsonl.gz")
                                           if r.get("control/reweight_w", 0.0) >= 50 * (1 - 1e-9))) for s in range(3)) + ")",
        f"Seed 0 sits in NSR from step ~200 (on {100 * statistics.fmean(mode == -1 for mode in nsr0):.0f} % of steps "
        "201-1 000)",
        f"Nothing is missing: {frontier()['n_done']} of {frontier()['n_cells']} cells",
        "all {} metrics rows ({} values, timings\naside)".format(*(f"{int(x):,}".replace(",", " ") for x in re.search(
            r"metrics rows: committed (\d+), re-run \1; values compared (\d+); differing 0",
            (RESULTS / "frontier_cot" / "README.md").read_text()).groups())),
    ]


def entrocraft_nsr_numbers() -> list[str]:
    """compare.md's set-aside Entrocraft cell (docs/results/entrocraft_nsr, summarise.py's definitions): steps 301-450
    of the grid cell (NSR on the advantage's sign) and of the fix (NSR on the raw reward): the tokens kept, the
    groups whose rewards all agree, the batch entropy's change from steps 301-325 to 426-450."""
    def stats(rel: str) -> tuple[float, float, float]:
        rows = [r for r in load_metrics(rel) if "control/batch_entropy" in r and 301 <= r["step"] <= 450]
        h0 = statistics.fmean(r["control/batch_entropy"] for r in rows[:25])
        h1 = statistics.fmean(r["control/batch_entropy"] for r in rows[-25:])
        return (100 * statistics.fmean(r["loss/kept_frac"] for r in rows),
                100 * statistics.fmean(r["frac_reward_zero_std"] for r in rows), 100 * (h1 / h0 - 1))

    old, new = stats("entrocraft_nsr/advantage_sign_cell/metrics.jsonl.gz"), stats("entrocraft_nsr/metrics.jsonl.gz")
    return [
        f"({min(old[1], new[1]):.0f}-{max(old[1], new[1]):.0f} % of them here)",
        f"NSR keeps {new[0]:.1f} % of the tokens instead of\n  {old[0]:.0f} %",
        f"({signed(new[2])} % over 150 steps of NSR, against {signed(old[2], 0)} % before)",
    ]


def frontier_last_cells_numbers() -> list[str]:
    """compare.md's note on the frontier's last four cells (session 40, named in results/frontier_cot/README.md):
    their wall times from ``compare_done.json``."""
    def wall(cell: str) -> float:
        return json.loads((RESULTS / "frontier_cot" / "runs" / cell / "compare_done.json").read_text())["wall_s"] / 60

    sens = [wall(c) for c in ("stare_sens_auto_t03/seed2", "stare_sens_auto_t07/seed1", "stare_sens_auto_t07/seed2")]
    return [f"(`dapo` seed 2 in {wall('dapo/seed2'):.0f} min, the three\n`stare_sensitivity` ones in "
            f"{min(sens):.0f}-{max(sens):.0f} min"]


def frontier_targets_numbers() -> list[str]:
    """compare.md's "Against the issue's targets (#28), measured": the frontier cells (frontier.json) and the
    right-signed selection's 3-seed runs (controller_authority/summary.json)."""
    a = load_json("controller_authority/summary.json")

    def ms(m: str, key: str) -> str:
        return mean_std(_fr(m, key), 1)

    def below(m: str) -> float:
        return statistics.mean(_fr("grpo", "pass@1")) - statistics.mean(_fr(m, "pass@1"))

    r5 = [_fr_ratio(f"{f}_t05") for f in ("entropy_bonus", "entropic", "entrocraft")]
    r7 = [_fr_ratio(f"{f}_t07") for f in ("entropy_bonus", "entropic", "entrocraft")]
    s7 = "stare_sens_auto_t07"
    gain7 = statistics.mean(_fr(s7, "pass@k")) - statistics.mean(_fr("grpo", "pass@k"))
    cot5 = [a[f"countdown_cot_sens_t05_s{s}"] for s in range(3)]
    seeds = {name: [a[f"{name}{sfx}"] for sfx in ("", "_s1", "_s2")] for name in ("countdown_sens_t07",
                                                                                 "countdown_wide2x_sens_t07")}
    cd, wd = seeds.values()
    means = [statistics.mean(r["mean_over_target"] for r in rs) for rs in seeds.values()]
    return [
        "(" + ms("stare_auto_t03", "pass@1").replace(" ± ", " ±\n  ") + f" / {ms('stare_auto_t03', 'pass@k')} "
        f"against GRPO's {ms('grpo', 'pass@1')} / {ms('grpo', 'pass@k')}: {signed(-below('stare_auto_t03'))} / "
        f"{signed(statistics.mean(_fr('stare_auto_t03', 'pass@k')) - statistics.mean(_fr('grpo', 'pass@k')))})",
        f"({ms('stare_auto_t03', 'pass@1')} vs {ms('entropy_bonus_t03', 'pass@1')}, within the spread)",
        f"({ms('entrocraft_t03', 'pass@1')}: STARE costs less)",
        f"at {below('stare_auto_t05'):.1f} points of pass@1\n  below GRPO",
        f"({min(r5):.2f}-{max(r5):.2f} of the\n  target)",
        f"(C2 {_fr_ratio('stare_auto_t07'):.2f} of it, W at its bound; the rivals {min(r7):.2f}-{max(r7):.2f})",
        f"holds it at {below(s7):.1f} points of pass@1\n  below GRPO for {gain7:.1f} more pass@32",
        f"{ms('stare_auto_t05', 'band_fraction')} % at 0.5x, {ms('stare_auto_t07', 'band_fraction')} % at 0.7x",
        f"`countdown_cot` at 0.7x ({ms(s7, 'band_fraction')} %) and missed narrowly at 0.5x "
        f"({ms('stare_sens_auto_t05', 'band_fraction')} %; the batch noise allows "
        f"{100 * statistics.mean(r['noise_ceiling'] for r in cot5):.0f} %)",
        f"{mean_std([r['noise_ceiling'] for r in cd], 100)} % and {mean_std([r['noise_ceiling'] for r in wd], 100)} % of raw "
        f"steps; the controller reaches {mean_std([r['band_fraction'] for r in cd], 100)} % and "
        f"{mean_std([r['band_fraction'] for r in wd], 100)} %, with its mean\n  within {100 * (max(means) - 1):.1f} % of the target",
    ]


def entrocraft_nsr_readme_numbers() -> list[str]:
    """entrocraft_nsr/README.md: the grid cell's NSR stretch (advantage_sign_cell's metrics), the steps 301-450 table
    (summarise.py's rows, recomputed from both metrics), the fixed-paths table (fixed_paths.json) and the one-step
    table and its reading (adam_vs_sgd_ckpt300.jsonl)."""
    folder = "entrocraft_nsr"
    cell = [r for r in load_metrics(f"{folder}/advantage_sign_cell/metrics.jsonl.gz") if "control/batch_entropy" in r]
    target = {r["control/target_entropy"] for r in cell}
    assert len(target) == 1, target
    # the stretch in NSR that checkpoint-300 sits in: from the step after the last other mode before it
    start = 1 + max(r["step"] for r in cell if r["control/entrocraft_mode"] != -1 and r["step"] < 300)
    other = sum(r["control/entrocraft_mode"] != -1 for r in cell if r["step"] >= start)
    last = cell[-1]["step"]
    h_from = statistics.fmean(r["control/batch_entropy"] for r in cell if start <= r["step"] < start + 100)
    h_end = statistics.fmean(r["control/batch_entropy"] for r in cell if r["step"] > last - 100)
    out = [f"entropy = {target.pop():.3f}, band ±10 %",
           f"in NSR on all but {other} of the steps from {start} to {thousands(last)}",
           f"(mean batch entropy {h_from:.3f} over steps {start}-{start + 99} → {h_end:.3f} over steps {last - 99}-{thousands(last)})"]

    def window(rel: str) -> dict:  # summarise.py's definitions, steps 301-450
        d = {r["step"]: r for r in load_metrics(rel) if "control/batch_entropy" in r}
        st = [s for s in sorted(d) if 301 <= s <= 450]

        def mean(key: str, steps: list[int] = st) -> float:
            return sum(d[s].get(key, float("nan")) for s in steps) / len(steps)

        h0, h1 = mean("control/batch_entropy", st[:25]), mean("control/batch_entropy", st[-25:])
        slope = statistics.linear_regression(st, [d[s]["control/batch_entropy"] for s in st]).slope
        return {"kept": 100 * mean("loss/kept_frac"), "h0": h0, "h1": h1, "change": 100 * (h1 / h0 - 1),
                "nsr": 100 * sum(d[s]["control/entrocraft_mode"] == -1 for s in st) / len(st),
                "reward": mean("rewards/reward/mean"), "agree": mean("frac_reward_zero_std"),
                "low": mean("quadrant/neg_low_dh_pred"), "high": mean("quadrant/neg_high_dh_pred"),
                "slope": slope, "steps": len(st)}

    old, new = window(f"{folder}/advantage_sign_cell/metrics.jsonl.gz"), window(f"{folder}/metrics.jsonl.gz")
    for label, w in (("advantage sign (the grid cell)", old), ("raw reward (this fix)", new)):
        out.append(f"| {label} | {w['kept']:.1f} | {w['nsr']:.0f} | {w['h0']:.4f} | {w['h1']:.4f} | {w['change']:+.1f} | "
                   f"{w['reward']:.3f} | {w['agree']:.2f} | {w['low']:+.4f} / {w['high']:+.4f} |")
    out += [f"NSR keeps {new['kept'] / old['kept']:.1f}x the tokens ({new['kept']:.1f} % vs {old['kept']:.1f} %; the "
            f"groups\n  that agree are {100 * min(old['agree'], new['agree']):.0f}-{100 * max(old['agree'], new['agree']):.0f} "
            f"% of the batch)",
            f"({signed(new['change'])} % in {new['steps']}\n  steps)"]
    paths = load_json(f"{folder}/fixed_paths.json")
    out.append(f"{paths['n_paths']} completions")
    for label, key in (("grid cell, step 300", "grid_cell/checkpoint-300"),
                       ("raw-reward NSR, step 450", "raw_reward/checkpoint-450"),
                       ("grid cell (old NSR), step 500", "grid_cell/checkpoint-500")):
        p = paths[key]
        out.append(f"| {label} | {p['fixed_all']:.4f} | {p['fixed_correct']:.4f} | {p['fixed_wrong']:.4f} | "
                   f"{p['own_sampled']:.4f} | {100 * p['own_acc']:.1f} % |")
    steps = [json.loads(line) for line in (RESULTS / folder / "adam_vs_sgd_ckpt300.jsonl").read_text().splitlines()]

    def signs(rows: list[dict], get: Callable[[dict], float]) -> str:
        return " ".join("+" if get(r) > 0 else "−" for r in rows)

    ratios, cosines, others = [], [], []
    for mode in ("NSR", "RAFT++", "GRPO"):
        rows = sorted((r for r in steps if r["mode"] == mode), key=lambda r: r["batch"])
        ratio = statistics.fmean(r["adam"]["step_norm"] / r["sgd"]["step_norm"] for r in rows)
        ratios.append(ratio)
        cosines += [r["cos_grad_momentum"] for r in rows]
        others += [r["adam"]["pred_other_states"] for r in rows]
        out.append(f"| {mode} | {signs(rows, lambda r: r['tabular_sign'])} | {signs(rows, lambda r: r['sgd']['pred'])} | "
                   f"{signs(rows, lambda r: r['sgd']['pred_other_states'])} | "
                   f"{signs(rows, lambda r: r['adam']['measured'])} | "
                   f"**{signs(rows, lambda r: r['adam']['pred_other_states'])}** | {thousands(ratio)}x | "
                   + ", ".join(f"{r['cos_grad_momentum']:.2f}".replace("-", "−") for r in rows) + " |")
        if mode == "NSR":
            nsr_other = ", ".join(sci(r["adam"]["pred_other_states"]) for r in rows)
    falls = [-x for x in others]
    assert 1e-5 <= min(falls) and max(falls) < 1e-3
    slopes = (new["slope"], old["slope"])
    out += [f"NSR's Adam step on other states: {nsr_other} nats per step.",
            f"Adam's step is {thousands(min(ratios))}-{thousands(max(ratios))}x",
            f"(cosine ≤ {max(abs(c) for c in cosines):.2f})",
            f"**under every mode alike** ({sum(x < 0 for x in others)} of {len(others)}), by "
            f"{min(falls) / 1e-4:.1f}-{max(falls) / 1e-4:.1f}e-4 nats per step",
            f"(least-squares slope of the batch entropy, per step: {sci(slopes[0])} with the fix, "
            f"{sci(slopes[1])} without; {sum(f > -min(slopes) for f in falls)} of the {len(falls)} are larger "
            f"than both)"]
    return out


def _step0(cell: Path) -> dict:
    """The step-0 held-out evaluation of a grid cell (its first metrics row with ``eval/`` keys)."""
    with gzip.open(cell / "metrics.jsonl.gz", "rt") as f:
        return next(r for r in map(json.loads, f) if "eval/pass@1" in r)


def frontier_cot_readme_numbers() -> list[str]:
    """frontier_cot/README.md: the grid's size (compare_run.json, runs/), each seed's step-0 held-out pass@1 (the same
    in every cell of a seed), the committed half of the reproduction check's output (runs/grpo/seed0), the step-0
    entropy that differs in the 9th digit on the AVX-512 machine (those cells' metrics), the compare_cot grid's
    step-0 pass@1, and the wall time of the cells of sessions 39-40 (compare_done.json)."""
    runs = RESULTS / "frontier_cot" / "runs"
    cells = sorted(runs.glob("*/seed*"))
    step0 = {c: _step0(c) for c in cells}
    p0 = {}
    for c, r in step0.items():
        p0.setdefault(int(c.name[4:]), set()).add(r["eval/pass@1"])
    assert all(len(v) == 1 for v in p0.values()) and p0[1] == p0[2], p0
    p0 = {s: v.pop() for s, v in p0.items()}
    methods = {c.parent.name for c in cells}
    with gzip.open(runs / "grpo" / "seed0" / "metrics.jsonl.gz", "rt") as f:
        committed = [json.loads(line) for line in f]
    compared = sum(len([k for k in r if k not in ("step_time", "eval/wall_s")]) for r in committed)
    # the cells run on the AVX-512 machine with the AVX2 kernels pinned (sessions 39-40): from the first one whose
    # step-0 entropy differs from the committed grpo cell's of its seed
    ent = {c: r["eval/entropy"] for c, r in step0.items()}
    first_pinned = min(json.loads((c / "compare_done.json").read_text())["finished"] for c in cells
                       if ent[c] != ent[runs / "grpo" / c.name])
    late = {c: json.loads((c / "compare_done.json").read_text()) for c in cells}
    late = {c: d["wall_s"] / 60 for c, d in late.items() if d["finished"] >= first_pinned}
    here = {ent[c] for c in late if c.name == "seed0"}
    there = ent[runs / "grpo" / "seed0"]
    assert len(here) == 1 and there not in here, (here, there)
    dapo = [w for c, w in late.items() if c.parent.name == "dapo"]
    rest = [w for c, w in late.items() if c.parent.name != "dapo"]
    cot0 = _step0(RESULTS / "compare_cot" / "runs" / "grpo" / "seed0")["eval/pass@1"]
    added = {m for m in methods if m.startswith("stare_sens_auto")}  # after the registration (session 35)
    n_seeds = len(p0)
    return [f"all {load_json('frontier_cot/compare_run.json')['cells']} cells",
            f"has {len(methods - added)} pre-registered methods x {n_seeds} seeds = {len(methods - added) * n_seeds} cells",
            f"(session 35; {len(added) * n_seeds} cells, not part of H1-H5)",
            f"This folder holds every cell, {len(methods)} methods x seeds 0-{max(p0)}",
            f"cells' of its seed ({p0[1]} for seeds 1 and 2)",
            f"metrics rows: committed {len(committed)}, re-run {len(committed)}; values compared {compared}; differing 0",
            f"held-out pass@1 {p0[0]} at step 0",
            f"({here.pop():.11f} here, {there:.11f} there)",
            f"evaluates at pass@1 {cot0:.3f} where\nthis one evaluates at {p0[0]:.3f} at step 0",
            f"check the step-0 pass@1 of a seed-0 cell ({p0[0]})",
            f"two cells at a time ({min(rest):.0f}-{max(rest):.0f} min a cell, DAPO {min(dapo):.0f}-{max(dapo):.0f}"]


BLOCKS = {  # name -> (page, renderer)
    "frontier-table": ("docs/evidence.md", render_frontier_table),
    "frontier-reading": ("docs/evidence.md", render_frontier_reading),
}


def inline_checks() -> list[tuple[str, str]]:
    """(page, text) quoted in running text from the frontier's artifacts."""
    fr = frontier()["methods"]
    cap05, cap07 = _bonus_at_cap("entropy_bonus_t05"), _bonus_at_cap("entropy_bonus_t07")
    dk = (statistics.mean(_seed_values(fr["stare_auto_t03"], "pass@k"))
          - statistics.mean(_seed_values(fr["entropy_bonus_t03"], "pass@k"))) * 100
    compare = [*frontier_rows(), *frontier_reading_numbers(), *frontier_verdict_numbers(), *entrocraft_nsr_numbers(),
               *frontier_targets_numbers(), *frontier_last_cells_numbers(), *selection_sign_rows(),
               f"on {min(cap05)}-{max(cap05)} of the 1 000 steps of every seed",
               f"; {min(cap07)}-{max(cap07)} at 0.7x)",
               f"STARE {signed(dk, 2)} pass@32",
               f"({signed(dk, 2)} for STARE, beyond the larger std)",
               f"STARE keeps {dk:.2f} points more pass@32",
               f"adaptive bonus and buys {dk:.2f} points more pass@32."]
    readmes = [(f"docs/results/{folder}/README.md", text)
               for folder, numbers in (("entrocraft_nsr", entrocraft_nsr_readme_numbers),
                                       ("frontier_cot", frontier_cot_readme_numbers)) for text in numbers()]
    return [("docs/compare.md", text) for text in compare] + frontier_w_bound_numbers() + readmes
