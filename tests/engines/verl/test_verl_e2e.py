"""verl end to end on the CPU (issue #23): real ``verl.trainer.main_ppo`` and ``stare_rl.engines.verl.main`` runs
of shipped recipes through ``stare verl-dryrun``'s command (Ray local, FSDP2 on CPU, the hf rollout, a tiny
Qwen2 built offline), 2-3 steps each. Marked ``verl_e2e`` (``scripts/test.sh --fast`` skips them).

Few Ray clusters for all runs: the session fixture :func:`verl_runs` splits the dry-run commands the selected
tests need over ``STARE_VERL_E2E_DRIVERS`` (default 2) driver processes (``_verl_runs.py``), side by side, each
of which starts Ray once and calls its commands' entry points (their Hydra ``main``, with the command's
arguments) in turn; verl's ``run_ppo`` reuses the running Ray. A launch per run paid the interpreter's imports
and Ray's start-up each time (~30 s of ~65 s per 2-step run, idle); one driver ran the five runs in 384 s on an
idle 2-core machine, mostly verl's worker processes importing verl one after another on one core.

Not deterministic across a resume: the rollout server's sampling RNG is not part of verl's checkpoint, so a
resumed step samples other responses than an uninterrupted run would; the controller state and the step count
are what must continue, and they are checked exactly.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl")
pytest.importorskip("ray")

from stare_rl.engines.verl.cpu.dryrun import EXACT_MODULE, PLAIN_MODULE, dryrun_command  # noqa: E402
from stare_rl.io.runlog import CONTROLLER_FILE, METRICS_FILE  # noqa: E402

pytestmark = pytest.mark.verl_e2e
PL = "actor_rollout_ref.actor.policy_loss"
ALPHA = 0.01  # STARE's weight_alpha default (the W/M schedule's step)
TARGET = 5.0  # nats, above the tiny model's ~2.8: the gate is on
DRIVER = Path(__file__).with_name("_verl_runs.py")
RUN_TIMEOUT_S = 600  # per run, as when each run was its own launch

# tag -> (recipe, run folder, steps, overrides); "resumed" continues "first" in the same folder
RUNS: dict[str, tuple[str, str, int, list[str]]] = {
    "first": ("stare_qwen25_math_1p5b", "paper", 2,
              [f"{PL}.stare_target_entropy={TARGET}", f"+{PL}.stare_weight_control=paper"]),
    "resumed": ("stare_qwen25_math_1p5b", "paper", 3,
                [f"{PL}.stare_target_entropy={TARGET}", f"+{PL}.stare_weight_control=paper"]),
    "auto": ("stare_qwen25_math_1p5b", "auto", 2,
             [f"{PL}.stare_target_entropy={TARGET}", f"+{PL}.stare_weight_control=auto"]),
    "steer": ("steer_qwen25_math_1p5b", "steer", 2, []),
    "grpo": ("grpo_ds_qwen25_math_1p5b", "grpo", 2,
             [f"{PL}._target_=stare_rl.engines.verl.adapter.StareRLPolicyLossConfig", f"{PL}.loss_mode=stare",
              f"+{PL}.stare_target_entropy=0.0"]),
}
NEEDS = {  # test -> the runs it reads, in launch order
    "test_stare_exact_gate_and_weight_schedule_checkpoint_and_resume": ["first", "resumed"],
    "test_stare_weight_control_auto_through_the_exact_entry_point": ["auto"],
    "test_steer_through_the_exact_entry_point": ["steer"],
    "test_baseline_through_plain_main_ppo": ["grpo"],
}


# Runs are split over this many driver processes, each with its own Ray cluster, run side by side (a run's
# start-up is mostly worker processes importing verl one after another, which leaves the second core idle).
DRIVERS = int(os.environ.get("STARE_VERL_E2E_DRIVERS", "2"))
TOGETHER = (("first", "resumed"),)  # runs that must share a driver, in this order (the resume reads the first)


def streams(tags: list[str], n: int) -> list[list[str]]:
    """``tags`` in launch order split over ``n`` drivers: groups that must stay together first, then each
    remaining run to the driver with the fewest runs so far (ties: the lower index)."""
    groups = [[t for t in group if t in tags] for group in TOGETHER]
    groups = [g for g in groups if g] + [[t] for t in tags if not any(t in g for g in TOGETHER)]
    out: list[list[str]] = [[] for _ in range(max(1, min(n, len(groups))))]
    for group in groups:
        min(out, key=len).extend(group)
    return [s for s in out if s]


class Runs:
    """The drivers' results: each run's command, folder and verl file-logger rows (one per step)."""

    def __init__(self, plan: list[dict[str, Any]]) -> None:
        self.plan = {r["tag"]: r for r in plan}

    def get(self, tag: str) -> tuple[list[str], Path, list[dict]]:
        run = self.plan[tag]
        out = Path(run["out"])
        result_file = out / f"run_{tag}.json"
        log = Path(run["log"]).read_text(errors="replace")
        assert result_file.is_file(), f"run {tag} did not finish; driver log:\n{log[-4000:]}"
        result = json.loads(result_file.read_text())
        assert result["rc"] == 0, f"run {tag}: {result.get('error')}\n{log[-3000:]}"
        rows = [json.loads(line) for line in Path(run["metrics"]).read_text().splitlines() if line.strip()]
        return run["argv"], out, rows


@pytest.fixture(scope="session")
def verl_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Every run the selected tests of this module need, on ``DRIVERS`` Ray clusters side by side, each in one
    driver process that runs its share in order."""
    selected = [i.name for i in request.session.items if i.module is not None and i.module.__name__ == __name__]
    tags = [t for name in NEEDS if name in selected for t in NEEDS[name]]
    root = tmp_path_factory.mktemp("verl_e2e")
    plan, drivers = [], []
    for i, share in enumerate(streams(tags, DRIVERS)):
        home = root / f"driver{i}"  # its plan, log and verl file-logger root
        home.mkdir()
        part = []
        for tag in share:
            recipe, folder, steps, overrides = RUNS[tag]
            out = root / folder
            out.mkdir(exist_ok=True)
            command, _ = dryrun_command(recipe, out, steps, overrides)
            metrics = out / (METRICS_FILE if tag == "first" else f"metrics_{tag}.jsonl")  # first: `stare report`
            part.append({"tag": tag, "argv": command, "out": str(out), "metrics": str(metrics),
                         "log": str(home / "log.txt")})
        (home / "plan.json").write_text(json.dumps(part, indent=1))
        plan += part
        log = (home / "log.txt").open("w")  # noqa: SIM115 - closed below
        proc = subprocess.Popen([sys.executable, str(DRIVER), str(home / "plan.json")], stdout=log,
                                stderr=subprocess.STDOUT, cwd=home)
        drivers.append((proc, log, time.monotonic() + RUN_TIMEOUT_S * len(part)))
    for proc, log, deadline in drivers:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))  # a run past its share fails its test only
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)  # the driver shuts its Ray down on the way out
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
    return Runs(plan)


