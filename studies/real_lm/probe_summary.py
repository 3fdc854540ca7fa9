"""Issue 42 item 1: the probe's statistics on the real LM beside the tiny model's, as JSON and figures.

Reads the per-token probe outputs of ``token_probe.py`` (``tokens_*.json``) in ``--dir`` and the tiny model's
committed ``stare probe`` outputs (docs/results/probe/probe_seed*.json: the same statistics, shared model, SGD,
step 1e-3), and writes into ``--dir``:

- ``summary.json``: per run, the batch (sequences, tokens, reward), the step (lr, mean H, mean |dH|/H), each
  estimator's scores overall / per quadrant / per sequence, the batch-level change, the quadrant token fractions
  and summed measured / predicted dH, and the near-criticality shares (STARE's L+/L-: token fraction, share of
  sum|dH| measured, of the net dH, of sum|prediction|; the oracle's share at the same size; the concentration);
- ``fig_scatter.png``, ``fig_quadrants.png``, ``fig_concentration.png``.

    python studies/real_lm/probe_summary.py --dir docs/results/real_lm_analysis
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
QUADS = ("pos_high", "pos_low", "neg_high", "neg_low", "zero_adv")
ESTIMATORS = ("exact", "leading", "omega")
GROUPS = {"tiny": "tiny", "real_start": "real start", "real_grpo20": "real GRPO-20"}


def _record_view(rec: dict) -> dict:
    sc = rec["scores"]
    return {
        "lr": rec["lr"], "n_tokens": rec["n_tokens"], "mean_entropy": rec["mean_entropy"],
        "rel_change": rec["rel_change"], "mean_dh": rec["dh_sum"], "mean_abs_dh": rec["mean_abs_dh"],
        "scores": {e: {k: sc[e]["all"][k] for k in ("pearson", "spearman", "sign_agree", "rel_mse", "n")}
                   for e in ESTIMATORS},
        "pearson_by_quadrant": {e: {q: sc[e][q]["pearson"] for q in QUADS[:4]} for e in ESTIMATORS},
        "n_by_quadrant": {q: sc["exact"][q]["n"] for q in QUADS},
        "quadrants": rec["quadrants"],
    }


def summarize_token_run(path: Path) -> dict:
    d = json.loads(path.read_text())
    group, seed = path.stem.removeprefix("tokens_").rsplit("_s", 1)
    model = d["model"] if not str(d["model"]).startswith("/") else "<run>/model"  # the GRPO-20 run's model dir
    out = {"file": path.name, "group": group, "seed": int(seed), "label": f"{GROUPS.get(group, group)} s{seed}",
           "model": model,
           "args": {k: d["args"][k] for k in ("task", "prompts", "group", "max_new_tokens", "seed",
                                              "optimizer", "rel_change", "dtype", "top_p")},
           "batch": {k: d["batch"][k] for k in ("n_sequences", "n_response_tokens", "reward_mean",
                                                 "groups_with_variance", "mean_response_length")},
           **_record_view(d["records"][-1]),
           "per_sequence": {e: {k: d["per_sequence"][e][k] for k in ("pearson", "spearman", "sign_agree", "n")}
                            for e in ESTIMATORS},
           "per_batch": d["per_batch"], "selections": d["selections"], "wall_s": d["wall_s"]}
    t = d["tokens"]
    dh, a = np.array(t["dh"]), np.array(t["A"])
    sur, h = np.array(t["surprisal"]), np.array(t["H"])
    out["tokens_stats"] = {
        "mean_H": float(h.mean()), "mean_surprisal": float(sur.mean()),
        "frac_surprisal_above_H": float((sur > h).mean()),
        "frac_zero_adv": float((a == 0).mean()),
        "share_abs_dh_zero_adv": float(np.abs(dh[a == 0]).sum() / np.abs(dh).sum()),
        "share_net_dh_zero_adv": float(dh[a == 0].sum() / dh.sum()),
    }
    return out


def _range(xs: list) -> dict | None:
    xs = [x for x in xs if x is not None]
    return {"n": len(xs), "mean": float(np.mean(xs)), "min": float(min(xs)), "max": float(max(xs))} if xs else None


def group_ranges(runs: list[dict]) -> dict:
    """Per group (tiny / real start / real GRPO-20), mean and min-max over its batches (seeds) of the key numbers."""
    pick = {
        **{f"pearson_{e}": (lambda r, e=e: r["scores"][e]["pearson"]) for e in ESTIMATORS},
        **{f"spearman_{e}": (lambda r, e=e: r["scores"][e]["spearman"]) for e in ESTIMATORS},
        **{f"sign_agree_{e}": (lambda r, e=e: r["scores"][e]["sign_agree"]) for e in ESTIMATORS},
        "rel_mse_exact": lambda r: r["scores"]["exact"]["rel_mse"],
        "per_sequence_pearson_exact": lambda r: r["per_sequence"]["exact"]["pearson"],
        "n_tokens": lambda r: r["n_tokens"], "n_sequences": lambda r: r["batch"]["n_sequences"],
        "reward_mean": lambda r: r["batch"]["reward_mean"], "mean_entropy": lambda r: r["mean_entropy"],
        "frac_zero_adv": lambda r: r["tokens_stats"]["frac_zero_adv"],
        "share_abs_dh_zero_adv": lambda r: r["tokens_stats"]["share_abs_dh_zero_adv"],
        "frac_surprisal_above_H": lambda r: r["tokens_stats"]["frac_surprisal_above_H"],
        "batch_sign_agree": lambda r: float(np.sign(r["per_batch"]["measured_mean_dh"])
                                            == np.sign(r["per_batch"]["pred_exact_fitted_scale_mean_dh"])),
        **{f"{q}_frac": (lambda r, q=q: r["quadrants"][q]["frac"]) for q in QUADS},
        # signed summed dH per valid token over mean |dH|: unit free, negative = lowers entropy
        **{f"{q}_dh_measured": (lambda r, q=q: r["quadrants"][q]["dh_sum"] / r["mean_abs_dh"]) for q in QUADS},
        **{f"{q}_dh_predicted": (lambda r, q=q: r["quadrants"][q]["dh_pred_exact_sum"] / r["mean_abs_dh"])
           for q in QUADS},
        "net_dh_measured": lambda r: r["mean_dh"] / r["mean_abs_dh"],
        **{f"{q}_sign_as_predicted": (lambda r, q=q: None if r["quadrants"][q]["frac"] == 0 else float(
            np.sign(r["quadrants"][q]["dh_sum"]) == np.sign(r["quadrants"][q]["dh_pred_exact_sum"])))
           for q in QUADS[:4]},  # None: no token in the quadrant
        **{f"{sel}_{k}": (lambda r, sel=sel, k=k: r["selections"][sel][k])
           for sel in ("stare_l_plus", "stare_l_minus", "stare_l_both", "sens_l_both")
           for k in ("token_frac", "share_abs_dh", "share_net_dh", "share_abs_pred_exact", "oracle_share_abs_dh")},
        **{f"tokens_for_{p}pct": (lambda r, p=p: r["selections"]["concentration"][f"tokens_for_{p}pct"])
           for p in (50, 80, 90)},
    }
    out = {}
    present = {r["group"] for r in runs}
    for g in [*(g for g in GROUPS if g in present), *sorted(present - set(GROUPS))]:
        rs = [r for r in runs if r["group"] == g]
        out[g] = {"seeds": [r["seed"] for r in rs], **{k: _range([f(r) for r in rs]) for k, f in pick.items()}}
    return out


def training_run(run: Path) -> dict | None:
    """The GRPO-20 run's own per-step quadrant diagnostics (leading-term predictions, logged by stare train)."""
    path = run / "metrics.jsonl"
    if not path.is_file():
        return None
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    keys = ["control/batch_entropy", "control/gate_on", "rewards/reward/mean", "quadrant/l_plus_share",
            "loss/l_plus_frac", "quadrant/zero_adv_frac", "quadrant/dh_pred",
            *[f"quadrant/{q}_frac" for q in QUADS[:4]], *[f"quadrant/{q}_dh_pred" for q in QUADS[:4]]]
    series = {k: [r.get(k) for r in rows] for k in keys}
    ev0, ev1 = (json.loads((run / f).read_text()) for f in ("eval_initial.json", "eval.json"))
    return {"steps": len(rows), "series": series, "mean": {k: _range(v) for k, v in series.items()},
            "eval_initial": {k: ev0[k] for k in ("avg@4", "pass@4", "entropy", "n")},
            "eval_final": {k: ev1[k] for k in ("avg@4", "pass@4", "entropy", "n")}}


