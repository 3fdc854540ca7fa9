"""evaluate() on a tiny model (metric ranges, seeded determinism) and the `stare eval` command."""

from __future__ import annotations

import json

import pytest

from _sampling import reference_sampling_entropy
from stare_rl.evaluation.heldout import count_reflections, evaluate, pass_at_k
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


def test_pass_at_k_equals_the_mean_over_all_k_subsets() -> None:
    """Unbiased: pass@k is the chance that a uniformly drawn k-subset of the n samples holds a correct one."""
    from itertools import combinations

    correct = [True, False, False, True, False, False]  # n = 6, c = 2
    for k in range(1, 7):
        subsets = list(combinations(correct, k))
        assert pass_at_k(6, 2, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_majority_vote_hand_cases() -> None:
    from stare_rl.evaluation.heldout import majority_vote_accuracy as maj

    answers, correct = ["1", "2", "2", "1"], [True, False, False, True]
    assert maj(answers, correct, 4) == 1.0  # 2-2 tie: the answer seen first ("1") wins
    assert maj(answers, correct, 2) == 0.5  # runs [1, 2] -> "1" right, [2, 1] -> "2" wrong
    assert maj(answers, correct, 3) == 0.0  # one run [1, 2, 2] -> "2"; the 4th sample is unused
    assert maj(answers, correct, 1) == 0.5  # maj@1 = mean correctness
    assert maj([None, None, "3"], [False, False, True], 3) == 1.0  # samples without an answer do not vote
    assert maj([None, None], [False, False], 2) == 0.0
    with pytest.raises(ValueError, match="k=5"):
        maj(answers, correct, 5)


def test_score_rows_and_k_validation() -> None:
    from stare_rl.evaluation.heldout import check_ks, score_rows

    records = [{"rewards": [1.0, 0.0, 0.0, 0.0], "answers": ["a", "b", "b", "c"]},
               {"rewards": [1.0, 1.0, 0.0, 1.0], "answers": ["x", "x", "y", "x"]}]
    out = score_rows(records, 4, (1, 4), (4,))
    assert out == pytest.approx({"avg@4": (0.25 + 0.75) / 2, "pass@1": (0.25 + 0.75) / 2, "pass@4": 1.0,
                                 "maj@4": 0.5})  # prompt 1 votes "b" (wrong), prompt 2 votes "x" (right)
    with pytest.raises(ValueError, match=r"pass_ks=\[0, 2\].*\[1, 4\]"):
        check_ks("pass_ks", [0, 2], 4)


def test_packaged_protocols_are_the_papers() -> None:
    from stare_rl.evaluation.protocol import load_protocol, packaged_protocols

    assert {"stare", "steer"} <= set(packaged_protocols())
    for name in ("stare", "steer"):
        p = load_protocol(name)
        assert (p.temperature, p.top_p, p.max_new_tokens) == (1.0, 0.7, 3072)
        samples = {d.name: d.samples for d in p.datasets}
        assert {samples[s] for s in ("aime24", "aime25", "amc23")} == {32}  # avg@32
        assert {samples[s] for s in ("math500", "minerva", "olympiadbench")} == {4}  # avg@4
        assert all(32 in d.pass_k for d in p.datasets if d.samples == 32)  # pass@32


def test_protocol_validation_names_the_field(tmp_path) -> None:
    from stare_rl.evaluation.protocol import load_protocol

    bad = tmp_path / "p.yaml"
    bad.write_text("datasets:\n  - {name: a, file: a.jsonl, samples: 4, pass_k: [8]}\n")
    with pytest.raises(ValueError, match=r"dataset 'a': pass_k=\[8\].*samples=4"):
        load_protocol(bad)
    bad.write_text("top_p: 0\ndatasets:\n  - {name: a, file: a.jsonl, samples: 4}\n")
    with pytest.raises(ValueError, match="top_p=0"):
        load_protocol(bad)
    with pytest.raises(ValueError, match="neither a file nor one of"):
        load_protocol("no_such_protocol")


def test_stare_eval_protocol_and_per_source_tables(tiny_dir, tmp_path, capsys) -> None:
    from stare_rl.commands.eval import main

    data = tmp_path / "data"
    data.mkdir()
    for name, n in (("a", 3), ("b", 2)):
        (data / f"{name}.jsonl").write_text("\n".join(
            json.dumps({"prompt": f"{i}+{i}=", "answer": str(2 * i), "data_source": name}) for i in range(n)))
    proto = tmp_path / "proto.yaml"
    proto.write_text("name: tiny\ntemperature: 1.0\ntop_p: 0.7\nmax_new_tokens: 3\ndatasets:\n"
                     "  - {name: a, file: a.jsonl, samples: 4, pass_k: [1, 4], maj_k: [2]}\n"
                     "  - {name: b, file: b.jsonl, samples: 2}\n")
    out = tmp_path / "p.json"
    assert main(["--model", str(tiny_dir), "--protocol", str(proto), "--data-dir", str(data), "--out", str(out),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "protocol: tiny" in printed and "maj@2" in printed and "avg@4" in printed
    result = json.loads(out.read_text())
    a, b = result["by_source"]["a"], result["by_source"]["b"]
    assert (a["n"], a["k"], b["n"], b["k"]) == (3, 4, 2, 2)
    assert {"avg@4", "pass@1", "pass@4", "maj@2"} <= set(a) and {"avg@2", "pass@2"} <= set(b)
    assert result["average"] == pytest.approx((a["avg@4"] + b["avg@2"]) / 2)
    # a plain dataset with data_source column: one row per source under the overall numbers
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text((data / "a.jsonl").read_text() + "\n" + (data / "b.jsonl").read_text())
    assert main(["--model", str(tiny_dir), "--dataset", str(mixed), "--k", "2", "--pass-k", "1", "2",
                 "--maj-k", "2", "--max-new-tokens", "3", "--no-progress", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["by_source"]) == {"a", "b"} and result["by_source"]["a"]["n"] == 3
    assert main(["--model", str(tiny_dir), "--protocol", str(proto)]) == 2  # relative files need --data-dir
    assert "--data-dir" in capsys.readouterr().err



@pytest.mark.parametrize("temperature, top_p", [(1.0, 1.0), (0.7, 0.9)])
def test_the_sampling_entropy_hook_equals_the_stored_logits(tiny_dir, temperature: float, top_p: float) -> None:
    """heldout._generate's entropy (a forward hook, one step's logits alive at a time) is the entropy of HF's
    stored logits, token for token, and the samples are the same: the hook draws no random numbers."""
    import torch
    from transformers import AutoModelForCausalLM

    from stare_rl.evaluation.heldout import _generate
    from stare_rl.models.tokenizer import load_tokenizer

    model, tok = AutoModelForCausalLM.from_pretrained(tiny_dir).eval(), load_tokenizer(tiny_dir)
    prompts = ["12+34=", "7+8=", "50+50="]
    with torch.no_grad():
        want_texts, want = reference_sampling_entropy(model, tok, prompts, 4, temperature, top_p, seed=3)
        torch.manual_seed(3)
        texts, _, got = _generate(model, tok, prompts, sample=True, k=4, temperature=temperature, top_p=top_p,
                                  max_new_tokens=6)
    assert texts == want_texts
    assert got.shape == (12,) and torch.allclose(got, want, rtol=1e-5, atol=1e-5)
    assert model._forward_hooks == {}  # the hook is removed


def test_step_entropy_takes_the_last_forwards_and_names_a_shortfall() -> None:
    import torch

    from stare_rl.evaluation.heldout import step_entropy

    steps = [torch.full((2,), float(i)) for i in range(5)]  # e.g. a prefill in two forwards, then 3 tokens
    assert step_entropy(steps, 3).tolist() == [[2.0, 3.0, 4.0], [2.0, 3.0, 4.0]]
    assert step_entropy(steps, 0).shape == (2, 0)
    with pytest.raises(RuntimeError, match="2 forwards for 3 generated tokens"):
        step_entropy(steps[:2], 3)
