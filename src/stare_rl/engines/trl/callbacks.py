"""Trainer callbacks of the TRL adapter: ``metrics.jsonl`` / ``train_summary.json`` and a compact progress bar."""

from __future__ import annotations

import os
from pathlib import Path

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


__all__ = ["CompactProgressCallback", "MetricsJsonlCallback"]