def finite(row: dict[str, Any], prefix: str) -> dict[str, float]:
    values = {k: v for k, v in row["data"].items() if k.startswith(prefix)}
    assert values, f"no {prefix}* metric at step {row['step']}: {sorted(row['data'])}"
    bad = {k: v for k, v in values.items() if not (isinstance(v, (int, float)) and math.isfinite(v))}
    assert not bad, bad
    return values


def loss_weight_matches(d: dict[str, Any]) -> bool:
    """Whether the loss's mean token weight is ``1 + (W-1)|L+|/N + (M-1)|L-|/N`` with the driver's W and M (one
    micro-batch a step), and the loss did not log W, M or the gate again (the driver does: each value once)."""
    w, m = d["control/reweight_w"], d["control/reweight_m"]
    plus, minus = d["actor/loss/l_plus_frac"], d["actor/loss/l_minus_frac"]
    expected = 1 + (w - 1) * plus + (m - 1) * minus
    logged_again = {"actor/loss/reweight_w", "actor/loss/reweight_m", "actor/loss/gate_on"} & set(d)
    return d["actor/loss/mean_weight"] == pytest.approx(expected, abs=1e-5) and not logged_again


def controller_state(out: Path, step: int) -> dict[str, Any]:
    return json.loads((out / "checkpoints" / f"global_step_{step}" / CONTROLLER_FILE).read_text())["controllers"]


