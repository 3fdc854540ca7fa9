"""Countdown: reach a target from given numbers with ``+ - *`` and parentheses.

Prompt ``"3,5,7,2:24="``, answer ``"3,5,7,2:24"``. Any expression that evaluates to the target and uses the
given numbers scores 1 — by default each number exactly once (``use_all=True``, the classic Countdown rule);
with ``use_all=False`` each number at most once. ``(3+5)*(7-4)``-style answers, ``5*3+9`` and ``9+3*5`` are
all different correct completions, so a policy can spread its mass over several valid answers.
"""

from __future__ import annotations

import functools
import random
import re
from collections import Counter
from typing import Any

from stare_rl.tasks.base import Task, clean_completion, sample_distinct_rejecting

MAX_EXPR_CHARS = 200  # longer completions score 0 without being parsed

# An expression under construction: (value, text, precedence). Precedence: 3 = atom, 2 = product, 1 = sum.
_Item = tuple[int, str, int]


def _wrap(item: _Item, below: int) -> str:
    return f"({item[1]})" if item[2] < below else item[1]


def _combine(a: _Item, b: _Item) -> list[_Item]:
    """Every ``a op b`` for ``op`` in ``+ - *`` with minimal parentheses (both operand orders come separately)."""
    return [
        (a[0] + b[0], f"{a[1]}+{b[1]}", 1),
        (a[0] - b[0], f"{a[1]}-{_wrap(b, 2)}", 1),
        (a[0] * b[0], f"{_wrap(a, 2)}*{_wrap(b, 2)}", 2),
    ]


@functools.lru_cache(maxsize=4096)
def _all_expressions(numbers: tuple[int, ...], use_all: bool) -> dict[int, tuple[str, ...]]:
    """value -> every distinct expression text over the multiset ``numbers`` (pass it sorted: cache key)."""
    found: dict[int, set[str]] = {}

    def visit(items: list[_Item]) -> None:
        if len(items) == 1 or not use_all:
            for it in items:
                found.setdefault(it[0], set()).add(it[1])
        for i in range(len(items)):
            for j in range(len(items)):
                if i == j:
                    continue
                rest = [it for k, it in enumerate(items) if k not in (i, j)]
                for new in _combine(items[i], items[j]):
                    visit(rest + [new])

    visit([(x, str(x), 3) for x in numbers])
    return {v: tuple(sorted(exprs)) for v, exprs in found.items()}


