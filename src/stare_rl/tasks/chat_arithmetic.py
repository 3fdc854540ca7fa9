"""Chat-format addition for real pretrained chat models: ``[{"role": "user", "content": "Add 7 and 5. ..."}]`` -> 12.

The offline task for a real LM (``model: smollm2-135m-instruct``): the prompt is one user turn, the model answers
in its own words, and the reward reads the final number it writes (:func:`~stare_rl.tasks.rewards.number_reward`),
because small chat models do not write ``\\boxed{}``. The operand range sets the difficulty; the default is
calibrated so that SmolLM2-135M-Instruct's held-out pass@1 at temperature 1 starts between 20 % and 60 %
(measured in docs/train.md, "A real pretrained model"). No warm start: the model is pretrained.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from stare_rl.tasks.base import Task, check_split_args
from stare_rl.tasks.rewards import number_reward

# Two phrasings of each question. "Reply with just the number." keeps answers short; "Add {a} and {b}." was
# measured at half the accuracy of these two and left out (calibration: docs/train.md, "A real pretrained model").
PHRASINGS = (
    "What is {a} + {b}? Reply with just the number.",
    "What is the sum of {a} and {b}? Reply with just the number.",
)
TEST_PERCENT = 25  # of the (a, b) pairs; every phrasing of a pair is in the same split


class ChatArithmeticTask(Task):
    """Addition of two integers drawn from ``[low, high]``, asked as a chat question.

    Attributes:
        needs_chat_model: the rows are chat messages; a model without a chat template (the tiny model) cannot
            be trained on them.
        max_completion_tokens: a completion budget in tokens (the model explains before it answers).
    """

    name = "chat_arithmetic"
    alphabet = ""  # no character tokenizer: a real model's own tokenizer reads the prompts
    needs_chat_model = True
    reward_note = ("the final number the completion writes (the last \\boxed{} if it holds one) equals the sum "
                   "(chat_arithmetic)")

    def __init__(self, low: int = 0, high: int = 9, max_completion_tokens: int = 32) -> None:
        for key, value in (("low", low), ("high", high), ("max_completion_tokens", max_completion_tokens)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{key}={value!r} must be an integer >= 0")
        if high <= low:
            raise ValueError(f"high={high} must be larger than low={low}")
        if max_completion_tokens < 1:
            raise ValueError(f"max_completion_tokens={max_completion_tokens} must be >= 1")
        self.low, self.high, self.max_completion_tokens = low, high, max_completion_tokens
        self.max_completion_chars = max_completion_tokens

    def settings(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "max_completion_tokens": self.max_completion_tokens}

    def _rows(self, split: str) -> list[dict[str, Any]]:
        """Every row of ``split``, in a fixed order: each pair (a, b) is in one split, with all its phrasings."""
        rows = []
        for a in range(self.low, self.high + 1):
            for b in range(self.low, self.high + 1):
                digest = hashlib.sha256(f"chat_arithmetic:{a}+{b}".encode()).digest()
                in_test = int.from_bytes(digest[:8], "big") % 100 < TEST_PERCENT
                if in_test == (split == "test"):
                    rows += [{"prompt": [{"role": "user", "content": p.format(a=a, b=b)}], "answer": str(a + b)}
                             for p in PHRASINGS]
        return rows

    def make_split(self, split: str, n: int, seed: int, allow_fewer: bool = False) -> list[dict[str, Any]]:
        check_split_args(split, n, seed)
        rows = self._rows(split)
        if n > len(rows) and not allow_fewer:
            raise ValueError(f"n={n} is larger than the number of distinct {split!r} prompts ({len(rows)}) of "
                             f"chat_arithmetic with low={self.low}, high={self.high}; ask for fewer rows or widen "
                             "the range")
        random.Random(f"{split}:{seed}").shuffle(rows)
        return rows[:n]

    def reward(self, completion: str, answer: str) -> float:
        return number_reward(completion, answer)

    def sft_target(self, row: dict[str, Any]) -> str:
        return row["answer"]