def test_stare_exact_gate_and_weight_schedule_checkpoint_and_resume(verl_runs: Runs) -> None:
    """STARE through the exact entry point, gate on (target 5 nats above the tiny model's ~2.8), W/M schedule
    'paper': the gate follows H < H_tgt, W grows by alpha per step, the loss sees the driver's W, the state is
    checkpointed, and a resume to step 3 continues from it."""
    target = TARGET
    command, out, rows = verl_runs.get("first")
    assert command[2] == EXACT_MODULE and [r["step"] for r in rows] == [1, 2]
    w = 1.1  # the recipe's W
    for row in rows:
        d = row["data"]
        finite(row, "actor/loss/")
        finite(row, "actor/pg_loss")
        assert d["control/gate_on"] == 1.0 == float(d["control/batch_entropy"] < target)
        w += ALPHA  # below the target: W <- W + alpha (§4.4)
        assert d["control/reweight_w"] == pytest.approx(w)
        assert loss_weight_matches(d)  # the loss used the driver's W and M
    from stare_rl.analysis.runs import read_run
    from stare_rl.commands.report import main as report_main

    verl_run = read_run(out)  # `stare report` reads verl's file logger and run_config.json under the one namespace
    assert verl_run is not None and verl_run.method == "stare" and verl_run.target_entropy == target
    assert verl_run.series["control/reweight_w"][-1][1] == pytest.approx(w, abs=1e-6) and "control/gate_on" in verl_run.series
    assert report_main([str(out), "--out", str(out / "report")]) == 0
    drawn = {p.stem for p in (out / "report").glob("*.png")}
    assert {"entropy", "method"} <= drawn, drawn  # entropy, gate and W curves

    state = controller_state(out, 2)
    assert state["gate"]["gate_on"] is True
    assert state["gate"]["last_entropy"] == pytest.approx(rows[-1]["data"]["control/batch_entropy"])
    assert state["schedule"]["w"] == pytest.approx(w)  # the current W (reweight_w: where it started)

    _, _, resumed = verl_runs.get("resumed")
    assert [r["step"] for r in resumed] == [3]  # verl resumed from global_step_2
    assert resumed[0]["data"]["control/reweight_w"] == pytest.approx(w + ALPHA)  # from the checkpointed W
    assert controller_state(out, 3)["schedule"]["w"] == pytest.approx(w + ALPHA)


def test_stare_weight_control_auto_through_the_exact_entry_point(verl_runs: Runs) -> None:
    """weight_control='auto': the PI controller sets the strength u = log W (M = 1/W) once per step on the
    driver; far below the target it rises at its rate limit (0.25 per step) from u = 0, and the loss uses it."""
    command, out, rows = verl_runs.get("auto")
    assert command[2] == EXACT_MODULE and [r["step"] for r in rows] == [1, 2]
    for step, row in enumerate(rows, start=1):
        d = row["data"]
        finite(row, "actor/loss/")
        assert d["control/auto_rate_limited"] == 1.0 and d["control/auto_strength"] == pytest.approx(0.25 * step)
        assert d["control/reweight_w"] == pytest.approx(math.exp(0.25 * step))
        assert d["control/reweight_m"] == pytest.approx(math.exp(-0.25 * step))
        assert loss_weight_matches(d)  # the loss used the driver's W and M
    state = controller_state(out, 2)["auto"]
    assert state["steps"] == 2 and state["strength"] == pytest.approx(0.5)


def test_steer_through_the_exact_entry_point(verl_runs: Runs) -> None:
    """STEER needs the old policy's entropy, which only the entry point hands the loss."""
    command, out, rows = verl_runs.get("steer")
    assert command[2] == EXACT_MODULE and [r["step"] for r in rows] == [1, 2]
    for row in rows:
        finite(row, "actor/loss/")
        finite(row, "actor/pg_loss")
    assert (out / "checkpoints" / "global_step_2").is_dir()


def test_baseline_through_plain_main_ppo(verl_runs: Runs) -> None:
    """The GRPO-ds baseline recipe through plain verl.trainer.main_ppo, with stare-rl's registered STARE loss
    and its gate off (H_tgt 0: STARE §4.3 reduces to the GRPO surrogate, every token weight 1). Plugin only:
    verl's workers load the plugin, the gate comes from the surprisal estimate, no driver-side controller."""
    command, out, rows = verl_runs.get("grpo")
    assert command[2] == PLAIN_MODULE and [r["step"] for r in rows] == [1, 2]
    for row in rows:
        finite(row, "actor/pg_loss")
        loss = finite(row, "actor/loss/")  # the registered loss ran in verl's worker
        assert loss["actor/loss/gate_on"] == 0.0 and loss["actor/loss/mean_weight"] == 1.0  # plain GRPO
        assert not any(k.startswith("control/") for k in row["data"])
        assert row["data"]["timing_s/step"] > 0
    assert (out / "checkpoints" / "global_step_2").is_dir()