def _positions(text: str, numbers: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """Prompt positions of the numbers in ``text``, in order of appearance (first unused equal number)."""
    free = list(enumerate(numbers))
    out = []
    for token in re.findall(r"\d+", text):
        k = next(k for k, (_, x) in enumerate(free) if x == int(token))
        out.append(free.pop(k)[0])
    return tuple(out)


def solve(numbers: list[int] | tuple[int, ...], target: int, use_all: bool = True) -> list[str]:
    """All distinct expressions (minimal parentheses) over ``numbers`` that evaluate to ``target``.

    Sorted by length, then by the order in which they use the prompt's numbers, then by text: the first one
    is the canonical solution used as the supervised target.
    """
    exprs = _all_expressions(tuple(sorted(numbers)), use_all).get(target, ())
    return sorted(exprs, key=lambda text: (len(text), _positions(text, numbers), text))


class _Parser:
    """Recursive-descent parser for ``expr := term (('+'|'-') term)*``, ``term := factor ('*' factor)*``,
    ``factor := NUMBER | '(' expr ')'``. Raises ``ValueError`` on anything else (unary minus included)."""

    def __init__(self, text: str) -> None:
        self.text, self.i, self.numbers = text, 0, []  # type: list[int]

    def parse(self) -> int:
        value = self.expr()
        if self.i != len(self.text):
            raise ValueError(f"unexpected {self.text[self.i]!r} at {self.i}")
        return value

    def expr(self) -> int:
        value = self.term()
        while self.i < len(self.text) and self.text[self.i] in "+-":
            op = self.text[self.i]
            self.i += 1
            rhs = self.term()
            value = value + rhs if op == "+" else value - rhs
        return value

    def term(self) -> int:
        value = self.factor()
        while self.i < len(self.text) and self.text[self.i] == "*":
            self.i += 1
            value *= self.factor()
        return value

    def factor(self) -> int:
        if self.i < len(self.text) and self.text[self.i] == "(":
            self.i += 1
            value = self.expr()
            if self.i >= len(self.text) or self.text[self.i] != ")":
                raise ValueError("unbalanced parenthesis")
            self.i += 1
            return value
        start = self.i
        while self.i < len(self.text) and self.text[self.i].isdigit():
            self.i += 1
        token = self.text[start : self.i]
        if not token or (len(token) > 1 and token[0] == "0"):
            raise ValueError(f"expected a number at {start}")
        self.numbers.append(int(token))
        return int(token)


def evaluate_expression(text: str) -> tuple[int, list[int]]:
    """``(value, numbers used in order)`` of an expression in the task's grammar; ``ValueError`` if malformed."""
    parser = _Parser(text)
    return parser.parse(), parser.numbers


def parse_answer(answer: str) -> tuple[list[int], int]:
    """``"3,5,7,2:24"`` -> ``([3, 5, 7, 2], 24)``."""
    try:
        nums_text, target_text = answer.split(":")
        return [int(x) for x in nums_text.split(",")], int(target_text)
    except ValueError as err:
        raise ValueError(f"answer={answer!r} is not a countdown answer like '3,5,7,2:24'") from err


class CountdownTask(Task):
    """Countdown with ``num_count`` numbers drawn from ``[1, max_number]`` and a target in ``[min_target,
    max_target]`` that is reachable (the target is the value of a random expression over the numbers)."""

    name = "countdown"
    alphabet = "0123456789+-*(),:="

    def __init__(
        self,
        num_count: int = 3,
        max_number: int = 20,
        min_target: int = 10,
        max_target: int = 99,
        use_all: bool = True,
    ) -> None:
        if not isinstance(num_count, int) or not 2 <= num_count <= 5:
            raise ValueError(f"num_count={num_count!r} must be an integer in [2, 5]")
        if not isinstance(max_number, int) or not 2 <= max_number <= 99:
            raise ValueError(f"max_number={max_number!r} must be an integer in [2, 99]")
        if not isinstance(min_target, int) or min_target < 0:
            raise ValueError(f"min_target={min_target!r} must be a non-negative integer")
        if not isinstance(max_target, int) or max_target < min_target:
            raise ValueError(f"max_target={max_target!r} must be an integer >= min_target={min_target}")
        self.num_count, self.max_number, self.use_all = num_count, max_number, bool(use_all)
        self.min_target, self.max_target = min_target, max_target
        width = len(str(max_number))
        self.max_completion_chars = num_count * width + (num_count - 1) + 2 * (num_count - 1)

    def settings(self) -> dict[str, Any]:
        return {
            "num_count": self.num_count,
            "max_number": self.max_number,
            "min_target": self.min_target,
            "max_target": self.max_target,
            "use_all": self.use_all,
        }

    def _draw(self, rng: random.Random) -> tuple[str, dict[str, str]]:
        nums = [rng.randint(1, self.max_number) for _ in range(self.num_count)]
        # The target is the value of one random expression over all the numbers: always solvable, and
        # targets with many solutions come up more often (as in the game).
        items: list[_Item] = [(x, str(x), 3) for x in nums]
        while len(items) > 1:
            a, b = items.pop(rng.randrange(len(items))), items.pop(rng.randrange(len(items)))
            items.append(rng.choice(_combine(a, b)))
        target = items[0][0]
        if not self.min_target <= target <= self.max_target:
            return "", {}  # rejected: make_split draws again
        answer = f"{','.join(map(str, nums))}:{target}"
        key = f"{sorted(nums)}:{target}"
        return key, {"prompt": answer + "=", "answer": answer}

    def make_split(self, split: str, n: int, seed: int, allow_fewer: bool = False) -> list[dict[str, str]]:
        return sample_distinct_rejecting(self._draw, split, n, seed, allow_fewer)

    def reward(self, completion: str, answer: str) -> float:
        nums, target = parse_answer(answer)
        text = clean_completion(completion).replace(" ", "")
        if not text or len(text) > MAX_EXPR_CHARS:
            return 0.0
        try:
            value, used = evaluate_expression(text)
        except (ValueError, RecursionError):
            return 0.0
        given, taken = Counter(nums), Counter(used)
        uses_ok = taken == given if self.use_all else all(taken[x] <= given[x] for x in taken)
        return 1.0 if uses_ok and value == target else 0.0

    def sft_target(self, row: dict[str, str]) -> str:
        nums, target = parse_answer(row["answer"])
        solutions = solve(nums, target, self.use_all)
        if not solutions:
            raise ValueError(f"row answer={row['answer']!r} has no solution with use_all={self.use_all}")
        return solutions[0]
