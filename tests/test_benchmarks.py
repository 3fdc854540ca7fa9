"""Benchmarks cannot rot: every script under ``benchmarks/`` runs here at tiny sizes with one repeat, as a user
runs it (a subprocess of this Python, the worktree's code first on the path), and prints its table.

The timings are meaningless at these sizes; what is checked is that each script runs to its table with the
library as it is now (a method that gained a new input, a renamed config field, a changed trainer hook...).
A new script without a smoke run here fails :func:`test_every_benchmark_script_has_a_smoke_run`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"

# script -> (tiny arguments, text its output must contain, needs TRL, seconds-scale: marked slow)
SMOKE: dict[str, tuple[list[str], list[str], bool, bool]] = {
    "bench_cell_speed.py": (["--variants", "baseline,static_cache", "--steps", "1", "--warmup", "1", "--repeats", "1",
                             "--", "--tiny_hidden_size", "16", "--tiny_num_layers", "1", "--warmstart_max_steps", "2",
                             "--warmstart_train_rows", "64", "--warmstart_eval_rows", "8", "--warmstart_batch_size",
                             "8", "--train_size", "64", "--eval_size", "8", "--per_device_train_batch_size", "8",
                             "--num_generations", "4", "--cache_dir", "cache"],
                            ["x base", "baseline ", "static_cache ", "same"], True, True),
    "bench_rewards.py": (["--completions", "8", "--repeats", "1"],
                         ["x per-call", "per-call thread ", "one thread (library) ", "same scores: True"], False, False),
    "bench_losses.py": (["--batch", "8", "--seq", "16", "--repeats", "1", "--warmup", "0"],
                        ["x per-round", "vanilla ", "steer ", "stare (C2)"], False, False),
    "bench_eval_memory.py": (["--model", "tiny", "--prompts", "4", "--k", "2", "--max-new-tokens", "4"],
                             ["peak extra MiB", "stored logits ", "hook ", "same samples: True", "relative: True"], False, True),
    "bench_entropy_memory.py": (["--tokens", "64", "--vocab", "500", "--chunks", "32", "--dtype", "float32"],
                                ["naive log_softmax", "chunked, chunk=32", "same results"], False, True),
    "bench_step_vocab.py": (["--vocab", "64", "--hidden", "16", "--batch", "4", "--generations", "2",
                             "--completion", "4", "--steps", "1", "--warmup", "0", "--repeats", "1",
                             "--variants", "plain,stare"], ["x plain", "plain ", "stare ", "gate_on 1"], True, True),
    "bench_trl_overhead.py": (["--steps", "2", "--warmup", "0", "--repeats", "1", "--batch", "16"],
                              ["of plain TRL", "vanilla ", "stare "], True, True),
    "repro_kernels.py": (["1", "--steps", "2", "--eval-rows", "8", "--train-rows", "512"],
                         ["cpu_capability=", "weights="], True, True),
}


def test_every_benchmark_script_has_a_smoke_run() -> None:
    scripts = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))
    assert scripts == sorted(SMOKE), f"benchmarks without a smoke run here: {sorted(set(scripts) - set(SMOKE))}"


def _params() -> list:
    return [pytest.param(name, marks=[pytest.mark.slow] if slow else [], id=name)
            for name, (_, _, _, slow) in SMOKE.items()]


@pytest.mark.parametrize("script", _params())
def test_benchmark_runs_at_tiny_size(script: str, tmp_path: Path) -> None:
    argv, expected, needs_trl, _ = SMOKE[script]
    if needs_trl:
        pytest.importorskip("trl")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TMPDIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(BENCH / script), *argv], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    for text in expected:
        assert text in proc.stdout, (script, text, proc.stdout[-3000:])


def test_bench_losses_builds_the_inputs_every_method_declares() -> None:
    """The batch carries the old policy's entropy and the rewards because registered methods declare them (STEER,
    Entrocraft), not by name."""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_losses
    finally:
        sys.path.remove(str(BENCH))
    from stare_rl.core.registry import get_method, list_methods

    needs_old = [m for m in list_methods() if get_method(m).needs_old_entropy]
    assert "steer" in needs_old
    assert bench_losses.make_batch(8, 16).old_entropy is not None
    assert bench_losses.make_batch(8, 16, old_entropy=False).old_entropy is None
    assert [m for m in list_methods() if get_method(m).needs_rewards] == ["entrocraft"]
    assert bench_losses.make_batch(8, 16).rewards is not None
    assert bench_losses.make_batch(8, 16, with_rewards=False).rewards is None
    batch = bench_losses.make_batch(8, 16)
    for name, step in bench_losses.variants().items():  # every variant computes a finite loss on that batch
        loss = step(batch)
        assert loss.isfinite(), name


def test_bench_losses_subset_and_device_are_checked_before_any_timing(capsys: pytest.CaptureFixture[str]) -> None:
    """--variants runs a named subset (vanilla always, as the reference); an unknown name, or a device torch does
    not see, is refused with the value named."""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_losses
    finally:
        sys.path.remove(str(BENCH))
    bench_losses.main(["--batch", "8", "--seq", "16", "--repeats", "1", "--warmup", "0", "--variants", "stare"])
    rows = [ln.split()[0] for ln in capsys.readouterr().out.splitlines()[3:]]
    assert rows == ["vanilla", "stare"]
    with pytest.raises(SystemExit, match="unknown.*'nope'"):
        bench_losses.main(["--batch", "8", "--seq", "16", "--variants", "stare,nope"])
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="--device='cuda'"):
            bench_losses.main(["--device", "cuda"])


def test_the_step_benchmark_stops_at_its_time_budget_between_whole_repeats() -> None:
    """bench_step_vocab's round robin under ``--time-budget``: a repeat starts only if the slowest one so far fits
    in what is left, so each variant keeps the same number of repeats (a lent GPU's limit cut a run short there
    before the table, 2026-11-27)."""
    sys.path.insert(0, str(BENCH))
    try:
        from bench_step_vocab import round_robin
    finally:
        sys.path.remove(str(BENCH))
    now = [0.0]
    calls = []

    def run(rep: int, variant: str) -> dict:
        now[0] += 10.0  # every run takes 10 s: a repeat of two variants, 20 s
        calls.append((rep, variant))
        return {"rep": rep}

    out = round_robin(["a", "b"], 5, run, budget=65.0, clock=lambda: now[0])
    assert calls == [(0, "a"), (0, "b"), (1, "a"), (1, "b"), (2, "a"), (2, "b")]  # at 60 s, 60 + 20 > 65: stop
    assert out == {"a": [{"rep": 0}, {"rep": 1}, {"rep": 2}], "b": [{"rep": 0}, {"rep": 1}, {"rep": 2}]}
    now[0], calls[:] = 0.0, []
    assert len(round_robin(["a", "b"], 5, run, budget=None, clock=lambda: now[0])["a"]) == 5
    now[0], calls[:] = 0.0, []
    assert len(round_robin(["a"], 3, run, budget=1.0, clock=lambda: now[0])["a"]) == 1  # the first always runs
