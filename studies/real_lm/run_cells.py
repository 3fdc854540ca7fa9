"""Issue #42's driver: run the real-LM grid's missing cells in the registered order, one at a time, and commit each.

    STARE_RL_CACHE=/work/cache nohup python studies/real_lm/run_cells.py > /work/runs/real_lm/driver.log 2>&1 &
    python studies/real_lm/run_cells.py --dry-run          # the cells in order and their state
    python studies/real_lm/run_cells.py --status           # + steps logged, checkpoint, seconds per step so far
    touch /work/runs/real_lm/STOP                           # start no new cell (a running one finishes and is committed)

Order (studies/real_lm/grid.yaml's header, HYPOTHESES.md): seed 0 of grpo, stare_auto_t05, entropy_bonus_trl_t05;
then seed 1 of the same; then stare_auto_t07 and entropy_bonus_trl_t07 seeds 0-1 (the amendment of 2026-11-27);
then entrocraft_t05 seeds 0-1; then seed 2 of all six. Each cell is one
`stare compare --config studies/real_lm/grid.yaml --out RUN_ROOT --methods M --seeds S --parallel 1` under
`nice -n 19` with the frontier's kernel pins, the ones the first cells were started with by hand (about an hour per
cell on SmolLM2-135M-Instruct: one at a time); it resumes from its last checkpoint (every 10 steps). STARE_RL_CACHE
must name the cache that holds the model (/work/cache here). A cell that a `stare compare` started by hand is running
on the same run root is waited for, then committed. A finished cell's light files go to
docs/results/real_lm_grid/runs/<method>/seed<S>/ and the grid's report beside runs/; then
`studies/real_lm/analyze.py --runs RUN_ROOT --out docs/results/real_lm_grid` re-runs (real_lm.md, real_lm.json) and
exactly docs/results/real_lm_grid is committed. The driver is studies/cell_driver.py's; this file declares the study.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # studies/: the shared driver
from cell_driver import KERNEL_PINS, ROOT, Block, Study, main  # noqa: E402

HEADLINE = ("grpo", "stare_auto_t05", "entropy_bonus_trl_t05")
AT_07 = ("stare_auto_t07", "entropy_bonus_trl_t07")  # the amendment of 2026-11-27 (HYPOTHESES.md)
STUDY = Study(
    tag="#42 real_lm",
    grids={"": HERE / "grid.yaml"},  # one grid, its --out is the run root itself
    order=(Block("", (0, 1), HEADLINE), Block("", (0, 1), AT_07), Block("", (0, 1), ("entrocraft_t05",)),
           Block("", (2,), (*HEADLINE, "entrocraft_t05", *AT_07))),
    docs=ROOT / "docs" / "results" / "real_lm_grid",
    analyze=HERE / "analyze.py",
    analyze_args=("--runs", "{run_root}", "--out", "{docs}"),
    run_root=Path("/work/runs/real_lm"),
    pins=KERNEL_PINS,
    needs_env={"STARE_RL_CACHE": "the cache that holds SmolLM2-135M-Instruct (here /work/cache)"},
    parallel=1,
    doc_blocks=("real-lm-grid", "real-lm-readme"),  # docs/compare.md and README.md, re-rendered with each cell
)

if __name__ == "__main__":
    sys.exit(main(STUDY, __file__, __doc__))
