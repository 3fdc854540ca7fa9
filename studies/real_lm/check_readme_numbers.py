"""Every decimal number in docs/results/real_lm_analysis/README.md must be in a committed JSON next to it.

Collects the numbers of ``SOURCES`` (summary.json without its per-batch copies, stare probe's own real batch, the
GRPO-20 run's evaluations and config, the model's build record), and checks that each decimal number written in
the README (``0.263``, ``-0.88``, ``13.2 %``, ``1.4e-04``) equals one of them rounded to the digits written (a
percentage, or any number in a table of percentages, against 100x the value). Integers are not checked (counts
such as 16 responses or 230 tokens are in the JSONs too, but so are seeds and steps). Prints the numbers it cannot
find; exit status 1 if any.

    python studies/real_lm/check_readme_numbers.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "docs" / "results" / "real_lm_analysis"
# where the README's numbers come from: the summary (not its per-batch copies), the GRPO-20 run's evaluations and
# config, the model's build record, and stare probe's own real batch
SOURCES = [HERE / "summary.json", HERE / "stare_probe_real_start_s0.json",
           *(ROOT / "docs" / "results" / "real_lm" / "stare_train" / f for f in ("eval.json", "eval_initial.json",
                                                                                 "config.yaml")),
           ROOT / "docs" / "results" / "real_lm" / "stare_model.json"]
# the per-token columns and the per-step series hold thousands of values: almost any short decimal would match one
SKIP = {"tokens", "series", "token_runs"}
NUM = re.compile(r"(?<![\w.])[-+−]?\d+\.\d+(?:e[-+]?\d+)?( ?%)?")


def numbers(obj: object, out: list[float]) -> None:
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        out.append(float(obj))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k not in SKIP:
                numbers(v, out)
    elif isinstance(obj, list):
        for v in obj:
            numbers(v, out)


def main() -> int:
    vals: list[float] = []
    for p in SOURCES:
        numbers(yaml.safe_load(p.read_text()) if p.suffix == ".yaml" else json.loads(p.read_text()), vals)
    text = (HERE / "README.md").read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # commands
    text = re.sub(r"`[^`]*`", "", text)  # inline code: flags, file names, commits
    bad = []
    for m in NUM.finditer(text):
        s = m.group(0).replace("−", "-").replace("%", "").strip()
        pct = m.group(1) is not None
        x = float(s)
        if "e" in s.lower():
            mant = s.lower().split("e")[0]
            digits = len(mant.split(".")[1])
            ok = any(v != 0 and f"{v:.{digits}e}" == f"{x:.{digits}e}" for v in vals)
        else:
            digits = len(s.split(".")[1])
            # a percentage (written with %, or in a table of percents) against 100x the value
            ok = any(round(v, digits) == round(x, digits) and not pct or round(100 * v, digits) == round(x, digits)
                     for v in vals)
        if not ok:
            bad.append(m.group(0))
    for b in bad:
        print(f"not in the JSONs: {b}")
    print(f"{len(NUM.findall(text))} numbers checked, {len(bad)} not found")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
