"""Kill-and-resume: a run stopped after its last checkpoint and resumed from it logs the same metrics as an
uninterrupted run (controller state included), and ``metrics.jsonl`` holds each step once."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl")

from test_trl_engine import make_trainer  # noqa: E402
from transformers import TrainerCallback  # noqa: E402

from stare_rl.io.runlog import CONTROLLER_FILE, read_json, read_metrics  # noqa: E402

pytestmark = pytest.mark.slow

COMPARED = (
    "loss", "actor/pg_loss", "actor/entropy", "actor/grad_norm", "critic/score/mean", "response_length/mean",
    "control/batch_entropy", "control/gate_on", "control/reweight_w", "control/reweight_m", "loss/mean_weight",
    "loss/l_plus_frac", "loss/l_minus_frac", "control/entropy_coef", "quadrant/pos_high_frac",
)


class Kill(TrainerCallback):
    """Stops training at ``step`` (after the checkpoint at an earlier step), like a killed process."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        if state.global_step == self.step:
            control.should_training_stop = True


AUTO_COMPARED = ("control/auto_strength", "control/auto_integral", "control/auto_error", "control/auto_p_term")


def _run(out: Path, kill_at: int | None = None, resume: str | None = None, weight_control: str = "paper",
         target: float = 2.73) -> list[dict]:
    # Gate target inside the entropy range of the run, adaptive W/M and adaptive bonus: every controller moves.
    trainer = make_trainer(
        out, "stare", {"variant": "C2", "target_entropy": target, "weight_control": weight_control},
        method_args={"entropy_bonus": "adaptive"},  # target_entropy: the gate's and the bonus's, one target
        max_steps=6, save_strategy="steps", save_steps=2, lr_scheduler_type="linear", learning_rate=1e-2,
        callbacks=[Kill(kill_at)] if kill_at else None,
    )
    trainer.train(resume_from_checkpoint=resume)
    return read_metrics(out)


def test_killed_run_resumed_from_checkpoint_matches_uninterrupted(tmp_path: Path) -> None:
    full = _run(tmp_path / "full")
    assert [r["step"] for r in full] == [1, 2, 3, 4, 5, 6]
    gate_values = {r["control/gate_on"] for r in full}
    assert gate_values == {0.0, 1.0}, f"the gate should switch during the run, saw {gate_values}"

    run = tmp_path / "killed"
    killed = _run(run, kill_at=5)  # checkpoints 2 and 4 written, step 5 logged, then "killed"
    assert [r["step"] for r in killed] == [1, 2, 3, 4, 5]
    state = read_json(run / "checkpoint-4" / CONTROLLER_FILE)["controllers"]
    assert set(state) == {"gate", "schedule", "adaptive_entropy"}

    resumed = _run(run, resume=str(run / "checkpoint-4"))
    assert [r["step"] for r in resumed] == [1, 2, 3, 4, 5, 6]  # step 5 of the killed run replaced, not duplicated
    for a, b in zip(full, resumed, strict=True):
        for key in COMPARED:
            assert key in a, key
            assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1e-7), (a["step"], key, a[key], b[key])
    assert read_json(run / "checkpoint-6" / CONTROLLER_FILE) == read_json(tmp_path / "full" / "checkpoint-6" / CONTROLLER_FILE)


def test_killed_run_resumed_with_auto_weight_control_matches(tmp_path: Path) -> None:
    """weight_control='auto': the PI controller's state (strength, integral, smoothed error) resumes exactly."""
    # 2.78: the run's batch entropy goes 2.81 -> 2.72 (tiny tokenizer with a newline token), so the smoothed
    # error turns positive by step 4 and the strength moves (at 2.73 it would stay 0 for all six steps)
    full = _run(tmp_path / "full", weight_control="auto", target=2.78)
    strengths = [r["control/auto_strength"] for r in full]
    assert len(set(strengths)) > 2 and max(strengths) > 0.0, f"the controller should move, saw {strengths}"
    run = tmp_path / "killed"
    _run(run, kill_at=5, weight_control="auto", target=2.78)
    state = read_json(run / "checkpoint-4" / CONTROLLER_FILE)["controllers"]
    assert set(state) == {"auto", "adaptive_entropy"}
    resumed = _run(run, resume=str(run / "checkpoint-4"), weight_control="auto", target=2.78)
    assert [r["step"] for r in resumed] == [1, 2, 3, 4, 5, 6]
    for a, b in zip(full, resumed, strict=True):
        for key in COMPARED + AUTO_COMPARED:
            assert key in a, key
            assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1e-7), (a["step"], key, a[key], b[key])
    assert read_json(run / "checkpoint-6" / CONTROLLER_FILE) == read_json(tmp_path / "full" / "checkpoint-6" / CONTROLLER_FILE)


REL_COMPARED = ("loss", "actor/pg_loss", "control/batch_entropy", "control/start_entropy", "control/target_entropy",
                "control/entrocraft_mode", "control/entrocraft_lower", "control/entrocraft_upper",
                "control/entropy_coef", "loss/kept_frac")


def _run_relative(out: Path, kill_at: int | None = None, resume: str | None = None) -> list[dict]:
    # Entrocraft's band and the adaptive bonus, both relative to the start entropy (narrow band: the mode moves)
    trainer = make_trainer(
        out, "entrocraft", {"target_entropy": "0.999x", "band": 0.001},
        method_args={"entropy_bonus": "adaptive"},  # target_entropy: the band's and the bonus's, one target
        max_steps=6, save_strategy="steps", save_steps=2, lr_scheduler_type="linear", learning_rate=1e-2,
        callbacks=[Kill(kill_at)] if kill_at else None,
    )
    trainer.train(resume_from_checkpoint=resume)
    return read_metrics(out)


def test_killed_run_resumed_keeps_relative_targets_without_measuring_again(tmp_path: Path) -> None:
    """Relative targets through real TRL: resolved from step 1's batch entropy, saved in the checkpoint, restored on
    resume (the resumed steps' start entropy is the first run's, not step 5's), and the run resumes exactly."""
    full = _run_relative(tmp_path / "full")
    h0 = full[0]["control/batch_entropy"]
    assert all(r["control/start_entropy"] == pytest.approx(h0) for r in full)
    assert all(r["control/target_entropy"] == pytest.approx(0.999 * h0) for r in full)
    assert len({r["control/entrocraft_mode"] for r in full}) > 1, "the band switch should act during the run"
    run = tmp_path / "killed"
    _run_relative(run, kill_at=5)
    saved = read_json(run / "checkpoint-4" / CONTROLLER_FILE)
    assert saved["start_entropy"] == pytest.approx(h0)
    assert saved["controllers"]["entrocraft_band"]["target_entropy"]["value"] == pytest.approx(0.999 * h0)
    resumed = _run_relative(run, resume=str(run / "checkpoint-4"))
    assert [r["step"] for r in resumed] == [1, 2, 3, 4, 5, 6]
    for a, b in zip(full, resumed, strict=True):
        for key in REL_COMPARED:
            assert key in a, key
            assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1e-7), (a["step"], key, a[key], b[key])
