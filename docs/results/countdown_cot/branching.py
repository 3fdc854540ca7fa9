"""How many tokens of a countdown_cot derivation are forks, under the *ideal* warm-start policy.

The ideal policy samples uniformly among a prompt's valid derivations (what `sft_targets` supervises on). At
every position of every derivation it induces a next-token distribution; this script counts, over 400
held-out prompts, the share of positions with more than one possible next token ("branching") and the share
of sampled tokens whose surprisal exceeds the position's entropy ("s > H", the quantity behind the quadrant
diagnostics' high-surprisal fraction). It does this for the task as it is and for the two changes considered
in calibration.md: number-level tokens and dropping the lists of available numbers.

    python docs/results/countdown_cot/branching.py        # ~1 min on one core; prints the table
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter

from stare_rl.tasks import get_task
from stare_rl.tasks.countdown_cot import parse_answer, render, solve


def tokenize(text: str, level: str) -> tuple[str, ...]:
    return tuple(text) if level == "char" else tuple(re.findall(r"\d+|\D", text))


def without_lists(text: str) -> str:
    return re.sub(r"\([\d,]*\)", "", text)


def prompt_shares(derivations: list[tuple[str, ...]]) -> tuple[float, float, float]:
    """(branching share, s > H share, tokens per derivation) under the uniform policy over ``derivations``."""
    total = branching = above = 0
    for seq in derivations:
        for i in range(len(seq)):
            nxt = Counter(other[i] for other in derivations if other[:i] == seq[:i])
            z = sum(nxt.values())
            entropy = -sum(c / z * math.log(c / z) for c in nxt.values())
            total += 1
            branching += len(nxt) > 1
            above += -math.log(nxt[seq[i]] / z) > entropy + 1e-12
    return branching / total, above / total, total / len(derivations)


def main() -> None:
    rows = get_task("countdown_cot").make_split("test", 400, 0)
    print("| format | tokens | tokens per derivation | branching positions | sampled with s > H |")
    print("|---|---|---:|---:|---:|")
    for fmt in ("as is (with lists)", "without lists"):
        for level in ("char", "number"):
            shares = []
            for row in rows:
                numbers, target = parse_answer(row["answer"])
                texts = [render(numbers, steps) for steps in solve(numbers, target)]
                if fmt == "without lists":
                    texts = [without_lists(t) for t in texts]
                shares.append(prompt_shares([tokenize(t, level) + ("<eos>",) for t in texts]))
            br, sh, n = (statistics.mean(s[k] for s in shares) for k in range(3))
            print(f"| {fmt} | {level} | {n:.1f} | {br * 100:.1f} % | {sh * 100:.1f} % |")


if __name__ == "__main__":
    main()
