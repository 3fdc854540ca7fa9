"""The committed-results scripts: `export.py --restore` (continue a committed partial grid) and `check_cell.py`
(does a re-run cell reproduce a committed one), on the real committed countdown_cot cells."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "results" / "compare_cot"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "results" / "compare" / f"{name}.py")
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
