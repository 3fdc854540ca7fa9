"""Copy the light artefacts of a `stare compare` output dir into docs/results/compare (no checkpoints, no models).

    python docs/results/compare/export.py runs/compare docs/results/compare
    python docs/results/compare/export.py --restore docs/results/compare_cot runs/compare_cot   # continue a grid

Per cell: cell.yaml, config.yaml, run_config.json, eval.json, train_summary.json, compare_done.json and
metrics.jsonl (gzipped); plus the report, the results table, compare_run.json and the reference evaluations.
`--restore` does the reverse for the finished cells (metrics unzipped, reference evaluations copied), so that
`stare compare --config ... --out runs/compare_cot` skips them and runs only the missing cells (a partial grid
committed by one session is finished by the next); the restored cells have no checkpoints or models.
The frontier analysis's files (frontier.md/.json/.png, frontier_curves.png) are copied too where they exist.
`stare report docs/results/compare/runs/*/seed*` does not read .gz: gunzip a copy first.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

FRONTIER_FILES = ("frontier.md", "frontier.json", "frontier.png", "frontier_curves.png")
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
    for name in FRONTIER_FILES:  # studies/frontier/frontier.py's outputs, where it ran
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    for sub in ("report", "reference"):
        if (dst / sub).exists():
            shutil.rmtree(dst / sub)
        shutil.copytree(src / sub, dst / sub, ignore=shutil.ignore_patterns("report.html"))  # PNGs repeated


def restore(src: Path, dst: Path) -> None:
    for cell in sorted(src.glob("runs/*/seed*")):
        out = dst / cell.relative_to(src)
        if (out / "compare_done.json").is_file():
            continue  # finished there already: never overwritten
        if out.exists():
            shutil.rmtree(out)  # an unfinished local cell of a finished committed one: the committed one wins
        out.mkdir(parents=True)
        for name in CELL_FILES:
            if (cell / name).is_file():
                shutil.copy2(cell / name, out / name)
        with gzip.open(cell / "metrics.jsonl.gz", "rb") as f, open(out / "metrics.jsonl", "wb") as g:
            shutil.copyfileobj(f, g)
    for ref in sorted((src / "reference").glob("*/seed*/eval.json")):
        target = dst / ref.relative_to(src)
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ref, target)


if __name__ == "__main__":
    if sys.argv[1] == "--restore":
        restore(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        export(Path(sys.argv[1]), Path(sys.argv[2]))
