"""calc_tool: multi-step arithmetic solved with a one-operation calculator tool (multi-turn tool use).

Prompt ``"(12+34)*5="``: a chain of ``num_ops`` operations (``+ - *``) over integers in ``[min_number,
max_number]``, evaluated left to right (parentheses written where precedence would differ). The tiny model
cannot multiply two-digit numbers in its head; the calculator evaluates **one** operation ``x op y`` per
call, so the intended episode is one call per operation, each reading the previous result back::

    user: (12+34)*5=
    assistant: <call>calculator expression=12+34     tool: 46
    assistant: <call>calculator expression=46*5      tool: 230
    assistant: 230

The reward checks only the final answer (the last assistant turn, which must not be a tool call): 1.0 when
it is the value, else 0.0 — answering without the tool is allowed and counted separately in the metrics.
Tool errors (an expression that is not ``x op y``, numbers too long, an unknown tool, missing arguments)
come back as ``error: ...`` tool results; TRL's ``max_tool_calling_iterations`` is the turn limit.
"""

from __future__ import annotations

import random
import re
from typing import Any

from stare_rl.models.tokenizer import WARMSTART_NEWLINE
from stare_rl.models.tool_tokenizer import build_tool_tokenizer
from stare_rl.tasks.base import Task, check_split_args, clean_completion, sample_distinct
from stare_rl.tasks.tool_episodes import final_answer, tool_call

TOOL_NAME, ARG_NAME = "calculator", "expression"
MAX_OPERAND_DIGITS = 12  # the calculator refuses longer operands (an error result, not a crash)
_BINARY = re.compile(r"^\s*(-?\d+)\s*([+\-*])\s*(-?\d+)\s*$")


def calculator(expression: str = "") -> str:
    """Evaluate one operation `x op y` on two integers, op one of + - *.

    Args:
        expression: the operation, e.g. "12*34".
    """
    match = _BINARY.match(expression)
    if match is None:
        return "error: need x op y" if expression.strip() else "error: empty"
    a, op, b = match.groups()
    if max(len(a.lstrip("-")), len(b.lstrip("-"))) > MAX_OPERAND_DIGITS:
        return "error: too long"
    x, y = int(a), int(b)
    return str(x + y if op == "+" else x - y if op == "-" else x * y)


def _apply(x: int, op: str, y: int) -> int:
    return x + y if op == "+" else x - y if op == "-" else x * y


