"""The cache of the starting policy's held-out evaluation (stare_rl/train/eval_cache.py): a key that changes with
every input, a stored result read back only for the same key, and a `stare train` whose second cell reuses the
first one's evaluation with the same result and the same training after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from stare_rl.models.tiny import build_tiny_model
from stare_rl.models.tokenizer import build_char_tokenizer
from stare_rl.tasks import get_task
from stare_rl.train.eval_cache import cached_evaluation, eval_key, model_fingerprint, tokenizer_fingerprint


def _reward(completion: str, answer: str) -> float:
    return float(completion.strip() == answer)


@pytest.fixture()
def tiny():
    tok = build_char_tokenizer(get_task("arithmetic").alphabet)
    return build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2), tok


ROWS = [{"prompt": "1+2=", "answer": "3"}, {"prompt": "2+2=", "answer": "4"}]
SETTINGS = {"k": 2, "temperature": 1.0, "top_p": 1.0, "seed": 0, "max_new_tokens": 4}


def test_the_key_changes_with_every_input(tiny) -> None:
    model, tok = tiny
    key = eval_key(model, tok, ROWS, _reward, SETTINGS, code=(_reward,))
    assert key == eval_key(model, tok, ROWS, _reward, dict(SETTINGS), code=(_reward,))  # deterministic
    assert key != eval_key(model, tok, ROWS, _reward, {**SETTINGS, "seed": 1}, code=(_reward,))
    assert key != eval_key(model, tok, ROWS[:1], _reward, SETTINGS, code=(_reward,))
    assert key != eval_key(model, tok, ROWS, _reward, SETTINGS, code=(tokenizer_fingerprint,))  # other code
    before = model_fingerprint(model)
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] += 1e-6  # one weight, one ulp-scale change
    assert model_fingerprint(model) != before
    assert key != eval_key(model, tok, ROWS, _reward, SETTINGS, code=(_reward,))
    now = eval_key(model, tok, ROWS, _reward, SETTINGS, code=(_reward,))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(threads + 1)  # other kernels' reduction order: not the same evaluation
        assert eval_key(model, tok, ROWS, _reward, SETTINGS, code=(_reward,)) != now
    finally:
        torch.set_num_threads(threads)


def test_a_stored_result_is_read_back_for_its_key_only(tmp_path: Path) -> None:
    calls: list[int] = []

    def run() -> dict:
        calls.append(1)
        return {"avg@2": 0.5, "n": 2}

    first, hit = cached_evaluation(tmp_path, "abc", run)
    assert (first, hit, len(calls)) == ({"avg@2": 0.5, "n": 2}, None, 1)
    again, hit = cached_evaluation(tmp_path, "abc", run)
    assert again == first and hit == tmp_path / "evals" / "abc.json" and len(calls) == 1
    cached_evaluation(tmp_path, "other", run)
    assert len(calls) == 2
    (tmp_path / "evals" / "abc.json").write_text("{not json")  # damaged: evaluated again, and repaired
    assert cached_evaluation(tmp_path, "abc", run) == (first, None) and len(calls) == 3
    assert json.loads((tmp_path / "evals" / "abc.json").read_text()) == first
    assert cached_evaluation(None, "abc", run) == (first, None) and len(calls) == 4  # no cache: always evaluated


TINY = ["--warmstart_max_steps", "2", "--warmstart_stop_avg_at_k", "1.0", "--warmstart_stop_greedy_acc", "1.0",
        "--max_steps", "2", "--save_steps", "10", "--per_device_train_batch_size", "8", "--num_generations", "4",
        "--max_completion_length", "3", "--eval_k", "2", "--eval_size", "8", "--initial_eval", "true",
        "--disable_tqdm", "true"]


@pytest.mark.slow
def test_a_second_cell_reuses_the_first_ones_initial_evaluation(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs of one seed from one cache (two cells of a grid): the second reads the first one's evaluation of the
    start, says so, and writes the same eval_initial.json; its training is the one it has without the cache."""
    from stare_rl import cli
    from stare_rl.io.runlog import read_metrics

    cache = tmp_path / "cache"
    for name, extra in (("a", []), ("b", []), ("c", ["--initial_eval_cache", "false"])):
        assert cli.main(["train", *TINY, *extra, "--cache_dir", str(cache), "--output_dir", str(tmp_path / name)]) == 0
        out = capsys.readouterr()
        said = "(the same evaluation, cached:" in out.out + out.err
        assert said == (name == "b"), name
    (stored,) = list((cache / "evals").iterdir())
    for name in ("a", "b", "c"):
        assert json.loads((tmp_path / name / "eval_initial.json").read_text()) == json.loads(stored.read_text())
    untimed = [[{k: v for k, v in r.items() if "time" not in k and "per_second" not in k}
                for r in read_metrics(tmp_path / name)] for name in ("b", "c")]
    assert untimed[0] == untimed[1]  # reading the cache changed nothing that follows (the sampling RNG is forked)
