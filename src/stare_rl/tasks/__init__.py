"""Offline verifiable tasks, rewards and dataset loading.

    >>> from stare_rl.tasks import get_task
    >>> task = get_task("countdown", num_count=3)
    >>> rows = task.make_split("train", 1000, seed=0)      # [{"prompt": "3,5,7:26=", "answer": "3,5,7:26"}, ...]
    >>> task.reward("3*7+5", rows[0]["answer"])
"""

from __future__ import annotations

from typing import Any

from stare_rl.tasks.arithmetic import ArithmeticTask
from stare_rl.tasks.base import Task
from stare_rl.tasks.calc_tool import CalcToolTask
from stare_rl.tasks.chat_arithmetic import ChatArithmeticTask
from stare_rl.tasks.countdown import CountdownTask
from stare_rl.tasks.countdown_cot import CountdownCotTask

_TASKS: dict[str, type[Task]] = {
    "arithmetic": ArithmeticTask, "calc_tool": CalcToolTask, "chat_arithmetic": ChatArithmeticTask,
    "countdown": CountdownTask,
    "countdown_cot": CountdownCotTask,
}


def list_tasks() -> list[str]:
    """Names of the embedded tasks, sorted."""
    return sorted(_TASKS)


def is_tool_task(task: Task) -> bool:
    """Whether ``task`` is played as multi-turn tool use (chat prompts, ``tools``, ``sft_messages``)."""
    return bool(getattr(task, "is_tool_task", False))


def get_task(name: str, **kwargs: Any) -> Task:
    """The task registered under ``name``, built with ``kwargs`` (its settings, e.g. ``num_count=4``)."""
    if name not in _TASKS:
        raise ValueError(f"task={name!r} is not known; known tasks: {list_tasks()}")
    try:
        return _TASKS[name](**kwargs)
    except TypeError as err:
        raise ValueError(f"task={name!r} does not accept these settings {sorted(kwargs)}: {err}") from err


__all__ = ["ArithmeticTask", "CalcToolTask", "CountdownCotTask", "CountdownTask", "Task", "get_task", "is_tool_task",
           "list_tasks"]
