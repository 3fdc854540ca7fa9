"""evaluate() on a tiny model (metric ranges, seeded determinism) and the `stare eval` command."""

from __future__ import annotations

import json

import pytest

from stare_rl.evaluation import count_reflections, evaluate, pass_at_k
from stare_rl.models.tiny import build_tiny_model
from stare_rl.models.tokenizer import build_char_tokenizer
from stare_rl.tasks import get_task


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    task = get_task("arithmetic")
    tok = build_char_tokenizer(task.alphabet)
    model = build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2)
    path = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    (path / "stare_task.json").write_text(json.dumps({"task": "arithmetic", "task_kwargs": {"digits": 2}}))
    return path


def test_pass_at_k_estimator() -> None:
    assert pass_at_k(8, 0, 8) == 0.0 and pass_at_k(8, 1, 8) == 1.0
    assert pass_at_k(8, 2, 1) == pytest.approx(2 / 8)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    with pytest.raises(ValueError, match="k=9"):
        pass_at_k(8, 1, 9)


def test_count_reflections() -> None:
    out = count_reflections(["Wait, let me check. wait", "no words", "rechecking? recheck!"], ["wait", "recheck"])
    assert out["reflection/wait"] == pytest.approx(2 / 3)
    assert out["reflection/recheck"] == pytest.approx(1 / 3)  # whole words only: "rechecking" is not counted
    assert out["reflection/any"] == pytest.approx(2 / 3)


def test_evaluate_metrics_in_range_and_seeded(tiny_dir) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    task = get_task("arithmetic", digits=2)
    rows = task.make_split("test", 6, seed=0)
    model, tok = AutoModelForCausalLM.from_pretrained(tiny_dir), AutoTokenizer.from_pretrained(tiny_dir)
    kw = dict(k=4, max_new_tokens=5, batch_size=4, progress=False)
    a = evaluate(model, tok, rows, task.reward, seed=0, per_row=True, **kw)
    assert a["n"] == 6 and a["k"] == 4
    for key in ("avg@4", "pass@4", "greedy_acc", "reflection/any"):
        assert 0.0 <= a[key] <= 1.0
    assert a["pass@4"] >= a["avg@4"]
    assert 1.0 <= a["mean_response_length"] <= 5.0
    assert 0.0 < a["entropy"] <= __import__("math").log(len(tok)) + 1e-6
    assert len(a["rows"]) == 6 and all(len(r["completions"]) == 4 for r in a["rows"])
    assert evaluate(str(tiny_dir), None, rows, task.reward, seed=0, per_row=True, **kw) == a  # dir == object
    b = evaluate(model, tok, rows, task.reward, seed=1, per_row=True, **kw)
    assert [r["completions"] for r in b["rows"]] != [r["completions"] for r in a["rows"]]
    model.train()
    evaluate(model, tok, rows[:1], task.reward, **kw)
    assert model.training  # evaluate switches to eval mode and restores the caller's mode
    # a reward that accepts everything: every metric is exactly 1
    ones = evaluate(model, tok, rows, lambda c, a_: 1.0, **kw)
    assert ones["avg@4"] == ones["pass@4"] == ones["greedy_acc"] == 1.0


def test_evaluate_validates(tiny_dir) -> None:
    with pytest.raises(ValueError, match="k=0"):
        evaluate(str(tiny_dir), None, [{"prompt": "1+1=", "answer": "2"}], lambda c, a: 0.0, k=0)
    with pytest.raises(ValueError, match="rows is empty"):
        evaluate(str(tiny_dir), None, [], lambda c, a: 0.0)
    with pytest.raises(ValueError, match="not a Hugging Face model directory"):
        evaluate(str(tiny_dir / "missing"), None, [{"prompt": "1", "answer": "1"}], lambda c, a: 0.0)


def test_stare_eval_cli(tiny_dir, tmp_path, capsys) -> None:
    from stare_rl.commands.eval import main

    out = tmp_path / "m.json"
    assert main(["--model", str(tiny_dir), "--n", "5", "--k", "2", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "avg@2" in printed and "pass@2" in printed and "ArithmeticTask(digits=2)" in printed
    metrics = json.loads(out.read_text())
    assert metrics["n"] == 5 and 0.0 <= metrics["avg@2"] <= 1.0 and "reflection/wait" in metrics

    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(json.dumps({"prompt": f"{i}+{i}=", "answer": str(2 * i)}) for i in range(3)))
    assert main(["--model", str(tiny_dir), "--dataset", str(data), "--k", "2", "--max-new-tokens", "3",
                 "--no-progress"]) == 0
    assert "dataset" in capsys.readouterr().out

    assert main(["--model", str(tmp_path / "nope")]) == 2
    assert main(["--model", str(tiny_dir), "--dataset", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--temperature" in capsys.readouterr().out
