"""Check that a re-run grid cell reproduces a committed one: every logged metric at every step, and the final
held-out evaluation, compared exactly (wall-clock fields excepted).

    stare compare --config studies/compare_cot/compare_cot.yaml --out runs/repro --methods grpo --seeds 0
    python docs/results/compare/check_cell.py docs/results/compare_cot/runs/grpo/seed0 runs/repro/runs/grpo/seed0

Prints one line per differing metric (first step where it differs, both values, the largest absolute
difference over all steps) and exits 1; prints "identical" and exits 0 when nothing differs. Reads
metrics.jsonl or metrics.jsonl.gz on either side. Bit-exact reproduction is expected on the same machine and
versions (compare_run.json); another CPU or torch build may differ in the last digits.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

# wall-clock measurements: they differ between two runs of the same cell by nature
TIMING_KEYS = (
    "step_time",
    "eval/wall_s",
    "wall_s",
    "train_runtime",
    "train_samples_per_second",
    "train_steps_per_second",
)


def _rows(cell: Path) -> dict[tuple[int, int], dict]:
    path = cell / "metrics.jsonl"
    opener = open
    if not path.is_file():
        path, opener = cell / "metrics.jsonl.gz", gzip.open
    if not path.is_file():
        raise SystemExit(f"check_cell: no metrics.jsonl(.gz) in {cell}")
    rows: dict[tuple[int, int], dict] = {}
    seen: dict[int, int] = {}
    with opener(path, "rt") as f:
        for line in f:
            row = json.loads(line)
            step = int(row.get("step", -1))
            n = seen.get(step, 0)  # a step can log two rows (training metrics, then the held-out curve)
            seen[step] = n + 1
            rows[(step, n)] = {k: v for k, v in row.items() if k not in TIMING_KEYS}
    return rows


def compare(committed: Path, rerun: Path) -> list[str]:
    """The differences between two cells, one line each (empty: identical)."""
    a, b = _rows(committed), _rows(rerun)
    problems = []
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        problems.append(
            f"logged steps differ: only committed {[s for s, _ in only_a][:5]}, "
            f"only re-run {[s for s, _ in only_b][:5]}"
        )
    first: dict[str, tuple] = {}
    worst: dict[str, float] = {}
    for key in sorted(set(a) & set(b)):
        ra, rb = a[key], b[key]
        for name in sorted(set(ra) | set(rb)):
            va, vb = ra.get(name), rb.get(name)
            if va == vb:
                continue
            first.setdefault(name, (key[0], va, vb))
            if isinstance(va, (int, float)) and isinstance(vb, (int, float)):
                worst[name] = max(worst.get(name, 0.0), abs(float(va) - float(vb)))
    for name, (step, va, vb) in first.items():
        problems.append(
            f"{name}: first differs at step {step} ({va!r} vs {vb!r}), "
            f"max |diff| {worst.get(name, float('nan')):.3g}"
        )
    ea = json.loads((committed / "eval.json").read_text())
    eb = json.loads((rerun / "eval.json").read_text())
    for name in sorted(set(ea) | set(eb)):
        if name not in TIMING_KEYS and ea.get(name) != eb.get(name):
            problems.append(f"eval.json {name}: {ea.get(name)!r} vs {eb.get(name)!r}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    problems = compare(Path(argv[0]), Path(argv[1]))
    for line in problems:
        print(line)
    if not problems:
        n = len(_rows(Path(argv[0])))
        print(
            f"identical: {n} logged rows and eval.json (wall-clock fields {', '.join(TIMING_KEYS[:2])} excepted)"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
