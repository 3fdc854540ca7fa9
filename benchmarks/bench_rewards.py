"""The guarded reward call of a training step: one thread for the whole batch against a thread per completion,
measured side by side in one run.

    python3 benchmarks/bench_rewards.py --completions 128 --repeats 30
    python3 benchmarks/bench_rewards.py --completions 128 --repeats 30 --busy 2   # beside 2 busy processes

Every completion of a GRPO step is scored through a guard with a timeout (``stare_rl.tasks.rewards.safe_rewards``:
a reward that raises, returns junk or hangs scores 0 and training goes on). The library scores a batch in one
daemon thread and starts another only after a call times out; ``per-call thread`` is the guard it replaced, which
started and joined a thread per completion (written out here as the reference). The reward is the embedded
countdown_cot task's own, on its own answers, so the work per call is what a cell pays. Repeats alternate the two
in a shuffled order each round; the table gives, per variant, the median and min milliseconds per batch, and the
median of the per-round ratios to the per-call guard. ``--busy N`` starts N processes that spin on the CPU for the
whole run, as the other cells of a study do: a thread per call then waits for the scheduler at every start and
join. Both variants return the same scores (checked).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import statistics
import threading
import time

from stare_rl.tasks import get_task
from stare_rl.tasks.rewards import ERROR, TIMEOUT, safe_rewards


def per_call_thread(fn, completions, answers, timeout_s):  # noqa: ANN001, ANN201 - the replaced guard, for reference
    out = []
    for completion, answer in zip(completions, answers, strict=True):
        box: list = []

        def run(c=completion, a=answer, box=box) -> None:  # noqa: ANN001
            try:
                box.append((float(fn(c, a)), None))
            except Exception:  # noqa: BLE001
                box.append((0.0, ERROR))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(timeout_s)
        out.append((0.0, TIMEOUT) if thread.is_alive() or not box else box[0])
    return out


def _spin(stop_at: float) -> None:
    while time.time() < stop_at:
        pass


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--completions", type=int, default=128, help="completions per batch (a cell's 16 x 8)")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--busy", type=int, default=0, help="processes that keep the CPU busy meanwhile")
    args = p.parse_args()
    task = get_task("countdown_cot")
    rows = task.make_split("train", args.completions, 0)
    answers = [str(r["answer"]) for r in rows]
    # half the completions right, half with their last step cut: both paths of the reward
    completions = [task.sft_target(r) if i % 2 else task.sft_target(r).rsplit(";", 1)[0] for i, r in enumerate(rows)]
    fn = task.reward
    variants = {"per-call thread": per_call_thread, "one thread (library)": safe_rewards}
    same = per_call_thread(fn, completions, answers, 10.0) == safe_rewards(fn, completions, answers, 10.0)
    busy = [mp.Process(target=_spin, args=(time.time() + 3600,), daemon=True) for _ in range(args.busy)]
    for proc in busy:
        proc.start()
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.completions} completions, "
          f"{args.repeats} rounds, {args.busy} busy processes")
    times: dict[str, list[float]] = {name: [] for name in variants}
    rng = random.Random(0)
    try:
        for _ in range(args.repeats):
            order = list(variants)
            rng.shuffle(order)
            for name in order:
                t0 = time.perf_counter()
                variants[name](fn, completions, answers, 10.0)
                times[name].append(1e3 * (time.perf_counter() - t0))
    finally:
        for proc in busy:
            proc.terminate()
    base = times["per-call thread"]
    print(f"{'variant':<22} {'median ms':>10} {'min ms':>8} {'x per-call (per round)':>24}")
    for name, ts in times.items():
        ratio = statistics.median(t / b for t, b in zip(ts, base, strict=True))
        print(f"{name:<22} {statistics.median(ts):>10.2f} {min(ts):>8.2f} {ratio:>24.3f}")
    print(f"same scores: {same}")
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
