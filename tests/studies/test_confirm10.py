"""Issue #45's study (studies/confirm10): the grids are the frontier's, the analysis reproduces the frontier's
committed numbers on seeds 0-2, and each registered rule's verdict follows its inputs. Fast: no training."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "studies" / "confirm10"
FRONTIER = ROOT / "docs" / "results" / "frontier_cot"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"confirm10_{name}", STUDY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def analyze():
    return _load("analyze")


@pytest.fixture(scope="module")
def result(analyze):
    return analyze.analyse()


def test_grids_use_the_frontiers_base_and_headline_methods() -> None:
    frontier = yaml.safe_load((ROOT / "studies" / "frontier" / "frontier_cot.yaml").read_text())
    main = yaml.safe_load((STUDY / "grid_main.yaml").read_text())
    fair = yaml.safe_load((STUDY / "grid_fair.yaml").read_text())
    assert main["base"] == frontier["base"] and fair["base"] == frontier["base"]
    assert main["seeds"] == [3, 4, 5, 6, 7, 8, 9] and fair["seeds"] == [0, 1, 2]
    for m in ("grpo", "stare_auto_t03", "entropy_bonus_t03"):
        assert main["methods"][m] == frontier["methods"][m]
    assert not set(fair["methods"]) & set(frontier["methods"])  # the fair cells never shadow a frontier cell


def test_driver_order_is_the_registered_one() -> None:
    cells = _load("run_cells").cells()
    assert len(cells) == 21 + 15 + 3  # + the amendment's 0.3x bonus at TRL's bound, seeds 0-2, last
    assert cells[:3] == [("main", "grpo", 3), ("main", "stare_auto_t03", 3), ("main", "entropy_bonus_t03", 3)]
    assert all(p == "main" for p, _, _ in cells[:21]) and all(p == "fair" for p, _, _ in cells[21:])
    assert cells[-3:] == [("fair", "entropy_bonus_trl_t03", s) for s in (0, 1, 2)]


def test_seeds_0_2_reproduce_the_frontiers_committed_numbers(result) -> None:
    committed = json.loads((FRONTIER / "frontier.json").read_text())["methods"]
    for m in ("grpo", "stare_auto_t03", "entropy_bonus_t03"):
        for s in (0, 1, 2):
            mine, theirs = result["cells"][m][str(s)], committed[m]["seeds"][str(s)]
            for key in ("pass@1", "pass@k", "final_entropy", "final_batch_entropy", "target", "band_fraction"):
                assert mine[key] == theirs[key], (m, s, key)
    # while only the frontier's seeds are in, the per-method means are the frontier's means
    for m, st in result["per_method"].items():
        if st["pass@1"]["n"] == 3:
            assert st["pass@1"]["mean"] == pytest.approx(committed[m]["stats"]["pass@1"]["mean"], abs=1e-12)
            assert st["pass@32"]["mean"] == pytest.approx(committed[m]["stats"]["pass@k"]["mean"], abs=1e-12)
    # and the paired difference STARE - GRPO on those seeds is the difference of the committed per-seed values
    p = result["pairs"]["stare_auto_t03 - grpo"]["pass@32"]
    for s, d in zip(p["seeds"], p["diffs"], strict=True):
        if s < 3:
            assert d == committed["stare_auto_t03"]["seeds"][str(s)]["pass@k"] - committed["grpo"]["seeds"][str(s)]["pass@k"]


def test_missing_cells_are_named(result) -> None:
    finished = {(m, int(s)) for m, runs in result["cells"].items() for s in runs}
    for name in result["missing"]:
        m, s = name.split("/seed")
        assert (m, int(s)) not in finished
    assert result["n_missing"] == len(result["missing"])


def test_t_quantile(analyze) -> None:
    assert analyze.t_quantile(0.975, 9) == pytest.approx(2.2622, abs=1e-4)
    assert analyze.t_quantile(0.975, 2) == pytest.approx(4.3027, abs=1e-4)


def _pair(analyze, diffs):
    values = {"a": {s: {"pass@k": d} for s, d in enumerate(diffs)}, "b": {s: {"pass@k": 0.0} for s in range(len(diffs))}}
    return analyze.paired(values, "a", "b", "pass@k")


def test_a_rules_verdict_flips_with_its_inputs(analyze) -> None:
    rule = {"id": "R1", "a": "a", "b": "b", "metric": "pass@k", "lower": 0.0, "claim": "a > b"}
    clear = [0.08, 0.09, 0.07, 0.10, 0.06, 0.08, 0.09, 0.07, 0.08, 0.095]
    assert analyze.apply_rule(rule, _pair(analyze, clear))["verdict"] is True
    straddles = [0.08, -0.09, 0.07, -0.10, 0.06, -0.08, 0.09, -0.07, 0.08, -0.05]
    assert analyze.apply_rule(rule, _pair(analyze, straddles))["verdict"] is False
    # the threshold moves the verdict: the same clear gain does not clear a +10-point bar
    assert analyze.apply_rule({**rule, "lower": 0.10}, _pair(analyze, clear))["verdict"] is False
    # fewer than the registered 10 seeds: an interim reading, no verdict
    interim = analyze.apply_rule(rule, _pair(analyze, clear[:3]))
    assert interim["verdict"] is None and interim["met_so_far"] is True


def test_size_rule_flips(analyze) -> None:
    def pair(metric, d):
        return {"a": "a", "b": "b", "metric": metric, "n": 10, "mean": d}

    assert analyze.apply_size_rule(pair("pass@1", 0.0), pair("pass@k", 0.06))["verdict"] is True
    assert analyze.apply_size_rule(pair("pass@1", -0.02), pair("pass@k", 0.06))["verdict"] is False
    assert analyze.apply_size_rule(pair("pass@1", 0.0), pair("pass@k", 0.04))["verdict"] is False


def test_markdown_lists_rules_and_missing(analyze, result) -> None:
    text = analyze.markdown(result)
    for rid in ("R1", "R2", "R3", "R4", "R5", "C1", "C2", "H1 at 0.5x"):
        assert rid in text
    for name in result["missing"]:
        assert name in text
