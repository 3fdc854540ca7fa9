"""Held-out learning curves during ``stare train``: a TrainerCallback evaluating the policy every N steps.

Every ``every`` optimizer steps (and once before the first update, step 0) the current policy samples ``n``
completions (seeded, the training RNG untouched) for each of a fixed set of held-out prompts, scored with the
task's reward through :func:`stare_rl.evaluation.heldout.evaluate`. Logged under ``eval/``:

- ``eval/avg@n``: mean reward over the ``n`` samples (= ``eval/pass@1`` for a binary reward);
- ``eval/pass@j`` for ``j`` in ``ks`` (``j <= n``): the unbiased pass@k estimator from the ``n`` samples;
- ``eval/greedy_acc``, ``eval/response_length`` (tokens, EOS included), ``eval/entropy`` (sampling entropy).

Step 0 (the starting model) is appended to ``metrics.jsonl`` directly; later evaluations are merged into that
step's log record (the callback must come before :class:`~stare_rl.engines.trl.trainer.MetricsJsonlCallback`: pass
it in the trainer's ``callbacks``), so every ``report_to`` logger sees them too. The same prompts and the
same sampling seed are used at every evaluation: the curve moves only because the policy does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from stare_rl.evaluation import heldout
from stare_rl.io.runlog import METRICS_FILE, MetricsWriter

logger = logging.getLogger(__name__)

PREFIX = "eval/"
DEFAULT_KS = (1, 2, 4, 8, 16, 32)


def curve_ks(n: int, ks: Sequence[int] = DEFAULT_KS) -> tuple[int, ...]:
    """The pass@k values reported from ``n`` samples: ``ks`` up to ``n``, and ``n`` itself."""
    return tuple(sorted({k for k in ks if 1 <= k <= n} | {n}))


class HeldOutEvalCallback(TrainerCallback):
    """Evaluate the policy on held-out prompts every ``every`` steps (module doc).

    Args:
        tokenizer: the policy's tokenizer.
        rows: held-out ``{"prompt", "answer"}`` rows (the same at every evaluation).
        reward_fn: ``reward_fn(completion, answer) -> float`` in ``[0, 1]``.
        every: evaluate at steps that are multiples of this (and at step 0); >= 1.
        n: samples per prompt (the ``n`` of the unbiased pass@k estimator).
        temperature, top_p: sampling settings (the training ones, so the curve shows the trained policy).
        max_new_tokens: generation budget per completion.
        seed: sampling seed, the same at every evaluation.
        ks: pass@k values to report (those <= ``n``; ``n`` is always reported).
        on_result: called with each ``(step, metrics)`` (e.g. to print progress); optional.
    """

    def __init__(
        self,
        tokenizer: Any,
        rows: Sequence[dict[str, Any]],
        reward_fn: Callable[[str, str], float],
        *,
        every: int,
        n: int = 32,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int = 64,
        seed: int = 0,
        ks: Sequence[int] = DEFAULT_KS,
        on_result: Callable[[int, dict[str, float]], None] | None = None,
    ) -> None:
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"eval_every={every!r} must be a positive integer (0 turns the curve off upstream)")
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"eval_samples={n!r} must be a positive integer")
        if not rows:
            raise ValueError("rows is empty: no held-out prompts to evaluate on")
        self.tokenizer, self.rows, self.reward_fn = tokenizer, list(rows), reward_fn
        self.every, self.n, self.ks = every, n, curve_ks(n, ks)
        self.temperature, self.top_p, self.max_new_tokens, self.seed = temperature, top_p, max_new_tokens, seed
        self.on_result = on_result
        self._pending: dict[str, float] = {}

    def measure(self, model: Any, step: int) -> dict[str, float]:
        """One evaluation of ``model``: the ``eval/*`` metrics (module doc)."""
        start = time.perf_counter()
        r = heldout.evaluate(model, self.tokenizer, self.rows, self.reward_fn, k=self.n, temperature=self.temperature,
                             top_p=self.top_p, max_new_tokens=self.max_new_tokens, seed=self.seed, progress=False,
                             pass_ks=self.ks, reflection_words=())
        out = {f"{PREFIX}avg@{self.n}": r[f"avg@{self.n}"]}
        out.update({f"{PREFIX}pass@{k}": r[f"pass@{k}"] for k in self.ks})
        out.update({f"{PREFIX}greedy_acc": r["greedy_acc"], f"{PREFIX}response_length": r["mean_response_length"],
                    f"{PREFIX}entropy": r["entropy"], f"{PREFIX}wall_s": time.perf_counter() - start})
        logger.info("held-out eval at step %d: %s", step, out)
        if self.on_result is not None:
            self.on_result(step, out)
        return out

    def on_train_begin(self, args, state, control, model=None, **kwargs):  # noqa: ANN001
        if state.global_step == 0 and state.is_world_process_zero and model is not None:
            record = self.measure(model, 0)  # the starting model: its own line, before any update
            MetricsWriter(Path(args.output_dir) / METRICS_FILE).write(0, record)
        return control

    def on_step_end(self, args, state, control, model=None, **kwargs):  # noqa: ANN001
        if state.global_step % self.every == 0 and state.is_world_process_zero and model is not None:
            self._pending = self.measure(model, state.global_step)
            control.should_log = True  # write it with this step's record even when logging_steps > 1
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if self._pending and logs is not None and "train_runtime" not in logs:
            logs.update(self._pending)
            self._pending = {}
        return control
