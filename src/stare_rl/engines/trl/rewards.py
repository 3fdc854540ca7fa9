"""TRL reward functions from a stare-rl reward ``fn(completion, answer) -> float``.

One factory for single-turn completions (plain text, or a chat completion: its last message is scored) and for
multi-turn tool episodes (:mod:`stare_rl.engines.trl.tools`: the whole episode is scored, tool metrics logged).
A call that raises or runs past ``timeout_s`` scores 0 and is counted in ``reward/errors`` (per batch, through
TRL's ``log_metric`` hook, hence ``metrics.jsonl`` and every ``report_to`` logger).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stare_rl.tasks.rewards import safe_rewards

# (completions, rewards) -> {metric name: value}, logged per batch next to reward/errors
BatchMetrics = Callable[[list[Any], list[float]], dict[str, float]]


def last_message_text(completion: Any) -> str:
    """A plain-text completion, or the content of a chat completion's last message."""
    return completion if isinstance(completion, str) else completion[-1]["content"]


def make_reward_func(
    fn: Callable[[Any, str], float],
    timeout_s: float,
    name: str = "reward",
    answer_key: str = "answer",
    scored: Callable[[Any], Any] = last_message_text,
    batch_metrics: BatchMetrics | None = None,
) -> Callable[..., list[float]]:
    """A TRL reward function scoring each completion with ``fn(scored(completion), answer)`` (0 on error or timeout).

    Args:
        fn: the reward of one completion against the row's ``answer_key`` column (as a string).
        timeout_s: a call running longer scores 0.
        name: the function's ``__name__`` (TRL logs ``rewards/<name>/mean``).
        scored: what ``fn`` receives of a completion (default: its text; a tool episode: the messages).
        batch_metrics: further per-batch metrics from the completions and their rewards.
    """
    def reward_func(prompts: list, completions: list, **kwargs: Any) -> list[float]:
        answers = kwargs.get(answer_key)
        if answers is None:
            raise ValueError(f"the dataset has no {answer_key!r} column for the reward function")
        results = safe_rewards(fn, [scored(c) for c in completions], [str(a) for a in answers], timeout_s)
        rewards = [float(score) for score, _ in results]
        log = kwargs.get("log_metric")
        if log is not None:
            log("reward/errors", float(sum(err is not None for _, err in results)))
            for key, value in (batch_metrics(completions, rewards) if batch_metrics else {}).items():
                log(key, value)
        return rewards

    reward_func.__name__ = name
    return reward_func


__all__ = ["last_message_text", "make_reward_func"]
