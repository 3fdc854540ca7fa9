"""The pre-registered frontier: its grid file (same budget as countdown_cot's grid, the actuators at the same
relative targets, every cell parsed by stare train) and its analysis script on synthetic result files (values
computed by hand; missing and unfinished cells listed; the figure written)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml

from frontier import (
    _fmt,
    band_fraction,
    collect,
    entropy_curves,
    family_of,
    frontier_markdown,
    main,
    registration,
    write_frontier,
)
from stare_rl.compare.grid import DONE_FILE, parse_grid, restrict, spread

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "studies"
ACTUATORS = ("stare_auto", "entropy_bonus", "entropic", "entrocraft", "stare_sens_auto")


def _yaml(path: str) -> dict:
    return yaml.safe_load((STUDIES / path).read_text())


def test_frontier_grid_is_the_countdown_cot_budget_with_matched_relative_targets() -> None:
    data = _yaml("frontier/frontier_cot.yaml")
    assert data["base"] == _yaml("compare_cot/compare_cot.yaml")["base"]  # same model, data, steps, batch, lr, evaluation
    grid = parse_grid(data)
    assert len(grid.seeds) >= 3 and grid.band == 0.1
    points = {m: family_of(grid, m) for m in grid.methods}
    for fam in ACTUATORS:
        assert sorted(t for f, t in points.values() if f == fam) == ["0.3x", "0.5x", "0.7x"], fam
    assert points["grpo"] == ("grpo", None) and points["dapo"] == ("dapo", None)
    assert {grid.cell_config(m)["method"] for m in ("steer", "high_entropy")} == {"steer", "high_entropy"}
    assert grid.cell_config("stare_auto_t05")["weight_control"] == "auto"
    assert grid.cell_config("stare_auto_t05")["variant"] == "C2"
    assert grid.cell_config("stare_sens_auto_t05")["method"] == "stare_sensitivity"  # added after registration
    assert grid.cell_config("entropy_bonus_t07")["entropy_bonus"] == "adaptive"
    assert "anneal" not in grid.cell_config("entrocraft_t03")  # constant band: the targets are compared
    for key in ("max_steps", "learning_rate", "per_device_train_batch_size", "num_generations", "eval_k"):
        assert len({str(grid.cell_config(m).get(key)) for m in grid.methods}) == 1, key
    assert grid.cell_config("grpo")["clip_ratio_high"] == 0.2
    roles = registration(grid)  # the hypotheses' roles, as registered in docs/compare.md
    assert (roles.reference, roles.candidate, roles.holds_most, roles.holds_least) == \
        ("grpo", "stare_auto", "entrocraft", "entropic")
    assert set(roles.actuators) == set(ACTUATORS) - {"stare_sens_auto"} and roles.unheld == ("steer", "high_entropy")


def test_every_frontier_cell_parses_with_stare_train() -> None:
    pytest.importorskip("trl")
    from stare_rl.compare.run import validate_cells

    plans = validate_cells(parse_grid(_yaml("frontier/frontier_cot.yaml")))
    assert len(plans) == 19
    assert plans["entrocraft_t05"].setup.method_config.target_entropy == "0.5x"
    assert plans["entropy_bonus_t03"].setup.adaptive_entropy["target_entropy"] == "0.3x"


@pytest.mark.parametrize(
    ("entropy", "target", "expected"),
    [
        # band [0.09, 0.11] (+-10 % of 0.1); first crossing at index 2 (0.105 in the band); tail of 8, 7 in band
        ([0.2, 0.15, 0.105, 0.1, 0.095, 0.12, 0.1, 0.1, 0.091, 0.1], 0.1, 7 / 8),
        ([0.2, 0.05, 0.1, 0.2], 0.1, 1 / 3),  # crosses by jumping past the target: tail [0.05, 0.1, 0.2]
        ([0.2, 0.19, 0.18], 0.1, None),  # never crossed
        ([0.05, 0.06, 0.095], 0.1, 1.0),  # starts below: first in the band at index 2, tail [0.095]: 1 of 1
    ],
)
def test_band_fraction_hand_derived(entropy: list, target: float, expected: float | None) -> None:
    got = band_fraction(entropy, target, 0.1)
    assert got == (None if expected is None else pytest.approx(expected))


def _grid(tmp: Path):
    data = {
        "out": str(tmp / "out"), "seeds": [0, 1], "band": 0.1,
        "base": {"model": "tiny", "task": "countdown_cot", "max_steps": 10},
        "methods": {
            "grpo": {"method": "vanilla", "clip_ratio_high": 0.2},
            "entrocraft_t05": {"method": "entrocraft", "target_entropy": "0.5x"},
            "entrocraft_t07": {"method": "entrocraft", "target_entropy": "0.7x"},
            "entropy_bonus_t05": {"method": "vanilla", "entropy_bonus": "adaptive", "bonus_target_entropy": "0.5x"},
        },
    }
    return parse_grid(data)


def _cell(grid, method: str, seed: int, entropy: list[float], target: float | None, avg: float, pass_k: float,
          done: bool = True, gz: bool = False, key: str = "control/batch_entropy") -> None:
    d = grid.out / "runs" / method / f"seed{seed}"
    d.mkdir(parents=True)
    rows = [{"step": 0, "eval/pass@1": 0.1}]  # the step-0 evaluation row: no entropy, no target
    for i, h in enumerate(entropy, start=1):
        row = {"step": i, key: h}
        if target is not None:
            row["control/target_entropy"] = target
        rows.append(row)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if gz:
        (d / "metrics.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    else:
        (d / "metrics.jsonl").write_text(text)
    (d / "eval.json").write_text(json.dumps({"avg@32": avg, "pass@32": pass_k, "k": 32, "entropy": avg / 10}))
    (d / "run_config.json").write_text(json.dumps({"method": method, "seed": seed}))
    if done:
        (d / DONE_FILE).write_text(json.dumps({"wall_s": 1.0}))


def test_analysis_on_synthetic_cells_hand_derived(tmp_path: Path) -> None:
    grid = _grid(tmp_path)
    flat = [0.2] * 9 + [0.3]  # 10 steps: final H = the last 10 % = the last step
    _cell(grid, "grpo", 0, flat, None, avg=0.40, pass_k=0.60)
    _cell(grid, "grpo", 1, flat[:-1] + [0.1], None, avg=0.42, pass_k=0.56, gz=True,  # committed results: gzipped
          key="actor/entropy")  # a run without the step controller's metric: verl's name is read
    # target 0.1, band [0.09, 0.11]: crossing at step 3, tail [0.1, 0.1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1]: 7 of 8
    _cell(grid, "entrocraft_t05", 0, [0.2, 0.15, 0.1, 0.1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1], 0.1, avg=0.30,
          pass_k=0.80)
    _cell(grid, "entrocraft_t05", 1, [0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], 0.1, avg=0.34,
          pass_k=0.76)
    _cell(grid, "entrocraft_t07", 0, [0.2] * 10, 0.14, avg=0.2, pass_k=0.9, done=False)  # interrupted: not scored
    results = collect(grid)

    assert results["n_cells"] == 8 and results["n_done"] == 4
    assert results["missing"] == ["entrocraft_t07/seed0", "entropy_bonus_t05/seed0", "entrocraft_t07/seed1",
                                  "entropy_bonus_t05/seed1"]
    g = results["methods"]["grpo"]["stats"]
    assert g["pass@1"]["mean"] == pytest.approx(0.41) and g["pass@1"]["std"] == pytest.approx(0.0141421, abs=1e-6)
    assert g["pass@k"]["mean"] == pytest.approx(0.58)
    assert g["final_batch_entropy"]["values"] == pytest.approx([0.3, 0.1])  # mean 0.2, sample std 0.141421
    assert g["final_entropy"]["values"] == pytest.approx([0.040, 0.042])  # eval.json's held-out entropy
    assert g["target"] is None and g["band_fraction"] is None
    e = results["methods"]["entrocraft_t05"]
    assert (e["family"], e["target_spec"]) == ("entrocraft", "0.5x")
    assert e["stats"]["band_fraction"]["values"] == pytest.approx([7 / 8, 1.0])  # seed 1: crossing at step 2
    assert e["stats"]["target"]["mean"] == pytest.approx(0.1)
    assert e["stats"]["pass@1"]["mean"] == pytest.approx(0.32) and e["stats"]["pass@k"]["mean"] == pytest.approx(0.78)
    assert results["methods"]["entrocraft_t07"]["stats"]["pass@1"] is None  # unfinished: no values

    md = frontier_markdown(results)
    assert "# Frontier: 4 of 8 cells finished" in md
    assert "| grpo | grpo | - | 2/2 | 41.0 ± 1.4 | 58.0 ± 2.8 | 0.041 ± 0.001 | 0.200 ± 0.141 | - | - |" in md
    assert "| entrocraft_t05 | entrocraft | 0.5x | 2/2 | 32.0 ± 2.8 | 78.0 ± 2.8 | 0.032 ± 0.003 | 0.100 ± 0.000 | " \
           "0.100 ± 0.000 | 93.8 ± 8.8 |" in md
    assert "| entropy_bonus_t05 | entropy_bonus | 0.5x | 0/2 | - | - | - | - | - | - |" in md
    assert "Missing cells (not finished): entrocraft_t07/seed0, entropy_bonus_t05/seed0" in md
    assert "decisions" not in results and "pre-registered rules" not in md  # this grid registers no roles

    written = write_frontier(grid)
    png = grid.out / "frontier.png"
    assert written["figure"] == str(png) and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert written["curves"] == str(grid.out / "frontier_curves.png")
    assert (grid.out / "frontier_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    curves = entropy_curves(grid)  # relative to each run's first step, mean over the finished seeds
    assert sorted(curves) == ["entrocraft", "references"] and list(curves["references"]) == ["grpo"] and list(curves["entrocraft"]) == ["entrocraft_t05"]
    # step 2: seed 0 0.15 / 0.2 = 0.75, seed 1 0.1 / 0.2 = 0.5 -> 0.625; step 5: (1.0 + 0.5) / 2 = 0.75
    assert dict(curves["entrocraft"]["entrocraft_t05"])[2] == pytest.approx(0.625)
    assert dict(curves["entrocraft"]["entrocraft_t05"])[5] == pytest.approx(0.75)
    assert json.loads((grid.out / "frontier.json").read_text())["missing"] == results["missing"]


def test_no_finished_cell_writes_the_table_and_no_figure(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    cfg = tmp_path / "grid.yaml"
    cfg.write_text(yaml.safe_dump({"out": str(tmp_path / "out"), "seeds": [0], "base": {"max_steps": 1},
                                   "methods": {"grpo": {"method": "vanilla"}}}))
    assert main(["--config", str(cfg)]) == 0
    assert "0 of 1 cells finished" in capsys.readouterr().out
    assert (tmp_path / "out" / "frontier.md").is_file() and not (tmp_path / "out" / "frontier.png").exists()
    assert not (tmp_path / "out" / "frontier_curves.png").exists()
    assert main(["--config", str(tmp_path / "nope.yaml")]) == 2
    assert "frontier: error: config=" in capsys.readouterr().err
    assert restrict(parse_grid(yaml.safe_load(cfg.read_text())), out=tmp_path / "x").out == tmp_path / "x"


def test_one_seed_is_shown_without_a_spread() -> None:
    """A method with one finished seed has no sample std: the table says so instead of printing "± 0.0"."""
    assert _fmt(spread([0.394]), pct=True) == "39.4 (1 seed)"
    assert _fmt(spread([0.39, 0.41]), pct=True) == "40.0 ± 1.4"
    assert _fmt(None) == "-"


def test_a_grid_with_a_frontier_section_gets_the_rules_applied(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    roles = {"reference": "grpo", "candidate": "entrocraft", "rivals": ["entropy_bonus"], "holds_most": "entrocraft",
             "holds_least": "entropy_bonus", "unheld": ["grpo"]}
    grid = _grid(tmp_path)
    grid = type(grid)(**{**grid.__dict__, "frontier": roles})
    for seed in (0, 1):
        _cell(grid, "grpo", seed, [0.2] * 10, None, avg=0.40 + 0.02 * seed, pass_k=0.60)
        _cell(grid, "entrocraft_t05", seed, [0.2] + [0.1] * 9, 0.1, avg=0.30, pass_k=0.80 + 0.02 * seed)
    results = collect(grid)
    d = results["decisions"]
    # entrocraft_t05 at its target, entropy_bonus_t05 unfinished: H1 at 0.5x undecided, named
    assert d["H1"]["0.5x"]["text"] == ("undecided: entropy_bonus_t05 not finished with 2 seeds; so far at the "
                                      "target: entrocraft_t05")
    # H2 on the means: pass@1 0.30 vs 0.41 (-11.0), pass@k 0.81 vs 0.60 (+21.0); entrocraft_t07 unfinished
    assert d["H2"]["verdict"] is None and "entrocraft_t05: pass@1 -11.0, pass@k +21.0" in d["H2"]["text"]
    md = frontier_markdown(results)
    assert "## The pre-registered rules, applied" in md and "- **H1 at 0.5x**: undecided" in md

    cfg = tmp_path / "grid.yaml"
    bad = {"out": str(tmp_path / "out2"), "seeds": [0], "base": {"max_steps": 1},
           "methods": {"grpo": {"method": "vanilla"}}, "frontier": {**roles, "candidate": "stare_auto"}}
    cfg.write_text(yaml.safe_dump(bad))
    assert main(["--config", str(cfg)]) == 2  # refused before any run is read or anything written
    assert "frontier: error: frontier.candidate='stare_auto': ['stare_auto'] is not a family" in capsys.readouterr().err
    assert not (tmp_path / "out2").exists()


def test_figure_gives_each_family_its_own_colour_and_hollow_points_keep_it(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Session 39's figure drew 80/20 and Entrocraft in the same green: each hollow (missed-target) marker took
    the next colour of the cycle. Every family now has its own colour and a hollow marker its family's."""
    import matplotlib.axes

    from frontier import frontier_figure

    def stat(v: float) -> dict:
        return {"mean": v, "std": 0.01, "values": [v]}

    def method(family: str, spec: str | None, h: float) -> dict:
        stats = {"pass@1": stat(0.4), "pass@k": stat(0.6), "final_batch_entropy": stat(h),
                 "target": stat(0.1) if spec else None}
        return {"family": family, "target_spec": spec, "stats": stats, "seeds": [0]}

    methods = {"grpo": method("grpo", None, 0.03), "high_entropy": method("high_entropy", None, 0.03)}
    for fam in ("stare_auto", "entropy_bonus", "entropic", "entrocraft", "stare_sens_auto"):
        for spec in ("0.3x", "0.5x"):
            methods[f"{fam}_t{spec[2]}"] = method(fam, spec, 0.05)  # half the target: every point hollow
    errorbars, hollow = [], []
    real_errorbar, real_plot = matplotlib.axes.Axes.errorbar, matplotlib.axes.Axes.plot
    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar",
                        lambda self, *a, **k: errorbars.append((k["label"], k.get("color"))) or real_errorbar(self, *a, **k))
    monkeypatch.setattr(matplotlib.axes.Axes, "plot",
                        lambda self, *a, **k: hollow.append(k.get("markeredgecolor")) or real_plot(self, *a, **k))
    results = {"methods": methods, "n_done": 12, "n_cells": 12}
    assert frontier_figure(results, tmp_path / "f.png") == tmp_path / "f.png"
    colours = dict(errorbars)
    assert len(colours) == 7 and len(set(colours.values())) == 7  # seven families, seven colours
    assert len(hollow) == 10 and set(hollow) == {colours[f] for f in colours if f not in ("grpo", "high_entropy")}
