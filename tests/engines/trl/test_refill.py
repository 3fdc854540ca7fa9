"""DAPO refill bookkeeping (stare_rl.engines.trl.refill) on hand-made rounds: constant batch size, order, the round limit."""

from __future__ import annotations

import pytest
import torch

from stare_rl.engines.trl.refill import GroupRefill, cat_rows, pad_to


def round_rows(rewards: list[float], prompt_len: int, completion_len: int, tag: str) -> dict:
    n = len(rewards)
    return {
        "prompt_ids": torch.full((n, prompt_len), 7), "prompt_mask": torch.ones(n, prompt_len),
        "completion_ids": torch.full((n, completion_len), 3), "completion_mask": torch.ones(n, completion_len),
        "num_items_in_batch": torch.tensor(n * completion_len),  # a batch total: dropped, recomputed by the engine
        "name": [f"{tag}{i}" for i in range(n)],
    }


def test_pad_and_cat_rows() -> None:
    assert pad_to(torch.tensor([[1, 2]]), 4, left=True, value=9).tolist() == [[9, 9, 1, 2]]
    assert pad_to(torch.tensor([[1, 2]]), 3, left=False).tolist() == [[1, 2, 0]]
    out = cat_rows([round_rows([1, 0], 2, 3, "a"), round_rows([0, 1], 4, 1, "b")],
                   left_pad_keys=("prompt_ids", "prompt_mask"), pad_values={"prompt_ids": 5})
    assert out["prompt_ids"].tolist() == [[5, 5, 7, 7]] * 2 + [[7, 7, 7, 7]] * 2  # left, pad id 5
    assert out["prompt_mask"].tolist()[0] == [0, 0, 1, 1]
    assert out["completion_mask"].tolist() == [[1, 1, 1]] * 2 + [[1, 0, 0]] * 2  # right, 0
    assert out["name"] == ["a0", "a1", "b0", "b1"] and "num_items_in_batch" not in out


def test_refill_collects_informative_groups_in_order_and_keeps_the_batch_size() -> None:
    refill = GroupRefill(group_size=2, target_groups=3, max_rounds=10)
    first = [1, 1, 0, 1, 0, 0]  # groups: constant, informative, constant
    refill.add(round_rows(first, 2, 2, "a"), torch.tensor(first, dtype=torch.float))
    assert not refill.done and refill.kept_groups == 1
    second = [1, 0, 1, 1, 0, 1]  # informative, constant, informative
    refill.add(round_rows(second, 3, 2, "b"), torch.tensor(second, dtype=torch.float))
    assert refill.done and refill.rounds == 2
    rows, rewards, keep, metrics = refill.result()
    assert rows["name"] == ["a2", "a3", "b0", "b1", "b4", "b5"]  # generation order
    assert rewards.tolist() == [0, 1, 1, 0, 0, 1] and keep.tolist() == [1.0] * 6
    assert rows["prompt_ids"].shape == (6, 3)
    assert metrics == {"dynamic_sampling/gen_rounds": 2.0, "dynamic_sampling/generated_groups": 6.0,
                       "dynamic_sampling/informative_frac": 0.5, "dynamic_sampling/short_groups": 0.0}


def test_refill_truncates_a_surplus() -> None:
    refill = GroupRefill(group_size=2, target_groups=2, max_rounds=3)
    r = [1, 0, 0, 1, 1, 0]  # three informative groups, two wanted
    refill.add(round_rows(r, 1, 1, "a"), torch.tensor(r, dtype=torch.float))
    assert refill.done
    rows, _, keep, _ = refill.result()
    assert rows["name"] == ["a0", "a1", "a2", "a3"] and keep.tolist() == [1.0] * 4


def test_refill_stops_at_the_round_limit_and_masks_the_shortfall() -> None:
    refill = GroupRefill(group_size=2, target_groups=3, max_rounds=2)
    for tag in ("a", "b"):
        r = [1, 1, 1, 0, 0, 0]  # one informative group per round
        refill.add(round_rows(r, 1, 1, tag), torch.tensor(r, dtype=torch.float))
    assert refill.done and refill.kept_groups == 2  # stopped by the limit, not by the target
    rows, rewards, keep, metrics = refill.result()
    assert rows["name"] == ["a2", "a3", "b2", "b3", "a0", "a1"]  # informative first, then the first filler
    assert keep.tolist() == [1, 1, 1, 1, 0, 0] and rewards.numel() == 6  # batch size unchanged
    assert metrics["dynamic_sampling/short_groups"] == 1.0


def test_refill_validates() -> None:
    with pytest.raises(ValueError, match="max_rounds=0"):
        GroupRefill(group_size=2, target_groups=1, max_rounds=0)
    refill = GroupRefill(group_size=2, target_groups=1, max_rounds=1)
    with pytest.raises(ValueError, match="multiple of group_size=2"):
        refill.add(round_rows([1, 0, 1], 1, 1, "a"), torch.tensor([1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="before any add"):
        refill.result()
