"""Rewards for real datasets (math-verify on the final ``\\boxed{}``; the final number of a plain-text answer) and a
guard for any reward function.

``safe_reward`` runs a reward function in a daemon thread with a timeout: a function that raises, returns
something that is not a finite number, or hangs past the timeout scores 0 and reports why, so training goes
on (the trainer counts the reports in a metric). math-verify's own timeouts use ``signal.alarm``, which only
works on the main thread: ``math_reward`` turns them off elsewhere and relies on ``safe_reward``'s timeout.
"""

from __future__ import annotations

import logging
import math
import queue
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger(__name__)

RewardFn = Callable[[str, str], float]
ERROR, TIMEOUT = "error", "timeout"


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text`` with balanced braces, else None."""
    starts = [i for marker in ("\\boxed{", "\\fbox{") for i in _find_all(text, marker)]
    for start in sorted(starts, reverse=True):
        open_at = text.index("{", start)
        depth = 0
        for j in range(open_at, len(text)):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                return text[open_at + 1 : j]
    return None


def _find_all(text: str, marker: str) -> list[int]:
    out, i = [], text.find(marker)
    while i >= 0:
        out.append(i)
        i = text.find(marker, i + 1)
    return out


def math_reward(completion: str, ground_truth: str) -> float:
    """1.0 if the last ``\\boxed{}`` answer of ``completion`` is mathematically equal to ``ground_truth``.

    Equality is math-verify's (numbers, fractions, radicals, intervals, expressions). No ``\\boxed{}`` -> 0.
    Signal-based timeouts are on only on the main thread (wrap in :func:`safe_reward` for a timeout anywhere).
    """
    from math_verify import LatexExtractionConfig, parse, verify

    boxed = last_boxed(completion)
    if boxed is None or not boxed.strip():
        return 0.0
    parse_timeout = _parse_timeout()
    gold = parse_gold(ground_truth)
    pred = parse(f"\\boxed{{{boxed}}}", extraction_config=[LatexExtractionConfig(boxed_match_priority=0)],
                 parsing_timeout=parse_timeout)
    if not gold or not pred:
        return 0.0
    return 1.0 if verify(gold, pred, timeout_seconds=parse_timeout) else 0.0


# A number as chat models write it: optional sign, digits with optional thousands commas, optional decimals.
_NUMBER = re.compile(r"(?<![\d.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]*\d)|(?<![\d.])-?\d+(?:\.\d+)?")


def final_number(text: str) -> float | None:
    """The answer a chat model gives in plain text: the content of the last ``\\boxed{}`` when it is a number,
    else the last number in ``text`` (``"1,234"`` reads as 1234, ``"-3.5"`` as -3.5); ``None`` if there is none.

    >>> final_number("23 + 45 = 68. So the answer is 68.")
    68.0
    """
    boxed = last_boxed(text)
    for part in ((boxed,) if boxed is not None else ()) + (text,):
        found = _NUMBER.findall(part)
        if found:
            try:
                return float(found[-1].replace(",", ""))
            except ValueError:  # pragma: no cover - the pattern only matches numbers
                return None
    return None


def number_reward(completion: str, answer: str) -> float:
    """1.0 when the final number of ``completion`` (:func:`final_number`) equals ``answer`` as a number, else 0.

    For chat models that answer in words (``"Tom has 12 apples now."``) instead of ``\\boxed{}``. An answer that
    is not a number scores every completion 0 (``stare train`` refuses such rows before training).
    """
    gold, got = parse_number(answer), final_number(completion)
    return 1.0 if gold is not None and got is not None and math.isclose(got, gold, rel_tol=0, abs_tol=1e-9) else 0.0


def parse_number(answer: str) -> float | None:
    """``answer`` as a number (``"1,234"``, ``" -7 "``, ``"3.5"``), or ``None`` when it is not exactly one."""
    text = str(answer).strip()
    match = _NUMBER.fullmatch(text)
    return float(text.replace(",", "")) if match else None


def _parse_timeout() -> int | None:
    return 5 if threading.current_thread() is threading.main_thread() else None


def parse_gold(ground_truth: str) -> list[Any]:
    """math-verify's parse of a reference answer (``$...$`` added unless it holds ``\\boxed``); ``[]`` when
    math-verify cannot read it (then :func:`math_reward` scores every completion 0)."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse

    gt = str(ground_truth).strip()
    gt_text = gt if "\\boxed" in gt else f"${gt}$"
    return parse(gt_text, extraction_config=[LatexExtractionConfig(), ExprExtractionConfig()],
                 parsing_timeout=_parse_timeout())


def _check_score(value: Any) -> float:
    score = float(value)
    if not math.isfinite(score):
        raise ValueError(f"reward={value!r} is not finite")
    return score


def safe_reward(fn: RewardFn, completion: str, answer: str, timeout_s: float | None = 10.0) -> tuple[float, str | None]:
    """``(score, None)`` on success; ``(0.0, "error")`` if ``fn`` raises or returns a non-finite/non-number;
    ``(0.0, "timeout")`` if it runs past ``timeout_s`` seconds (``None``: no timeout, run inline).

    The hung call keeps running in a daemon thread (Python cannot kill a thread) but no longer blocks.
    """
    return safe_rewards(fn, [completion], [answer], timeout_s)[0]


def safe_rewards(
    fn: RewardFn, completions: Sequence[str], answers: Sequence[str], timeout_s: float | None = 10.0
) -> list[tuple[float, str | None]]:
    """:func:`safe_reward` for a batch, one call after the other, each with its own ``timeout_s``.

    One daemon thread scores the batch in order (a thread per call cost more than the calls on a loaded machine);
    a call that runs past ``timeout_s`` is scored ``(0.0, "timeout")`` and left to that thread, which scores
    nothing more, and a new thread goes on with the rest. The scores are those of calling ``fn`` on each pair."""
    if len(completions) != len(answers):
        raise ValueError(f"len(completions)={len(completions)} != len(answers)={len(answers)}")
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"timeout_s={timeout_s!r} must be > 0 or None")
    items = list(zip(completions, answers, strict=True))
    if timeout_s is None:
        return [_scored(fn, c, a) for c, a in items]
    out: list[tuple[float, str | None]] = []
    while len(out) < len(items):
        out += _in_one_thread(fn, items[len(out):], timeout_s)
    return out


def _scored(fn: RewardFn, completion: str, answer: str) -> tuple[float, str | None]:
    try:
        return _check_score(fn(completion, answer)), None
    except Exception as err:  # noqa: BLE001 - any failure of a user reward scores 0
        logger.debug("reward function raised: %r", err)
        return 0.0, ERROR


def _in_one_thread(fn: RewardFn, items: list[tuple[str, str]], timeout_s: float) -> list[tuple[float, str | None]]:
    """Score ``items`` in order in one daemon thread, up to and including the first call past ``timeout_s``."""
    results: queue.Queue[tuple[float, str | None]] = queue.Queue()
    abandoned = threading.Event()  # set when a call timed out: the thread scores nothing after it

    def work() -> None:
        for completion, answer in items:
            if abandoned.is_set():
                return
            results.put(_scored(fn, completion, answer))

    threading.Thread(target=work, daemon=True, name="stare-reward").start()
    out: list[tuple[float, str | None]] = []
    for _ in items:
        try:
            out.append(results.get(timeout=timeout_s))
        except queue.Empty:
            abandoned.set()
            logger.warning("reward function timed out after %.3gs; scored 0", timeout_s)
            out.append((0.0, TIMEOUT))
            break
    return out
