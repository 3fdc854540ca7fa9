"""TRL multi-turn tool use: the reward function that reads whole episodes and logs the tool metrics.

TRL 1.16's GRPOTrainer plays the episodes itself (``GRPOTrainer(tools=...)``: generate until EOS, parse the
turn with the tokenizer's response schema, call the tools, append the results, generate again, at most
``max_tool_calling_iterations`` rounds) and marks the tool-result tokens with ``tool_mask = 0``; the stare-rl
adapter multiplies that mask into every loss-side mask (:func:`stare_rl.engines.trl.batch.loss_mask`). With
tools, a completion reaches the reward functions as the list of messages after the prompt; this module scores
the final answer and logs per batch (through TRL's ``log_metric`` hook, hence ``metrics.jsonl``):

``tools/calls_per_episode``, ``tools/errors_per_episode``, ``tools/error_rate``, ``tools/turns_per_episode``,
``tools/finished``, ``tools/used_tools``, ``tools/success_with_tools``, ``tools/success_without_tools``
(see :func:`stare_rl.tasks.tool_episodes.summarize_episodes`), next to TRL's own ``tools/call_frequency`` and
``tools/failure_frequency`` (exceptions only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stare_rl.engines.trl.rewards import make_reward_func
from stare_rl.tasks.tool_episodes import episode_stats, summarize_episodes


def tool_metrics(episodes: list[Any], rewards: list[float]) -> dict[str, float]:
    """``tools/*`` of one batch of episodes."""
    return {f"tools/{k}": v for k, v in summarize_episodes([episode_stats(e) for e in episodes], rewards).items()}


def make_tool_reward_func(
    fn: Callable[[Any, str], float], timeout_s: float, name: str = "reward", answer_key: str = "answer"
) -> Callable[..., list[float]]:
    """A TRL reward function scoring each episode with ``fn(messages, answer)`` (0 on error or timeout).

    ``fn`` receives the episode's messages (assistant turns, tool results); a task's reward reads the final
    answer from them (:func:`stare_rl.tasks.tool_episodes.final_answer`). Reward failures are counted in
    ``reward/errors``, the episodes summarised in ``tools/*``.
    """
    return make_reward_func(fn, timeout_s, name, answer_key, scored=lambda episode: episode,
                            batch_metrics=tool_metrics)


__all__ = ["make_tool_reward_func", "tool_metrics"]
