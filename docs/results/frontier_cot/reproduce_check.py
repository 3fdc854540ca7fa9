"""Compare a re-run cell with its committed copy: every metrics row and value but the timings, and the files.

    python docs/results/frontier_cot/reproduce_check.py docs/results/frontier_cot/runs/grpo/seed0 RERUN/runs/grpo/seed0

Exits 1 when any metric differs. Timings (``step_time``, ``eval/wall_s``, the train summary's runtimes) and the
run's own paths (``output_dir``) are expected to differ and are listed, not compared.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

TIMINGS = ("step_time", "eval/wall_s")


def rows(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    text = gzip.open(run / "metrics.jsonl.gz", "rt").read() if not path.is_file() else path.read_text()
    return [json.loads(line) for line in text.splitlines()]


def main(committed: Path, rerun: Path) -> int:
    a, b = rows(committed), rows(rerun)
    diffs = [(r1.get("step"), k) for r1, r2 in zip(a, b, strict=False) for k in sorted(set(r1) | set(r2))
             if k not in TIMINGS and r1.get(k) != r2.get(k)]
    n_values = sum(len([k for k in r if k not in TIMINGS]) for r in a)
    print(f"metrics rows: committed {len(a)}, re-run {len(b)}; values compared {n_values}; differing {len(diffs)}"
          + (f": {diffs[:10]}" if diffs else ""))
    for name in ("eval.json", "cell.yaml", "run_config.json", "config.yaml", "train_summary.json"):
        same = (committed / name).read_bytes() == (rerun / name).read_bytes()
        print(f"{name}: {'identical' if same else 'differs'}")
    return 0 if not diffs and len(a) == len(b) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
