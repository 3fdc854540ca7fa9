"""Advantage estimators: hand-derived GRPO / Dr.GRPO / RLOO, constant groups -> 0, DAPO filter, broadcast."""

from __future__ import annotations

import statistics

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stare_rl.core.advantages import (
    broadcast_to_tokens,
    compute_advantages,
    dynamic_sampling_mask,
    list_advantages,
    register_advantage,
)

REWARDS = [1.0, 0.0, 0.0, 1.0, 1.0, 0.5, 2.0, 0.0, 0.3, 0.3, 0.3, 7.0]
IDS = ["a", "a", "a", "a", "b", "b", "b", "b", "c", "c", "c", "d"]  # c constant, d single


def _by_group(rewards: list[float], ids: list) -> dict:
    groups: dict = {}
    for r, g in zip(rewards, ids, strict=True):
        groups.setdefault(g, []).append(r)
    return groups


def _reference(name: str, rewards: list[float], ids: list) -> list[float]:
    """Re-derivation with the statistics module, one response at a time."""
    groups = _by_group(rewards, ids)
    out = []
    for i, (r, g) in enumerate(zip(rewards, ids, strict=True)):
        vals = groups[g]
        if len(set(vals)) == 1:
            out.append(0.0)
        elif name == "grpo":
            out.append((r - statistics.fmean(vals)) / (statistics.stdev(vals) + 1e-6))
        elif name == "drgrpo":
            out.append(r - statistics.fmean(vals))
        else:
            others = [rewards[j] for j in range(len(rewards)) if ids[j] == g and j != i]
            out.append(r - statistics.fmean(others))
    return out


def test_registry_lists_the_estimators() -> None:
    assert {"grpo", "drgrpo", "rloo"} <= set(list_advantages())
    with pytest.raises(ValueError, match=r"'gae' is not registered; known: \[.*'grpo'"):
        compute_advantages("gae", torch.zeros(4), group_size=2)
    with pytest.raises(ValueError, match="already registered"):
        register_advantage("grpo")(lambda r, g, e: r)


@pytest.mark.parametrize("name", ["grpo", "drgrpo", "rloo"])
def test_matches_hand_derivation(name: str) -> None:
    got = compute_advantages(name, torch.tensor(REWARDS, dtype=torch.float64), IDS)
    assert got.dtype == torch.float64
    assert got.tolist() == pytest.approx(_reference(name, REWARDS, IDS), rel=1e-12, abs=1e-12)


def test_grpo_known_values() -> None:
    # group [1, 0, 0, 1]: mean 0.5, unbiased std sqrt(1/3) -> +-0.5 / (0.57735 + 1e-6)
    adv = compute_advantages("grpo", torch.tensor([1.0, 0.0, 0.0, 1.0]), group_size=4)
    a = 0.5 / (3**-0.5 + 1e-6)
    assert adv.tolist() == pytest.approx([a, -a, -a, a], rel=1e-6)
    # RLOO on [1, 0, 0, 1]: 1 - 1/3 and 0 - 2/3
    assert compute_advantages("rloo", torch.tensor([1.0, 0.0, 0.0, 1.0]), group_size=4).tolist() == pytest.approx(
        [2 / 3, -2 / 3, -2 / 3, 2 / 3], rel=1e-6
    )


@pytest.mark.parametrize("name", ["grpo", "drgrpo", "rloo"])
def test_constant_and_single_groups_are_exactly_zero(name: str) -> None:
    # 0.1 * 3 / 3 != 0.1 in floating point: the group is still constant and must give exactly 0.
    r = torch.tensor([0.1, 0.1, 0.1, 1.0, 1.0, 3.0], dtype=torch.float32)
    adv = compute_advantages(name, r, [0, 0, 0, 1, 1, 2])
    assert adv.tolist() == [0.0] * 6


