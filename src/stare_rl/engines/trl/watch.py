"""Run-time guards for a training run: faults that no check before training can rule out.

- :class:`TrainingWatch` (a ``TrainerCallback``) reads the logged metrics of every step and

  * warns once when the mean reward (``critic/score/mean``) is exactly 0 for ``patience`` consecutive steps,
    naming the likely cause (the reward cannot score what the model writes);
  * warns once when every prompt group got identical rewards for ``patience`` consecutive steps
    (``frac_reward_zero_std`` = 1: all advantages are 0, so nothing is learnt; with dynamic sampling every
    group is dropped and the loss is 0 by definition);
  * stops training when the loss, the gradient norm or a weight is NaN/inf, without saving that step, and
    records why (:attr:`TrainingWatch.stopped`): the checkpoints written before stay as they were, and no
    completion is ever sampled from non-finite weights (which fails deep inside ``torch.multinomial``).

- :func:`check_reward_func` wraps a TRL batch reward function: a wrong number of scores raises an error
  naming the function and both counts; NaN/inf scores become ``None`` (TRL's "no score", which the adapter
  counts as 0) and are counted in ``reward/nonfinite``.

Imports ``transformers`` only (no ``trl``), so it is usable with any Trainer.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback

logger = logging.getLogger(__name__)

SCORE_KEYS = ("critic/score/mean", "reward")  # the adapter's name, TRL's name
ZERO_STD_KEY = "frac_reward_zero_std"


class TrainingWatch(TrainerCallback):
    """Warnings for a reward that never pays, groups that never differ, and a stop on a non-finite loss.

    Args:
        patience: consecutive logged steps before a warning (default 10).
        reward_note: what the reward in use is (quoted in the zero-reward warning).
    """

    def __init__(self, patience: int = 10, reward_note: str = "") -> None:
        if patience < 1:
            raise ValueError(f"patience={patience} must be >= 1")
        self.patience, self.reward_note = patience, reward_note
        self.zero_reward_steps = 0
        self.constant_group_steps = 0
        self.warnings: list[str] = []
        self.stopped: str | None = None

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> Any:
        if model is None or self.stopped is not None:
            return control
        import torch

        with torch.no_grad():
            finite = torch.stack([p.isfinite().all() for p in model.parameters()]).all()
        if not bool(finite):
            self._stop(control, f"training stopped at step {state.global_step}: the weights are no longer finite "
                       "(NaN/inf) after this update")
        return control

    def _stop(self, control: Any, reason: str) -> None:
        self.stopped = (f"{reason}; that step was not saved, the checkpoints before it are intact (lower "
                        "learning_rate, check the rewards and the method's weights)")
        logger.error(self.stopped)
        control.should_training_stop = True
        control.should_save = False

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        if not logs or "train_runtime" in logs:
            return control
        step = state.global_step
        for key in ("loss", "actor/grad_norm", "grad_norm"):
            value = logs.get(key)
            if isinstance(value, float) and not math.isfinite(value) and self.stopped is None:
                self._stop(control, f"training stopped at step {step}: {key} is {value}")
                return control
        score = next((logs[k] for k in SCORE_KEYS if isinstance(logs.get(k), int | float)), None)
        if score is not None:
            self.zero_reward_steps = self.zero_reward_steps + 1 if score == 0 else 0
            if self.zero_reward_steps == self.patience:
                self._warn(
                    f"the reward was 0 for every completion in the last {self.patience} steps (to step {step}): "
                    "nothing is learnt. Likely cause: the reward cannot score what this model writes (reward=math "
                    "needs a final \\boxed{...} answer; a dataset's answers must be in the form the reward checks). "
                    + (f"In use: {self.reward_note}" if self.reward_note else "")
                )
        zero_std = logs.get(ZERO_STD_KEY)
        if isinstance(zero_std, int | float):
            self.constant_group_steps = self.constant_group_steps + 1 if zero_std >= 1.0 else 0
            if self.constant_group_steps == self.patience and self.zero_reward_steps < self.patience:
                self._warn(
                    f"every prompt group got identical rewards in the last {self.patience} steps (to step {step}): "
                    "all advantages are 0 and the policy does not change (with dynamic_sampling every group is "
                    "dropped and the loss is 0). Likely cause: prompts too easy or too hard for this model, or too "
                    "few num_generations"
                )
        return control

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        logger.warning(message)


def check_reward_func(fn: Callable[..., list[Any]], name: str | None = None) -> Callable[..., list[float | None]]:
    """``fn`` (a TRL reward function) with its output checked: one score per completion, finite or ``None``.

    Raises:
        ValueError: at call time, when ``fn`` returns a different number of scores than completions.
    """
    label = name or getattr(fn, "__name__", "reward")

    def checked(prompts: list, completions: list, **kwargs: Any) -> list[float | None]:
        scores = fn(prompts, completions, **kwargs)
        if scores is None or len(scores) != len(completions):
            got = "None" if scores is None else str(len(scores))
            raise ValueError(f"reward function {label!r} returned {got} scores for {len(completions)} completions; "
                             "it must return one score (or None) per completion")
        out: list[float | None] = []
        bad = 0
        for s in scores:
            value = None if s is None else float(s)
            if value is not None and not math.isfinite(value):
                value, bad = None, bad + 1
            out.append(value)
        if kwargs.get("log_metric") is not None:
            kwargs["log_metric"]("reward/nonfinite", float(bad))
        return out

    checked.__name__ = label
    return checked
