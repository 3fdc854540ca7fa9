"""The one reader of old setting names (:mod:`stare_rl.core.legacy`): old YAML files, grids, command lines and
runs' config.yaml load under today's names, with a warning; both names with two values is an error."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from stare_rl.compare.grid import parse_grid
from stare_rl.core.legacy import RENAMED_SETTINGS, current_flags, current_settings
from stare_rl.train.config import load_yaml_config
from stare_rl.train.plan import plan_run


def test_old_names_are_read_as_todays_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert current_settings({"bonus_target_entropy": "0.5x", "seed": 1}, "here") == {
            "target_entropy": "0.5x", "seed": 1}
    assert "here: bonus_target_entropy is the old name of target_entropy" in caplog.text
    assert current_settings({"bonus_target_entropy": 0.3, "target_entropy": 0.3}, "here") == {"target_entropy": 0.3}
    with pytest.raises(ValueError, match=r"bonus_target_entropy=0.3 and target_entropy=0.5 are one setting"):
        current_settings({"bonus_target_entropy": 0.3, "target_entropy": 0.5}, "here")
    assert current_flags(["--bonus_target_entropy", "0.5x", "--bonus-target-entropy=0.3", "--seed", "1"]) == [
        "--target_entropy", "0.5x", "--target_entropy=0.3", "--seed", "1"]
    assert RENAMED_SETTINGS == {"bonus_target_entropy": "target_entropy", "stare_gate": "gate_entropy"}


def _setup(argv: list[str], tmp_path: Path, name: str):
    plan = plan_run([*argv, "--output_dir", str(tmp_path / name)])
    assert plan is not None
    return plan.setup


@pytest.mark.parametrize("method", ["vanilla", "stare"])
def test_the_old_flag_and_an_old_config_give_the_same_run(tmp_path: Path, method: str) -> None:
    new = _setup(["--method", method, "--entropy_bonus", "adaptive", "--target_entropy", "0.5x"], tmp_path, "new")
    old = _setup(["--method", method, "--entropy_bonus", "adaptive", "--bonus_target_entropy", "0.5x"], tmp_path, "old")
    (tmp_path / "old.yaml").write_text(yaml.safe_dump({"method": method, "entropy_bonus": "adaptive",
                                                       "bonus_target_entropy": "0.5x"}))
    assert load_yaml_config(str(tmp_path / "old.yaml"))["target_entropy"] == "0.5x"
    from_yaml = _setup(["--config", str(tmp_path / "old.yaml")], tmp_path, "yaml")
    assert new == old == from_yaml and new.adaptive_entropy == {"target_entropy": "0.5x"}
    if method == "stare":  # one target for every holder: the method's gate and the bonus
        assert new.method_config.target_entropy == "0.5x"


def test_unset_target_is_the_methods_for_every_holder(tmp_path: Path) -> None:
    setup = _setup(["--method", "stare", "--entropy_bonus", "adaptive"], tmp_path, "run")
    assert setup.adaptive_entropy == {"target_entropy": 0.3} and setup.method_config.target_entropy == 0.3
    setup = _setup(["--method", "entropic", "--entropy_bonus", "adaptive"], tmp_path, "entropic")
    assert setup.adaptive_entropy == {"target_entropy": 0.1} == {"target_entropy": setup.method_config.target_entropy}
    assert _setup(["--entropy_bonus", "adaptive", "--method", "vanilla"], tmp_path, "vanilla").adaptive_entropy == {}


def test_a_grid_in_the_old_spelling_gives_the_same_cells() -> None:
    def grid(bonus: dict) -> dict:
        return {"target_entropy": "0.3x", "base": {"max_steps": 2},
                "methods": {"bonus": {"method": "vanilla", "entropy_bonus": "adaptive", **bonus},
                            "stare": {"method": "stare"}}}

    old = parse_grid(grid({"bonus_target_entropy": "0.5x"}))
    new = parse_grid(grid({"target_entropy": "0.5x"}))
    assert old.cell_config("bonus") == new.cell_config("bonus") == {
        "max_steps": 2, "method": "vanilla", "entropy_bonus": "adaptive", "target_entropy": "0.5x"}
    # the grid's target reaches every holder, the adaptive bonus included
    assert parse_grid(grid({})).cell_config("bonus")["target_entropy"] == "0.3x"
    assert old.cell_config("stare")["target_entropy"] == "0.3x"
