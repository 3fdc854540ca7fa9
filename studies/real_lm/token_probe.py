"""`stare probe` plus per-token output: the probe's record and every response token's measured and predicted dH.

Issue 42 item 1. `stare probe --out` keeps only the scores; the "near-criticality" question (what share of one
step's entropy change comes from the few tokens STARE's quantiles select) needs the tokens themselves. This
script runs exactly what `stare probe --policies shared --optimizers sgd --rel-changes R` runs (the library's
sampling, lr calibration and `probe_step`, unchanged), captures the step that the final record was scored on,
and writes

- ``args``, ``model``, ``batch``, ``records``: the same payload as ``stare probe --out`` (one record);
- ``tokens``: one entry per valid response token (columns): sequence, position, token text, A, g, H, surprisal,
  pi, measured dH, the three estimators' predictions (per unit step), quadrant, and the selections
  (STARE's L+/L- by surprisal, top-P per advantage sign, batch scope, C2; and ``stare_sensitivity``'s);
- ``selections``: the shares computed from those tokens (see :func:`near_criticality`).

Run (from the repository root, STARE_RL_CACHE set):

    python studies/real_lm/token_probe.py --model smollm2-135m-instruct --task chat_arithmetic \
        --prompts 4 --group 4 --max-new-tokens 16 --out docs/results/real_lm_analysis/tokens_real_start_s0.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

import stare_rl.analysis.probe as probe_mod
from stare_rl.analysis.estimators import ESTIMATORS, predicted_changes, score
from stare_rl.analysis.probe import LossSpec, run_probe
from stare_rl.commands.probe import probed_policy
from stare_rl.core.quadrants import quadrant_masks
from stare_rl.core.types import LossContext, TokenBatch
from stare_rl.methods.stare.config import StareConfig
from stare_rl.methods.stare.loss import stare_selection
from stare_rl.methods.stare.sensitivity import StareSensitivityConfig, sensitivity_selection
from stare_rl.tasks import get_task


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="tiny")
    p.add_argument("--task", default="arithmetic")
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=None)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--advantages", default="grpo")
    p.add_argument("--optimizer", default="sgd", choices=("sgd", "adamw"))
    p.add_argument("--rel-change", type=float, default=1e-3)
    p.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top-p", type=float, default=0.1, help="STARE's P (top fraction per advantage sign)")
    p.add_argument("--label", default=None, help="a name for this run in the summary")
    p.add_argument("--out", type=Path, required=True)
    return p


def _share(x: torch.Tensor, sel: torch.Tensor) -> float:
    tot = float(x.sum())
    return float(x[sel].sum()) / tot if tot != 0 else 0.0


def near_criticality(dh: torch.Tensor, pred: torch.Tensor, adv: torch.Tensor,
                     sels: dict[str, torch.Tensor]) -> dict[str, object]:
    """Shares of the step's entropy change carried by token selections (1-D tensors over valid tokens).

    For each selection: token fraction, share of sum|dH measured|, share of the net measured dH
    (signed; may lie outside [0, 1]), share of sum|exact prediction|, and the same token count taken as the
    oracle (largest |dH measured|) for the best possible share of that size. ``concentration``: the fraction
    of tokens, ranked by |dH measured|, needed for 50 % / 80 % / 90 % of sum|dH measured|.
    """
    n = dh.numel()
    adh, apred = dh.abs(), pred.abs()
    order = torch.argsort(adh, descending=True)
    cum = torch.cumsum(adh[order], 0) / adh.sum()
    out: dict[str, object] = {
        "n_tokens": n, "n_nonzero_adv": int((adv != 0).sum()),
        "sum_abs_dh": float(adh.sum()), "net_dh": float(dh.sum()),
        "net_over_abs": float(dh.sum() / adh.sum()),
        "zero_adv_share_abs_dh": _share(adh, adv == 0),
        "concentration": {f"tokens_for_{int(q * 100)}pct": float((int((cum < q).sum()) + 1) / n)
                          for q in (0.5, 0.8, 0.9)},
    }
    for name, sel in sels.items():
        k = int(sel.sum())
        oracle = torch.zeros(n, dtype=torch.bool)
        oracle[order[:k]] = True
        out[name] = {
            "k": k, "token_frac": k / n,
            "share_abs_dh": _share(adh, sel), "share_net_dh": _share(dh, sel),
            "share_abs_pred_exact": _share(apred, sel),
            "oracle_share_abs_dh": _share(adh, oracle),
            "mean_dh_in": float(dh[sel].mean()) if k else None,
            "mean_dh_out": float(dh[~sel].mean()) if k < n else None,
        }
    return out


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    t0 = time.time()
    task = get_task(args.task)
    policy, tok, info, model_name = probed_policy(args, task)  # stare probe's own set-up: the same batch
    batch = policy.batch

    captured: list[dict] = []
    measure = probe_mod.measure_step

    def capture(*a, **kw):  # the library's step, unchanged; keep its output
        out = measure(*a, **kw)
        captured.append(out)
        return out

    probe_mod.measure_step = capture
    try:
        records = run_probe({"shared": policy}, batch, LossSpec(), (args.optimizer,), (args.rel_change,))
    finally:
        probe_mod.measure_step = measure
    step = captured[-1]  # the step the record was scored on
    logits, g, dh = step["logits"], step["g"], step["dh"]

    valid = batch.response_mask > 0  # (B, T)
    targets = batch.targets
    logp = torch.log_softmax(logits, -1)
    log_prob = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
    entropy = -(logp.exp() * logp).sum(-1)  # (B, T)
    preds = predicted_changes(logits, targets, g)
    adv = batch.advantages
    quads = quadrant_masks(log_prob, entropy, adv, batch.response_mask)
    tb = TokenBatch(log_prob, log_prob, adv, batch.response_mask, entropy)
    _, _, l_plus, l_minus = stare_selection(tb, StareConfig(variant="C2", top_p_ratio=args.top_p), LossContext())
    s_plus, s_minus, _ = sensitivity_selection(tb, StareSensitivityConfig(variant="C2", top_p_ratio=args.top_p))

    quad_of = torch.full(valid.shape, -1, dtype=torch.long)
    names = list(quads)
    for i, q in enumerate(names):
        quad_of[quads[q]] = i
    rows, cols = torch.nonzero(valid, as_tuple=True)

    def col(x: torch.Tensor) -> list:
        return x[valid].tolist()

    tokens = {
        "seq": rows.tolist(), "pos": cols.tolist(),
        "text": [tok.decode([int(t)]) for t in targets[valid].tolist()],
        "A": col(adv), "g": col(g), "H": col(entropy), "surprisal": col(-log_prob), "pi": col(log_prob.exp()),
        "dh": col(dh), **{f"pred_{k}": col(preds[k]) for k in ESTIMATORS},
        "quadrant": [("zero_adv" if i < 0 else names[i]) for i in quad_of[valid].tolist()],
        "stare_l_plus": col(l_plus), "stare_l_minus": col(l_minus),
        "sens_l_plus": col(s_plus), "sens_l_minus": col(s_minus),
    }
    v = {k: x[valid] for k, x in {"dh": dh, "pred": preds["exact"], "adv": adv, "lp": l_plus, "lm": l_minus,
                                  "sp": s_plus, "sm": s_minus}.items()}
    sels = {"stare_l_plus": v["lp"], "stare_l_minus": v["lm"], "stare_l_both": v["lp"] | v["lm"],
            "sens_l_plus": v["sp"], "sens_l_minus": v["sm"], "sens_l_both": v["sp"] | v["sm"],
            **{q: quads[q][valid] for q in names}}
    crit = near_criticality(v["dh"], v["pred"], v["adv"], sels)
    # per sequence: summed measured vs predicted dH (the level between a token and the batch)
    seq_dh = torch.zeros(dh.shape[0], dtype=dh.dtype).index_add_(0, rows, v["dh"])
    per_seq = {k: score(torch.zeros(dh.shape[0], dtype=dh.dtype).index_add_(0, rows, preds[k][valid]), seq_dh)
               for k in ESTIMATORS}
    rec = records[-1]
    batch_level = {
        "measured_mean_dh": rec["dh_sum"],
        # first order with the step's own scale: for SGD the logit-limit scale is the lr
        **{f"pred_{k}_lr_scaled_mean_dh": rec["lr"] * float(preds[k][valid].sum()) / int(valid.sum())
           for k in ESTIMATORS},
        "pred_exact_fitted_scale_mean_dh": rec["scores"]["exact"]["all"]["scale"] * float(v["pred"].sum())
        / int(valid.sum()),
    }
    payload = {
        "args": {k: (str(x) if isinstance(x, Path) else x) for k, x in vars(args).items()},
        "model": model_name if not Path(model_name).is_absolute() else args.model,
        "batch": info, "records": records,
        "selections": crit, "per_sequence": per_seq, "per_batch": batch_level,
        "torch_threads": torch.get_num_threads(), "wall_s": time.time() - t0,
        "tokens": tokens,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1, default=lambda x: None if isinstance(x, float)
                                   and not math.isfinite(x) else x))
    a = rec["scores"]
    print(f"{model_name}: {info['n_sequences']} seqs {info['n_response_tokens']} tokens reward "
          f"{info['reward_mean']:.3f} | lr {rec['lr']:.3e} | pearson exact {a['exact']['all']['pearson']} "
          f"leading {a['leading']['all']['pearson']} omega {a['omega']['all']['pearson']} | "
          f"STARE L+/L- share |dH| {crit['stare_l_both']['share_abs_dh']:.3f} of {crit['stare_l_both']['token_frac']:.3f}"
          f" tokens | {time.time() - t0:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
