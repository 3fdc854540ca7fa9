"""SIGTERM during GRPO: the step in progress finishes, a checkpoint is written there and training stops; resuming
from it continues exactly as the uninterrupted run (real TRL, a real signal to this process). ``stare train``'s
exit status and message: tests/train/test_kill_resume.py."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("trl")

from test_resume import COMPARED  # noqa: E402
from test_trl_engine import make_trainer  # noqa: E402
from transformers import TrainerCallback, TrainerControl, TrainerState  # noqa: E402

from stare_rl.engines.trl.callbacks import CheckpointOnSignal, _ends_generation_batch  # noqa: E402
from stare_rl.io.runlog import CONTROLLER_FILE, RunLayout, read_json, read_metrics  # noqa: E402


def _args(spg: int = 1, iterations: int = 1, accumulation: int = 1) -> SimpleNamespace:
    return SimpleNamespace(steps_per_generation=spg, num_iterations=iterations, gradient_accumulation_steps=accumulation,
                           device="cpu")


def test_it_is_part_of_the_public_trl_api() -> None:
    import stare_rl.trl

    assert stare_rl.trl.CheckpointOnSignal is CheckpointOnSignal and "CheckpointOnSignal" in stare_rl.trl.__all__


def test_the_stop_waits_for_the_end_of_a_generation_batch() -> None:
    """TRL generates every steps_per_generation * num_iterations micro-steps; an optimizer step is
    gradient_accumulation_steps of them. Stopping inside a batch would generate it again on resume."""
    assert all(_ends_generation_batch(_args(), s) for s in range(1, 5))  # TRL's default: every step
    assert [_ends_generation_batch(_args(spg=2, iterations=2, accumulation=2), s) for s in range(1, 5)] == [
        False, True, False, True]  # 4 micro-steps per batch, 2 per optimizer step
    assert [_ends_generation_batch(_args(spg=1, iterations=3), s) for s in range(1, 7)] == [
        False, False, True, False, False, True]


def _signal_self() -> None:
    """SIGTERM to this process; Python runs the handler at its next check, which a short sleep guarantees."""
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.01)


def test_the_handler_only_flags_then_gives_the_signal_back() -> None:
    """The first SIGTERM sets the flag and restores the previous handler (a second one acts at once); the stop
    comes at the next step end that ends a generation batch, with a checkpoint; after training the handler is
    the one before it."""
    seen: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        cb, state, control = CheckpointOnSignal(), TrainerState(), TrainerControl()
        cb.on_train_begin(_args(), state, control)
        _signal_self()
        assert cb.received == signal.SIGTERM and seen == []
        _signal_self()  # the second: the previous handler's
        assert seen == [signal.SIGTERM]
        state.global_step = 1
        cb.on_step_end(_args(spg=1, iterations=2), state, control)  # mid-batch: not yet
        assert not control.should_save and not control.should_training_stop and cb.stopped_at is None
        state.global_step = 2
        cb.on_step_end(_args(spg=1, iterations=2), state, control)
        assert control.should_save and control.should_training_stop and cb.stopped_at == 2
        cb.on_train_end(_args(), state, control)
        _signal_self()
        assert seen == [signal.SIGTERM, signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


class SigtermAt(TrainerCallback):
    """Sends this process a real SIGTERM at the start of step ``step`` (1-based), i.e. in the middle of a run."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        if state.global_step == self.step - 1:
            os.kill(os.getpid(), signal.SIGTERM)


def _run(out: Path, callbacks: list, resume: str | None = None) -> list[dict]:
    trainer = make_trainer(out, "stare", {"variant": "C2", "target_entropy": 2.78, "weight_control": "auto"},
                           max_steps=6, save_strategy="steps", save_steps=4, lr_scheduler_type="linear",
                           learning_rate=1e-2, callbacks=callbacks)
    trainer.train(resume_from_checkpoint=resume)
    return read_metrics(out)


@pytest.mark.slow
def test_sigterm_mid_run_checkpoints_that_step_and_resumes_exactly(tmp_path: Path) -> None:
    full = _run(tmp_path / "full", [])
    run = tmp_path / "stopped"
    stop = CheckpointOnSignal()
    before = signal.getsignal(signal.SIGTERM)
    stopped = _run(run, [stop, SigtermAt(3)])  # periodic checkpoints at 4 only: the signal's is at 3
    assert signal.getsignal(signal.SIGTERM) is before  # handed back after training
    assert [r["step"] for r in stopped] == [1, 2, 3] and (stop.stopped_at, stop.received) == (3, signal.SIGTERM)
    assert RunLayout(run).last_checkpoint() == run / "checkpoint-3"
    assert [c.name for c in RunLayout(run).checkpoints()] == ["checkpoint-3"]
    assert read_json(run / "checkpoint-3" / CONTROLLER_FILE)["controllers"]["auto"]["steps"] == 3
    resumed = _run(run, [], resume=str(run / "checkpoint-3"))
    assert [r["step"] for r in resumed] == [1, 2, 3, 4, 5, 6]
    keys = [k for k in (*COMPARED, "control/auto_strength", "control/auto_integral") if k in full[0]]
    assert len(keys) >= 12 and len({r["control/auto_strength"] for r in full}) > 2  # the controller moves
    for a, b in zip(full, resumed, strict=True):
        for key in keys:
            assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1e-7), (a["step"], key, a[key], b[key])
    assert read_json(run / "checkpoint-6" / CONTROLLER_FILE) == read_json(tmp_path / "full" / "checkpoint-6" / CONTROLLER_FILE)
