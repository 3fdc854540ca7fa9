"""Issue #45's driver: run the study's missing cells in the registered order, two at a time, and commit each.

    nohup python studies/confirm10/run_cells.py --run-root /work/runs/confirm10 > /work/runs/confirm10/driver.log 2>&1 &
    python studies/confirm10/run_cells.py --dry-run          # the cells in order and their state
    python studies/confirm10/run_cells.py --status           # + steps logged, checkpoints, seconds per step so far
    touch /work/runs/confirm10/STOP                           # start no new cell (running ones finish and are committed)

Order (studies/confirm10/HYPOTHESES.md): seeds 3-9 of `grid_main.yaml` (per seed grpo, stare_auto_t03,
entropy_bonus_t03), then seeds 0-2 of `grid_fair.yaml`. Each cell is one
`stare compare --config GRID --out RUN_ROOT/<part> --methods M --seeds S --parallel 1` under `nice -n 19`, with the
frontier's kernel pins (ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 OMP_NUM_THREADS=1), so an interrupted cell resumes
from its last checkpoint (every 100 steps) when the driver is started again on the same run root. A cell already
committed under docs/results/confirm10/<part>/runs is skipped. When a cell finishes, the driver refreshes the grid's
report, copies the cell's light files and the report into docs/results/confirm10/<part>/, re-runs
studies/confirm10/analyze.py and commits exactly docs/results/confirm10 with a message naming the cell, its wall
time and how many of the study's cells are done. The driver is studies/cell_driver.py's, shared by every study;
this file only declares the study.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # studies/: the shared driver
from cell_driver import KERNEL_PINS, ROOT, Block, Study, main  # noqa: E402

STUDY = Study(
    tag="#45 confirm10",
    grids={"main": HERE / "grid_main.yaml", "fair": HERE / "grid_fair.yaml"},
    order=(Block("main", (3, 4, 5, 6, 7, 8, 9), ("grpo", "stare_auto_t03", "entropy_bonus_t03")),
           Block("fair", (0, 1, 2), ("entropy_bonus_trl_t05", "entropy_bonus_trl_t07", "entropic_hg_t03",
                                     "entropic_hg_t05", "entropic_hg_t07")),
           Block("fair", (0, 1, 2), ("entropy_bonus_trl_t03",))),  # the amendment, after the registered cells
    docs=ROOT / "docs" / "results" / "confirm10",
    analyze=HERE / "analyze.py",
    run_root=Path("/work/runs/confirm10"),
    pins=KERNEL_PINS,
    parallel=2,
    cells_noun="new cells",
    doc_blocks=("confirm10", "confirm10-fair", "headline", "frontier-headline", "confirm10-cost"),
)
cells = STUDY.cells  # the registered order (tests/studies/test_confirm10.py)

if __name__ == "__main__":
    sys.exit(main(STUDY, __file__, __doc__))
