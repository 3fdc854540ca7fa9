"""Held-out learning curves: the eval/* records ``stare train --eval_every`` writes, and pass@k from n samples."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from _tiny import save_tiny_model

pytest.importorskip("trl")

from stare_rl.engines.trl.eval import HeldOutEvalCallback, curve_ks  # noqa: E402
from stare_rl.evaluation.heldout import evaluate, pass_at_k  # noqa: E402
from stare_rl.io.runlog import read_metrics  # noqa: E402


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small random model of the project's tiny architecture, saved as a normal HF model dir."""
    return save_tiny_model(tmp_path_factory.mktemp("tiny"), "arithmetic")


def test_curve_ks_and_validation() -> None:
    assert curve_ks(32) == (1, 2, 4, 8, 16, 32)
    assert curve_ks(12) == (1, 2, 4, 8, 12)
    assert curve_ks(1) == (1,)
    for kwargs, message in (({"every": 0}, "eval_every=0"), ({"every": 2, "n": 0}, "eval_samples=0")):
        with pytest.raises(ValueError, match=message):
            HeldOutEvalCallback(None, [{"prompt": "1+1=", "answer": "2"}], lambda c, a: 0.0, **kwargs)
    with pytest.raises(ValueError, match="rows is empty"):
        HeldOutEvalCallback(None, [], lambda c, a: 0.0, every=1)


def test_evaluate_pass_ks_are_the_unbiased_estimator_of_the_samples(tiny_model_dir: Path) -> None:
    # reward 1 when the completion starts with an even digit: some prompts get c strictly between 0 and n
    def reward(completion: str, answer: str) -> float:
        return 1.0 if completion[:1] in "02468" and completion[:1] != "" else 0.0

    rows = [{"prompt": f"{a}+{a}=", "answer": "0"} for a in range(10, 16)]
    r = evaluate(str(tiny_model_dir), None, rows, reward, k=8, max_new_tokens=3, seed=3, per_row=True,
                 progress=False, pass_ks=(1, 2, 4, 8))
    counts = [sum(x >= 1.0 for x in row["rewards"]) for row in r["rows"]]
    assert any(0 < c < 8 for c in counts)  # the estimator is exercised away from 0 and 1
    for j in (1, 2, 4, 8):
        assert math.isclose(r[f"pass@{j}"], sum(pass_at_k(8, c, j) for c in counts) / len(rows))
    assert math.isclose(r["pass@1"], r["avg@8"])  # binary reward: pass@1 = mean reward
    assert r["pass@1"] <= r["pass@2"] <= r["pass@4"] <= r["pass@8"]
    with pytest.raises(ValueError, match="pass_ks"):
        evaluate(str(tiny_model_dir), None, rows, reward, k=4, pass_ks=(8,), progress=False)


@pytest.mark.slow
def test_train_logs_held_out_curve_at_step_0_and_every_n_steps(tmp_path: Path, tiny_model_dir: Path) -> None:
    from stare_rl.tasks import get_task
    from stare_rl.train import run as train

    run = tmp_path / "run"
    argv = ["--model", str(tiny_model_dir), "--task", "arithmetic", "--output_dir", str(run), "--max_steps", "4",
            "--save_steps", "10", "--per_device_train_batch_size", "16", "--num_generations", "4",
            "--train_size", "32", "--eval_size", "8", "--eval_k", "2", "--method", "vanilla",
            "--eval_every", "2", "--eval_samples", "4", "--eval_prompts", "3", "--logging_steps", "3",
            "--final_eval", "false", "--disable_tqdm", "true", "--seed", "5", "--gradient_checkpointing", "false"]
    assert train.main(argv) == 0
    records = {r["step"]: r for r in read_metrics(run)}
    # step 0: the starting model; 2 and 4: eval steps (logged even though logging_steps is 3); 3: a logging step
    assert sorted(records) == [0, 2, 3, 4]
    keys = {"eval/avg@4", "eval/pass@1", "eval/pass@2", "eval/pass@4", "eval/greedy_acc",
            "eval/response_length", "eval/entropy"}
    for step in (0, 2, 4):
        assert keys <= set(records[step]), step
        assert records[step]["eval/pass@1"] == records[step]["eval/avg@4"]
        assert 0.0 <= records[step]["eval/pass@1"] <= records[step]["eval/pass@4"] <= 1.0
        assert 1.0 <= records[step]["eval/response_length"] <= 5.0  # max_completion_length = 4 characters + EOS
    assert not any(k.startswith("eval/") for k in records[3])
    assert "actor/entropy" in records[2] and "actor/entropy" not in records[0]
    # step 0 is exactly the starting model evaluated on the first eval_prompts held-out prompts, seed = run seed
    task = get_task("arithmetic")
    rows = task.make_split("test", 8, 5)[:3]
    ref = evaluate(str(tiny_model_dir), None, rows, task.reward, k=4, max_new_tokens=5, seed=5, progress=False,
                   pass_ks=(1, 2), reflection_words=())
    assert records[0]["eval/pass@2"] == ref["pass@2"] and records[0]["eval/entropy"] == ref["entropy"]