def tiny_probe_runs() -> list[dict]:
    out = []
    for p in sorted((ROOT / "docs" / "results" / "probe").glob("probe_seed*.json")):
        d = json.loads(p.read_text())
        rec = next(r for r in d["records"] if r["policy"] == "shared" and r["optimizer"] == "sgd"
                   and r.get("rel_change_target") == 1e-3)
        out.append({"file": f"docs/results/probe/{p.name}", "seed": d["args"]["seed"],
                    "batch": {k: d["batch"][k] for k in ("n_sequences", "n_response_tokens", "reward_mean",
                                                          "groups_with_variance")},
                    **_record_view(rec)})
    return out


def _token_arrays(path: Path) -> dict:
    t = json.loads(path.read_text())["tokens"]
    return {k: np.array(v) for k, v in t.items() if k not in ("text", "quadrant")} | {"quadrant": t["quadrant"]}


def figures(runs: list[dict], groups: dict, d: Path) -> None:
    """Scatter (the lowest seed of each group), quadrant bars (group means), concentration (every batch)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    firsts = [min((r for r in runs if r["group"] == g), key=lambda r: r["seed"]) for g in groups]
    n = len(firsts)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.8), squeeze=False)
    for ax, r in zip(axes[0], firsts, strict=True):
        t = _token_arrays(d / r["file"])
        scale = json.loads((d / r["file"]).read_text())["records"][-1]["scores"]["exact"]["all"]["scale"]
        for q, c in zip(QUADS, ("tab:red", "tab:orange", "tab:blue", "tab:cyan", "0.6"), strict=True):
            m = np.array([x == q for x in t["quadrant"]])
            ax.scatter(scale * t["pred_exact"][m], t["dh"][m], s=8, c=c, label=q, alpha=0.7)
        lim = np.abs(t["dh"]).max() * 1.05
        ax.plot([-lim, lim], [-lim, lim], "k:", lw=0.8)
        ax.axhline(0, c="k", lw=0.4)
        ax.axvline(0, c="k", lw=0.4)
        ax.set_title(f"{r['label']}: Pearson {r['scores']['exact']['pearson']:.2f}\n"
                     f"{r['n_tokens']} tokens, {r['batch']['n_sequences']} responses", fontsize=9)
        ax.set_xlabel("predicted dH (exact S(a), fitted scale)")
        ax.set_ylabel("measured dH (one SGD step)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(d / "fig_scatter.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    ng = len(groups)
    width = 0.8 / ng
    x = np.arange(len(QUADS))
    for i, (g, st) in enumerate(groups.items()):
        for ax, key in zip(axes, ("frac", "dh_measured", "dh_predicted"), strict=True):
            ax.bar(x + i * width, [st[f"{q}_{key}"]["mean"] for q in QUADS], width,
                   label=f"{GROUPS.get(g, g)} (n={len(st['seeds'])} batches)")
    for ax, title in zip(axes, ("token fraction", "measured sum dH / (n tokens x mean |dH|)",
                                "predicted (exact, fitted scale), same units"), strict=True):
        ax.set_xticks(x + width * (ng - 1) / 2, QUADS, fontsize=8)
        ax.axhline(0, c="k", lw=0.5)
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(d / "fig_quadrants.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5.4, 4.2))
    colors = dict(zip(groups, ("tab:orange", "tab:blue", "tab:green", "tab:red"), strict=False))
    for r in runs:
        t = _token_arrays(d / r["file"])
        a = np.sort(np.abs(t["dh"]))[::-1]
        frac = np.arange(1, a.size + 1) / a.size
        c = colors[r["group"]]
        ax.plot(frac, np.cumsum(a) / a.sum(), c=c, lw=1,
                label=GROUPS.get(r["group"], r["group"]) if r is min(
                    (x for x in runs if x["group"] == r["group"]), key=lambda x: x["seed"]) else None)
        s = r["selections"]["stare_l_both"]
        ax.plot(s["token_frac"], s["share_abs_dh"], "o", c=c)
    ax.plot([0, 1], [0, 1], "k:", lw=0.8)
    ax.set_xlabel("fraction of tokens (ranked by measured |dH|)")
    ax.set_ylabel("share of sum |dH| measured")
    ax.set_title("concentration of one step's entropy change, one line per batch\n"
                 "(dots: STARE's L+ and L-, top 10 % by surprisal per advantage sign)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(d / "fig_concentration.png", dpi=110)
    plt.close(fig)


def _f(st: dict | None, digits: int = 3, pct: bool = False) -> str:
    if not st:
        return "-"
    k = 100.0 if pct else 1.0
    fmt = f"{{:.{digits}f}}"
    mean = fmt.format(k * st["mean"])
    return mean if st["n"] == 1 else f"{mean} ({fmt.format(k * st['min'])} to {fmt.format(k * st['max'])})"


def tables(groups: dict) -> str:
    """The README's tables: per group, the mean over its batches and (min to max)."""
    names = {g: f"{GROUPS.get(g, g)} ({len(st['seeds'])} batches)" for g, st in groups.items()}
    out = ["**Estimators per token** (one SGD step of mean |dH|/H = 1e-3 on the shared model; exact = S(a), "
           "leading = its leading term, omega = STEER's; per sequence: Pearson of the summed dH per response)", "",
           "| model | tokens / batch | Pearson exact | Pearson leading | Pearson omega | Spearman exact | "
           "sign agree exact | relMSE exact | per-sequence Pearson exact | batches with the batch sign right |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for g, st in groups.items():
        right = round(st["batch_sign_agree"]["mean"] * st["batch_sign_agree"]["n"])
        out.append(f"| {names[g]} | {_f(st['n_tokens'], 0)} | {_f(st['pearson_exact'])} | {_f(st['pearson_leading'])} | "
                   f"{_f(st['pearson_omega'])} | {_f(st['spearman_exact'])} | {_f(st['sign_agree_exact'], 2)} | "
                   f"{_f(st['rel_mse_exact'])} | {_f(st['per_sequence_pearson_exact'])} | "
                   f"{right} of {st['batch_sign_agree']['n']} |")
    out += ["", "**Quadrants**: token fraction, and the summed dH of the quadrant per valid token over the mean |dH| "
            "(unit free; negative = lowers entropy), measured and predicted (exact, fitted scale)", "",
            "| model | quadrant | token fraction | measured | predicted | batches with the predicted sign |",
            "|---|---|---|---|---|---|"]
    for g, st in groups.items():
        for q in QUADS:
            sg = st.get(f"{q}_sign_as_predicted")
            signs = f"{round(sg['mean'] * sg['n'])} of {sg['n']}" if sg else ""
            out.append(f"| {names[g]} | {q} | {_f(st[f'{q}_frac'])} | {_f(st[f'{q}_dh_measured'])} | "
                       f"{_f(st[f'{q}_dh_predicted']) if q != 'zero_adv' else '0 (A = 0)'} | {signs} |")
        out.append(f"| {names[g]} | all | 1 | {_f(st['net_dh_measured'])} | | |")
    out += ["", "**Near-criticality**: the share of one step's sum |dH| (measured) carried by STARE's selections "
            "(top 10 % by surprisal per advantage sign, batch scope), beside their token share, their share of the "
            "predicted sum |dH| (exact), and the best share any selection of the same size can carry (the tokens "
            "with the largest measured |dH|); percent", "",
            "| model | set | tokens | share of sum abs dH measured | of sum abs dH predicted | oracle, same size |",
            "|---|---|---|---|---|---|"]
    for g, st in groups.items():
        for sel, label in (("stare_l_plus", "L+"), ("stare_l_minus", "L-"), ("stare_l_both", "L+ and L-"),
                           ("sens_l_both", "stare_sensitivity's L+ and L-")):
            out.append(f"| {names[g]} | {label} | {_f(st[f'{sel}_token_frac'], 1, True)} | "
                       f"{_f(st[f'{sel}_share_abs_dh'], 1, True)} | {_f(st[f'{sel}_share_abs_pred_exact'], 1, True)} | "
                       f"{_f(st[f'{sel}_oracle_share_abs_dh'], 1, True)} |")
    out += ["", "| model | tokens with A = 0 | their share of sum abs dH | tokens carrying 50 % of sum abs dH | 80 % |",
            "|---|---|---|---|---|"]
    for g, st in groups.items():
        out.append(f"| {names[g]} | {_f(st['frac_zero_adv'], 1, True)} | {_f(st['share_abs_dh_zero_adv'], 1, True)} | "
                   f"{_f(st['tokens_for_50pct'], 1, True)} | {_f(st['tokens_for_80pct'], 1, True)} |")
    return "\n".join(out) + "\n"


def render_readme(readme: Path, text: str) -> None:
    if not readme.is_file():
        return
    s = readme.read_text()
    a, b = "<!-- tables:start -->\n", "<!-- tables:end -->"
    if a in s and b in s:
        readme.write_text(s[: s.index(a) + len(a)] + text + s[s.index(b):])


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", type=Path, default=ROOT / "docs" / "results" / "real_lm_analysis")
    args = p.parse_args(argv)
    runs = [summarize_token_run(f) for f in sorted(args.dir.glob("tokens_*.json"))]
    summary = {"groups": group_ranges(runs),
               "batches": {r["file"]: {**r["batch"], "wall_s": r["wall_s"]} for r in runs},
               "token_runs": runs,
               "tiny_stare_probe_shared_sgd_1e-3": tiny_probe_runs(),
               "stare_probe_real_start_s0": _record_view(json.loads(
                   (args.dir / "stare_probe_real_start_s0.json").read_text())["records"][0]),
               "grpo20_training_run": training_run(ROOT / "docs" / "results" / "real_lm" / "stare_train")}
    (args.dir / "summary.json").write_text(json.dumps(summary, indent=1))
    figures(runs, summary["groups"], args.dir)
    render_readme(args.dir / "README.md", tables(summary["groups"]))
    for r in runs:
        s = r["selections"]
        print(f"{r['label']:<22} n={r['n_tokens']:>4} pearson exact/leading/omega "
              f"{r['scores']['exact']['pearson']:.3f}/{r['scores']['leading']['pearson']:.3f}/"
              f"{r['scores']['omega']['pearson']:.3f}  L+/L- {s['stare_l_both']['token_frac']:.3f} tokens -> "
              f"{s['stare_l_both']['share_abs_dh']:.3f} of sum|dH| (oracle {s['stare_l_both']['oracle_share_abs_dh']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
