"""The countdown_cot grid (studies/compare_cot/compare_cot.yaml, results in docs/results/compare_cot): one budget
for every method, and every cell parses with stare train. Fast: no training."""

from __future__ import annotations

from pathlib import Path

from stare_rl.compare.grid import load_grid
from stare_rl.compare.run import validate_cells

ROOT = Path(__file__).resolve().parents[2]


def test_countdown_cot_grid_same_budget_for_all_and_cells_parse() -> None:
    grid = load_grid(str(ROOT / "studies" / "compare_cot" / "compare_cot.yaml"))
    assert len(grid.seeds) >= 3 and grid.base["task"] == "countdown_cot" and grid.base["max_steps"] >= 600
    assert {"grpo", "dapo", "stare_o1", "stare_c2", "stare_auto", "steer", "clip_cov", "kl_cov", "high_entropy",
            "entropy_adaptive", "entropic"} <= set(grid.methods)
    budget = ("model", "task", "tiny_hidden_size", "tiny_num_layers", "max_steps", "learning_rate",
              "per_device_train_batch_size", "num_generations", "train_size", "eval_size", "eval_k", "eval_every",
              "eval_samples", "eval_prompts", "temperature")
    for key in budget:  # no method changes the budget
        assert len({str(grid.cell_config(m).get(key)) for m in grid.methods}) == 1, key
    assert grid.cell_config("kl_cov")["num_iterations"] == 2 and grid.cell_config("clip_cov")["num_iterations"] == 2
    # their control: the same surrogate settings and off-policy updates without the covariance term
    control = grid.cell_config("vanilla_it2")
    assert control["method"] == "vanilla" and control["num_iterations"] == 2
    assert all(control[k] == grid.cell_config("clip_cov")[k] for k in ("clip_ratio_low", "clip_ratio_high"))
    plans = validate_cells(grid)  # every cell parses with stare train's parser
    assert plans["grpo"].warmstart.warmstart_config().hidden_size == 64
