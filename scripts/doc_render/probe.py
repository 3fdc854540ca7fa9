"""`stare probe` (docs/analysis.md)."""

from __future__ import annotations

from .common import load_json


def _probe(seed: int) -> dict:
    return load_json(f"probe/probe_seed{seed}.json")


def _rec(d: dict, policy: str, opt: str, rel: float = 1e-3) -> dict:
    return next(r for r in d["records"] if r["policy"] == policy and r["optimizer"] == opt
                and r["rel_change_target"] == rel)


def _score(d: dict, policy: str, opt: str, est: str, key: str = "pearson", rel: float = 1e-3) -> float:
    return _rec(d, policy, opt, rel)["scores"][est]["all"][key]


def render_probe_setup() -> str:
    d, ws = _probe(0), load_json("probe/warmstart.json")
    b, f = d["batch"], ws["final"]
    return (
        f"`stare probe` (defaults) on the embedded warm-started model (Qwen2 architecture, "
        f"{ws['num_parameters'] / 1e6:.2f}M parameters, hidden {ws['config']['hidden_size']},\ncharacter vocabulary, "
        f"3-digit addition; its SFT warm start stopped at step {ws['steps']}: greedy {f['greedy_acc']:.2f}, avg@8 "
        f"{f['avg@8']:.2f}, entropy {f['entropy']:.2f}), seed 0:\n{b['n_sequences']} responses, "
        f"{b['n_response_tokens']} response tokens, reward mean {b['reward_mean']:.2f}. Overall scores at a step of "
        f"`mean|ΔH|/H = 1e-3`:"
    )


def render_probe_table() -> str:
    d = _probe(0)
    out = ["| policy | optimiser | estimator | Pearson | Spearman | sign agree | relMSE |", "|---|---|---|---|---|---|---|"]
    for policy in ("logits", "head", "shared"):
        for opt, name in (("sgd", "SGD"), ("adamw", "AdamW")):
            for est in ("exact", "leading", "omega"):
                a = _rec(d, policy, opt)["scores"][est]["all"]
                out.append(f"| {policy} | {name} | {est} | {a['pearson']:.3f} | {a['spearman']:.3f} | "
                           f"{a['sign_agree']:.2f} | {a['rel_mse']:.3f} |")
    return "\n".join(out)


def render_probe_findings() -> str:
    d0 = _probe(0)
    ds = [_probe(s) for s in (0, 1, 2)]
    ex = {p: [_score(d, p, "sgd", "exact") for d in ds] for p in ("shared", "head", "logits")}
    om = [_score(d, "shared", "sgd", "omega") for d in ds]
    lead_l = [_score(d, "logits", "sgd", "leading") for d in ds]
    om_l = [_score(d, "logits", "sgd", "omega") for d in ds]
    sign = [_score(d, "shared", "sgd", "exact", "sign_agree") for d in ds]
    # the other step sizes: the largest change of any (policy, optimiser, estimator) Pearson from 1e-3, logits excluded
    drift = max(abs(_score(d0, p, o, e, rel=r) - _score(d0, p, o, e))
                for p in ("shared", "head") for o in ("sgd", "adamw") for e in ("exact", "leading", "omega")
                for r in (1e-4, 1e-2))
    lg = _rec(d0, "logits", "sgd", 1e-4)
    q = _rec(d0, "shared", "sgd")["quadrants"]
    quads = ("pos_high", "pos_low", "neg_high", "neg_low")
    same = [k for k in quads if (q[k]["dh_sum"] > 0) == (q[k]["dh_pred_exact_sum"] > 0)]
    wrong = [k for k in quads if k not in same]
    big_m = max(quads, key=lambda k: abs(q[k]["dh_sum"]))
    big_p = max(quads, key=lambda k: abs(q[k]["dh_pred_exact_sum"]))
    best = all(_score(d, p, "sgd", "exact") >= max(_score(d, p, "sgd", "leading"), _score(d, p, "sgd", "omega"))
               for d in ds for p in ("shared", "head", "logits"))
    return (
        f"* **The first-order formula is exact where its assumption holds.** With one free logit vector per position\n"
        f"  and SGD, the exact estimator has Pearson {_score(d0, 'logits', 'sgd', 'exact'):.3f}, relMSE "
        f"{_score(d0, 'logits', 'sgd', 'exact', 'rel_mse'):.3f}, and its fitted scale equals the learning rate\n"
        f"  ({lg['scores']['exact']['all']['scale']:.3f} vs lr {lg['lr']:.3f} at 1e-4): the derivation is implemented "
        f"correctly and nothing else moves the entropy.\n"
        f"  The leading term drops the policy-average baseline `Σ_j π_j²(log π_j + H)` and already loses a lot\n"
        f"  (Pearson {lead_l[0]:.2f}, though it ranks well: Spearman {_score(d0, 'logits', 'sgd', 'leading', 'spearman'):.2f}, "
        f"sign {_score(d0, 'logits', 'sgd', 'leading', 'sign_agree'):.2f}); STEER's Ω, which also drops it and\n"
        f"  adds a `(1 − π)` factor, is similar ({om_l[0]:.2f} / {_score(d0, 'logits', 'sgd', 'omega', 'spearman'):.2f}).\n"
        f"* **Parameter sharing destroys per-token predictability: Pearson falls from 1.00 to "
        f"{min(ex['shared']):.2f}–{max(ex['shared']):.2f} over three\n  seeds, sign agreement from 1.00 to "
        f"{min(sign):.2f}–{max(sign):.2f} (0.5 is chance).** It is not a large-step effect: every shared and head\n"
        f"  score moves by at most {drift:.3f} between steps 100× apart (1e-4 to 1e-2), so the change is first order, "
        f"but\n  through the other positions' gradients (the off-diagonal of the model's tangent kernel), which no "
        f"per-token\n  estimator sees. Sharing only the output matrix (`head`) is already enough to get there "
        f"({min(ex['head']):.2f}–{max(ex['head']):.2f}):\n  with a character vocabulary every position shares the "
        f"same few rows of `W`. (A 150k-token vocabulary shares less;\n  we did not measure that here.)\n"
        f"* **The exact estimator {'stays the best' if best else 'is not always the best'} of the three** in Pearson "
        f"on every policy with SGD and every seed.\n  With shared parameters Ω comes last ({min(om):.2f}–{max(om):.2f} "
        f"Pearson); in the logit table Ω and the leading term are\n  close ({min(om_l):.2f}–{max(om_l):.2f} vs "
        f"{min(lead_l):.2f}–{max(lead_l):.2f}).\n"
        f"* **AdamW is not a gradient step**, even in the logit table: its first update is ≈ lr·sign(gradient) per\n"
        f"  parameter, so the exact (SGD) formula drops to {_score(d0, 'logits', 'adamw', 'exact'):.2f} there; the "
        f"cruder leading term happens to fit better\n  ({_score(d0, 'logits', 'adamw', 'leading'):.2f}). With the "
        f"shared model AdamW and SGD score alike ({_score(d0, 'shared', 'adamw', 'exact'):.2f} vs "
        f"{_score(d0, 'shared', 'sgd', 'exact'):.2f}).\n"
        f"* **Aggregates are better than tokens, but not reliable either**: on the shared model (SGD, 1e-3) the summed "
        f"measured\n  change has the predicted sign in {len(same)} of 4 quadrants ({', '.join(same)}) but the wrong "
        f"sign in {', '.join(wrong) or 'none'};\n  the largest measured contribution is `{big_m}`, while the prediction "
        f"puts the largest one in `{big_p}`."
    )


