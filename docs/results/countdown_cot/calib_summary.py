"""Print the calibration numbers of `stare train` run directories on countdown_cot (docs/results/countdown_cot).

    python docs/results/countdown_cot/calib_summary.py RUN_DIR [RUN_DIR ...]
    python docs/results/countdown_cot/calib_summary.py --md NAME RUN_DIR [NAME RUN_DIR ...]   # markdown

Per run: the batch entropy right after the warm start (first logged step) and at the end (mean of the last 5
steps), their ratio and the first step below 30 % of the start; the held-out curve (step 0 = the warm start);
the (A > 0, surprisal > H) token fraction (mean over all steps, first 50, last 50; and its share among tokens
with a non-zero advantage and among A > 0 tokens); wall seconds per step.
Reads metrics.jsonl or metrics.jsonl.gz.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path


def records(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    opener = open if path.is_file() else gzip.open
    path = path if path.is_file() else run / "metrics.jsonl.gz"
    with opener(path, "rt") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    by_step: dict[int, dict] = {}
    for r in rows:
        by_step.setdefault(r["step"], {}).update(r)
    return [by_step[s] for s in sorted(by_step)]


def series(rows: list[dict], key: str) -> list[tuple[int, float]]:
    return [(r["step"], r[key]) for r in rows if isinstance(r.get(key), int | float)]


def summary(run: Path) -> dict:
    rows = records(run)
    ent = series(rows, "actor/entropy")
    h0 = ent[0][1]
    h_end = statistics.mean(v for _, v in ent[-5:])
    below = next((s for s, v in ent if v < 0.3 * h0), None)
    q = [v for _, v in series(rows, "quadrant/pos_high_frac")]
    zero = [v for _, v in series(rows, "quadrant/zero_adv_frac")]
    pos = [a + b for (_, a), (_, b) in zip(series(rows, "quadrant/pos_high_frac"),
                                           series(rows, "quadrant/pos_low_frac"), strict=True)]
    curve = [{k.removeprefix("eval/"): r[k] for k in ("step", "eval/pass@1", "eval/pass@8", "eval/pass@32",
                                                       "eval/greedy_acc", "eval/response_length", "eval/entropy")
              if k in r} for r in rows if "eval/pass@1" in r]
    times = [v for _, v in series(rows, "step_time")]
    reward = [v for _, v in series(rows, "critic/score/mean")]
    return {
        "run": str(run), "steps": ent[-1][0],
        "entropy_start": h0, "entropy_end_mean_last5": h_end, "entropy_ratio": h_end / h0,
        "entropy_min": min(v for _, v in ent), "first_step_below_30pct": below,
        "pos_high_frac_mean": statistics.mean(q) if q else None,
        "pos_high_frac_first50": statistics.mean(q[:50]) if q else None,
        "pos_high_frac_last50": statistics.mean(q[-50:]) if q else None,
        "zero_adv_frac_mean": statistics.mean(zero) if zero else None,
        "pos_high_share_of_gradient_tokens": (statistics.mean(q) / (1 - statistics.mean(zero))
                                              if q and zero and statistics.mean(zero) < 1 else None),
        "pos_high_share_of_pos_tokens": statistics.mean(q) / statistics.mean(pos) if pos else None,
        "train_reward_first20": statistics.mean(reward[:20]) if reward else None,
        "train_reward_last20": statistics.mean(reward[-20:]) if reward else None,
        "step_time_s_median": statistics.median(times) if times else None,
        "curve": curve,
    }


def markdown(s: dict, name: str) -> str:
    """The run's numbers as the markdown block of calibration.md."""
    pct = lambda v: "–" if v is None else f"{100 * v:.2f} %"  # noqa: E731
    lines = [f"**{name}** (`{s['run']}`, logged up to step {s['steps']}):", "",
             f"* batch entropy (`actor/entropy`): {s['entropy_start']:.3f} at step 1 (right after the warm start) "
             f"-> {s['entropy_end_mean_last5']:.3f} (mean of the last 5 steps), ratio "
             f"**{s['entropy_ratio']:.2f}**, min {s['entropy_min']:.3f}; first step below 30 %: "
             f"{s['first_step_below_30pct'] or 'none'}",
             f"* (A > 0, surprisal > H) tokens: **{pct(s['pos_high_frac_mean'])}** of valid tokens (mean over steps; "
             f"first 50 steps {pct(s['pos_high_frac_first50'])}, last 50 {pct(s['pos_high_frac_last50'])}); "
             f"tokens with A = 0: {pct(s['zero_adv_frac_mean'])}; share among A != 0 tokens "
             f"{pct(s['pos_high_share_of_gradient_tokens'])}, among A > 0 tokens {pct(s['pos_high_share_of_pos_tokens'])}",
             f"* training reward: {s['train_reward_first20']:.3f} (first 20 steps) -> {s['train_reward_last20']:.3f} "
             f"(last 20); median wall time per step {s['step_time_s_median']:.1f} s", "",
             "| step | held-out pass@1 | pass@8 | pass@32 | greedy | length | sampling entropy |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for c in s["curve"]:
        lines.append(f"| {c['step']} | {c['pass@1']:.3f} | {c['pass@8']:.3f} | {c['pass@32']:.3f} | "
                     f"{c['greedy_acc']:.3f} | {c['response_length']:.1f} | {c['entropy']:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--md":  # --md NAME RUN_DIR [NAME RUN_DIR ...]
        args = sys.argv[2:]
        print("\n\n".join(markdown(summary(Path(run)), name) for name, run in zip(args[::2], args[1::2],
                                                                                  strict=True)))
        sys.exit(0)
    for arg in sys.argv[1:]:
        s = summary(Path(arg))
        curve = s.pop("curve")
        print(json.dumps(s, indent=1))
        print("step  pass@1  pass@8  pass@32  greedy  length  entropy")
        for c in curve:
            print(f"{c['step']:>4}  {c.get('pass@1', float('nan')):.3f}   {c.get('pass@8', float('nan')):.3f}   "
                  f"{c.get('pass@32', float('nan')):.3f}    {c.get('greedy_acc', float('nan')):.3f}   "
                  f"{c.get('response_length', float('nan')):5.1f}   {c.get('entropy', float('nan')):.3f}")
