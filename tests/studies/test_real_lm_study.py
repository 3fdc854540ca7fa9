"""Issue #42's study (studies/real_lm/analyze.py): the registered rules' verdicts follow their inputs, the committed
cells give the committed report, and the activity reading says when each actuator acted. Fast: no training."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "studies" / "real_lm"
COMMITTED = ROOT / "docs" / "results" / "real_lm_grid"


@pytest.fixture(scope="module")
def analyze():
    spec = importlib.util.spec_from_file_location("real_lm_analyze", STUDY / "analyze.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(path: Path, rows: list[dict], done: bool = True) -> Path:
    path.mkdir(parents=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if done:
        (path / "compare_done.json").write_text("{}")
    return path


def test_activity_counts_the_acting_steps_and_the_first_step_off_grpo(analyze, tmp_path: Path) -> None:
    grpo = _run(tmp_path / "grpo", [{"step": s, "actor/entropy": h} for s, h in enumerate([2.0, 1.5, 1.0, 0.8], 1)])
    stare = _run(tmp_path / "stare", [
        {"step": 1, "actor/entropy": 2.0, "control/gate_on": 0.0},
        {"step": 2, "actor/entropy": 1.5, "control/gate_on": 0.0},
        {"step": 3, "actor/entropy": 1.0, "control/gate_on": 1.0},   # acts here: the loss changes from step 3 on
        {"step": 4, "actor/entropy": 0.9, "control/gate_on": 1.0}])  # so its entropy first differs at step 4
    a = analyze.activity(analyze.CANDIDATE, stare, grpo)
    assert a == {"metric": "control/gate_on", "steps": 4, "acting_steps": 2, "first_acting_step": 3,
                 "first_step_differs_from_grpo": 4}


def test_activity_of_a_bonus_that_never_acted_and_of_an_unfinished_reference(analyze, tmp_path: Path) -> None:
    grpo = _run(tmp_path / "grpo", [{"step": 1, "actor/entropy": 2.0}], done=False)
    bonus = _run(tmp_path / "bonus", [{"step": 1, "actor/entropy": 2.0, "control/entropy_coef": 0.0}])
    a = analyze.activity(analyze.BONUS, bonus, grpo)
    assert (a["acting_steps"], a["first_acting_step"], a["first_step_differs_from_grpo"]) == (0, None, None)
    assert analyze.activity(analyze.REFERENCE, grpo, None) is None  # GRPO has no actuator


def test_entrocraft_acts_whenever_its_mode_is_not_grpo(analyze, tmp_path: Path) -> None:
    cell = _run(tmp_path / "ec", [{"step": s, "actor/entropy": 1.0, "control/entrocraft_mode": m}
                                  for s, m in enumerate([1.0, 0.0, -1.0], 1)])
    assert analyze.activity(analyze.ENTROCRAFT, cell, None)["acting_steps"] == 2


@pytest.mark.parametrize("d,tau,verdict", [
    ([0.05, 0.03], 0.01, "holds"),          # m 0.04 > tau and every seed positive
    ([0.05, -0.01], 0.01, "not separated"),  # one seed against
    ([-0.05, -0.03], 0.01, "reversed"),
    ([0.005, 0.004], 0.01, "not separated"),  # positive but within the seed spread
])
def test_gain_rule(analyze, d: list[float], tau: float, verdict: str) -> None:
    assert analyze.gain_rule({"d": d, "m": sum(d) / len(d), "tau": tau}) == verdict


@pytest.mark.parametrize("m,tau,verdict", [
    (-0.019, 0.05, "holds"),           # costs less than 2 points
    (-0.03, 0.005, "does not hold"),   # beyond 2 points + tau
    (-0.03, 0.02, "not separated"),
])
def test_cost_rule(analyze, m: float, tau: float, verdict: str) -> None:
    assert analyze.cost_rule({"d": [m, m], "m": m, "tau": tau}) == verdict


def test_the_committed_report_is_the_analysis_of_the_committed_cells(analyze, tmp_path: Path) -> None:
    """The report under docs/results/real_lm_grid is what analyze.py makes of the cells committed beside it."""
    runs = COMMITTED  # the committed cells are under runs/<method>/seed<k>, as under the grid's --out
    analyze.main(["--runs", str(runs), "--out", str(tmp_path)])
    assert (tmp_path / "real_lm.md").read_text() == (COMMITTED / "real_lm.md").read_text()


def test_the_07x_pair_is_ruled_like_the_05x_pair(analyze) -> None:
    """The amendment's pair gets R0b and R2-R5 from the same code, reading its own cells only."""
    def cell(p1: float, pk: float, target: float | None = None, h: float = 1.0) -> dict:
        return {"pass@1": p1, "pass@k": pk, "final_batch_entropy": h, "target": target, "start_batch_entropy": 2.0}
    values = {"grpo": {0: cell(0.40, 0.80), 1: cell(0.42, 0.82)},
              "stare_auto_t07": {0: cell(0.41, 0.90, 1.5), 1: cell(0.43, 0.91, 1.5)},
              "entropy_bonus_trl_t07": {0: cell(0.40, 0.84, 1.5), 1: cell(0.41, 0.85, 1.5)}}
    d = analyze.decide(values)
    at07 = d["at_0.7x"]
    assert at07["R0b"]["verdict"] == "holds" and at07["R0b"]["target"] == 1.5
    assert at07["R2"]["verdict"] == "holds" and at07["R3"]["verdict"] == "holds"
    assert at07["R4"]["pass@k"]["verdict"] == "holds" and at07["R5"]["verdict"] == "holds"
    assert d["R2"]["verdict"] == "not tested"  # the 0.5x pair has no cells here
