"""countdown_cot: the step-by-step derivation task (reward rules, exhaustive solver, splits, uniform SFT)."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stare_rl.tasks import get_task
from stare_rl.tasks.countdown_cot import CountdownCotTask, _derivations, render, solve
from stare_rl.train.warmstart import sft_rows

ANSWER = "8,5,2,1:25"
GOOD = "8+5=13(2,1,13);13*2=26(1,26);26-1=25"


def test_reward_accepts_valid_derivations() -> None:
    task = get_task("countdown_cot")
    assert task.reward(GOOD, ANSWER) == 1.0
    assert task.reward(GOOD + "<eos>", ANSWER) == 1.0
    assert task.reward(" 8 + 5=13(2,1,13); 13*2=26(1,26);26-1=25 ", ANSWER) == 1.0
    assert task.reward("5+8=13(2,1,13);2*13=26(1,26);26-1=25", ANSWER) == 1.0  # + and * commute
    # independent steps in another order: another valid derivation (the list follows the order of making)
    assert task.reward("2-1=1(8,5,1);8+5=13(1,13);13*1=13", "8,5,2,1:13") == 1.0
    assert task.reward("8+5=13(2,1,13);2-1=1(13,1);13*1=13", "8,5,2,1:13") == 1.0
    assert task.reward("8*5=40(2,1,40);40/2=20(1,20);20+1=21", "8,5,2,1:21") == 1.0  # exact division


@pytest.mark.parametrize(
    "bad",
    [
        "8+5=13(2,1,13);13*2=26(1,26);26-1=24",  # wrong arithmetic in the last step
        "8+5=14(2,1,14);14*2=28(1,28);28-3=25",  # wrong arithmetic, then a number that is not available
        "8+5=13(2,1,13);13*2=26(1,26);26+1=27",  # valid steps, final result is not the target
        "8+5=13(1,2,13);13*2=26(1,26);26-1=25",  # list of available numbers in the wrong order
        "8+5=13(2,1);13*2=26(1,26);26-1=25",  # list misses the new result
        "8+5=13;13*2=26;26-1=25",  # lists missing
        "8+5=13(2,1,13);13*2=26(1,26);26-1=25(25)",  # a list after the last step
        "8+5=13(2,1,13);13*2=26(1,26)",  # too few steps (1 unused)
        "8+5=13(2,1,13);13*2=26(1,26);26-1=25;25*1=25(25)",  # too many steps
        "8+8=16(5,2,1,16);16+5=21(2,1,21);21+2=23",  # 8 used twice
        "1-2=1(8,5,1);8+5=13(1,13);13*1=13",  # subtraction below 1
        "5/2=2(8,1,2);8*2=16(1,16);16+1=17",  # division that is not exact
        "08+5=13(2,1,13);13*2=26(1,26);26-1=25",  # leading zero
        "8^5=13(2,1,13);13*2=26(1,26);26-1=25",  # unknown operator
        "25",
        "",
        "8+5=13(2,1,13);;26-1=25",
        ";" * 500,
    ],
)
def test_reward_rejects_invalid_derivations(bad: str) -> None:
    assert get_task("countdown_cot").reward(bad, ANSWER) == 0.0


def test_results_above_max_value_are_invalid() -> None:
    answer = "12,11,10,9:1"
    text = "12*11=132(10,9,132);132*10=1320(9,1320);1320-1319=1"
    assert CountdownCotTask(max_value=999).reward(text, answer) == 0.0
    assert CountdownCotTask(max_value=2000).reward(text, answer) == 0.0  # 1319 is not available either
    ok = "12*11=132(10,9,132);132*10=1320(9,1320);1320/9=0"
    assert CountdownCotTask(max_value=2000).reward(ok, answer) == 0.0  # not exact, and 0 < 1


def test_solver_finds_exactly_the_hand_enumerated_derivations() -> None:
    # {1, 2, 3} -> 6, canonical (larger operand first), every intermediate a whole number >= 1: by hand
    task = CountdownCotTask(num_count=3)
    row = {"prompt": "1,2,3:6=", "answer": "1,2,3:6"}
    assert set(task.derivations(row)) == {
        "2+1=3(3,3);3+3=6", "2*1=2(3,2);3*2=6", "2/1=2(3,2);3*2=6", "3+1=4(2,4);4+2=6",
        "3*1=3(2,3);3*2=6", "3/1=3(2,3);3*2=6", "3+2=5(1,5);5+1=6", "3*2=6(1,6);6*1=6", "3*2=6(1,6);6/1=6",
    }
    assert task.sft_target(row) == sorted(task.derivations(row))[0]
    assert solve([2, 2], 4) == [((2, "*", 2, 4),), ((2, "+", 2, 4),)]  # equal numbers: each choice once
    assert solve([2, 3], 7) == []


@given(st.lists(st.integers(1, 12), min_size=2, max_size=4))
def test_every_sequence_the_solver_enumerates_scores_iff_it_hits_the_target(nums: list[int]) -> None:
    task = CountdownCotTask(num_count=max(len(nums), 2), max_number=12, min_target=1, max_target=999)
    by_value = _derivations(tuple(sorted(nums)), task.max_value)
    some_target = min(by_value)
    answer = f"{','.join(map(str, nums))}:{some_target}"
    for value, seqs in by_value.items():
        for steps in seqs[:5]:
            text = render(nums, steps)
            assert task.reward(text, answer) == (1.0 if value == some_target else 0.0), text


def test_splits_are_deterministic_disjoint_by_instance_and_solvable() -> None:
    task = get_task("countdown_cot")
    train = task.make_split("train", 1500, seed=0)
    test = task.make_split("test", 200, seed=0)
    assert train == task.make_split("train", 1500, seed=0)
    assert train != task.make_split("train", 1500, seed=1)
    assert len({r["prompt"] for r in train}) == 1500

    def key(r: dict[str, str]) -> str:
        nums, target = r["answer"].split(":")
        return f"{sorted(int(x) for x in nums.split(','))}:{target}"

    assert not {key(r) for r in train} & {key(r) for r in test}  # reordered numbers never cross splits
    lengths = []
    for row in train[:200] + test[:50]:
        nums, target = row["answer"].split(":")
        assert len(nums.split(",")) == 4 and 10 <= int(target) <= 99
        for text in task.derivations(row):
            assert set(row["prompt"] + text) <= set(task.alphabet)
            assert len(text) <= task.max_completion_chars
            assert task.reward(text, row["answer"]) == 1.0
            lengths.append(len(text))
    assert sum(lengths) / len(lengths) >= 30  # >= 24 tokens of reasoning on average (character tokens)


def test_sft_samples_are_uniform_over_derivations() -> None:
    task = get_task("countdown_cot", sft_samples=4)
    row = {"prompt": "1,2,3,4:10=", "answer": "1,2,3,4:10"}
    found = task.derivations(row)
    assert len(found) >= 20
    rng = random.Random(0)
    counts = Counter(t for _ in range(400) for t in task.sft_targets(row, rng))  # 1600 draws
    assert set(counts) == set(found)  # every derivation is drawn, not one canonical one
    expected = 1600 / len(found)
    assert max(counts.values()) < 2.5 * expected and min(counts.values()) > 0.3 * expected


def test_warm_start_rows_cover_several_derivations_per_prompt() -> None:
    task = get_task("countdown_cot")
    rows = task.make_split("train", 300, seed=0)
    data = sft_rows(task, rows, seed=0)
    assert len(data) == 300 * task.sft_samples and data == sft_rows(task, rows, seed=0)
    assert data != sft_rows(task, rows, seed=1)
    per_prompt: dict[str, set[str]] = {}
    for d in data:
        assert task.reward(d["completion"], d["prompt"][:-1]) == 1.0
        per_prompt.setdefault(d["prompt"], set()).add(d["completion"])
    many = [p for p in per_prompt if len(task.derivations({"answer": p[:-1]})) >= 8]
    assert len(many) > 100
    assert sum(len(per_prompt[p]) for p in many) / len(many) > 3.0  # 4 draws among >= 8: mostly distinct
    # the other tasks keep their one supervised completion per prompt
    cd = get_task("countdown")
    cd_rows = cd.make_split("train", 50, seed=0)
    assert sft_rows(cd, cd_rows, 0) == [{"prompt": r["prompt"], "completion": cd.sft_target(r)} for r in cd_rows]


def test_settings_are_validated() -> None:
    for bad in ({"num_count": 5}, {"max_number": 1}, {"min_target": 0}, {"max_target": 5},
                {"max_value": 50}, {"sft_samples": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            get_task("countdown_cot", **bad)


def test_stare_train_countdown_cot_config_keeps_its_own_warm_start(tmp_path) -> None:  # noqa: ANN001
    """`stare train --config configs/countdown_cot.yaml` is layered on default.yaml, whose arithmetic warm start
    mixes in wrong sums for a fixed step count; countdown_cot has no wrong completions, so its config pins the
    stop-on-metric recipe its calibration measured (before, the run failed at the warm start)."""
    from importlib.resources import files

    from stare_rl.train.plan import plan_run

    config = files("stare_rl") / "configs" / "countdown_cot.yaml"
    plan = plan_run(["--config", str(config), "--output_dir", str(tmp_path)])
    ws = plan.warmstart.warmstart_config()
    assert (ws.hidden_size, ws.batch_size, ws.max_steps, ws.eval_every) == (64, 128, 500, 25)
    assert (ws.correct_frac, ws.stop_on_metric, ws.lr_scheduler, ws.stop_avg_at_k) == (
        1.0, True, "constant_with_warmup", 0.3)
    assert plan.grpo.learning_rate == 1e-4 and plan.grpo.max_steps == 600
