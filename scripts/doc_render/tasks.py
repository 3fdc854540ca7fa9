"""The tasks' own numbers (docs/tasks.md, docs/history.md)."""

from __future__ import annotations

import statistics

from .common import RESULTS, load_json, mean_std, tiny_parameters


def render_countdown_warmstart() -> str:
    ws = load_json("compare/warmstart.json")
    c, f = ws["config"], ws["final"]
    return (
        f"hidden {c['hidden_size']}, lr {c['learning_rate']:g}, batch {c['batch_size']}, stop at greedy >= "
        f"{c['stop_greedy_acc']:g} and avg@{c['k']} >= {c['stop_avg_at_k']:g} (seed {ws['seed']}): it "
        f"{'stopped' if ws['reached_stop_metric'] else 'ran out of steps'} at step {ws['steps']} with avg@{c['k']} "
        f"{f['avg@8']:.3f},\npass@{c['k']} {f['pass@8']:.3f}, greedy {f['greedy_acc']:.3f} and entropy "
        f"{f['entropy']:.3f} on {c['eval_rows']} held-out prompts ({ws['num_parameters']:,} parameters)."
    )


def calc_tool_rows() -> list[str]:
    """tasks.md's calc_tool tables (after the tokenizer fix): GRPO vs STARE over the 3 seeds, and STARE seed 0."""
    d = load_json("calc_tool/summary.json")
    keys = ("avg@4", "pass@4", "greedy", "reward_last20", "entropy_last20", "errors_eval")
    out = []
    for method in ("vanilla", "stare"):
        seeds = [d[method][s] for s in sorted(d[method], key=int)]
        out.append("| " + " | ".join(mean_std([r[k] for r in seeds], 1, 3) for k in keys) + " |")
    s0 = d["stare"]["0"]
    out.append(f"| {s0['avg@4']:.3f} | {s0['pass@4']:.3f} | {s0['greedy']:.3f} | {s0['calls']:.2f} | "
               f"{s0['errors_eval']:.3f} | {s0['finished']:.3f} | {s0['entropy_eval']:.3f} |")
    return out


