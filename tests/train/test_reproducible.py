"""Same config + same seeds on one machine -> bit-identical results: the warm start (from an empty cache), every
logged metric, the final weights and both evaluations. (Across machines, float rounding in the CPU kernels
differs by instruction set; docs/train.md says what that does to the numbers.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl")

from stare_rl import cli  # noqa: E402
from stare_rl.io.runlog import read_metrics  # noqa: E402

pytestmark = pytest.mark.slow

TINY = ["--warmstart_max_steps", "2", "--warmstart_stop_avg_at_k", "1.0", "--warmstart_stop_greedy_acc", "1.0",
        "--max_steps", "3", "--save_steps", "10", "--per_device_train_batch_size", "16", "--num_generations", "4",
        "--max_completion_length", "3", "--reward", "task", "--eval_k", "2", "--disable_tqdm", "true"]


def _one_digit_sums(path: Path) -> str:
    """Sums below 10: a barely trained model sometimes samples the right digit, so GRPO gets rewards to learn from."""
    rows = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in range(10) for b in range(10 - a)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _untimed(record: dict) -> dict:
    return {k: v for k, v in record.items() if "time" not in k and "per_second" not in k}


def _weights(model_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


def test_same_config_and_seed_twice_is_bit_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _one_digit_sums(tmp_path / "sums.jsonl")
    runs = []
    for i in (1, 2):
        run, cache = tmp_path / f"run{i}", tmp_path / f"cache{i}"  # each from an empty warm-start cache
        assert cli.main(["train", *TINY, "--dataset", data, "--output_dir", str(run), "--cache_dir", str(cache)]) == 0
        (warm,) = [p for p in cache.iterdir() if p.name != "evals"]  # evals: the initial_eval cache
        runs.append((run, warm))
    capsys.readouterr()
    (run_a, warm_a), (run_b, warm_b) = runs
    assert warm_a.name == warm_b.name
    history = [json.loads((w / "warmstart.json").read_text())["history"] for w in (warm_a, warm_b)]
    assert history[0] == history[1] and len(history[0]) == 1
    for a, b in ((_weights(warm_a), _weights(warm_b)), (_weights(run_a / "model"), _weights(run_b / "model"))):
        assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)
    metrics = [[_untimed(r) for r in read_metrics(run)] for run in (run_a, run_b)]
    assert [r["step"] for r in metrics[0]] == [1, 2, 3] and metrics[0] == metrics[1]
    assert any(r["critic/score/mean"] > 0 for r in metrics[0])  # something to learn from, so GRPO moved
    for name in ("eval.json", "eval_initial.json"):
        assert (run_a / name).read_text() == (run_b / name).read_text()
    assert any(_weights(warm_a)[k].ne(_weights(run_a / "model")[k]).any() for k in _weights(warm_a))  # GRPO moved
