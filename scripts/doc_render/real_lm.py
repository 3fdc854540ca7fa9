"""The real pretrained LM, SmolLM2-135M-Instruct (issue #42; README.md, docs/train.md, docs/compare.md)."""

from __future__ import annotations

import json
import math
import statistics

import yaml

from .common import RESULTS, load_json, mean_std, rel_spread, signed, span_text
from .frontier import _cell, _seed_values, frontier

REAL_LM = "real_lm"


def _bench_table(rel: str) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]], str]:
    """The step benchmark's printed tables (benchmarks/bench_step_vocab.py output, committed as is):
    ``(per-variant ratios, per-variant phase seconds, load line)``."""
    lines = (RESULTS / rel).read_text().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("variant "))
    ratios, phases = {}, {}
    for ln in lines[head + 1:]:
        parts = ln.split()
        if len(parts) != 9:
            break
        ratios[parts[0]] = {"cpu": float(parts[1]), "x_cpu": float(parts[2]), "x_cpu_median": float(parts[3]),
                            "wall": float(parts[4]), "peak_mib": float(parts[6])}
    start = next(i for i, ln in enumerate(lines) if ln.startswith("where the wall time"))
    for ln in lines[start + 1:]:
        parts = ln.replace("(", " ").replace(")", " ").replace("%", " ").split()
        if len(parts) == 7:
            phases[parts[0]] = {"gen": float(parts[1]), "fwd": float(parts[3]), "rest": float(parts[5])}
    load = next(ln for ln in lines if ln.startswith("load average"))
    for ln in lines:  # "repeat 1 plain    cpu 14.787 s/step ...": each repeat's mean step
        parts = ln.split()
        if len(parts) > 4 and parts[0] == "repeat" and parts[3] == "cpu" and parts[2] in ratios:
            ratios[parts[2]].setdefault("repeats", []).append(float(parts[4]))
    return ratios, phases, load


def render_real_lm() -> str:
    """docs/train.md: the real LM's calibration, its cost per step on both engines and the step benchmark."""
    run = RESULTS / REAL_LM / "stare_train"
    before, after = (json.loads((run / f).read_text()) for f in ("eval_initial.json", "eval.json"))
    summary = json.loads((run / "train_summary.json").read_text())
    config = yaml.safe_load((run / "config.yaml").read_text())
    rows = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "control/start_entropy" in r]
    k = before["k"]
    verl = [json.loads(ln)["data"] for ln in (RESULTS / REAL_LM / "verl_dryrun" / "metrics.jsonl").read_text().splitlines()]
    ratios, phases, load = _bench_table(f"{REAL_LM}/bench_step.txt")

    def ev(e: dict) -> str:
        return (f"pass@1 (avg@{k}) **{e[f'avg@{k}']:.3f}**, pass@{k} {e[f'pass@{k}']:.3f}, greedy {e['greedy_acc']:.3f}, "
                f"{e['mean_response_length']:.1f} tokens")

    per_step = summary["train_runtime"] / summary["step"]
    v = {key: statistics.mean(d[f"timing_s/{key}"] for d in verl) for key in ("step", "gen", "old_log_prob", "update_actor")}
    plain = phases["plain"]
    total = plain["gen"] + plain["fwd"] + plain["rest"]
    lines = [
        f"- **Calibration** (seed 0, one run; {before['n']} held-out prompts x {k} samples at temperature "
        f"{before['temperature']:g}): the pretrained model starts at {ev(before)}; after {summary['step']} "
        f"{config['method']} steps at learning rate {config['learning_rate']:g}: {ev(after)} (a change within the "
        f"noise of {before['n'] * k} samples). Its first step batch's token-mean entropy is "
        f"{steps[0]['control/start_entropy']:.2f} nats.",
        f"- **TRL engine** (`stare train`, one torch thread, 8 completions of up to 32 tokens per step): "
        f"{per_step:.1f} s per step ({summary['train_runtime']:.0f} s for {summary['step']} steps) on the 2-core "
        "machine while other jobs ran.",
        f"- **Where a step goes** (the step benchmark, plain TRL, wall seconds): generation "
        f"{plain['gen'] / total:.0%}, the training forwards {plain['fwd'] / total:.0%}, the rest (backward, "
        f"optimizer, rewards) {plain['rest'] / total:.0%}.",
        "- **STARE's and STEER's step against plain TRL on this model** (CPU seconds per step, side by side in one "
        "run, least-disturbed repeat / median over repeats): " + ", ".join(
            f"{name} {ratios[name]['x_cpu']:.3f}x / {ratios[name]['x_cpu_median']:.3f}x"
            for name in ("vanilla", "stare", "steer") if name in ratios)
        + f" ({load.split(';')[0].replace('load average (1, 5, 15 min): ', 'load average ')}). Plain TRL's own "
        f"repeats differ by {rel_spread(ratios['plain']['repeats']):.1%}, so a difference smaller than that is not "
        "resolved by this run.",
        f"- **verl engine** (`stare verl-dryrun ... --model`, the exact entry point, 4 prompts x 4 samples of up to "
        f"32 tokens, FSDP2 on the CPU): {v['step']:.0f} s per step, of which generation {v['gen']:.0f} s, the old "
        f"log-probs {v['old_log_prob']:.0f} s and the actor update {v['update_actor']:.0f} s (mean of "
        f"{len(verl)} steps; the same loaded machine). The rollout's and the actor's probabilities agree to "
        f"{max(d['training/rollout_probs_diff_max'] for d in verl):.0e}.",
    ]
    return "\n".join(lines)


