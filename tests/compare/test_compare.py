"""``stare compare``: smoke grid end to end, resume skips finished cells, results table from known files, bad input."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import pytest
import yaml

from _tiny import save_tiny_model
from stare_rl.compare.grid import (
    DONE_FILE,
    Cell,
    cell_state,
    diagnostic_means,
    load_grid,
    parse_grid,
    prepare_cell,
    results_markdown,
    results_table,
    run_metrics,
    spread,
)

SHIPPED = resources.files("stare_rl").joinpath("configs", "compare.yaml")


def _shipped() -> dict:
    return yaml.safe_load(SHIPPED.read_text())


def test_shipped_grid_has_every_method_and_identical_budgets() -> None:
    grid = parse_grid(_shipped())
    assert list(grid.methods)[:6] == ["grpo", "dapo", "stare_o1", "stare_c2", "steer", "stare_sens"]
    train_methods = {grid.cell_config(m)["method"] for m in grid.methods}
    assert train_methods == {"vanilla", "stare", "steer", "stare_sensitivity", "clip_cov", "kl_cov", "high_entropy"}
    budget = ("model", "task", "max_steps", "learning_rate", "per_device_train_batch_size", "num_generations",
              "train_size", "eval_size", "eval_k", "temperature")
    for key in budget:  # no method changes the budget
        assert len({str(grid.cell_config(m).get(key)) for m in grid.methods}) == 1, key
    assert grid.cell_config("grpo")["clip_ratio_high"] == 0.2 and grid.cell_config("dapo")["clip_ratio_high"] == 0.28
    assert grid.cell_config("stare_o1")["target_entropy"] == grid.target_entropy  # the grid's target is inserted
    assert "target_entropy" not in grid.cell_config("dapo")
    assert grid.cell_config("stare_c2_auto")["weight_control"] == "auto"
    assert grid.cell_config("stare_c2_auto")["target_entropy"] == grid.target_entropy
    smoke = parse_grid(_shipped(), smoke=True)
    assert list(smoke.methods) == ["grpo", "stare_o1"] and smoke.seeds == (0,)
    assert smoke.cell_config("grpo")["max_steps"] <= 3


BAD_GRIDS = [
    ({"methods": {}}, "methods is empty"),
    ({"methods": {"a": {"method": "vanilla"}}, "sedes": [0]}, "unknown key(s) ['sedes']"),
    ({"methods": {"a": {"method": "vanilla"}}, "seeds": [0, 0]}, "duplicates"),
    ({"methods": {"a": {"method": "vanilla"}}, "seeds": "0"}, "seeds='0'"),
    ({"methods": {"a": {"method": "vanilla", "seed": 3}}}, "sets ['seed']"),
    ({"methods": {"a": {"method": "vanilla"}}, "parallel": 0}, "parallel=0"),
    ({"methods": {"a": {"method": "vanilla"}}, "target_entropy": -1}, "target_entropy=-1"),
    ({"methods": {"a": {"method": "vanilla"}}, "target_entropy": 0}, "target_entropy=0 must be a number > 0 or"),
    ({"methods": {"a": {"method": "vanilla"}}, "target_entropy": "0.5y"}, "target_entropy='0.5y' must be a number"),
    ({"methods": {"a": {"method": "vanilla"}}, "band": 2}, "band=2"),
    ({"methods": {"a b": {"method": "vanilla"}}}, "method name 'a b'"),
    ({"methods": ["vanilla"]}, "methods must be a mapping"),
]


@pytest.mark.parametrize("data, message", BAD_GRIDS)
def test_bad_grid_names_the_problem(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")
                       .replace(")", r"\)")):
        parse_grid(data, "grid.yaml")


def test_bad_command_line_fails_before_compute(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stare_rl.compare import run as compare

    out = tmp_path / "out"
    cases = [
        (["--config", str(tmp_path / "missing.yaml")], "no such file"),
        (["--config", str(SHIPPED), "--methods", "grpo,nope"], "unknown method(s) ['nope']"),
        (["--config", str(SHIPPED), "--seeds", "0,x"], "--seeds='0,x'"),
    ]
    typo = tmp_path / "typo.yaml"
    typo.write_text(yaml.safe_dump({"methods": {"a": {"method": "vanilla", "lerning_rate": 0.1}}}))
    cases.append((["--config", str(typo)], "grid method 'a': unknown field 'lerning_rate'"))
    bad_method = tmp_path / "bad_method.yaml"
    bad_method.write_text(yaml.safe_dump({"methods": {"a": {"method": "stare", "reweight_w": 0.5}}}))
    cases.append((["--config", str(bad_method)], "reweight_w=0.5 must be >= 1"))
    for argv, message in cases:
        assert compare.main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "stare compare: error:" in err and message in err, (argv, err)
    assert not out.exists()  # nothing written, nothing trained


def _write_run(run_dir: Path, method: str, seed: int, entropy: list[float], evals: dict, target: float) -> None:
    run_dir.mkdir(parents=True)
    lines = [json.dumps({"step": i + 1, "actor/entropy": h, "critic/score/mean": 0.5, "response_length/mean": 8.0})
             for i, h in enumerate(entropy)]
    (run_dir / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (run_dir / "eval.json").write_text(json.dumps({"n": 16, "k": 8, **evals}))
    (run_dir / "run_config.json").write_text(json.dumps({"method": method, "seed": seed, "target_entropy": target}))
    (run_dir / DONE_FILE).write_text(json.dumps({"wall_s": 10.0 + seed}))


def test_results_table_from_known_metrics_files(tmp_path: Path) -> None:
    from stare_rl.compare.run import summarise

    grid = parse_grid({"out": str(tmp_path), "seeds": [0, 1], "target_entropy": 0.4, "band": 0.25,
                       "methods": {"grpo": {"method": "vanilla"}, "stare_o1": {"method": "stare"}}})
    runs = {
        # entropy series; the report's "final" is the mean of the last 5 values
        ("grpo", 0): [1.0, 0.8, 0.6, 0.4, 0.32, 0.2, 0.2, 0.2, 0.2, 0.2],
        ("grpo", 1): [1.0, 0.9, 0.7, 0.5, 0.45, 0.3, 0.3, 0.3, 0.3, 0.3],
        ("stare_o1", 0): [1.0, 0.8, 0.6, 0.39, 0.42, 0.4, 0.4, 0.4, 0.4, 0.4],
        ("stare_o1", 1): [1.0, 0.8, 0.6, 0.45, 0.35, 0.31, 0.45, 0.4, 0.4, 0.4],
    }
    evals = {("grpo", 0): (0.30, 0.60), ("grpo", 1): (0.34, 0.64), ("stare_o1", 0): (0.36, 0.72),
             ("stare_o1", 1): (0.40, 0.70)}
    for (m, s), ent in runs.items():
        a, p = evals[(m, s)]
        _write_run(tmp_path / "runs" / m / f"seed{s}", m, s, ent,
                   {"avg@8": a, "pass@8": p, "greedy_acc": a + 0.1, "mean_response_length": 8.5, "entropy": 0.5},
                   0.4)
    page, results = summarise(grid, grid.cells())
    assert page.is_file() and (page.parent / "entropy.png").stat().st_size > 0
    by = {m["method"]: m["metrics"] for m in results["methods"]}
    assert by["grpo"]["entropy_final"]["values"] == pytest.approx([0.2, 0.3])
    assert by["grpo"]["entropy_final"]["mean"] == pytest.approx(0.25)
    assert by["grpo"]["entropy_final"]["std"] == pytest.approx(0.0707107, rel=1e-5)  # sample std of 0.2, 0.3
    assert by["grpo"]["entropy_min"]["values"] == pytest.approx([0.2, 0.3])
    assert by["grpo"]["entropy_ratio"]["mean"] == pytest.approx(0.25)
    # first step below 0.4: grpo s0 index 4 (0.32) -> tail [0.32, 0.2 x5]: 0.32 within [0.3, 0.5], 0.2 not -> 1/6
    assert by["grpo"]["in_band_after_cross"]["values"][0] == pytest.approx(1 / 6)
    # stare s0: first below 0.4 is 0.39 (index 3) -> tail all within [0.3, 0.5] -> 1.0;
    # stare s1: first below 0.4 is 0.35 (index 4) -> [0.35, 0.31, 0.45, 0.4 x3] all within -> 1.0
    assert by["stare_o1"]["in_band_after_cross"]["values"] == pytest.approx([1.0, 1.0])
    assert by["stare_o1"]["avg@k"]["mean"] == pytest.approx(0.38)
    assert by["stare_o1"]["pass@k"]["mean"] == pytest.approx(0.71)
    assert by["stare_o1"]["wall_s"]["values"] == [10.0, 11.0]
    stare = next(m for m in results["methods"] if m["method"] == "stare_o1")
    assert stare["vs_grpo"]["avg@k"] == pytest.approx(0.06) and stare["vs_grpo"]["pass@k"] == pytest.approx(0.09)
    assert results["targets"]["grpo_final_entropy_below_30pct_of_start"] is True
    assert results["targets"]["stare_o1"]["pass@1_gain_ge_3pts"] is True
    assert results["targets"]["stare_o1"]["pass@k_gain_ge_5pts"] is True
    md = (tmp_path / "results.md").read_text()
    assert "| stare_o1 | 2 |" in md and "38.0 ± 2.8" in md and "+6.0" in md
    assert json.loads((tmp_path / "results.json").read_text())["methods"][0]["method"] == "grpo"
    assert results_markdown(results) == md
    # a committed results folder keeps its metrics gzipped: re-reported from it, the same table
    for d in (tmp_path / "runs").glob("*/seed*"):
        (d / "metrics.jsonl.gz").write_bytes(gzip.compress((d / "metrics.jsonl").read_bytes()))
        (d / "metrics.jsonl").unlink()
    _, again = summarise(grid, grid.cells())
    assert again == results and (tmp_path / "results.md").read_text() == md


def test_run_metrics_and_spread_edge_cases() -> None:
    row = {"entropy_start": 0.0, "entropy_final": None, "eval:avg@4": 0.5}
    m = run_metrics(row, [], 0.3, 0.25)
    assert m["entropy_ratio"] is None and m["in_band_after_cross"] is None and m["avg@k"] == 0.5
    assert run_metrics({}, [0.5, 0.6], 0.3, 0.25)["in_band_after_cross"] is None  # never below the target
    assert spread([None, None]) is None
    means = diagnostic_means({"control/gate_on": [(1, 1.0), (2, 0.0), (3, 1.0)]})
    assert means["control/gate_on"] == pytest.approx(2 / 3) and means["loss/l_plus_frac"] is None
    assert spread([0.5]) == {"mean": 0.5, "std": 0.0, "min": 0.5, "max": 0.5, "n": 1, "values": [0.5]}
    grid = parse_grid({"methods": {"a": {"method": "vanilla"}}})
    res = results_table({"a": [m]}, grid)
    assert res["methods"][0]["vs_grpo"] is None and res["targets"] == {}


def test_cell_state_and_resume_preparation(tmp_path: Path) -> None:
    grid = parse_grid({"out": str(tmp_path), "methods": {"a": {"method": "vanilla"}}})
    cell = Cell("a", 0, tmp_path / "runs" / "a" / "seed0")
    assert cell_state(cell) == "fresh"
    cell.run_dir.mkdir(parents=True)
    (cell.run_dir / "metrics.jsonl").write_text('{"step": 1}\n')  # killed before its first checkpoint
    cfg, resume = prepare_cell(grid, cell)
    assert not resume and not (cell.run_dir / "metrics.jsonl").exists()  # restarted from scratch
    assert yaml.safe_load(cfg.read_text()) == {"method": "vanilla", "seed": 0}
    (cell.run_dir / "checkpoint-100").mkdir()
    (cell.run_dir / "checkpoint-100" / "trainer_state.json").write_text("{}")  # a complete checkpoint
    (cell.run_dir / "metrics.jsonl").write_text('{"step": 1}\n')
    assert cell_state(cell) == "resume"
    _, resume = prepare_cell(grid, cell)
    assert resume and (cell.run_dir / "metrics.jsonl").exists()  # kept: stare train resumes from checkpoint-100
    assert json.loads((cell.run_dir / "run_config.json").read_text())["method"] == "a"
    # a checkpoint half-written by a kill (no trainer_state.json) is nothing to resume from: restart the cell
    shutil.rmtree(cell.run_dir / "checkpoint-100")
    (cell.run_dir / "checkpoint-100").mkdir()
    (cell.run_dir / "checkpoint-100" / "model.safetensors").write_text("")
    assert cell_state(cell) == "fresh"
    (cell.run_dir / "checkpoint-100" / "trainer_state.json").write_text("{}")
    assert cell_state(cell) == "resume"
    (cell.run_dir / DONE_FILE).write_text("{}")
    assert cell_state(cell) == "done"
    with pytest.raises(ValueError, match="already finished"):
        prepare_cell(grid, cell)


PARENT_AND_CELL = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "from stare_rl.io.process import exit_with_parent; exit_with_parent(); "
                          "print('ready', flush=True); import time; time.sleep(120)"], stdout=subprocess.PIPE, text=True,
                         env={**__import__("os").environ, "STARE_PARENT_PID": str(__import__("os").getpid())})
assert child.stdout.readline().strip() == "ready"
print(child.pid, flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_a_cell_process_does_not_outlive_a_sigkilled_compare() -> None:
    """``stare compare`` SIGKILLed: the ``stare train`` cells it started end too (they would otherwise keep
    writing into run directories that the re-run resumes)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2] / "src"),
                                                                     os.environ.get("PYTHONPATH")]))}
    parent = subprocess.Popen([sys.executable, "-c", PARENT_AND_CELL], stdout=subprocess.PIPE, text=True, env=env)
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped by init, counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small random model of the project's tiny architecture, saved as a normal HF model dir."""
    return save_tiny_model(tmp_path_factory.mktemp("tiny_countdown"), "countdown")


