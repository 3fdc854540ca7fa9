"""Issue #45's bit-identity check: the first N steps of a re-run against the committed cell, every logged value.

    ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 OMP_NUM_THREADS=1 STARE_RL_CACHE=/work/runs/confirm10/cache \
      stare train --config docs/results/frontier_cot/runs/grpo/seed0/cell.yaml --config_base none --max_steps 30 \
      --output_dir /work/runs/confirm10/bitcheck/grpo_seed0
    python studies/confirm10/bitcheck.py docs/results/frontier_cot/runs/grpo/seed0 /work/runs/confirm10/bitcheck/grpo_seed0

Compares the re-run's metrics rows with the committed cell's first rows (the frontier's reproduce_check.py compares
whole cells; a 30-step re-run is a prefix), leaving out the timings (``step_time``, ``eval/wall_s``). Prints every
differing value; exits 1 when a training value differs (the held-out evaluation's entropy is listed, as the
frontier's README records a 9th-digit difference of it across CPUs, samples unchanged). A name logged by only one of
the two runs is a difference too, unless its value equals another name's in the same row: a value that the
library now logs once (#44: e.g. ``loss/gate_on`` is ``control/gate_on``), listed apart.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

TIMINGS = ("step_time", "eval/wall_s")


def rows(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    text = path.read_text() if path.is_file() else gzip.open(run / "metrics.jsonl.gz", "rt").read()
    return [json.loads(line) for line in text.splitlines()]


def twin(row: dict, key: str) -> str | None:
    """Another name carrying ``row[key]``'s value in the same row (the name a value is now logged under), if any:
    one with the same last part (``loss/gate_on`` -> ``control/gate_on``) first; never the step counter."""
    same = [k for k, v in row.items() if k not in (key, "step", *TIMINGS) and v == row[key]]
    return next((k for k in same if k.rsplit("/", 1)[-1] == key.rsplit("/", 1)[-1]), same[0] if same else None)


def main(committed: Path, rerun: Path) -> int:
    a, b = rows(committed), rows(rerun)
    diffs, once = [], set()
    for r1, r2 in zip(a, b, strict=False):
        for k in sorted(set(r1) | set(r2)):
            if k in TIMINGS or r1.get(k) == r2.get(k):
                continue
            only = r1 if k not in r2 else r2 if k not in r1 else None
            if only is not None and twin(only, k) is not None:
                once.add((k, twin(only, k)))
                continue
            diffs.append((r1.get("step"), k, r1.get(k), r2.get(k)))
    n_values = sum(len([k for k in r if k not in TIMINGS]) for r in a[:len(b)])
    print(f"rows compared: {len(b)} (steps {b[0].get('step')}-{b[-1].get('step')}); values compared {n_values}; "
          f"differing {len(diffs)}")
    for d in diffs:
        print(f"  step {d[0]} {d[1]}: committed {d[2]!r}, re-run {d[3]!r}")
    for k, kept in sorted(once):
        print(f"  {k}: logged by one run only, its value is {kept}'s (logged once)")
    print(f"step-0 held-out pass@1: committed {a[0].get('eval/pass@1')!r}, re-run {b[0].get('eval/pass@1')!r}")
    training = [d for d in diffs if not d[1].startswith("eval/")]
    return 1 if training else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