def render_probe_quadrants() -> str:
    d = _probe(0)
    rec, lg = _rec(d, "shared", "sgd"), _rec(d, "logits", "sgd")
    sc = rec["scores"]["exact"]
    out = ["| quadrant | token fraction | measured ΣΔH | predicted ΣΔH |", "|---|---|---|---|"]
    for k in ("pos_high", "pos_low", "neg_high", "neg_low"):
        q = rec["quadrants"][k]
        out.append(f"| {k} | {q['frac']:.3f} ({sc[k]['n']} tokens) | {q['dh_sum']:+.2e} | {q['dh_pred_exact_sum']:+.2e} |")
    rel = max(abs(lg["quadrants"][k]["dh_sum"] / lg["quadrants"][k]["dh_pred_exact_sum"] - 1)
              for k in ("pos_high", "pos_low", "neg_high", "neg_low"))
    nh = lg["quadrants"]["neg_high"]
    return "\n".join(out) + (
        f"\n\nIn the logit table the same two columns agree within {100 * rel:.0f} % in every quadrant (e.g. neg_high "
        f"{nh['dh_sum']:+.2e} vs {nh['dh_pred_exact_sum']:+.2e}).")


def render_probe_seeds() -> str:
    parts = []
    for s in (1, 2):
        d = _probe(s)
        parts.append(f"seed {s}: shared/SGD exact {_score(d, 'shared', 'sgd', 'exact'):.3f} (leading "
                     f"{_score(d, 'shared', 'sgd', 'leading'):.3f}, omega {_score(d, 'shared', 'sgd', 'omega'):.3f}), "
                     f"head/SGD exact {_score(d, 'head', 'sgd', 'exact'):.3f}, logits/SGD exact "
                     f"{_score(d, 'logits', 'sgd', 'exact'):.3f}")
    return "Seeds 1 and 2 (different prompts and samples, same model, `--rel-changes 1e-3`): " + "; ".join(parts) + "."


BLOCKS = {  # name -> (page, renderer)
    "probe-setup": ("docs/analysis.md", render_probe_setup),
    "probe-table": ("docs/analysis.md", render_probe_table),
    "probe-seeds": ("docs/analysis.md", render_probe_seeds),
    "probe-quadrants": ("docs/analysis.md", render_probe_quadrants),
    "probe-findings": ("docs/analysis.md", render_probe_findings),
}


def inline_checks() -> list[tuple[str, str]]:
    """(page, text) quoted in running text from the probe's artifacts."""
    pearson = sorted(_score(_probe(s), "shared", "sgd", "exact") for s in (0, 1, 2))
    return [("docs/compare.md", "(`stare probe`: Pearson " + "-".join(f"{x:.2f}" for x in pearson[::2])
             + " over 3 seeds with shared parameters")]