REAL_LM_ANALYSIS, REAL_LM_GRID = "real_lm_analysis/summary.json", "real_lm_grid/real_lm.json"


REAL_LM_MODELS = {"tiny": "tiny model", "real_start": "SmolLM2 at its start", "real_grpo20": "SmolLM2 after 20 GRPO steps"}


def render_real_lm_probe() -> str:
    """compare.md: the papers' per-token analyses on the real LM beside the tiny model (studies/real_lm/token_probe.py)."""
    g = load_json(REAL_LM_ANALYSIS)["groups"]

    def cell(model: str, key: str, pct: bool = False) -> str:
        x = g[model][key]
        f = (lambda v: f"{100 * v:.1f}") if pct else (lambda v: f"{v:.3f}")  # noqa: E731
        return f"{f(x['mean'])} ({f(x['min'])} to {f(x['max'])})"

    rows = [("batches (one SGD step each)", None, False), ("mean entropy of the batch, nats", "mean_entropy", False),
            ("Pearson, S(a) (STARE's exact estimator) vs measured dH per token", "pearson_exact", False),
            ("Pearson, its leading term", "pearson_leading", False), ("Pearson, STEER's Ω", "pearson_omega", False),
            ("tokens with A > 0 and surprisal > H, %", "pos_high_frac", True),
            ("tokens with A < 0 and surprisal > H, %", "neg_high_frac", True),
            ("tokens with A = 0, %", "zero_adv_frac", True),
            ("share of the step's sum abs(dH) on tokens with A = 0, %", "share_abs_dh_zero_adv", True),
            ("STARE's L+ and L−: share of the tokens, %", "stare_l_both_token_frac", True),
            ("STARE's L+ and L−: share of the step's sum abs(dH), %", "stare_l_both_share_abs_dh", True),
            ("the same number of tokens with the largest abs(dH): share, %", "stare_l_both_oracle_share_abs_dh", True),
            ("fewest tokens that carry 50 % of sum abs(dH), % of tokens", "tokens_for_50pct", True)]
    models = list(REAL_LM_MODELS)
    lines = ["| mean (range over batches) | " + " | ".join(REAL_LM_MODELS[m] for m in models) + " |",
             "|---|" + "---|" * len(models)]
    for label, key, pct in rows:
        if key is None:
            lines.append(f"| {label} | " + " | ".join(str(g[m]["pearson_exact"]["n"]) for m in models) + " |")
        else:
            lines.append(f"| {label} | " + " | ".join(cell(m, key, pct) for m in models) + " |")
    return "\n".join(lines)