# sitecustomize for the cells' `stare train` processes: SIGKILL the one whose output_dir is STARE_TEST_KILL_RUN right
# after it logged step 2 (its checkpoint-1 is complete, checkpoint-2 not written).
KILL_CELL_AFTER_STEP_2 = """
import os
if os.environ.get("STARE_TEST_KILL_RUN"):
    import signal
    from pathlib import Path
    from stare_rl.engines.trl import trainer as trl

    on_log = trl.MetricsJsonlCallback.on_log

    def killing_on_log(self, args, state, control, logs=None, **kwargs):
        out = on_log(self, args, state, control, logs=logs, **kwargs)
        if state.global_step == 2 and Path(args.output_dir).resolve() == Path(os.environ["STARE_TEST_KILL_RUN"]):
            os.kill(os.getpid(), signal.SIGKILL)
        return out

    trl.MetricsJsonlCallback.on_log = killing_on_log
"""


def _without_wall_time(obj: object) -> object:
    if isinstance(obj, dict):
        return {k: _without_wall_time(v) for k, v in obj.items() if k != "wall_s"}
    return [_without_wall_time(v) for v in obj] if isinstance(obj, list) else obj


@pytest.mark.slow
def test_smoke_grid_end_to_end_then_resume_skips_finished(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("trl")
    from stare_rl.compare import run as compare

    data = _shipped()  # the shipped grid and its smoke section, on a random tiny model instead of the warm start
    data["base"]["model"] = str(tiny_model_dir)
    data["base"]["cache_dir"] = str(tmp_path / "cache")
    data["target_entropy"] = 100.0  # gate always on for the STARE cell
    data["base"]["initial_eval"] = True  # the cells evaluate their start: the reference reads that back
    cfg = tmp_path / "grid.yaml"
    cfg.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    assert compare.main(["--config", str(cfg), "--smoke", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "a cell's evaluation of the same start, cached" in caplog.text
    assert "[1/2] done" in printed and "[2/2] done" in printed
    for method in ("grpo", "stare_o1"):
        run = out / "runs" / method / "seed0"
        assert (run / DONE_FILE).is_file() and (run / "eval.json").is_file()
        steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
        assert steps == [1, 2]
    stare_cfg = yaml.safe_load((out / "runs" / "stare_o1" / "seed0" / "config.yaml").read_text())
    assert stare_cfg["method"] == "stare" and stare_cfg["target_entropy"] == 100.0 and stare_cfg["max_steps"] == 2
    gate = [json.loads(line).get("control/gate_on") for line in
            (out / "runs" / "stare_o1" / "seed0" / "metrics.jsonl").read_text().splitlines()]
    assert gate == [1.0, 1.0]
    results = json.loads((out / "results.json").read_text())
    assert [m["method"] for m in results["methods"]] == ["warm_start", "grpo", "stare_o1"]  # reference row first
    assert all(m["metrics"]["pass@k"] is not None and m["seeds"] == 1 for m in results["methods"])
    ref = json.loads((out / "reference" / "warm_start" / "seed0" / "eval.json").read_text())
    assert ref["n"] == 8 and ref["k"] == 2 and ref["model"] == str(tiny_model_dir)
    # the reference is stare train's evaluation of the same start on the same seed: the cells' initial evaluation
    start = json.loads((out / "runs" / "grpo" / "seed0" / "eval_initial.json").read_text())
    assert {k: v for k, v in ref.items() if k != "model"} == start
    assert results["methods"][0]["metrics"]["entropy_final"] is None  # no training metrics for the reference
    assert (out / "report" / "report.html").is_file() and (out / "report" / "entropy.png").stat().st_size > 0
    info = json.loads((out / "compare_run.json").read_text())
    assert info["invocations"][0]["ran"] == ["grpo/seed0", "stare_o1/seed0"] and info["versions"]["trl"]
    marker = (out / "runs" / "grpo" / "seed0" / DONE_FILE).stat().st_mtime_ns
    # re-run: both cells are finished -> nothing is trained again, the report and table are rebuilt
    assert compare.main(["--config", str(cfg), "--smoke", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 finished" in printed and "start  " not in printed
    assert (out / "runs" / "grpo" / "seed0" / DONE_FILE).stat().st_mtime_ns == marker
    info = json.loads((out / "compare_run.json").read_text())
    assert len(info["invocations"]) == 2 and info["invocations"][1]["ran"] == []
    assert info["scored"] == ["grpo/seed0", "stare_o1/seed0"]

    # killed mid-grid: cell 1 finished (its directory copied from the grid above: what a kill after it leaves),
    # cell 2's `stare train` SIGKILLed after logging step 2 -> the re-run resumes cell 2 from checkpoint-1 and
    # the results table is the uninterrupted grid's (wall times aside)
    from stare_rl.io.runlog import read_metrics

    out2 = tmp_path / "out2"
    shutil.copytree(out / "runs" / "grpo", out2 / "runs" / "grpo")
    victim = out2 / "runs" / "stare_o1" / "seed0"
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(KILL_CELL_AFTER_STEP_2)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path / "hook"), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("STARE_TEST_KILL_RUN", str(victim.resolve()))
    assert compare.main(["--config", str(cfg), "--smoke", "--out", str(out2)]) == 1
    printed = capsys.readouterr().out
    assert "1 finished" in printed and "FAILED stare_o1/seed0 (exit -9)" in printed, printed
    assert [r["step"] for r in read_metrics(victim)] == [1, 2] and not (victim / "checkpoint-2").exists()
    assert cell_state(Cell("stare_o1", 0, victim)) == "resume"
    monkeypatch.delenv("STARE_TEST_KILL_RUN")
    assert compare.main(["--config", str(cfg), "--smoke", "--out", str(out2)]) == 0
    printed = capsys.readouterr().out
    assert "start  stare_o1/seed0 (resuming from its last checkpoint)" in printed and "start  grpo" not in printed
    untimed = [[{k: v for k, v in r.items() if "time" not in k and "per_second" not in k} for r in read_metrics(d)]
               for d in (victim, out / "runs" / "stare_o1" / "seed0")]
    assert [r["step"] for r in untimed[0]] == [1, 2] and untimed[0] == untimed[1]
    assert (victim / "eval.json").read_text() == (out / "runs" / "stare_o1" / "seed0" / "eval.json").read_text()
    tables = [json.loads((d / "results.json").read_text()) for d in (out2, out)]
    assert _without_wall_time(tables[0]) == _without_wall_time(tables[1])

    # a SIGTERM to cell 2's `stare train` alone (a scheduler's, say) as its step 2 starts: step 2 finishes and is
    # checkpointed, compare says so, and the re-run saves and evaluates it: the same table again
    out3 = tmp_path / "out3"
    shutil.copytree(out / "runs" / "grpo", out3 / "runs" / "grpo")
    victim = out3 / "runs" / "stare_o1" / "seed0"
    (tmp_path / "hook" / "sitecustomize.py").write_text(KILL_CELL_AFTER_STEP_2.replace(
        "state.global_step == 2", "state.global_step == 1").replace("signal.SIGKILL", "signal.SIGTERM"))
    monkeypatch.setenv("STARE_TEST_KILL_RUN", str(victim.resolve()))
    assert compare.main(["--config", str(cfg), "--smoke", "--out", str(out3)]) == 1
    printed = capsys.readouterr().out
    assert "stopped stare_o1/seed0 by SIGTERM after" in printed and "FAILED" not in printed, printed
    assert [r["step"] for r in read_metrics(victim)] == [1, 2] and (victim / "checkpoint-2").is_dir()
    assert not (victim / "eval.json").exists()
    monkeypatch.delenv("STARE_TEST_KILL_RUN")
    assert compare.main(["--config", str(cfg), "--smoke", "--out", str(out3)]) == 0
    tables = [json.loads((d / "results.json").read_text()) for d in (out3, out)]
    assert _without_wall_time(tables[0]) == _without_wall_time(tables[1])


def test_load_grid_reads_files(tmp_path: Path) -> None:
    p = tmp_path / "g.yaml"
    p.write_text("methods: {a: {method: vanilla}}\nseeds: [1, 2]\n")
    assert load_grid(p).seeds == (1, 2)
    p.write_text("methods: [unclosed\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_grid(p)


def test_shared_warm_start_runs_with_the_grids_torch_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm start that compare trains before the cells uses the grid's torch_threads, as stare train does
    (the same thread count gives the same cached weights; torch's default thrashes beside running cells)."""
    import torch

    from stare_rl.compare import run as compare
    from stare_rl.train import warmstart

    grid = parse_grid({"base": {"model": "tiny", "task": "arithmetic", "torch_threads": 1},
                       "methods": {"grpo": {"method": "vanilla"}}})
    plan = compare.validate_cells(grid)["grpo"]
    seen = []
    monkeypatch.setattr(warmstart, "warm_start", lambda *a, **k: seen.append(torch.get_num_threads()) or "ws")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert compare._starting_model(plan) == "ws"
        assert seen == [1] and torch.get_num_threads() == 2  # restored afterwards
    finally:
        torch.set_num_threads(before)


def test_relative_grid_target_reaches_target_holders_and_scores_each_run_against_its_own() -> None:
    from stare_rl.compare.grid import scored_target

    grid = parse_grid({"target_entropy": "0.5X", "methods": {"s": {"method": "stare"}, "g": {"method": "vanilla"}}})
    assert grid.target_entropy == "0.5x" and grid.cell_config("s")["target_entropy"] == "0.5x"
    assert "target_entropy" not in grid.cell_config("g")
    # a target holder is scored against the value it resolved and logged; any other run against 0.5 x its first
    # logged batch entropy; an absolute grid target is itself
    assert scored_target("0.5x", {"control/target_entropy": [(1, 0.07), (2, 0.07)]}, [0.14, 0.1]) == 0.07
    assert scored_target("0.5x", {}, [0.2, 0.1]) == pytest.approx(0.1)
    assert scored_target("0.5x", {}, []) is None and scored_target(None, {}, [0.2]) is None
    assert scored_target(0.3, {"control/target_entropy": [(1, 0.07)]}, [0.2]) == 0.3
