"""Summarise `weight_control: auto` runs: the issue's band metric, held-out accuracy, and slim metrics files.

    python docs/results/weight_control/summarise.py OUT_DIR LABEL=RUN_DIR [LABEL=RUN_DIR ...]

For each run: the first step whose batch entropy (``actor/entropy``) is <= the target (or, for a run that starts
below the band, the first step at or above its lower edge), then the fraction of the remaining steps (that one included) with entropy within +-10 % of the target; final entropy (mean of the last 5
steps); the controller's final W and how many steps W sat at its bound; held-out avg@k / pass@k from eval.json.
Writes OUT_DIR/<label>.metrics.jsonl.gz (entropy, reward and stare/* keys only), OUT_DIR/<label>.eval.json and
OUT_DIR/summary.json (rows of earlier labels are kept), and prints a markdown table.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

TARGET, BAND = 0.3, 0.10
KEPT = ("step", "actor/entropy", "critic/score/mean", "response_length/mean")


def summarise(run: Path) -> tuple[dict, list[dict]]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "actor/entropy" in r]
    h = [r["actor/entropy"] for r in rows]
    if h[0] < (1 - BAND) * TARGET:  # started below the band (countdown_cot): the entropy must rise to it
        first = next((i for i, v in enumerate(h) if v >= (1 - BAND) * TARGET), None)
    else:  # started above the target or inside the band: the first step at or below the target
        first = next((i for i, v in enumerate(h) if v <= TARGET), None)
    after = h[first:] if first is not None else []
    w = [r.get("stare/reweight_w") for r in rows]
    out = {
        "steps": len(h),
        "entropy_start": h[0],
        "entropy_final": sum(h[-5:]) / len(h[-5:]),
        "first_at_target_step": None if first is None else rows[first]["step"],
        "in_band_after_first": None if not after else sum(abs(v / TARGET - 1) <= BAND for v in after) / len(after),
        "in_band_25_after_first": None if not after else sum(abs(v / TARGET - 1) <= 0.25 for v in after) / len(after),
        "w_final": w[-1],
        "w_max_seen": max((x for x in w if x is not None), default=None),
        "steps_at_w_bound": sum(1 for r in rows if r.get("stare/auto_saturated_high") == 1.0),
    }
    ev = run / "eval.json"
    if ev.is_file():
        e = json.loads(ev.read_text())
        k = e["k"]
        out.update({"avg@k": e[f"avg@{k}"], "pass@k": e[f"pass@{k}"], "greedy": e["greedy_acc"], "k": k})
    slim = [{k: v for k, v in r.items() if k in KEPT or k.startswith("stare/")} for r in rows]
    return out, slim


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    previous = out_dir / "summary.json"  # runs summarised earlier keep their rows (their run dirs may be gone)
    summary = json.loads(previous.read_text()) if previous.is_file() else {}
    for item in argv[1:]:
        label, run = item.split("=", 1)
        s, slim = summarise(Path(run))
        summary[label] = s
        with gzip.open(out_dir / f"{label}.metrics.jsonl.gz", "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in slim)
        if (Path(run) / "eval.json").is_file():
            shutil.copy(Path(run) / "eval.json", out_dir / f"{label}.eval.json")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("| run | steps | H start -> final | first <= target | in ±10 % after | in ±25 % after | W final (max) | steps at W bound | avg@k | pass@k |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, s in summary.items():
        def pct(x):
            return "-" if x is None else f"{100 * x:.1f} %"
        w = "-" if s["w_final"] is None else f"{s['w_final']:.2f} ({s['w_max_seen']:.1f})"
        print(f"| {label} | {s['steps']} | {s['entropy_start']:.3f} -> {s['entropy_final']:.3f} | "
              f"{s['first_at_target_step']} | {pct(s['in_band_after_first'])} | {pct(s['in_band_25_after_first'])} | "
              f"{w} | {s['steps_at_w_bound']} | {s.get('avg@k', float('nan')):.3f} | {s.get('pass@k', float('nan')):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