def render_real_lm_grid() -> str:
    """compare.md: the real-LM comparison (studies/real_lm, pre-registered) as far as its cells go, and the tiny
    model's `countdown_cot` frontier at the same targets beside it. Re-rendered by the study's driver per cell."""
    r = load_json(REAL_LM_GRID)
    lines = [f"Cells finished: {r['n_done']} of {r['n_cells']}" + (f"; missing: {', '.join(r['missing'])}."
                                                                   if r["missing"] else "."), "",
             "| cell | seeds | pass@1 % | pass@8 % | final batch H / target | band fraction % | W or bonus coefficient, "
             "last 10 steps (bound) | response tokens | s / step |", "|---|---|---|---|---|---|---|---|---|"]
    for m, st in r["stats"].items():
        vals = list(r["values"].get(m, {}).values())
        n = len(vals)

        def ms(key: str, scale: float = 100, st: dict = st, n: int = n) -> str:
            x = st.get(key)
            if not x:
                return "-"
            return f"{scale * x['mean']:.1f}" + (f" ± {scale * x['std']:.1f}" if n > 1 else "")
        ratio = [v["final_batch_entropy"] / v["target"] for v in vals if v.get("target")]
        bound = [v["bound"] for v in vals if v.get("bound") and v["bound"].get("tail_mean") is not None]
        b = "-" if not bound else (", ".join(f"{x['tail_mean']:.3g}" for x in bound) + f" ({bound[0]['bound']:g})")
        lines.append(f"| `{m}` | {n} | {ms('pass@1')} | {ms('pass@k')} | "
                     f"{'-' if not ratio else ', '.join(f'{x:.2f}' for x in ratio)} | {ms('band_fraction')} | {b} | "
                     f"{ms('mean_response_length', 1)} | {ms('mean_step_time', 1)} |")
    lines += ["", "± = sample std over seeds. Per seed where several values are listed. s / step is wall time on the "
              "shared 2-core machine: it reads the load beside a cell as much as the method.", "",
              "When each actuator acted (descriptive; the first step its batch entropy left GRPO's same-seed run):", ""]
    for m, by_seed in r["values"].items():
        for seed, v in sorted(by_seed.items()):
            a = v.get("activity")
            if a:
                lines.append(f"- `{m}` seed {seed}: acted on {a['acting_steps']} of {a['steps']} steps, from step "
                             f"{a['first_acting_step'] or '-'}; same as GRPO's run until step "
                             f"{a['first_step_differs_from_grpo'] or '-'}")
    d = r["decisions"]
    lines += ["", "The registered rules (studies/real_lm/HYPOTHESES.md), applied by `analyze.py`:", "",
              f"- **R0** {d['R0']['claim']}: {d['R0']['verdict']}"]
    def paired(x: dict) -> str:
        """`` (d per seed ..., m ..., τ ... points)``: a pair rule's numbers, once its pair has been read."""
        pair = x.get("pair") or {}
        if not pair.get("d"):
            return ""
        return (f" (d per seed {', '.join(signed(100 * v) for v in pair['d'])}, m {signed(100 * pair['m'])}, "
                f"τ {100 * pair['tau']:.1f} points)")

    for label, rules in (("", d), (" (0.7x)", d.get("at_0.7x", {}))):
        for k in ("R0b", "R2", "R3", "R5"):
            if k in rules:
                lines.append(f"- **{k}{label}** {rules[k]['claim']}: {rules[k]['verdict']}{paired(rules[k])}")
        if "R4" in rules:
            lines.append(f"- **R4{label}** {rules['R4']['claim']}: pass@8 {rules['R4']['pass@k']['verdict']}"
                         f"{paired(rules['R4']['pass@k'])}, pass@1 {rules['R4']['pass@1']['verdict']}"
                         f"{paired(rules['R4']['pass@1'])}")
    lines += [f"- **R1** `{m}` holds its target: {x['verdict']}" for m, x in d["R1"].items()]
    fr = frontier()["methods"]
    lines += ["", "The tiny model on `countdown_cot` at the same targets (the frontier, 3 seeds, against GRPO's "
              f"{mean_std(_seed_values(fr['grpo'], 'pass@1'), 100)} / {mean_std(_seed_values(fr['grpo'], 'pass@k'), 100)}): "
              + "; ".join(f"{name} {t}: {_cell(fr[m])}" for name, m, t in
                          (("STARE C2 `auto`", "stare_auto_t05", "0.5x"), ("STARE C2 `auto`", "stare_auto_t07", "0.7x"),
                           ("the bonus (cap 0.01)", "entropy_bonus_t05", "0.5x"),
                           ("the bonus (cap 0.01)", "entropy_bonus_t07", "0.7x"))) + " (pass@1 / pass@32 %)."]
    return "\n".join(lines)