def _calc_tool_walls() -> dict[str, float]:
    """``calc_tool/times.txt``: each run's wall minutes (``stare-s0`` ran first, from an empty cache)."""
    walls = {}
    for line in (RESULTS / "calc_tool" / "times.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "wall":
            walls[parts[0]] = float(parts[2]) / 60
    return walls


def history_calc_tool_numbers() -> list[str]:
    """history.md's calc_tool times, from the same ``warmstart.json`` and ``times.txt`` as tasks.md's."""
    ws, walls = load_json("calc_tool/warmstart.json"), _calc_tool_walls()
    cached = [w for k, w in walls.items() if k != "stare-s0"]
    return [f"warm start {ws['wall_time_s'] / 60:.1f} min (stopped at SFT step {ws['steps']}), the whole run\n"
            f"{walls['stare-s0']:.1f} min", f"runs from the cached warm start {min(cached):.1f}-{max(cached):.1f} min"]


def calc_tool_numbers() -> list[str]:
    """tasks.md's calc_tool run after the tokenizer fix: the warm start (``warmstart.json``: where it stopped, its
    wall time), the warm start's evaluation (seed 0's ``eval_initial.json``) and the runs' wall times
    (``times.txt``: seed 0 of STARE ran first, from an empty cache, so it includes the warm start)."""
    ws = load_json("calc_tool/warmstart.json")
    ev = load_json("calc_tool/stare-s0/eval_initial.json")
    walls = _calc_tool_walls()
    cached = [w for k, w in walls.items() if k != "stare-s0"]
    f = ws["final"]
    return [
        f"SFT step {ws['steps']} (greedy\n{f['greedy_acc']:.3f}, avg@4 {f['avg@4']:.3f} on {ws['config']['eval_rows']} "
        f"held-out train prompts) after **{ws['wall_time_s'] / 60:.1f} min**",
        f"both evaluations) {walls['stare-s0']:.1f} min wall",
        f"{min(cached):.1f}-{max(cached):.1f} min (two side by side, or alone). On {ev['n']} test-split",
        f"| warm start | {ev['avg@4']:.3f} | {ev['pass@4']:.3f} | {ev['greedy_acc']:.3f} | "
        f"{ev['tools/calls_per_episode']:.2f} | {ev['tools/errors_per_episode']:.3f} | {ev['tools/finished']:.3f} | "
        f"{ev['entropy']:.3f} |",
        f"the warm start's entropy, {ev['entropy']:.2f}, is below",
    ]


def countdown_warmstart_numbers() -> list[str]:
    """compare.md's countdown warm start, from the grid's ``docs/results/compare/warmstart.json`` (its stop and held-out metrics)."""
    ws = load_json("compare/warmstart.json")
    f = ws["final"]
    return [f"stopped at step {ws['steps']} when avg@8 reached {f['avg@8']:.2f}; greedy {f['greedy_acc']:.2f},\n"
            f"  pass@8 {f['pass@8']:.2f}, sampling entropy {f['entropy']:.2f} on held-out train-split prompts; "
            f"{ws['wall_time_s']:.0f} s wall under load)"]


def countdown_difficulty_rows() -> list[str]:
    """tasks.md's "Countdown, choosing the difficulty" table, recomputed from the task's own code (deterministic):
    distinct train prompts (``make_split`` with ``allow_fewer``, up to 40 001), median solutions over the first 300
    of them and the mean length of their SFT target (seed 0)."""
    from stare_rl.tasks.countdown import CountdownTask, parse_answer, solve

    out = []
    for count, top in ((3, 9), (3, 20), (4, 9)):
        task = CountdownTask(num_count=count, max_number=top)
        rows = task.make_split("train", 40_001, 0, allow_fewer=True)
        n = "> 40 000" if len(rows) > 40_000 else f"{len(rows):,}".replace(",", " ")
        first = rows[:300]
        sols = statistics.median(len(solve(*parse_answer(r["answer"]), task.use_all)) for r in first)
        length = statistics.fmean(len(task.sft_target(r)) for r in first)
        out.append(f" | {n} | {sols:g} | {length:.1f} |")
    return out


def countdown_cot_task_numbers() -> list[str]:
    """tasks.md's statistics of the ``countdown_cot`` task, recomputed from the task's own code (its generator and
    exhaustive solver: deterministic) over the 3 000 train prompts the page names (seed 0)."""
    from stare_rl.tasks import get_task
    from stare_rl.tasks.countdown_cot import parse_answer, render, solve

    task = get_task("countdown_cot")
    counts, lengths = [], []
    for row in task.make_split("train", 3000, 0):
        numbers, target = parse_answer(str(row["answer"]))
        derivations = solve(numbers, target, task.max_value)
        counts.append(len(derivations))
        lengths += [len(render(numbers, d)) for d in derivations]
    counts.sort()
    n = len(counts)
    return [f"derivations per prompt median {statistics.median(counts):g} (deciles {counts[n // 10]} … "
            f"{counts[9 * n // 10]}; {100 * sum(c == 1 for c in counts) / n:.1f} % have exactly one), derivation "
            f"length {statistics.mean(lengths):.0f}\ncharacters on average (max {max(lengths)}; "
            f"`max_completion_chars` = {task.max_completion_chars})"]


BLOCKS = {  # name -> (page, renderer)
    "countdown-warmstart": ("docs/tasks.md", render_countdown_warmstart),
}


def inline_checks() -> list[tuple[str, str]]:
    """(page, text) quoted in running text from the tasks' artifacts, and the tiny model's size."""
    tasks = [*calc_tool_rows(), *countdown_cot_task_numbers(), *countdown_difficulty_rows(), *calc_tool_numbers(),
             f"tied embeddings, ~{tiny_parameters(128) / 1e6:.2f} M parameters by default"]
    return [*(("docs/tasks.md", text) for text in tasks),
            *(("docs/history.md", text) for text in history_calc_tool_numbers()),
            *(("docs/compare.md", text) for text in countdown_warmstart_numbers()),
            ("README.md", f"a ~{tiny_parameters(64) / 1e6:.2f}M-parameter")]