class CalcToolTask(Task):
    """``num_ops`` left-to-right operations over integers in ``[min_number, max_number]``, solved with a
    calculator tool. Subtractions are drawn only where the running value stays non-negative.

    Attributes beyond :class:`Task`: ``tools`` (the tool functions for ``GRPOTrainer(tools=...)``),
    ``max_tool_calls`` (a sensible turn limit: ``num_ops + 2``).
    """

    name = "calc_tool"
    alphabet = "0123456789+-*()=:' abcdefghijklmnopqrstuvwxyz{}\"._,"
    is_tool_task = True

    def __init__(self, num_ops: int = 2, min_number: int = 2, max_number: int = 20, ops: str = "+-*") -> None:
        if not isinstance(num_ops, int) or not 1 <= num_ops <= 4:
            raise ValueError(f"num_ops={num_ops!r} must be an integer in [1, 4]")
        if not isinstance(min_number, int) or min_number < 0:
            raise ValueError(f"min_number={min_number!r} must be a non-negative integer")
        if not isinstance(max_number, int) or not min_number < max_number <= 999:
            raise ValueError(f"max_number={max_number!r} must be an integer in ({min_number}, 999]")
        if not ops or set(ops) - set("+-*") or len(set(ops)) != len(ops):
            raise ValueError(f"ops={ops!r} must be distinct characters of '+-*'")
        self.num_ops, self.min_number, self.max_number, self.ops = num_ops, min_number, max_number, ops
        self.tools = (calculator,)
        self.max_tool_calls = num_ops + 2
        self.max_completion_chars = self._max_completion_tokens()

    def settings(self) -> dict[str, Any]:
        return {"num_ops": self.num_ops, "min_number": self.min_number, "max_number": self.max_number,
                "ops": self.ops}

    def _max_completion_tokens(self) -> int:
        """Tokens of the longest intended episode after the prompt (tool results included), + slack."""
        digits = len(str(self.max_number ** (self.num_ops + 1) if "*" in self.ops else self.max_number * 5))
        call = 5 + 2 * digits + 1 + 1  # <call> calculator ' ' expression '=' + x op y + <eos>
        result = 1 + digits + 1  # <tool> RESULT <asst>
        return self.num_ops * (call + result) + digits + 1 + 4

    # ----- data -----
    def _draw(self, rng: random.Random) -> tuple[str, dict[str, str]]:
        value = rng.randint(self.min_number, self.max_number)
        text, low_precedence = str(value), False
        steps = []
        for _ in range(self.num_ops):
            op, y = rng.choice(self.ops), rng.randint(self.min_number, self.max_number)
            if op == "-" and value - y < 0:
                op = "+" if "+" in self.ops else "*"
            if op == "*" and low_precedence:
                text = f"({text})"
            steps.append((value, op, y))
            value = _apply(value, op, y)
            text, low_precedence = f"{text}{op}{y}", op in "+-"
        row = {"prompt": text + "=", "answer": str(value)}
        return text, row

    def make_split(self, split: str, n: int, seed: int, allow_fewer: bool = False) -> list[dict[str, str]]:
        check_split_args(split, n, seed)
        return sample_distinct(self._draw, split, n, seed, allow_fewer)

    def steps(self, prompt: str) -> list[tuple[int, str, int]]:
        """The intended calls ``(x, op, y)`` of a prompt, in order (``x`` of a later call = previous result)."""
        tokens = re.findall(r"\d+|[+\-*]", prompt)
        value, out = int(tokens[0]), []
        for i in range(1, len(tokens) - 1, 2):
            op, y = tokens[i], int(tokens[i + 1])
            out.append((value, op, y))
            value = _apply(value, op, y)
        return out

    # ----- reward and supervised targets -----
    def reward(self, completion: Any, answer: str) -> float:
        """1.0 when the final answer equals ``answer``. ``completion`` is the episode's messages (or a string:
        the final answer). An episode without a final answer (ending in a call) scores 0."""
        text = final_answer(completion)
        if text is None:
            return 0.0
        return 1.0 if clean_completion(text).replace(" ", "") == answer.strip() else 0.0

    def sft_messages(self, row: dict[str, str]) -> list[dict[str, Any]]:
        """The intended episode of ``row`` as chat messages: user, (call, result) per operation, answer."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": row["prompt"]}]
        for x, op, y in self.steps(row["prompt"]):
            expression = f"{x}{op}{y}"
            messages.append({"role": "assistant", "content": "",
                             "tool_calls": [tool_call(TOOL_NAME, **{ARG_NAME: expression})]})
            messages.append({"role": "tool", "name": TOOL_NAME, "content": calculator(expression)})
        messages.append({"role": "assistant", "content": row["answer"]})
        return messages

    def sft_target(self, row: dict[str, str]) -> str:
        """The final answer (the episode's last turn; the whole episode is :meth:`sft_messages`)."""
        return row["answer"]

    def chat_prompt(self, row: dict[str, str]) -> list[dict[str, str]]:
        """The row's prompt as chat messages (what TRL's tool loop starts from)."""
        return [{"role": "user", "content": row["prompt"]}]

    def build_tokenizer(self) -> Any:
        """The character tokenizer + role markers + the tool's name and argument name as single tokens."""
        return build_tool_tokenizer(self.alphabet, (TOOL_NAME, ARG_NAME), newline=WARMSTART_NEWLINE)  # warm-started
