"""Embedded tasks: deterministic disjoint splits, rewards (incl. alternative countdown solutions), tokenizer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stare_rl.models.tokenizer import build_char_tokenizer
from stare_rl.tasks import get_task, list_tasks
from stare_rl.tasks.countdown import CountdownTask, evaluate_expression, solve


def test_registry_lists_tasks_and_rejects_unknown() -> None:
    assert list_tasks() == ["arithmetic", "calc_tool", "chat_arithmetic", "countdown", "countdown_cot"]
    with pytest.raises(ValueError, match="known tasks: \\[.arithmetic., .calc_tool., .chat_arithmetic., .countdown., .countdown_cot.\\]"):
        get_task("sudoku")
    with pytest.raises(ValueError, match="num_count"):
        get_task("countdown", num_count=9)
    with pytest.raises(ValueError, match="does not accept"):
        get_task("arithmetic", colour="red")


@pytest.mark.parametrize("name", ["arithmetic", "countdown"])
def test_splits_are_deterministic_disjoint_and_distinct(name: str) -> None:
    task = get_task(name)
    train = task.make_split("train", 1500, seed=0)
    test = task.make_split("test", 300, seed=0)
    assert train == task.make_split("train", 1500, seed=0)
    assert train != task.make_split("train", 1500, seed=1)
    assert len({r["prompt"] for r in train}) == 1500
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in test}
    if name == "countdown":  # the same instance with its numbers reordered must not cross splits either
        def key(r: dict[str, str]) -> tuple[list[int], str]:
            nums, target = r["answer"].split(":")
            return (sorted(int(x) for x in nums.split(",")), target)

        assert not {str(key(r)) for r in train} & {str(key(r)) for r in test}
    for row in train[:200] + test[:50]:
        assert set(row["prompt"] + task.sft_target(row)) <= set(task.alphabet)
        assert task.reward(task.sft_target(row), row["answer"]) == 1.0
        assert len(task.sft_target(row)) <= task.max_completion_chars


def test_make_split_validates_arguments() -> None:
    task = get_task("arithmetic")
    with pytest.raises(ValueError, match="split='val'"):
        task.make_split("val", 3, 0)
    with pytest.raises(ValueError, match="n=-1"):
        task.make_split("train", -1, 0)
    with pytest.raises(ValueError, match="larger than the number of distinct"):
        get_task("arithmetic", digits=1).make_split("test", 50, 0)
    few = get_task("arithmetic", digits=1).make_split("test", 50, 0, allow_fewer=True)
    assert 0 < len(few) < 50 and len({r["prompt"] for r in few}) == len(few)


def test_arithmetic_reward() -> None:
    task = get_task("arithmetic")
    row = {"prompt": "123+456=", "answer": "579"}
    assert task.reward("579", row["answer"]) == 1.0
    assert task.reward(" 579 ", row["answer"]) == 1.0
    assert task.reward("579<eos>", row["answer"]) == 1.0
    for wrong in ["578", "5790", "", "57", "579=", "+579x"]:
        assert task.reward(wrong, row["answer"]) == 0.0
    rows = task.make_split("train", 20, 3)
    assert all(int(r["prompt"][:3]) + int(r["prompt"][4:7]) == int(r["answer"]) for r in rows)


def test_arithmetic_wrong_targets_are_one_digit_off_by_one() -> None:
    """The warm start's wrong answers: the reward says 0, exactly one digit differs, by one, at every position
    (no leading zero); each kind of slip occurs."""
    import random
    from collections import Counter

    task = get_task("arithmetic")
    rng = random.Random(0)
    slips: Counter[tuple[int, int]] = Counter()  # (position from the right, +1 or -1)
    for row in task.make_split("train", 200, 0):
        answer = row["answer"]
        for _ in range(10):
            wrong = task.sft_wrong_target(row, rng)
            assert task.reward(wrong, answer) == 0.0 and set(wrong) <= set(task.alphabet)
            assert len(wrong) == len(answer) and wrong[0] != "0"
            diff = [i for i in range(len(answer)) if wrong[i] != answer[i]]
            assert len(diff) == 1 and abs(int(wrong[diff[0]]) - int(answer[diff[0]])) == 1
            slips[(len(answer) - diff[0], int(wrong[diff[0]]) - int(answer[diff[0]]))] += 1
    assert {pos for pos, _ in slips} == {1, 2, 3, 4} and {step for _, step in slips} == {-1, 1}
    assert min(slips[(pos, step)] for pos in (1, 2, 3) for step in (-1, 1)) > 100  # 2000 draws
    assert get_task("arithmetic", digits=1).sft_wrong_target({"answer": "9"}, rng) == "8"
    with pytest.raises(NotImplementedError, match="correct_frac=1.0"):
        get_task("countdown").sft_wrong_target({"prompt": "2,4,8:20=", "answer": "2,4,8:20"}, rng)


def test_countdown_accepts_every_correct_expression() -> None:
    task = get_task("countdown")  # each number exactly once
    answer = "2,4,8:20"
    for good in ["2*8+4", "4+8*2", "(2*8)+4", "((4))+2*8", "8*2+4", " 4 + 2 * 8 "]:
        assert task.reward(good, answer) == 1.0, good
    assert set(solve([2, 4, 8], 20)) == {"2*8+4", "4+2*8", "4+8*2", "8*2+4"}
    assert task.sft_target({"prompt": "2,4,8:20=", "answer": answer}) == "2*8+4"


@pytest.mark.parametrize(
    "bad",
    [
        "2*8+4+4",  # reuses 4
        "2*8",  # uses too few numbers (value 16 anyway)
        "20",  # the target itself
        "4*5",  # numbers that were not given
        "2*8+04",  # leading zero
        "-2+8*2+4",  # unary minus
        "2*(8+4",  # unbalanced
        "2*8+4)",
        "2/8+4",  # division is not an operator here
        "2**8",
        "",
        "(" * 300,
    ],
)
def test_countdown_rejects_invalid_expressions(bad: str) -> None:
    assert get_task("countdown").reward(bad, "2,4,8:20") == 0.0


def test_countdown_at_most_once_variant() -> None:
    task = get_task("countdown", use_all=False)
    assert task.reward("3*8", "3,8,5:24") == 1.0  # 5 unused is fine
    assert task.reward("3*8*1", "3,8,5:24") == 0.0  # 1 was not given
    assert get_task("countdown").reward("3*8", "3,8,5:24") == 0.0


def test_countdown_duplicate_numbers_count_as_a_multiset() -> None:
    task = get_task("countdown")
    assert task.reward("2*2+3", "2,2,3:7") == 1.0
    assert task.reward("2*3+1", "2,2,3:7") == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=4), st.integers(0, 60))
def test_countdown_solver_agrees_with_reward(nums: list[int], target: int) -> None:
    task = CountdownTask(num_count=max(len(nums), 2), max_number=12, min_target=0, max_target=999)
    answer = f"{','.join(map(str, nums))}:{target}"
    for expr in solve(nums, target)[:20]:
        assert evaluate_expression(expr)[0] == target
        assert task.reward(expr, answer) == 1.0


def test_char_tokenizer_round_trip_and_save_load(tmp_path) -> None:
    from transformers import AutoTokenizer

    task = get_task("countdown")
    tok = build_char_tokenizer(task.alphabet)
    assert 20 <= len(tok) <= 40
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    text = "3,5,7:26=3*7+5"
    ids = tok(text)["input_ids"]
    assert ids[0] == tok.bos_token_id and len(ids) == len(text) + 1
    assert tok.decode(ids, skip_special_tokens=True) == text
    # a prompt tokenizes to a prefix of prompt + completion + eos (what SFTTrainer relies on)
    full = tok("3,5,7:26=" + "3*7+5" + tok.eos_token)["input_ids"]
    assert full[: len(tok("3,5,7:26=")["input_ids"])] == tok("3,5,7:26=")["input_ids"]
    assert full[-1] == tok.eos_token_id
    assert tok("x")["input_ids"][1] == tok.unk_token_id
    batch = tok(["1+2=", "10+20="], padding=True)
    assert batch["input_ids"][0][:2] == [tok.pad_token_id] * 2  # left padding for generation
    tok.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded(text)["input_ids"] == ids
    assert loaded.decode(ids, skip_special_tokens=True) == text
    assert loaded.pad_token == "<pad>" and loaded.eos_token == "<eos>" and loaded.bos_token == "<bos>"
    with pytest.raises(ValueError, match="alphabet"):
        build_char_tokenizer("")


def test_tiny_model_shape() -> None:
    from stare_rl.models.tiny import build_tiny_model

    tok = build_char_tokenizer(get_task("arithmetic").alphabet)
    model = build_tiny_model(tok)
    n = sum(p.numel() for p in model.parameters())
    assert 0.9e6 < n < 1.2e6
    assert model.config.tie_word_embeddings and model.config.vocab_size == len(tok)
    assert model.get_input_embeddings().weight.data_ptr() == model.get_output_embeddings().weight.data_ptr()
    with pytest.raises(ValueError, match="num_heads"):
        build_tiny_model(tok, hidden_size=130, num_heads=4)


def test_newline_is_a_real_token_and_the_warm_start_vocabulary_is_unchanged() -> None:
    """#23 item 5: "\\n" round-trips (verl's agent loop checks that it is one token), appended after the alphabet
    so every other id is as before; the warm start keeps the vocabulary its cached models were built with."""
    from stare_rl.models.tokenizer import WARMSTART_NEWLINE

    alphabet = get_task("arithmetic").alphabet
    tok, legacy = build_char_tokenizer(alphabet), build_char_tokenizer(alphabet, newline=WARMSTART_NEWLINE)
    ids = tok.encode("1\n2", add_special_tokens=False)
    assert tok.decode(ids) == "1\n2" and len(tok.encode("\n", add_special_tokens=False)) == 1
    newline = tok.convert_ids_to_tokens(len(tok) - 1)  # byte-level spelling, as Qwen2's tokenizer class reads it
    assert len(tok) == len(legacy) + 1 and newline == "\u010a"
    assert {t: i for t, i in tok.get_vocab().items() if t != newline} == legacy.get_vocab()
    # the cached vocabulary: the 4 specials + the alphabet, a newline is one <unk> per character
    assert len(legacy) == 4 + len(alphabet) and not WARMSTART_NEWLINE
    assert legacy.encode("1\n\n2", add_special_tokens=False) == [legacy.convert_tokens_to_ids(c) for c in "1"] + [
        legacy.unk_token_id] * 2 + [legacy.convert_tokens_to_ids("2")]
    text = "12+34=46"
    assert tok.encode(text) == legacy.encode(text)  # nothing a task encodes changes


def test_newline_tokenizer_reloads_identically_in_a_qwen2_model_directory(tmp_path) -> None:
    """AutoTokenizer loads a Qwen2 model directory's tokenizer as Qwen2Tokenizer (byte-level BPE rebuilt from the
    saved vocabulary): the newline, the space and every character keep their ids (verl loads it that way)."""
    from transformers import AutoTokenizer

    from stare_rl.models.tiny import build_tiny_model

    tok = build_char_tokenizer(get_task("calc_tool").alphabet)
    build_tiny_model(tok, hidden_size=8, num_layers=1, num_heads=1).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    for text in ("\n", "1\n2+3=", "ab c=1", "1 \n\n 2"):
        ids = tok.encode(text, add_special_tokens=False)
        assert again.encode(text, add_special_tokens=False) == ids and again.decode(ids) == text
