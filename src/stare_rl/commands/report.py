"""``stare report RUN_DIR [RUN_DIR ...] [--out DIR]``: plots and an HTML page from run directories."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from stare_rl.analysis.report import build_report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stare report",
        description="Render one self-contained HTML page (figures embedded) plus PNGs and summary.json from "
        "run directories written by `stare train` (metrics.jsonl, run config, eval.json). Runs of different "
        "methods overlay; seeds of one method aggregate to mean with a min/max band.",
    )
    p.add_argument("run_dirs", nargs="+", type=Path, help="run directories (each with a metrics.jsonl)")
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default: <first run dir>/report when one run, else ./stare_report)")
    p.add_argument("--band", type=float, default=0.25,
                   help="half-width of the target-entropy band, relative to the target (default 0.25 = ±25%%)")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    out = args.out or (args.run_dirs[0] / "report" if len(args.run_dirs) == 1 else Path("stare_report"))
    try:
        page = build_report(args.run_dirs, out, band_rel=args.band)
    except ValueError as exc:
        print(f"stare report: error: {exc}")
        return 2
    print(f"report: {page}")
    print(f"figures and summary.json: {page.parent}")
    return 0
