"""Countdown with a written derivation: reach the target step by step, one operation per step.

Prompt ``"8,5,2,1:25="``, answer ``"8,5,2,1:25"``. A completion is the derivation itself, steps separated by
``;``; after every step but the last it writes, in parentheses, the numbers still available (the untouched
prompt numbers in prompt order, then the results made so far, in the order they were made)::

    8+5=13(2,1,13);13*2=26(1,26);26-1=25

Reward (binary, no partial credit): 1.0 when **every** step is valid and the last step's result is the
target, else 0.0. A step ``a<op>b=c`` is valid when ``a`` and ``b`` are available (a multiset: each given
number and each result is used once), ``op`` is one of ``+ - * /``, ``c`` is the true value and a whole number
in ``[1, max_value]`` (so ``-`` needs ``a > b`` and ``/`` an exact division), and the written list of
available numbers is the true one. Every given number is used (``num_count - 1`` steps). No partial credit:
pass@k needs a binary notion of "solved", and crediting valid but useless steps would reward a different
objective (writing arithmetic) than the one the methods are compared on.

Choice points: which pair to combine, which operation, and in which order independent steps are written
(``8+5=13(...);2-1=1(...);13*1=...`` and ``2-1=1(...);8+5=13(...);...`` are different derivations). A prompt
has ~11 derivations at the median (see ``docs/tasks.md``). Both operand orders of ``+`` and ``*`` score 1;
the solver and the warm start write the larger operand first, so two derivations differ by a real choice.

The warm start is supervised on derivations drawn **uniformly** among all valid ones of each prompt
(:meth:`CountdownCotTask.sft_targets`), ``sft_samples`` per prompt, so the starting policy spreads its mass
over many derivations, as a pretrained LLM does over solution paths.
"""

from __future__ import annotations

import functools
import random
import re
from typing import Any

from stare_rl.tasks.base import Task, clean_completion, sample_distinct_rejecting

MAX_COMPLETION_CHARS = 400  # longer completions score 0 without being parsed
_STEP = re.compile(r"^(\d+)([-+*/])(\d+)=(\d+)(?:\(([\d,]*)\))?$")
_NUMBER = re.compile(r"^(0|[1-9]\d*)$")

Step = tuple[int, str, int, int]  # (a, op, b, c): the step "a<op>b=c"


def apply_op(a: int, op: str, b: int) -> int | None:
    """The whole-number value of ``a op b``, or None when it is not a whole number (``-`` below 1 included)."""
    if op == "+":
        return a + b
    if op == "*":
        return a * b
    if op == "-":
        return a - b if a > b else None
    if op == "/":
        return a // b if b > 0 and a % b == 0 else None
    return None


def _moves(a: int, b: int, max_value: int) -> list[Step]:
    """The canonical steps combining ``a`` and ``b`` (larger operand first) with a result in [1, max_value]."""
    hi, lo = max(a, b), min(a, b)
    steps = []
    for op in "+-*/":
        c = apply_op(hi, op, lo)
        if c is not None and 1 <= c <= max_value:
            steps.append((hi, op, lo, c))
    return steps


@functools.lru_cache(maxsize=8192)
def _derivations(pool: tuple[int, ...], max_value: int) -> dict[int, tuple[tuple[Step, ...], ...]]:
    """final value -> every distinct canonical step sequence reducing the sorted multiset ``pool`` to it."""
    if len(pool) == 1:
        return {pool[0]: ((),)}
    found: dict[int, set[tuple[Step, ...]]] = {}
    seen_pairs = set()
    for i in range(len(pool)):
        for j in range(i + 1, len(pool)):
            if (pool[i], pool[j]) in seen_pairs:  # equal numbers: the same pair of values once
                continue
            seen_pairs.add((pool[i], pool[j]))
            rest = pool[:i] + pool[i + 1 : j] + pool[j + 1 :]
            for step in _moves(pool[i], pool[j], max_value):
                for value, tails in _derivations(tuple(sorted((*rest, step[3]))), max_value).items():
                    found.setdefault(value, set()).update((step, *tail) for tail in tails)
    return {value: tuple(sorted(seqs)) for value, seqs in found.items()}


def solve(numbers: list[int] | tuple[int, ...], target: int, max_value: int = 999) -> list[tuple[Step, ...]]:
    """Every valid derivation (canonical operand order) of ``target`` from all of ``numbers``, sorted."""
    return list(_derivations(tuple(sorted(numbers)), max_value).get(target, ()))


def render(numbers: list[int] | tuple[int, ...], steps: tuple[Step, ...]) -> str:
    """The completion text of a derivation: steps joined by ``;``, the available numbers after all but the last."""
    pool = list(numbers)
    parts = []
    for k, (a, op, b, c) in enumerate(steps):
        pool.remove(a)
        pool.remove(b)
        pool.append(c)
        text = f"{a}{op}{b}={c}"
        parts.append(text if k == len(steps) - 1 else f"{text}({','.join(map(str, pool))})")
    return ";".join(parts)