def render_real_lm_readme() -> str:
    """README: the real-LM comparison's registered verdicts with their numbers (studies/real_lm, real_lm.json)."""
    r = load_json(REAL_LM_GRID)
    d, vals = r["decisions"], r["values"]
    seeds = sorted({len(v) for m, v in vals.items() if m in ("grpo", "stare_auto_t07", "entropy_bonus_trl_t07")})

    def acting(*cells: str) -> str:
        steps = [v["activity"]["acting_steps"] for m in cells for v in vals.get(m, {}).values() if v.get("activity")]
        return span_text([float(x) for x in steps], "{:.0f}") if steps else "-"

    def pair(x: dict) -> str:
        p = x["pair"]
        return f"{signed(100 * p['m'])} points ({', '.join(signed(100 * v) for v in p['d'])} per seed)"

    def ratio(m: str) -> str:
        return ", ".join(f"{v['final_batch_entropy'] / v['target']:.2f}" for v in vals[m].values())

    a7 = d.get("at_0.7x", {})
    if "R3" not in a7 or "pair" not in a7["R3"]:
        return (f"The pre-registered GRPO / STARE / bonus comparison on it is running ({r['n_done']} of "
                f"{r['n_cells']} cells).")
    r1 = d["R1"]
    lower = sum(x < 0 for x in a7["R3"]["pair"]["d"])
    return (
        f"The pre-registered comparison on it ({' or '.join(map(str, seeds))} seeds, 100 steps, 64 held-out prompts x "
        f"8 samples; {r['n_done']} of {r['n_cells']} cells): GRPO's entropy falls within the budget (R0: "
        f"{d['R0']['verdict']}), but slowly from a high start, so at a 0.5x target the actuators acted on only "
        f"{acting('stare_auto_t05', 'entropy_bonus_trl_t05')} of the 100 steps. At 0.7x they acted on "
        f"{acting('stare_auto_t07', 'entropy_bonus_trl_t07')}; holding the target (R1): STARE C2 `auto` "
        f"{r1['stare_auto_t07']['verdict']} (final batch entropy {ratio('stare_auto_t07')} of it), the adaptive bonus "
        f"at TRL's bound {r1['entropy_bonus_trl_t07']['verdict']} ({ratio('entropy_bonus_trl_t07')}). STARE at 0.7x "
        f"against GRPO: pass@8 {pair(a7['R2'])}, higher: {a7['R2']['verdict']} (R2); pass@1 {pair(a7['R3'])}, lower "
        f"in {lower} of {a7['R3']['pair']['n']} seeds, which the registered rule (R3, a cost under 2 points) reads "
        f"as {a7['R3']['verdict']}: its noise scale is each method's spread over seeds, "
        f"{100 * a7['R3']['pair']['tau']:.1f} points. Against the bonus at 0.7x: pass@8 {pair(a7['R4']['pass@k'])}, "
        f"{a7['R4']['pass@k']['verdict']}; pass@1 {pair(a7['R4']['pass@1'])}, a cost under 2 points: "
        f"{a7['R4']['pass@1']['verdict']} (R4). The tiny model's ordering (STARE above GRPO and the bonus in pass@k, "
        f"at no real pass@1 cost) is {a7['R5']['verdict']} on the real LM (R5 at 0.7x; at 0.5x: "
        f"{d['R5']['verdict']}).")


def real_lm_readme_numbers() -> list[str]:
    """real_lm/README.md: the model's size (stare_model.json: float32 parameters) and the binomial standard error of
    the two evaluations' pass@1 (stare_train/eval_initial.json, eval.json)."""
    model = load_json(f"{REAL_LM}/stare_model.json")
    assert model["dtype"] == "float32"
    evals = [load_json(f"{REAL_LM}/stare_train/{e}.json") for e in ("eval_initial", "eval")]
    n = {e["n"] * e["k"] for e in evals}
    assert len(n) == 1, n
    n = n.pop()
    p = [e[f"avg@{e['k']}"] for e in evals]
    se = [math.sqrt(x * (1 - x) / n) for x in p]
    return [f"the {model['parameters'] * 4 / 1e6:.0f} MB model",
            f"({n} samples): a binomial standard error of {min(se):.3f}-{max(se):.3f} at the measured {p[0]:.3f} and "
            f"{p[1]:.3f}"]


BLOCKS = {  # name -> (page, renderer)
    "real-lm-probe": ("docs/compare.md", render_real_lm_probe),
    "real-lm-grid": ("docs/compare.md", render_real_lm_grid),
    "real-lm-readme": ("README.md", render_real_lm_readme),
    "real-lm": ("docs/train.md", render_real_lm),
}


def inline_checks() -> list[tuple[str, str]]:
    """(page, text) quoted in running text from the real LM's artifacts, the model card `stare train` wrote among
    them (its eval table)."""
    model = load_json(f"{REAL_LM}/stare_model.json")
    card = [(f"docs/results/{REAL_LM}/stare_train/README.md",
             f"| {label} | {e['avg@4']:.3f} | {e['pass@4']:.3f} | {e['greedy_acc']:.3f} | "
             f"{e['mean_response_length']:.3f} | {e['entropy']:.3f} |")
            for label, e in (("start", load_json(f"{REAL_LM}/stare_train/eval_initial.json")),
                             ("after training", load_json(f"{REAL_LM}/stare_train/eval.json")))]
    return [("docs/train.md", f"{model['parameters']:,} parameters, vocabulary {model['vocab_size']:,}"),
            ("docs/train.md", f"as a {model['quantization'].split()[0]} GGUF file"), *card,
            *((f"docs/results/{REAL_LM}/README.md", text) for text in real_lm_readme_numbers())]
