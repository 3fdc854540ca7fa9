"""The :class:`Task` interface shared by the embedded offline tasks, and deterministic split helpers.

A task produces rows ``{"prompt": str, "answer": str}``, scores a completion against an answer with a pure,
fast ``reward`` (1.0 correct, 0.0 otherwise), and supplies one correct completion per row for the supervised
warm start (``sft_target``; ``sft_targets`` may give several per row). Train and test splits are disjoint by construction: every problem instance is
assigned to exactly one split by a stable hash of its canonical key (independent of the sampling seed).
"""

from __future__ import annotations

import hashlib
import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

SPLITS = ("train", "test")
logger = logging.getLogger(__name__)

TEST_FRACTION_PERCENT = 10  # 1 in 10 problem instances belongs to the test split


def split_of(key: str) -> str:
    """The split (``"train"`` or ``"test"``) a problem instance belongs to, from a stable hash of its key."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return "test" if int.from_bytes(digest[:8], "big") % 100 < TEST_FRACTION_PERCENT else "train"


def check_split_args(split: str, n: int, seed: int) -> None:
    """Raise ``ValueError`` naming the argument when ``make_split`` is called with a bad value."""
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not known; choose one of {list(SPLITS)}")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n={n!r} must be a non-negative integer")
    if not isinstance(seed, int):
        raise ValueError(f"seed={seed!r} must be an integer")


def sample_distinct(
    draw: Callable[[random.Random], tuple[str, dict[str, str]]],
    split: str,
    n: int,
    seed: int,
    allow_fewer: bool = False,
    patience: int = 20000,
) -> list[dict[str, str]]:
    """Draw ``n`` rows with distinct prompts of ``split`` with ``draw(rng) -> (key, row)`` (rejection sampling).

    ``key`` names the problem instance (e.g. the sorted numbers and target) and decides its split, so that
    two prompts of the same instance never land in different splits. Deterministic in ``(split, n, seed)``.
    When ``patience`` draws in a row bring no new prompt, the split is taken as exhausted: with
    ``allow_fewer`` the rows found so far are returned, otherwise ``ValueError``.
    """
    # The split name is mixed into the seed so that train and test draws are not correlated.
    rng = random.Random(f"{split}:{seed}")
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    stale = 0
    while len(rows) < n:
        key, row = draw(rng)
        if row["prompt"] in seen or split_of(key) != split:
            stale += 1
            if stale >= patience:
                if allow_fewer:
                    logger.info("split %r holds only ~%d distinct prompts (asked for %d)", split, len(rows), n)
                    break
                raise ValueError(
                    f"n={n} is larger than the number of distinct {split!r} prompts (found {len(rows)}); "
                    "ask for fewer rows or widen the task's ranges"
                )
            continue
        stale = 0
        seen.add(row["prompt"])
        rows.append(row)
    return rows


def sample_distinct_rejecting(
    draw_once: Callable[[random.Random], tuple[str, dict[str, str]]],
    split: str,
    n: int,
    seed: int,
    allow_fewer: bool = False,
) -> list[dict[str, str]]:
    """:func:`sample_distinct` over a generator that may reject a draw (returns an empty row): draw again."""
    check_split_args(split, n, seed)

    def draw(rng: random.Random) -> tuple[str, dict[str, str]]:
        while True:
            key, row = draw_once(rng)
            if row:
                return key, row

    return sample_distinct(draw, split, n, seed, allow_fewer)


class Task(ABC):
    """An offline verifiable task: prompts, answers, a reward and supervised targets.

    Attributes:
        name: registry name of the task.
        alphabet: every character a prompt or a correct completion can contain (for the char tokenizer).
        max_completion_chars: longest correct completion, in characters (a bound for ``max_new_tokens``).
    """

    name: str = ""
    alphabet: str = ""
    max_completion_chars: int = 0

    @abstractmethod
    def make_split(self, split: str, n: int, seed: int, allow_fewer: bool = False) -> list[dict[str, str]]:
        """``n`` rows ``{"prompt", "answer"}`` with distinct prompts of ``split`` ("train" or "test"),
        deterministic in ``(split, n, seed)``. A split with fewer prompts raises ``ValueError``, or with
        ``allow_fewer`` returns all it found."""

    @abstractmethod
    def reward(self, completion: str, answer: str) -> float:
        """1.0 when ``completion`` is a correct answer for ``answer``, else 0.0. Never raises on bad text."""

    @abstractmethod
    def sft_target(self, row: dict[str, str]) -> str:
        """One correct completion for ``row`` (without the end-of-sequence token)."""

    def sft_targets(self, row: dict[str, str], rng: random.Random) -> list[str]:
        """The completions the warm start trains on for ``row`` (default: ``[sft_target(row)]``).

        A task with many valid completions may return several drawn with ``rng`` (seeded by the warm start), so
        that the starting policy spreads its mass over them instead of learning one canonical answer.
        """
        return [self.sft_target(row)]

    def sft_wrong_target(self, row: dict[str, str], rng: random.Random) -> str:
        """A plausible wrong completion for ``row`` (scores 0), drawn with ``rng``: what the warm start mixes into
        its data when ``correct_frac < 1``, so that the converged policy's accuracy is set by the data. A task
        that does not define one cannot be warm-started with wrong answers."""
        raise NotImplementedError(f"task {self.name!r} defines no wrong completions (sft_wrong_target); "
                                  "warm-start it with correct_frac=1.0")

    def settings(self) -> dict[str, Any]:
        """The task's constructor settings (part of the warm-start cache key and of saved run info)."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        return f"{type(self).__name__}({args})"


def clean_completion(completion: str) -> str:
    """The completion text with surrounding whitespace and any literal special tokens at its end removed."""
    text = completion
    for marker in ("<eos>", "<pad>"):
        cut = text.find(marker)
        if cut >= 0:
            text = text[:cut]
    return text.strip()