def check_derivation(text: str, numbers: list[int], target: int, max_value: int) -> bool:
    """True when ``text`` is a valid derivation of ``target`` using all of ``numbers`` (rules: module doc)."""
    pool = list(numbers)
    steps = text.split(";")
    if len(steps) != len(numbers) - 1:
        return False
    for k, step in enumerate(steps):
        m = _STEP.match(step)
        if m is None or not all(_NUMBER.match(m.group(g)) for g in (1, 3, 4)):
            return False
        a, op, b, c = int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4))
        if apply_op(a, op, b) != c or not 1 <= c <= max_value:
            return False
        for x in (a, b):
            if x not in pool:
                return False
            pool.remove(x)
        pool.append(c)
        last = k == len(steps) - 1
        if last != (m.group(5) is None) or (not last and m.group(5) != ",".join(map(str, pool))):
            return False
    return pool == [target]


def parse_answer(answer: str) -> tuple[list[int], int]:
    """``"8,5,2,1:25"`` -> ``([8, 5, 2, 1], 25)``."""
    try:
        nums_text, target_text = answer.split(":")
        return [int(x) for x in nums_text.split(",")], int(target_text)
    except ValueError as err:
        raise ValueError(f"answer={answer!r} is not a countdown answer like '8,5,2,1:25'") from err


class CountdownCotTask(Task):
    """Countdown with a step-by-step derivation (module doc): ``num_count`` numbers in ``[1, max_number]``,
    a reachable target in ``[min_target, max_target]``, intermediate results in ``[1, max_value]``."""

    name = "countdown_cot"
    alphabet = "0123456789+-*/=,:;()"

    def __init__(
        self,
        num_count: int = 4,
        max_number: int = 12,
        min_target: int = 10,
        max_target: int = 99,
        max_value: int = 999,
        sft_samples: int = 4,
    ) -> None:
        if not isinstance(num_count, int) or not 2 <= num_count <= 4:
            raise ValueError(f"num_count={num_count!r} must be an integer in [2, 4] (the solver is exhaustive)")
        if not isinstance(max_number, int) or not 2 <= max_number <= 99:
            raise ValueError(f"max_number={max_number!r} must be an integer in [2, 99]")
        if not isinstance(min_target, int) or min_target < 1:
            raise ValueError(f"min_target={min_target!r} must be an integer >= 1")
        if not isinstance(max_target, int) or max_target < min_target:
            raise ValueError(f"max_target={max_target!r} must be an integer >= min_target={min_target}")
        if not isinstance(max_value, int) or max_value < max(max_target, max_number):
            raise ValueError(f"max_value={max_value!r} must be an integer >= max_target and max_number")
        if not isinstance(sft_samples, int) or sft_samples < 1:
            raise ValueError(f"sft_samples={sft_samples!r} must be a positive integer")
        self.num_count, self.max_number, self.max_value = num_count, max_number, max_value
        self.min_target, self.max_target, self.sft_samples = min_target, max_target, sft_samples
        # Longest valid completion: every step "a?b=c" with 3-digit values, the list after all but the last.
        w = len(str(max_value))
        steps = num_count - 1
        lists = sum((num_count - k) * (w + 1) + 1 for k in range(1, steps))  # "(x,y,z)" after step k
        self.max_completion_chars = steps * (3 * w + 2) + lists + (steps - 1)

    def settings(self) -> dict[str, Any]:
        return {"num_count": self.num_count, "max_number": self.max_number, "min_target": self.min_target,
                "max_target": self.max_target, "max_value": self.max_value, "sft_samples": self.sft_samples}

    def _draw(self, rng: random.Random) -> tuple[str, dict[str, str]]:
        nums = [rng.randint(1, self.max_number) for _ in range(self.num_count)]
        # The target is the end of one random step sequence: always solvable; targets with many
        # derivations come up more often (as in the game).
        pool = list(nums)
        while len(pool) > 1:
            a, b = pool.pop(rng.randrange(len(pool))), pool.pop(rng.randrange(len(pool)))
            moves = _moves(a, b, self.max_value)
            if not moves:
                return "", {}
            pool.append(rng.choice(moves)[3])
        target = pool[0]
        if not self.min_target <= target <= self.max_target:
            return "", {}  # rejected: make_split draws again
        answer = f"{','.join(map(str, nums))}:{target}"
        return f"{sorted(nums)}:{target}", {"prompt": answer + "=", "answer": answer}

    def make_split(self, split: str, n: int, seed: int, allow_fewer: bool = False) -> list[dict[str, str]]:
        return sample_distinct_rejecting(self._draw, split, n, seed, allow_fewer)

    def reward(self, completion: str, answer: str) -> float:
        nums, target = parse_answer(answer)
        text = clean_completion(completion).replace(" ", "")
        if not text or len(text) > MAX_COMPLETION_CHARS:
            return 0.0
        return 1.0 if check_derivation(text, nums, target, self.max_value) else 0.0

    def derivations(self, row: dict[str, str]) -> list[str]:
        """Every valid derivation of ``row`` as completion text (canonical operand order), sorted."""
        nums, target = parse_answer(row["answer"])
        found = solve(nums, target, self.max_value)
        if not found:
            raise ValueError(f"row answer={row['answer']!r} has no derivation with max_value={self.max_value}")
        return [render(nums, steps) for steps in found]

    def sft_target(self, row: dict[str, str]) -> str:
        """The first derivation in sorted order (deterministic; the warm start uses :meth:`sft_targets`)."""
        return self.derivations(row)[0]

    def sft_targets(self, row: dict[str, str], rng: random.Random) -> list[str]:
        """``sft_samples`` derivations drawn uniformly (with replacement) among all valid ones of ``row``."""
        found = self.derivations(row)
        return [rng.choice(found) for _ in range(self.sft_samples)]
