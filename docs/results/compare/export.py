"""Copy the light artefacts of a `stare compare` output dir into docs/results/compare (no checkpoints, no models).

    python docs/results/compare/export.py runs/compare docs/results/compare

Per cell: cell.yaml, config.yaml, run_config.json, eval.json, train_summary.json, compare_done.json and
metrics.jsonl (gzipped); plus the report, the results table, compare_run.json and the reference evaluations.
`stare report docs/results/compare/runs/*/seed*` does not read .gz: gunzip a copy first.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

CELL_FILES = ("cell.yaml", "config.yaml", "run_config.json", "eval.json", "train_summary.json", "compare_done.json")


def export(src: Path, dst: Path) -> None:
    for run in sorted(src.glob("runs/*/seed*")):
        if not (run / "compare_done.json").is_file():
            continue  # unfinished cells are not part of the results
        out = dst / run.relative_to(src)
        out.mkdir(parents=True, exist_ok=True)
        for name in CELL_FILES:
            if (run / name).is_file():
                shutil.copy2(run / name, out / name)
        with open(run / "metrics.jsonl", "rb") as f, gzip.open(out / "metrics.jsonl.gz", "wb", 9) as g:
            shutil.copyfileobj(f, g)
    for name in ("results.md", "results.json", "compare_run.json"):
        shutil.copy2(src / name, dst / name)
    for sub in ("report", "reference"):
        if (dst / sub).exists():
            shutil.rmtree(dst / sub)
        shutil.copytree(src / sub, dst / sub)


if __name__ == "__main__":
    export(Path(sys.argv[1]), Path(sys.argv[2]))
