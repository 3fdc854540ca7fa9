"""The real LM's offline task: chat rows, disjoint splits by (a, b) pair, the final-number reward."""

from __future__ import annotations

import pytest

from stare_rl.tasks import get_task


def test_rows_are_one_user_turn_with_a_numeric_answer() -> None:
    task = get_task("chat_arithmetic")
    row = task.make_split("train", 1, 0)[0]
    assert set(row) == {"prompt", "answer"} and len(row["prompt"]) == 1 and row["prompt"][0]["role"] == "user"
    assert row["prompt"][0]["content"].endswith("Reply with just the number.")
    assert task.reward(f"The answer is {row['answer']}.", row["answer"]) == 1.0
    assert task.reward("I am not sure.", row["answer"]) == 0.0


def test_each_pair_is_in_one_split_with_all_its_phrasings() -> None:
    task = get_task("chat_arithmetic")
    train = task.make_split("train", 10**6, 0, allow_fewer=True)
    test = task.make_split("test", 10**6, 0, allow_fewer=True)

    def pair(row: dict) -> tuple[str, ...]:
        words = row["prompt"][0]["content"].replace("?", " ").replace(".", " ").split()
        return tuple(w for w in words if w.isdigit())

    assert len(train) + len(test) == 100 * 2 and not {pair(r) for r in train} & {pair(r) for r in test}
    assert sorted(map(repr, test)) == sorted(map(repr, task.make_split("test", 10**6, 5, allow_fewer=True)))
    assert task.make_split("test", 3, 1) != task.make_split("test", 3, 2)  # the seed orders them


def test_too_many_rows_and_bad_settings_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"n=5000 is larger than the number of distinct 'train' prompts"):
        get_task("chat_arithmetic").make_split("train", 5000, 0)
    with pytest.raises(ValueError, match="high=3 must be larger than low=3"):
        get_task("chat_arithmetic", low=3, high=3)
    with pytest.raises(ValueError, match="max_completion_tokens=0 must be >= 1"):
        get_task("chat_arithmetic", max_completion_tokens=0)


def test_the_split_sizes_the_docs_and_the_config_quote() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    task = get_task("chat_arithmetic")
    n_train = len(task.make_split("train", 10**6, 0, allow_fewer=True))
    n_test = len(task.make_split("test", 10**6, 0, allow_fewer=True))
    assert f"({n_train} train, {n_test} test prompts)" in (root / "docs" / "train.md").read_text()
    config = (root / "src" / "stare_rl" / "configs" / "chat_arithmetic.yaml").read_text()
    assert f"train_size: {n_train}\n" in config and f"{n_train} train and {n_test} test prompts" in config
