"""verl end to end on the CPU (issue #23): real ``verl.trainer.main_ppo`` and ``stare_rl.engines.verl.main`` runs
of shipped recipes through ``stare verl-dryrun``'s command (Ray local, FSDP2 on CPU, the hf rollout, a tiny
Qwen2 built offline), 2-3 steps each. Marked ``verl_e2e`` (``scripts/test.sh --fast`` skips them).

Not deterministic across a resume: the rollout server's sampling RNG is not part of verl's checkpoint, so a
resumed step samples other responses than an uninterrupted run would; the controller state and the step count
are what must continue, and they are checked exactly.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl")
pytest.importorskip("ray")

from stare_rl.engines.verl.cpu.dryrun import EXACT_MODULE, PLAIN_MODULE, dryrun_command, dryrun_env  # noqa: E402
from stare_rl.io.runlog import CONTROLLER_FILE, METRICS_FILE  # noqa: E402

pytestmark = pytest.mark.verl_e2e
PL = "actor_rollout_ref.actor.policy_loss"
ALPHA = 0.01  # STARE's weight_alpha default (the W/M schedule's step)


def run(recipe: str, out: Path, steps: int, overrides: list[str], tag: str) -> tuple[list[str], list[dict]]:
    """Run the dry-run command; return it and verl's file-logger rows (one per step)."""
    command, _ = dryrun_command(recipe, out, steps, overrides)
    metrics = out / (METRICS_FILE if tag == "first" else f"metrics_{tag}.jsonl")  # the first: `stare report`
    proc = subprocess.run(command, env=dryrun_env(metrics_path=metrics), capture_output=True, text=True,
                          timeout=600, cwd=out)
    (out / f"log_{tag}.txt").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return command, rows


def finite(row: dict[str, Any], prefix: str) -> dict[str, float]:
    values = {k: v for k, v in row["data"].items() if k.startswith(prefix)}
    assert values, f"no {prefix}* metric at step {row['step']}: {sorted(row['data'])}"
    bad = {k: v for k, v in values.items() if not (isinstance(v, (int, float)) and math.isfinite(v))}
    assert not bad, bad
    return values


def controller_state(out: Path, step: int) -> dict[str, Any]:
    return json.loads((out / "checkpoints" / f"global_step_{step}" / CONTROLLER_FILE).read_text())["controllers"]


def test_stare_exact_gate_and_weight_schedule_checkpoint_and_resume(tmp_path: Path) -> None:
    """STARE through the exact entry point, gate on (target 5 nats above the tiny model's ~2.8), W/M schedule
    'paper': the gate follows H < H_tgt, W grows by alpha per step, the loss sees the driver's W, the state is
    checkpointed, and a resume to step 3 continues from it."""
    target = 5.0
    overrides = [f"{PL}.stare_target_entropy={target}", f"+{PL}.stare_weight_control=paper"]
    command, rows = run("stare_qwen25_math_1p5b", tmp_path, 2, overrides, "first")
    assert command[2] == EXACT_MODULE and [r["step"] for r in rows] == [1, 2]
    w = 1.1  # the recipe's W
    for row in rows:
        d = row["data"]
        finite(row, "actor/loss/")
        finite(row, "actor/pg_loss")
        assert d["control/gate_on"] == 1.0 == float(d["control/batch_entropy"] < target)
        w += ALPHA  # below the target: W <- W + alpha (§4.4)
        assert d["control/reweight_w"] == pytest.approx(w)
        assert d["actor/loss/reweight_w"] == pytest.approx(w, abs=1e-6)  # the loss used the driver's state
        assert d["actor/loss/gate_on"] == 1.0
    from stare_rl.analysis.runs import read_run
    from stare_rl.commands.report import main as report_main

    verl_run = read_run(tmp_path)  # `stare report` reads verl's file logger and run_config.json under the one namespace
    assert verl_run is not None and verl_run.method == "stare" and verl_run.target_entropy == target
    assert verl_run.series["loss/reweight_w"][-1][1] == pytest.approx(w, abs=1e-6) and "control/gate_on" in verl_run.series
    assert report_main([str(tmp_path), "--out", str(tmp_path / "report")]) == 0
    drawn = {p.stem for p in (tmp_path / "report").glob("*.png")}
    assert {"entropy", "method"} <= drawn, drawn  # entropy, gate and W curves

    state = controller_state(tmp_path, 2)
    assert state["gate"]["gate_on"] is True
    assert state["gate"]["last_entropy"] == pytest.approx(rows[-1]["data"]["control/batch_entropy"])
    assert state["schedule"]["reweight_w"] == pytest.approx(w)

    _, resumed = run("stare_qwen25_math_1p5b", tmp_path, 3, overrides, "resumed")
    assert [r["step"] for r in resumed] == [3]  # verl resumed from global_step_2
    assert resumed[0]["data"]["control/reweight_w"] == pytest.approx(w + ALPHA)  # from the checkpointed W
    assert controller_state(tmp_path, 3)["schedule"]["reweight_w"] == pytest.approx(w + ALPHA)


