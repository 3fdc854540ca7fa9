"""Steps 301-450 of Entrocraft at 0.5x on countdown_cot (seed 2): the grid cell (NSR on the advantage's sign) against
the same checkpoint-300 resumed with NSR on the raw reward. Prints the README's table rows.

    python summarise.py advantage_sign_cell/metrics.jsonl.gz metrics.jsonl.gz
"""
import gzip
import json
import sys


def load(path: str) -> dict[int, dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return {r["step"]: r for r in map(json.loads, fh) if "control/batch_entropy" in r}


for label, path in (("advantage sign (the grid cell)", sys.argv[1]), ("raw reward (this fix)", sys.argv[2])):
    d = load(path)
    st = [s for s in sorted(d) if 301 <= s <= 450]

    def mean(key: str, steps: list[int] = st, d: dict = d) -> float:
        return sum(d[s].get(key, float("nan")) for s in steps) / len(steps)

    h0, h1 = mean("control/batch_entropy", st[:25]), mean("control/batch_entropy", st[-25:])
    nsr = sum(d[s]["control/entrocraft_mode"] == -1 for s in st) / len(st)
    print(f"| {label} | {mean('loss/kept_frac') * 100:.1f} | {nsr * 100:.0f} | {h0:.4f} | {h1:.4f} | "
          f"{(h1 / h0 - 1) * 100:+.1f} | {mean('rewards/reward/mean'):.3f} | {mean('frac_reward_zero_std'):.2f} | "
          f"{mean('quadrant/neg_low_dh_pred'):+.4f} / {mean('quadrant/neg_high_dh_pred'):+.4f} |")
