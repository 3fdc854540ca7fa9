"""math-verify rewards on \\boxed{} answers, the safe_reward guard, and dataset loading in both schemas."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from stare_rl.tasks.data import DatasetNotFoundError, load_dataset_rows
from stare_rl.tasks.rewards import last_boxed, math_reward, safe_reward, safe_rewards

CASES = [
    ("so the answer is \\boxed{42}.", "42", 1.0),
    ("\\boxed{41}", "42", 0.0),
    ("first \\boxed{7}, wait, recheck: \\boxed{42}", "42", 1.0),  # the last box counts
    ("first \\boxed{42}, then \\boxed{7}", "42", 0.0),
    ("\\boxed{\\frac{1}{2}}", "0.5", 1.0),
    ("\\boxed{\\sqrt{12}}", "2\\sqrt{3}", 1.0),
    ("\\boxed{\\pi/2}", "\\frac{\\pi}{2}", 1.0),
    ("the answer is 42", "42", 0.0),  # no box, no reward
    ("\\boxed{}", "42", 0.0),
]


def test_last_boxed_handles_nested_braces() -> None:
    assert last_boxed("a \\boxed{\\frac{1}{2}} b") == "\\frac{1}{2}"
    assert last_boxed("\\boxed{1} \\fbox{2}") == "2"
    assert last_boxed("\\boxed{unclosed") is None
    assert last_boxed("nothing") is None


@pytest.mark.parametrize(("completion", "gt", "expected"), CASES)
def test_math_reward_on_main_thread(completion: str, gt: str, expected: float) -> None:
    assert math_reward(completion, gt) == expected


def test_math_reward_off_the_main_thread() -> None:
    # math-verify's signal timeouts raise off the main thread unless turned off: math_reward must cope.
    with ThreadPoolExecutor(max_workers=2) as pool:
        scores = list(pool.map(lambda c: math_reward(c[0], c[1]), CASES))
    assert scores == [c[2] for c in CASES]
    assert safe_reward(math_reward, "\\boxed{42}", "42", timeout_s=30) == (1.0, None)


def _raises(completion: str, answer: str) -> float:
    raise RuntimeError("boom")


def _hangs(completion: str, answer: str) -> float:
    time.sleep(30)
    return 1.0


def test_safe_reward_scores_errors_and_timeouts_zero() -> None:
    assert safe_reward(lambda c, a: float(c == a), "x", "x", timeout_s=5) == (1.0, None)
    assert safe_reward(_raises, "x", "x", timeout_s=5) == (0.0, "error")
    assert safe_reward(lambda c, a: float("nan"), "x", "x", timeout_s=5) == (0.0, "error")
    assert safe_reward(lambda c, a: "not a number", "x", "x", timeout_s=5) == (0.0, "error")
    assert safe_reward(_raises, "x", "x", timeout_s=None) == (0.0, "error")
    start = time.perf_counter()
    assert safe_reward(_hangs, "x", "x", timeout_s=0.2) == (0.0, "timeout")
    assert time.perf_counter() - start < 2.0
    with pytest.raises(ValueError, match="timeout_s=0"):
        safe_reward(_hangs, "x", "x", timeout_s=0)


def test_safe_rewards_batch_mixes_outcomes() -> None:
    def fn(c: str, a: str) -> float:
        if c == "hang":
            time.sleep(30)
        if c == "raise":
            raise KeyError(c)
        return float(c == a)

    out = safe_rewards(fn, ["a", "hang", "raise", "b"], ["a", "a", "a", "a"], timeout_s=0.2)
    assert out == [(1.0, None), (0.0, "timeout"), (0.0, "error"), (0.0, None)]
    assert threading.main_thread().is_alive()


def test_one_thread_scores_a_batch_and_one_that_timed_out_scores_nothing_more() -> None:
    """The batch is scored in order in one thread; after a call times out, the rest go to a new thread and the
    stuck one, once it wakes, calls the reward no more (each pair is scored exactly once)."""
    calls: list[tuple[str, int]] = []

    def fn(c: str, a: str) -> float:
        calls.append((c, threading.get_ident()))
        if c == "slow":
            time.sleep(0.5)
        return float(c == a)

    out = safe_rewards(fn, ["a", "b", "slow", "a", "b"], ["a"] * 5, timeout_s=0.1)
    assert out == [(1.0, None), (0.0, None), (0.0, "timeout"), (1.0, None), (0.0, None)]
    time.sleep(0.8)  # the stuck thread wakes and stops
    assert [c for c, _ in calls] == ["a", "b", "slow", "a", "b"]
    threads = [t for _, t in calls]
    assert threads[0] == threads[1] == threads[2] != threads[3] == threads[4]
    assert threading.get_ident() not in threads  # never on the caller's thread (with a timeout)


# ---- dataset loading -------------------------------------------------------------------------------------

PLAIN = [{"prompt": "What is 2+2?", "answer": "4"}, {"prompt": "1+1?", "answer": "2"}]
VERL = [
    {"data_source": "dapo", "prompt": [{"role": "user", "content": "What is 2+2?"}],
     "reward_model": {"style": "rule", "ground_truth": "4"}},
    {"data_source": "dapo", "prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "3*3?"}],
     "reward_model": {"style": "rule", "ground_truth": "9"}},
]


def _write_jsonl(path, rows) -> None:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def _write_parquet(path, rows) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


@pytest.mark.parametrize("writer", [_write_jsonl, _write_parquet])
def test_load_both_schemas(tmp_path, writer) -> None:
    suffix = ".jsonl" if writer is _write_jsonl else ".parquet"
    writer(tmp_path / f"plain{suffix}", PLAIN)
    writer(tmp_path / f"verl{suffix}", VERL)
    assert load_dataset_rows(tmp_path / f"plain{suffix}") == [
        {"prompt": "What is 2+2?", "answer": "4"}, {"prompt": "1+1?", "answer": "2"}]
    rows = load_dataset_rows(str(tmp_path / f"verl{suffix}"))
    assert rows[0] == {"prompt": [{"role": "user", "content": "What is 2+2?"}], "answer": "4", "data_source": "dapo"}
    assert rows[1]["prompt"][0]["role"] == "system" and rows[1]["answer"] == "9"


def test_numeric_answers_become_strings(tmp_path) -> None:
    _write_jsonl(tmp_path / "n.jsonl", [{"prompt": "q", "answer": 2}, {"prompt": "r", "answer": 0.5}])
    assert [r["answer"] for r in load_dataset_rows(tmp_path / "n.jsonl")] == ["2", "0.5"]


def test_load_hf_dataset_dir_and_data_dir(tmp_path) -> None:
    import datasets

    datasets.DatasetDict({"train": datasets.Dataset.from_list(VERL),
                          "test": datasets.Dataset.from_list(VERL[:1])}).save_to_disk(str(tmp_path / "hf"))
    assert [r["answer"] for r in load_dataset_rows(tmp_path / "hf")] == ["4", "9"]
    assert [r["answer"] for r in load_dataset_rows(tmp_path / "hf", split="test")] == ["4"]
    with pytest.raises(ValueError, match="split='validation'.*splits: \\['train', 'test'\\]"):
        load_dataset_rows(tmp_path / "hf", split="validation")
    (tmp_path / "files").mkdir()
    _write_jsonl(tmp_path / "files" / "train.jsonl", PLAIN)
    _write_parquet(tmp_path / "files" / "test.parquet", VERL)
    assert len(load_dataset_rows(tmp_path / "files")) == 4
    assert [r["answer"] for r in load_dataset_rows(tmp_path / "files", split="test")] == ["4", "9"]


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ({"answer": "4"}, "line 2: missing field 'prompt'"),
        ({"prompt": "q"}, "line 2: missing field 'answer'"),
        ({"prompt": 7, "answer": "4"}, "line 2: field 'prompt' must be"),
        ({"prompt": "", "answer": "4"}, "line 2: field 'prompt' is empty"),
        ({"prompt": [{"role": "user"}], "reward_model": {"ground_truth": "1"}}, "line 2: field 'prompt\\[0\\]'"),
        ({"prompt": [{"role": "user", "content": "q"}], "reward_model": {"style": "rule"}},
         "line 2: field 'reward_model.ground_truth' is missing"),
        ({"prompt": "q", "answer": ["4"]}, "line 2: field 'answer' must be a string or a number"),
        ({"prompt": "q", "answer": " "}, "line 2: field 'answer' is empty"),
    ],
)
def test_malformed_rows_name_line_and_field(tmp_path, row, match) -> None:
    _write_jsonl(tmp_path / "bad.jsonl", [PLAIN[0], row])
    with pytest.raises(ValueError, match=match):
        load_dataset_rows(tmp_path / "bad.jsonl")


def test_missing_and_broken_files(tmp_path) -> None:
    with pytest.raises(DatasetNotFoundError, match="no such file"):
        load_dataset_rows(tmp_path / "nope.jsonl")
    with pytest.raises(FileNotFoundError):
        load_dataset_rows("./definitely/missing.parquet")
    (tmp_path / "broken.jsonl").write_text('{"prompt": "q", "answer": "1"}\n{not json\n')
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        load_dataset_rows(tmp_path / "broken.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ValueError, match="has no rows"):
        load_dataset_rows(tmp_path / "empty.jsonl")
    (tmp_path / "data.csv").write_text("prompt,answer\n")
    with pytest.raises(ValueError, match="unsupported file type"):
        load_dataset_rows(tmp_path / "data.csv")


@pytest.mark.parametrize("text, expected", [
    ("23 + 45 = 68. So the answer is 68.", 68.0),
    ("It is 1,234 apples", 1234.0),
    ("x = -3.5", -3.5),
    ("\\boxed{12} and then 13", 12.0),  # a boxed number wins over a later one
    ("\\boxed{x} is 7", 7.0),  # a box without a number: the last number written
    ("no digits here", None),
    ("", None),
])
def test_final_number_reads_plain_text_answers(text: str, expected: float | None) -> None:
    from stare_rl.tasks.rewards import final_number

    assert final_number(text) == expected


def test_number_reward_compares_numbers_not_strings() -> None:
    from stare_rl.tasks.rewards import number_reward, parse_number

    assert number_reward("The answer is 68.", "68") == 1.0
    assert number_reward("68.0", "68") == 1.0 and number_reward("1,000", "1000") == 1.0
    assert number_reward("680", "68") == 0.0 and number_reward("6 8", "68") == 0.0
    assert number_reward("68", "sixty-eight") == 0.0  # an answer that is not a number never scores
    assert parse_number(" -7 ") == -7.0 and parse_number("1,234") == 1234.0
    assert parse_number("12 13") is None and parse_number("+=") is None