def test_stare_weight_control_auto_through_the_exact_entry_point(tmp_path: Path) -> None:
    """weight_control='auto': the PI controller sets the strength u = log W (M = 1/W) once per step on the
    driver; far below the target it rises at its rate limit (0.25 per step) from u = 0, and the loss uses it."""
    overrides = [f"{PL}.stare_target_entropy=5.0", f"+{PL}.stare_weight_control=auto"]
    command, rows = run("stare_qwen25_math_1p5b", tmp_path, 2, overrides, "auto")
    assert command[2] == EXACT_MODULE and [r["step"] for r in rows] == [1, 2]
    for step, row in enumerate(rows, start=1):
        d = row["data"]
        finite(row, "actor/loss/")
        assert d["control/auto_rate_limited"] == 1.0 and d["control/auto_strength"] == pytest.approx(0.25 * step)
        assert d["control/reweight_w"] == pytest.approx(math.exp(0.25 * step))
        assert d["control/reweight_m"] == pytest.approx(math.exp(-0.25 * step))
        assert d["actor/loss/reweight_w"] == pytest.approx(d["control/reweight_w"], rel=1e-6)
    state = controller_state(tmp_path, 2)["auto"]
    assert state["steps"] == 2 and state["strength"] == pytest.approx(0.5)


def test_steer_through_the_exact_entry_point(tmp_path: Path) -> None:
    """STEER needs the old policy's entropy, which only the entry point hands the loss."""
    command, rows = run("steer_qwen25_math_1p5b", tmp_path, 2, [], "steer")
    assert command[2] == EXACT_MODULE and [r["step"] for r in rows] == [1, 2]
    for row in rows:
        finite(row, "actor/loss/")
        finite(row, "actor/pg_loss")
    assert (tmp_path / "checkpoints" / "global_step_2").is_dir()


def test_baseline_through_plain_main_ppo(tmp_path: Path) -> None:
    """The GRPO-ds baseline recipe through plain verl.trainer.main_ppo, with stare-rl's registered STARE loss
    and its gate off (H_tgt 0: STARE §4.3 reduces to the GRPO surrogate, every token weight 1). Plugin only:
    verl's workers load the plugin, the gate comes from the surprisal estimate, no driver-side controller."""
    overrides = [f"{PL}._target_=stare_rl.engines.verl.adapter.StareRLPolicyLossConfig", f"{PL}.loss_mode=stare",
                 f"+{PL}.stare_target_entropy=0.0"]
    command, rows = run("grpo_ds_qwen25_math_1p5b", tmp_path, 2, overrides, "grpo")
    assert command[2] == PLAIN_MODULE and [r["step"] for r in rows] == [1, 2]
    for row in rows:
        finite(row, "actor/pg_loss")
        loss = finite(row, "actor/loss/")  # the registered loss ran in verl's worker
        assert loss["actor/loss/gate_on"] == 0.0 and loss["actor/loss/mean_weight"] == 1.0  # plain GRPO
        assert not any(k.startswith("control/") for k in row["data"])
        assert row["data"]["timing_s/step"] > 0
    assert (tmp_path / "checkpoints" / "global_step_2").is_dir()
