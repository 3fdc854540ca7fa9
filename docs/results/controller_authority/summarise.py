"""Issue #28, item 2: does `weight_control: auto` hold a RELATIVE target below the start entropy?

    python docs/results/controller_authority/summarise.py OUT_DIR LABEL=RUN_DIR[@TARGET][~FROM] [...]

(`@TARGET`: score a run that has no target, e.g. GRPO, against the absolute target of the run it is compared with.
`~FROM`: score only the steps after the first FROM logged steps, e.g. a run resumed at step FROM under other
settings, or its parent over the same window; W and its bound are counted over the same steps.)

Per run (a `stare train` or `stare compare` cell directory), with the frontier grid's definitions
(studies/frontier/frontier.py): the resolved target (`control/target_entropy`), the batch entropy
(`control/batch_entropy`), the band fraction (±10 % of the target, from the first crossing to the end), held-out
pass@1 / pass@k. Added here, to read the band fraction against what noise alone allows:

- **noise (% of target)**: the sample std of the batch entropy around its centred 21-step moving mean, after the
  first crossing, in percent of the target: the step-to-step scatter that no controller acting once per step
  removes (each step's batch is a fresh sample of 16 prompts x 8 completions).
- **noise ceiling**: the band fraction of a perfect controller whose mean sits exactly on the target under that
  scatter, taken as Gaussian: erf(0.1 / (sqrt(2) * noise)).
- **mean / target**: the mean batch entropy after the first crossing over the target (the controller's bias).
- **band of the 21-step mean**: the band fraction of the centred 21-step moving mean of the batch entropy (same
  first crossing): where the policy's entropy level sits, with the per-step sampling scatter averaged out.
  Exploratory (not the pre-registered metric, which is the raw batch entropy's).
- **W at bound**: steps with W at `auto_w_max` (W >= auto_w_max), and the largest W seen.

Writes OUT_DIR/summary.json (earlier labels kept) and prints a markdown table. Reads only; copies nothing.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from stare_rl.analysis.runs import read_run

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "studies" / "frontier"))  # the frontier's definitions
from frontier import ENTROPY_KEYS, TARGET_KEY, band_fraction, cell_values, first_crossing  # noqa: E402

BAND, WINDOW = 0.1, 21


def _series_ending(run, suffix: str) -> list[float]:
    key = next((k for k in run.series if k.endswith(suffix)), None)
    return [v for _, v in run.series[key]] if key else []


def summarise(run_dir: Path, target_override: float | None = None, from_step: int = 0) -> dict:
    run = read_run(run_dir)
    key = next(k for k in ENTROPY_KEYS if run.series.get(k))
    h = [v for _, v in run.series[key]][from_step:]
    targets = [v for _, v in run.series.get(TARGET_KEY, [])] or _series_ending(run, "auto_target")  # older runs
    target = target_override if target_override is not None else [v for v in targets if math.isfinite(v)][-1]
    first = first_crossing(h, target, BAND)
    out = {**cell_values(run_dir, BAND), "steps": len(h), "from_step": from_step, "entropy_start": h[0],
           "first_crossing_step": None if first is None else first + from_step,
           "target": target, "band_fraction": band_fraction(h, target, BAND)}
    if first is not None:
        tail = h[first:]
        half = WINDOW // 2
        smooth = [statistics.fmean(tail[max(0, i - half):i + half + 1]) for i in range(len(tail))]
        resid = [h_i - m_i for h_i, m_i in zip(tail, smooth, strict=True)]
        noise = statistics.stdev(resid) / target if len(resid) > 2 else None
        out.update({
            "band_fraction_smoothed": sum(abs(v / target - 1) <= BAND for v in smooth) / len(smooth),
            "noise_pct_of_target": None if noise is None else 100 * noise,
            "noise_ceiling": None if not noise else math.erf(BAND / (math.sqrt(2) * noise)),
            "mean_over_target": statistics.fmean(tail) / target,
        })
    w = _series_ending(run, "reweight_w")[from_step:]
    # W at its bound: W >= auto_w_max (auto_saturated_high means the whole range is at its top, which with
    # auto_fallback: bonus is W and the bonus both at their bounds)
    w_bound = float((run.config or {}).get("auto_w_max", 50.0))
    sat = [v >= w_bound * (1 - 1e-9) for v in w] if _series_ending(run, "auto_saturated_high") else []
    out.update({"w_max_seen": max(w) if w else None, "steps_at_w_bound": int(sum(sat)) if sat else None,
                "w_final": w[-1] if w else None})
    return out


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "summary.json"
    summary = json.loads(path.read_text()) if path.is_file() else {}
    for item in argv[1:]:
        label, run = item.split("=", 1)
        run, _, start = run.partition("~")  # RUN_DIR~500: only the steps after the first 500
        run, _, target = run.partition("@")  # RUN_DIR@0.123: score a run without a target (GRPO) against one
        summary[label] = summarise(Path(run), float(target) if target else None, int(start) if start else 0)
    path.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")

    def f(v, fmt="{:.3f}"):
        return "-" if v is None else fmt.format(v)

    print("| run | steps | H start | target | first crossing | band ±10 % | noise % of target | noise ceiling | "
          "band of the 21-step mean | mean / target | W max (steps at bound) | pass@1 | pass@k |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, s in summary.items():
        print(f"| {label} | {s['steps']} | {f(s['entropy_start'])} | {f(s['target'])} | {f(s['first_crossing_step'], '{}')}"
              f" | {f(s['band_fraction'] and 100 * s['band_fraction'], '{:.1f} %')} | {f(s.get('noise_pct_of_target'), '{:.1f}')}"
              f" | {f(s.get('noise_ceiling') and 100 * s['noise_ceiling'], '{:.1f} %')}"
              f" | {f(s.get('band_fraction_smoothed') and 100 * s['band_fraction_smoothed'], '{:.1f} %')} | {f(s.get('mean_over_target'))}"
              f" | {f(s['w_max_seen'], '{:.1f}')} ({f(s['steps_at_w_bound'], '{}')}) | {f(s['pass@1'])} | {f(s['pass@k'])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
