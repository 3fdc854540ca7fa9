"""Integer addition: ``"123+456="`` -> ``"579"``. One right answer per prompt."""

from __future__ import annotations

import random
from typing import Any

from stare_rl.tasks.base import Task, check_split_args, clean_completion, sample_distinct


class ArithmeticTask(Task):
    """``digits``-digit addition (both operands have exactly ``digits`` digits).

    The completion must be exactly the decimal sum (surrounding whitespace ignored); anything else scores 0.
    """

    name = "arithmetic"
    alphabet = "0123456789+="

    def __init__(self, digits: int = 3) -> None:
        if not isinstance(digits, int) or not 1 <= digits <= 9:
            raise ValueError(f"digits={digits!r} must be an integer in [1, 9]")
        self.digits = digits
        self.low, self.high = 10 ** (digits - 1) if digits > 1 else 0, 10**digits - 1
        self.max_completion_chars = digits + 1

    def settings(self) -> dict[str, Any]:
        return {"digits": self.digits}

    def _draw(self, rng: random.Random) -> tuple[str, dict[str, str]]:
        a, b = rng.randint(self.low, self.high), rng.randint(self.low, self.high)
        prompt = f"{a}+{b}="
        return prompt, {"prompt": prompt, "answer": str(a + b)}

    def make_split(self, split: str, n: int, seed: int, allow_fewer: bool = False) -> list[dict[str, str]]:
        check_split_args(split, n, seed)
        return sample_distinct(self._draw, split, n, seed, allow_fewer)

    def reward(self, completion: str, answer: str) -> float:
        return 1.0 if clean_completion(completion) == answer.strip() else 0.0

    def sft_target(self, row: dict[str, str]) -> str:
        return row["answer"]

    def sft_wrong_target(self, row: dict[str, str], rng: random.Random) -> str:
        """The sum with one digit (uniform position) off by one, as a slipped carry makes it: up or down with equal
        chance, the other way where that would leave the digits or give a leading zero.

        Spread over the positions, each digit stays correct in most rows, so the model learns the sum as fast as
        from clean data (a fixed noisy position, e.g. the last digit, measured much slower: that digit's carry
        feeds the others); a policy that learns each position's slips as independent ends a little more accurate
        than the data's fraction of correct rows (measured in docs/train.md).
        """
        digits = list(row["answer"])
        i = rng.randrange(len(digits))
        d = int(digits[i])
        lowest = 1 if i == 0 and len(digits) > 1 else 0
        step = rng.choice((-1, 1))
        if not lowest <= d + step <= 9:
            step = -step
        digits[i] = str(d + step)
        return "".join(digits)
