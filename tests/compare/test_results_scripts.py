"""The committed-results scripts: `export.py --restore` (continue a committed partial grid) and `check_cell.py`
(does a re-run cell reproduce a committed one), on the real committed countdown_cot cells."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "results" / "compare_cot"


def _load(name: str, folder: str = "compare"):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "results" / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def restored(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("grid")
    _load("export").restore(COMMITTED, out)
    return out


def test_restore_puts_back_every_finished_cell(restored):
    committed = sorted(p.relative_to(COMMITTED) for p in COMMITTED.glob("runs/*/seed*/compare_done.json"))
    back = sorted(p.relative_to(restored) for p in restored.glob("runs/*/seed*/compare_done.json"))
    assert committed and back == committed
    assert (restored / "runs" / "grpo" / "seed0" / "metrics.jsonl").is_file()  # unzipped for stare compare


def test_check_cell_identical_on_a_restored_cell(restored, capsys):
    check = _load("check_cell")
    cell = Path("runs") / "grpo" / "seed0"
    assert check.compare(COMMITTED / cell, restored / cell) == []
    assert check.main([str(COMMITTED / cell), str(restored / cell)]) == 0
    assert "identical" in capsys.readouterr().out


def test_check_cell_names_a_changed_metric_and_ignores_wall_clock(restored, tmp_path):
    check = _load("check_cell")
    cell = restored / "runs" / "grpo" / "seed0"
    copy = tmp_path / "seed0"
    copy.mkdir()
    rows = [json.loads(line) for line in (cell / "metrics.jsonl").read_text().splitlines()]
    rows[5]["step_time"] = 123.0  # wall clock: never a difference
    rows[500]["actor/entropy"] += 1e-7  # one metric at one step: must be reported
    (copy / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev = json.loads((cell / "eval.json").read_text())
    (copy / "eval.json").write_text(json.dumps(ev))
    problems = check.compare(cell, copy)
    assert len(problems) == 1 and problems[0].startswith("actor/entropy: first differs at step 500")
    ev["pass@32"] += 1 / 256
    (copy / "eval.json").write_text(json.dumps(ev))
    assert any(p.startswith("eval.json pass@32") for p in check.compare(cell, copy))
    assert check.main([str(cell), str(copy)]) == 1


def _write_run(run: Path, entropy: list[float], target: float | None) -> Path:
    run.mkdir(parents=True)
    rows = [{"step": i + 1, "control/batch_entropy": h, **({} if target is None else {"control/target_entropy": target})}
            for i, h in enumerate(entropy)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "eval.json").write_text(json.dumps({"k": 8, "avg@8": 0.5, "pass@8": 0.75}))
    return run


def test_authority_summary_by_hand(tmp_path):
    """Start at 2x the target, then alternating +-5 % around it: crossing at step 2, every later step in the +-10 %
    band. The centred 21-step mean of an alternating series is the target -+ 0.05/21, so each residual is
    +-0.05 x 20/21 (noise 4.76 % of the target; the truncated windows at the two ends change it by < 1 %), and a
    perfect controller's ceiling is erf(0.1 / (sqrt(2) x 0.0476)) = 0.964."""
    auth = _load("summarise", "controller_authority")
    entropy = [2.0] + [1.05 if i % 2 == 0 else 0.95 for i in range(200)]
    s = auth.summarise(_write_run(tmp_path / "auto", entropy, target=1.0))
    assert s["first_crossing_step"] == 1 and s["band_fraction"] == 1.0 and s["band_fraction_smoothed"] == 1.0
    assert s["noise_pct_of_target"] == pytest.approx(100 * 0.05 * 20 / 21, rel=0.01)
    assert s["noise_ceiling"] == pytest.approx(math.erf(0.1 / (math.sqrt(2) * 0.05 * 20 / 21)), abs=0.003)
    assert s["mean_over_target"] == pytest.approx(1.0, abs=0.01)
    assert s["pass@1"] == 0.5 and s["pass@k"] == 0.75
    # a run without a target (GRPO) scored against another run's: half its steps sit at 0.5 (out of the band)
    grpo = auth.summarise(_write_run(tmp_path / "grpo", [2.0] + [1.0, 0.5] * 50, target=None), target_override=1.0)
    assert grpo["target"] == 1.0 and grpo["band_fraction"] == pytest.approx(0.5)
    # ~FROM: only the steps after the first 51 (1 + 25 pairs): 25 pairs left, still half of them in the band
    late = auth.summarise(_write_run(tmp_path / "grpo2", [2.0] + [1.0, 0.5] * 50, target=None), 1.0, from_step=51)
    assert late["steps"] == 50 and late["from_step"] == 51 and late["first_crossing_step"] == 51
    assert late["band_fraction"] == pytest.approx(0.5) and late["entropy_start"] == 1.0
