"""Trainer callbacks of the TRL adapter: ``metrics.jsonl`` / ``train_summary.json``, a compact progress bar, and a
checkpoint when the process is asked to stop (SIGTERM)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_callback import ProgressCallback

from stare_rl.core.registry import declared_metrics
from stare_rl.io.runlog import TRAIN_SUMMARY_FILE, MetricsWriter, write_json_atomic


class CompactProgressCallback(ProgressCallback):
    """TRL's progress bar with a few headline metrics as its postfix instead of printing every log dict."""

    SHOWN = {"critic/score/mean": "score", "actor/entropy": "entropy", "response_length/mean": "len"}

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if state.is_world_process_zero and self.training_bar is not None and logs:
            # plus the metrics that methods declare with a progress-bar name (e.g. STARE's gate)
            shown_keys = {**self.SHOWN, **{m.key: m.short for m in declared_metrics() if m.short}}
            shown = {short: f"{logs[k]:.3g}" for k, short in shown_keys.items() if isinstance(logs.get(k), float)}
            self.training_bar.set_postfix(shown, refresh=False)


class MetricsJsonlCallback(TrainerCallback):
    """Writes every per-step log as one line of ``metrics.jsonl`` (main process only); the end-of-training
    summary (``train_runtime``, ``train_loss``, ...) goes to ``train_summary.json`` next to it."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.writer: MetricsWriter | None = None

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        if state.is_world_process_zero:
            self.writer = MetricsWriter(self.path, resume_step=state.global_step if state.global_step else None)

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if self.writer is None or not logs:
            return
        if "train_runtime" in logs:
            write_json_atomic(self.path.parent / TRAIN_SUMMARY_FILE, {"step": state.global_step, **logs})
        else:
            self.writer.write(state.global_step, logs)


class CheckpointOnSignal(TrainerCallback):
    """Stop on SIGTERM with nothing lost: finish the step in progress, write a checkpoint there, stop training.

    A scheduler that preempts a job, ``kill PID`` and ``stare compare`` stopping its cells all send SIGTERM. Without
    this, the run would lose every step since its last periodic checkpoint; with it, resuming from the checkpoint
    written at the signal (``--resume_from_checkpoint last``) continues exactly as if it had not stopped (the
    checkpoint is the same as a periodic one: weights, optimizer, RNG and controller state).

    - The handler only sets a flag; the stop happens at the next step end that also ends a generation batch
      (``steps_per_generation * num_iterations`` micro-steps: a batch half-used would be generated again on resume).
      Across ranks the flag is reduced with MAX, so all ranks save and stop at the same step.
    - After the first signal the previous handler is back: a second SIGTERM acts at once (the default: exit).
    - Installed from ``on_train_begin`` to ``on_train_end``, from the main thread only (Python's rule for signal
      handlers); outside training (warm start, evaluation) SIGTERM keeps its default action.

    After ``trainer.train()`` returns, :attr:`stopped_at` is the step checkpointed (None: not stopped by a signal)
    and :attr:`received` the signal's number.
    """

    def __init__(self, signals: tuple[int, ...] = (signal.SIGTERM,)) -> None:
        self.signals = tuple(signals)
        self.received: int | None = None
        self.stopped_at: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:  # only a flag: no logging or I/O inside a signal handler
        self.received = signum
        self._restore()

    def _restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._handle) for sig in self.signals}

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        requested = self._requested(args)
        if requested and _ends_generation_batch(args, state.global_step):
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at = state.global_step
        return control

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self._restore()

    def _requested(self, args: Any) -> bool:
        """Whether any rank received the signal (one all-reduce of one number per step when distributed)."""
        import torch
        import torch.distributed as dist

        flag = self.received is not None
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            t = torch.tensor([float(flag)], device=args.device)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            flag = bool(t.item() > 0)
            if flag and self.received is None:
                self.received = self.signals[0]  # another rank's signal: this rank stops with it
        return flag


def _ends_generation_batch(args: Any, step: int) -> bool:
    """Whether optimizer step ``step`` ends a generation batch: TRL generates every
    ``steps_per_generation * num_iterations`` micro-steps, and an optimizer step is ``gradient_accumulation_steps``
    of them (both 1 batch per step by default: every step ends one)."""
    every = int(getattr(args, "steps_per_generation", None) or 1) * int(getattr(args, "num_iterations", 1) or 1)
    micro = step * int(getattr(args, "gradient_accumulation_steps", 1) or 1)
    return micro % every == 0


__all__ = ["CheckpointOnSignal", "CompactProgressCallback", "MetricsJsonlCallback"]