def test_group_ids_and_group_size_agree_and_labels_need_not_be_contiguous() -> None:
    r = torch.tensor([1.0, 0.0, 2.0, 5.0, 3.0, 1.0])
    by_size = compute_advantages("grpo", r, group_size=2)
    assert torch.equal(by_size, compute_advantages("grpo", r, torch.tensor([7, 7, 3, 3, 9, 9])))
    perm = [4, 0, 2, 5, 1, 3]
    shuffled = compute_advantages("grpo", r[perm], [["x", "x", "y", "y", "z", "z"][i] for i in perm])
    assert torch.equal(shuffled, by_size[perm])


def test_integer_rewards_give_float32() -> None:
    adv = compute_advantages("drgrpo", torch.tensor([1, 0, 1, 1]), group_size=2)
    assert adv.dtype == torch.float32 and adv.tolist() == [0.5, -0.5, 0.0, 0.0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"group_size": 3}, "group_size=3"),
        ({"group_size": 0}, "group_size=0"),
        ({}, "exactly one of group_ids / group_size"),
        ({"group_size": 2, "group_ids": [0, 0, 1, 1]}, "exactly one"),
        ({"group_ids": [0, 0, 1]}, "group_ids has length 3"),
        ({"group_ids": torch.zeros(2, 2)}, r"group_ids has shape \(2, 2\)"),
        ({"group_size": 2, "eps": -1.0}, "eps=-1.0"),
    ],
)
def test_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        compute_advantages("grpo", torch.tensor([1.0, 0.0, 1.0, 1.0]), **kwargs)


def test_bad_rewards() -> None:
    with pytest.raises(ValueError, match="1-D"):
        compute_advantages("grpo", torch.zeros(2, 2), group_size=2)
    with pytest.raises(ValueError, match="NaN or inf"):
        compute_advantages("grpo", torch.tensor([1.0, float("nan")]), group_size=2)


def test_dynamic_sampling_drops_groups_that_all_agree() -> None:
    keep = dynamic_sampling_mask(torch.tensor(REWARDS), IDS)
    assert keep.tolist() == [True] * 8 + [False] * 4
    assert dynamic_sampling_mask(torch.tensor([1.0, 1.0, 0.0, 0.0]), group_size=2).tolist() == [False] * 4


def test_broadcast_to_tokens() -> None:
    mask = torch.tensor([[1, 1, 0], [0, 0, 0], [1, 1, 1]])
    out = broadcast_to_tokens(torch.tensor([2.0, -1.0, 0.5]), mask)
    assert out.tolist() == [[2.0, 2.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5]]
    with pytest.raises(ValueError, match=r"\(B,\) and \(B, T\)"):
        broadcast_to_tokens(torch.zeros(2), mask)


@settings(max_examples=60, deadline=None)
@given(
    rewards=st.lists(st.sampled_from([0.0, 1.0, 0.5, -2.0, 0.1, 1e-7]), min_size=1, max_size=24),
    n_groups=st.integers(1, 6),
    scale=st.floats(0.1, 10.0),
    shift=st.floats(-5.0, 5.0),
    seed=st.integers(0, 1000),
)
def test_properties(rewards: list[float], n_groups: int, scale: float, shift: float, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, n_groups, (len(rewards),), generator=g)
    r = torch.tensor(rewards, dtype=torch.float64)
    groups = _by_group(rewards, ids.tolist())
    for name in ("grpo", "drgrpo", "rloo"):
        adv = compute_advantages(name, r, ids)
        assert bool(torch.isfinite(adv).all())
        assert adv.tolist() == pytest.approx(_reference(name, rewards, ids.tolist()), rel=1e-9, abs=1e-9)
        for gid in groups:  # zero-sum within every group
            assert float(adv[ids == gid].sum()) == pytest.approx(0.0, abs=1e-6)
    # Dr.GRPO / RLOO are equivariant to r -> a r + b; GRPO invariant (up to its eps).
    r2 = r * scale + shift
    for name in ("drgrpo", "rloo"):
        torch.testing.assert_close(compute_advantages(name, r2, ids), compute_advantages(name, r, ids) * scale)
    keep = dynamic_sampling_mask(r, ids)
    assert keep.tolist() == [len(set(groups[i])) > 1 for i in ids.tolist()]
    assert bool((compute_advantages("grpo", r, ids)[~keep] == 0).all())
