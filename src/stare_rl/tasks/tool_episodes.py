"""Multi-turn tool-use episodes as chat messages: building tool calls, and what rewards and metrics read.

An episode is the list of messages after the prompt (TRL hands reward functions exactly that with tools):
assistant turns (``content`` and/or ``tool_calls``) and tool results (``role: tool``). The tokens behind them
are produced by :mod:`stare_rl.models.tool_tokenizer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def tool_call(name: str, **arguments: str) -> dict[str, Any]:
    """One assistant tool call in the chat-message format (``{"type": "function", "function": {...}}``)."""
    return {"type": "function", "function": {"name": name, "arguments": dict(arguments)}}


# ----- episodes: what the reward and the metrics read from a finished conversation -----

def is_error_result(content: Any) -> bool:
    """A tool result that reports a failure: the tool's own ``error: ...`` or TRL's ``{'error': ...}``."""
    text = str(content).lstrip()
    return text.startswith("error") or text.startswith("{'error'")


def final_answer(completion: Sequence[dict[str, Any]] | str) -> str | None:
    """The text of the final assistant turn, or ``None`` when the episode did not finish with one.

    A finished episode ends with an assistant message without tool calls. An episode that ends with a tool
    call or a tool result (turn limit or completion length reached) has no answer.
    """
    if isinstance(completion, str):
        return completion
    if not completion:
        return None
    last = completion[-1]
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    return str(last.get("content") or "")


def episode_stats(completion: Sequence[dict[str, Any]] | str) -> dict[str, float]:
    """``{"calls", "errors", "turns", "finished"}`` of one episode (a plain string: one turn, no call)."""
    if isinstance(completion, str):
        return {"calls": 0.0, "errors": 0.0, "turns": 1.0, "finished": 1.0}
    calls = sum(len(m.get("tool_calls") or []) for m in completion if m.get("role") == "assistant")
    errors = sum(is_error_result(m.get("content")) for m in completion if m.get("role") == "tool")
    turns = sum(m.get("role") == "assistant" for m in completion)
    return {"calls": float(calls), "errors": float(errors), "turns": float(turns),
            "finished": float(final_answer(completion) is not None)}


def summarize_episodes(stats: Sequence[dict[str, float]], rewards: Sequence[float]) -> dict[str, float]:
    """Batch metrics a tool-use user expects (names without a prefix; the engine adds ``tools/``).

    ``calls_per_episode``, ``errors_per_episode``, ``error_rate`` (errors per call), ``turns_per_episode``,
    ``finished`` (fraction ending with an answer), ``used_tools`` (fraction with >= 1 call),
    ``success_with_tools`` / ``success_without_tools`` (mean reward of the episodes with / without a call;
    NaN-free: 0 when there is no such episode, with ``used_tools`` telling how many there were).
    """
    n = max(len(stats), 1)
    calls = sum(s["calls"] for s in stats)
    with_tools = [r for s, r in zip(stats, rewards, strict=True) if s["calls"] > 0]
    without = [r for s, r in zip(stats, rewards, strict=True) if s["calls"] == 0]
    return {
        "calls_per_episode": calls / n,
        "errors_per_episode": sum(s["errors"] for s in stats) / n,
        "error_rate": sum(s["errors"] for s in stats) / calls if calls else 0.0,
        "turns_per_episode": sum(s["turns"] for s in stats) / n,
        "finished": sum(s["finished"] for s in stats) / n,
        "used_tools": len(with_tools) / n,
        "success_with_tools": sum(with_tools) / len(with_tools) if with_tools else 0.0,
        "success_without_tools": sum(without) / len(without) if without else 0.0,
    }
