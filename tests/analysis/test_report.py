"""`stare report` on synthetic-but-realistic run directories, including bad input."""

from __future__ import annotations

import json
import logging
import math
import random
from pathlib import Path

import pytest
from PIL import Image

from stare_rl.analysis.runs import read_run, read_series
from stare_rl.commands.report import main as report_main

TARGET = 0.3


def _write_run(root: Path, name: str, method: str, seed: int, steps: int, *, stare: bool) -> Path:
    """A run directory shaped like `stare train` output: metrics.jsonl, run_config.json, eval.json."""
    rng = random.Random(seed * 100 + len(method))
    d = root / name
    d.mkdir(parents=True)
    h, w, m = 0.5, 1.0, 1.0
    lines = []
    for step in range(1, steps + 1):
        gate = stare and h < TARGET
        if stare:  # closed loop holds entropy around the target
            h += (0.02 if gate else -0.01) + rng.gauss(0, 0.004)
            w, m = (min(w + 0.01, 1.5), max(m - 0.01, 0.5)) if gate else (max(w - 0.01, 1.0), min(m + 0.01, 1.0))
        else:  # GRPO: entropy collapses
            h = 0.5 * math.exp(-step / 25) + 0.05 + rng.gauss(0, 0.004)
        row = {
            "step": step, "actor/entropy": h, "control/batch_entropy": h + rng.gauss(0, 0.002),
            "actor/pg_loss": rng.gauss(0, 0.05), "critic/score/mean": min(1.0, 0.3 + step / 100 + rng.gauss(0, 0.03)),
            "response_length/mean": 6.0 + rng.gauss(0, 0.3),
            "quadrant/pos_high_frac": 0.03, "quadrant/pos_low_frac": 0.45 - 0.001 * step,
            "quadrant/neg_high_frac": 0.12 + 0.0005 * step, "quadrant/neg_low_frac": 0.3,
            "quadrant/neg_high_dh_pred": -0.02 + rng.gauss(0, 0.002), "quadrant/pos_high_dh_pred": 0.004,
        }
        if stare:  # STARE's own metrics (declared at its registration), its selections' shares included
            row.update({"quadrant/l_plus_share": 0.1 + rng.gauss(0, 0.01), "quadrant/l_minus_share": 0.4 + rng.gauss(0, 0.01)})
            row.update({"control/gate_on": float(gate), "control/reweight_w": w, "control/reweight_m": m,
                        "loss/mean_weight": 1.0 + 0.05 * gate})
        lines.append(json.dumps(row))
    (d / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (d / "run_config.json").write_text(json.dumps(
        {"method": method, "seed": seed, "stare": {"target_entropy": TARGET}, "lr": 1e-4}))
    (d / "eval.json").write_text(json.dumps({"avg@8": 0.4 + 0.01 * seed, "pass@8": 0.7, "n": 100}))
    return d


def _check_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 1000
    with Image.open(path) as img:
        img.load()
        assert img.size[0] > 100 and img.size[1] > 100
        extrema = img.convert("RGB").getextrema()
        assert any(lo != hi for lo, hi in extrema), f"{path} is a single colour"


def test_report_overlays_methods_and_aggregates_seeds(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    runs = [
        _write_run(tmp_path, "grpo_s0", "grpo", 0, 60, stare=False),
        _write_run(tmp_path, "grpo_s1", "grpo", 1, 50, stare=False),  # mismatched steps (shorter run)
        _write_run(tmp_path, "stare_s0", "stare", 0, 60, stare=True),
        _write_run(tmp_path, "stare_s1", "stare", 1, 60, stare=True),
    ]
    # a run killed mid-write + a corrupt line in the middle
    with (runs[3] / "metrics.jsonl").open("a") as f:
        f.write('{"step": 61, "actor/entropy": 0.2')
    text = (runs[2] / "metrics.jsonl").read_text().splitlines()
    text.insert(10, "Traceback (most recent call last):")
    (runs[2] / "metrics.jsonl").write_text("\n".join(text) + "\n")
    empty = tmp_path / "crashed_before_logging"
    empty.mkdir()
    out = tmp_path / "report"
    with caplog.at_level(logging.WARNING):
        rc = report_main([*map(str, runs), str(empty), "--out", str(out)])
    assert rc == 0
    msgs = "\n".join(r.getMessage() for r in caplog.records)
    assert f"{runs[3] / 'metrics.jsonl'}:61: truncated last line" in msgs
    assert f"{runs[2] / 'metrics.jsonl'}:11: not JSON" in msgs
    assert f"{empty}: no metrics.jsonl" in msgs
    assert f"{runs[1] / 'metrics.jsonl'}: steps differ" in msgs

    for name in ("entropy", "reward", "response_length", "method", "weights", "quadrants", "quadrant_dh"):
        _check_png(out / f"{name}.png")
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 7
    assert page.count("<div class='wide'><table>") == 2  # both tables scroll sideways, never cut a column
    assert "<th>eval:<wbr>pass@8</th>" in page  # long headers may wrap, keeping the table narrow
    summary = json.loads((out / "summary.json").read_text())
    rows = {r["run"]: r for r in summary["runs"]}
    assert set(rows) == {"grpo_s0", "grpo_s1", "stare_s0", "stare_s1"}
    assert rows["grpo_s1"]["last_step"] == 50 and rows["stare_s1"]["last_step"] == 60
    assert rows["grpo_s0"]["entropy_final"] < 0.2 < rows["stare_s0"]["entropy_final"]
    assert rows["stare_s0"]["in_band_frac"] > rows["grpo_s0"]["in_band_frac"]
    assert rows["grpo_s1"]["eval:avg@8"] == pytest.approx(0.41)
    methods = {m["method"]: m for m in summary["methods"]}
    assert methods["grpo"]["runs"] == 2
    ef = methods["stare"]["entropy_final"]
    assert ef["min"] <= ef["mean"] <= ef["max"]
    assert "stare [" not in page and "mean [min, max]" in page


def test_single_run_default_out_dir(tmp_path: Path) -> None:
    run = _write_run(tmp_path, "one", "steer", 3, 8, stare=False)
    assert report_main([str(run)]) == 0
    _check_png(run / "report" / "entropy.png")
    assert not (run / "report" / "method.png").exists()  # no method metric logged: no empty figure


def test_no_usable_run_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "metrics.jsonl").write_text("not json\n")
    assert report_main([str(tmp_path / "a"), "--out", str(tmp_path / "o")]) == 2


def test_read_metrics_keeps_last_value_of_a_repeated_step(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    p = tmp_path / "metrics.jsonl"
    p.write_text('{"step": 1, "x": 1.0}\n{"step": 2, "x": 2.0}\n{"step": 2, "x": 5.0, "s": "text"}\n'
                 '{"x": 3}\n[1, 2]\n{"step": 3, "x": NaN}\n')
    with caplog.at_level(logging.WARNING):
        series = read_series(p)
    assert series == {"x": [(1, 1.0), (2, 5.0)]}
    msgs = "\n".join(r.getMessage() for r in caplog.records)
    assert f"{p}:3: step 2 after step 2" in msgs and f"{p}:4: no numeric 'step'" in msgs
    assert f"{p}:5: not a JSON object" in msgs  # warned and skipped by the one metrics.jsonl reader


def test_read_run_finds_method_seed_target_in_yaml(tmp_path: Path) -> None:
    d = tmp_path / "r"
    d.mkdir()
    (d / "metrics.jsonl").write_text('{"step": 1, "entropy": 0.4}\n')
    (d / "config.yaml").write_text("method: stare\nseed: 7\nmethod_config:\n  target_entropy: 0.35\n")
    run = read_run(d)
    assert run is not None and (run.method, run.seed, run.target_entropy) == ("stare", 7, 0.35)


@pytest.mark.slow
def test_report_from_real_short_training_runs(tmp_path: Path) -> None:
    """Two real `stare train` runs (tiny random model, a few steps) rendered by `stare report`."""
    pytest.importorskip("trl")
    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer
    from stare_rl.tasks import get_task
    from stare_rl.train import run as train

    model_dir = tmp_path / "tiny"
    tok = build_char_tokenizer(get_task("arithmetic").alphabet)
    build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2, seed=0).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    common = ["--model", str(model_dir), "--max_steps", "3", "--save_steps", "100", "--train_size", "32",
              "--per_device_train_batch_size", "16", "--num_generations", "4", "--eval_size", "4", "--eval_k", "2",
              "--disable_tqdm", "true"]
    runs = [tmp_path / "stare", tmp_path / "vanilla"]
    assert train.main([*common, "--method", "stare", "--target_entropy", "100", "--final_eval", "false",
                       "--output_dir", str(runs[0])]) == 0
    assert train.main([*common, "--method", "vanilla", "--output_dir", str(runs[1])]) == 0
    out = tmp_path / "report"
    assert report_main([*map(str, runs), "--out", str(out)]) == 0
    for name in ("entropy", "reward", "response_length", "method", "weights", "quadrants", "quadrant_dh"):
        _check_png(out / f"{name}.png")
    rows = {r["method"]: r for r in json.loads((out / "summary.json").read_text())["runs"]}
    assert set(rows) == {"stare", "vanilla"}
    assert rows["stare"]["last_step"] == 3 and rows["stare"]["entropy_final"] > 0
    assert rows["stare"]["in_band_frac"] == 0.0  # target 100 nats: never in band
    assert "eval:avg@2" in rows["vanilla"]


def test_held_out_curves_are_drawn_and_summarised(tmp_path: Path) -> None:
    run = _write_run(tmp_path, "curve", "grpo", 0, 20, stare=False)
    points = {0: (0.30, 0.70, 0.90), 10: (0.45, 0.68, 0.85), 20: (0.50, 0.60, 0.80)}  # pass@1 up, pass@8/32 down
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    by_step = {r["step"]: r for r in rows}
    for step, (p1, p8, p32) in points.items():
        by_step.setdefault(step, {"step": step}).update({"eval/pass@1": p1, "eval/pass@8": p8, "eval/pass@32": p32,
                                                         "eval/response_length": 30.0})
    (run / "metrics.jsonl").write_text("".join(json.dumps(by_step[s]) + "\n" for s in sorted(by_step)))
    assert report_main([str(run), "--out", str(tmp_path / "o")]) == 0
    _check_png(tmp_path / "o" / "heldout.png")
    row = json.loads((tmp_path / "o" / "summary.json").read_text())["runs"][0]
    assert (row["curve:pass@1 start"], row["curve:pass@1 final"], row["curve:pass@1 max"]) == (0.30, 0.50, 0.50)
    assert (row["curve:pass@32 start"], row["curve:pass@32 final"], row["curve:pass@32 max"]) == (0.90, 0.80, 0.90)
    assert row["entropy_start"] == rows[0]["actor/entropy"]  # the step-0 eval line carries no training metric


def test_verl_file_logger_run_is_read_under_the_one_namespace(tmp_path: Path) -> None:
    """A verl run (`stare verl-dryrun`): verl's file logger lines ``{"step", "data"}`` with the actor's
    ``actor/loss/<key>`` names and run_config.json's method and target render like a TRL run."""
    from stare_rl.analysis.report import build_report

    lines = [{"step": s, "data": {"actor/entropy": 2.8 - 0.1 * s, "control/batch_entropy": 2.8 - 0.1 * s,
                                  "control/gate_on": 1.0, "control/reweight_w": 1.1 + 0.01 * s,
                                  "actor/loss/reweight_w": 1.1 + 0.01 * s, "actor/pg_loss": -0.05, "actor/loss": -0.05}}
             for s in (1, 2, 3)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (tmp_path / "run_config.json").write_text(json.dumps({"engine": "verl", "method": "stare", "target_entropy": 5.0}))
    run = read_run(tmp_path)
    assert run is not None and (run.method, run.target_entropy) == ("stare", 5.0)
    assert [s for s, _ in run.series["loss/reweight_w"]] == [1, 2, 3]
    assert [v for _, v in run.series["loss/reweight_w"]] == pytest.approx([1.11, 1.12, 1.13])
    assert run.series["actor/loss"] == [(1, -0.05), (2, -0.05), (3, -0.05)]  # verl's own total loss kept
    build_report([tmp_path], tmp_path / "report")
    assert {"entropy", "method"} <= {p.stem for p in (tmp_path / "report").glob("*.png")}


def test_the_fallback_bonus_gets_its_own_panel_only_where_a_run_logged_it(tmp_path: Path) -> None:
    """``auto_fallback: bonus`` logs its coefficient c (``control/entropy_coef``): the report's method figure draws it
    beside W, and leaves the panel out for runs without the fallback."""
    from stare_rl.analysis.plots import method_figure, pick_key
    from stare_rl.analysis.runs import read_run

    plain = read_run(_write_run(tmp_path, "stare_s0", "stare", 0, 30, stare=True))
    fallback_dir = _write_run(tmp_path, "fb_s0", "stare", 0, 30, stare=True)
    rows = [json.loads(x) for x in (fallback_dir / "metrics.jsonl").read_text().splitlines()]
    for r in rows:
        r["control/entropy_coef"] = 0.02 * max(0, r["step"] - 20)  # the bonus takes over from step 21
    (fallback_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    fallback = read_run(fallback_dir)
    panel = next(p for p in method_figure().panels if p.keys == ("control/entropy_coef",))
    assert panel.title == "entropy bonus c (adaptive or auto_fallback)"
    assert pick_key([plain], panel.keys) is None and pick_key([plain, fallback], panel.keys) == "control/entropy_coef"


def _auto_run(root: Path, name: str, method: str, pinned: range, *, bonus: range = range(0), top: range = range(0),
              lp_empty: range = range(0)) -> Path:
    """A `weight_control: auto` run of 100 steps at target 0.3: the entropy is 0.1 (below) on the ``pinned`` steps,
    0.35 elsewhere; W at its bound there (``auto_saturated_high`` without the fallback); with it, the bonus acting
    (``auto_actuator`` 2) on ``bonus`` and the whole range at its top on ``top``; L+ empty on ``lp_empty``."""
    d = root / name
    d.mkdir(parents=True)
    rows = []
    for step in range(1, 101):
        low = step in pinned
        sat = (low and not bonus) or step in top
        rows.append({"step": step, "control/batch_entropy": 0.1 if low else 0.35, "control/target_entropy": TARGET,
                     "control/auto_saturated_high": float(sat), "control/reweight_w": 50.0 if low else 2.0,
                     "control/auto_actuator": 2.0 if step in bonus else 1.0,
                     "loss/l_plus_frac": 0.0 if step in lp_empty else 0.05})
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "config.yaml").write_text(f"method: {method}\nseed: 0\ntarget_entropy: {TARGET}\n")
    return d


def test_the_report_says_where_a_run_ran_out_of_authority_and_what_to_try(tmp_path: Path) -> None:
    """docs/controller.md "When W sits at its bound", per run: W at its bound with the entropy below the target on
    >= 10 % of the steps gets a note (L+ not empty: the right-signed selection first, then the fallback; L+ empty on
    most steps: the fallback; with its bonus at its bound too: both out of authority); shares are of the logged
    steps; other runs get none."""
    runs = [_auto_run(tmp_path, "c2", "stare", range(51, 101), lp_empty=range(91, 101)),  # 50 pinned, 10 L+ empty
            _auto_run(tmp_path, "sens_fb", "stare_sensitivity", range(41, 101), bonus=range(41, 101),
                      top=range(71, 101)),  # the bonus on 60 steps, at its bound on 30 of them
            _auto_run(tmp_path, "sens_ok", "stare_sensitivity", range(96, 101)),  # 5 %: no note
            _write_run(tmp_path, "grpo", "grpo", 0, 20, stare=False)]
    out = tmp_path / "report"
    assert report_main([str(r) for r in runs] + ["--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = {r["run"]: r for r in summary["runs"]}
    assert rows["c2"]["auto: W at bound, H below target"] == 0.5 and rows["c2"]["auto: L+ empty"] == 0.1
    assert "auto: bonus acting" not in rows["c2"] and not any(k.startswith("auto:") for k in rows["grpo"])
    assert rows["sens_fb"]["auto: W at bound, H below target"] == 0.6 and rows["sens_fb"]["auto: bonus acting"] == 0.6
    assert rows["sens_fb"]["auto: both at bounds, H below target"] == 0.3
    c2, fb = summary["authority"]  # sens_ok and grpo: none
    assert c2.startswith("stare (seed 0): W sat at its bound with the entropy below the target on 50 % of the logged "
                         "steps (L+ empty on 10 %); up-weighting its selection no longer raises the entropy")
    assert "(method stare_sensitivity), then auto_fallback bonus with a low auto_w_max (3)" in c2
    assert "docs/controller.md" in c2
    assert fb.startswith("stare_sensitivity (seed 0): W sat at its bound") and "on 60 %" in fb
    assert "the bonus sat at its bound too on 30 %: both actuators are out of authority" in fb
    page = (out / "report.html").read_text()
    assert "<h2>Out of authority</h2>" in page and "(method stare_sensitivity)" in page
    empty = _auto_run(tmp_path, "sens", "stare_sensitivity", range(51, 101), lp_empty=range(31, 101))  # L+ empty 70 %
    assert report_main([str(empty), "--out", str(tmp_path / "e")]) == 0
    note, = json.loads((tmp_path / "e" / "summary.json").read_text())["authority"]  # read from L+, not the name
    assert "(L+ empty on 70 %); its selection has run out of tokens to act on: try auto_fallback bonus" in note
    quiet = tmp_path / "quiet"
    assert report_main([str(runs[2]), "--out", str(quiet)]) == 0
    assert json.loads((quiet / "summary.json").read_text())["authority"] == []
    assert "Out of authority" not in (quiet / "report.html").read_text()
