"""The CPU selection path of ``stare_rl.core.selection`` (numpy partition / compare) equals torch's ranking."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stare_rl.core.selection import count_true, kth_largest, select_at_least, select_top_fraction, topk_mask


def _reference(values: torch.Tensor, candidates: torch.Tensor, k: int, largest: bool) -> torch.Tensor:
    """Exactly k candidates ranked by torch.topk over the candidates (the tie-breaking reference)."""
    out = torch.zeros_like(candidates)
    idx = candidates.reshape(-1).nonzero().squeeze(-1)
    v = values.reshape(-1)[idx]
    top = torch.topk(v if largest else -v, k).indices
    out.view(-1)[idx[top]] = True
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 3000), st.floats(0.0, 1.0), st.booleans(), st.booleans(),
       st.sampled_from(["float32", "float64", "bfloat16"]))
def test_topk_mask_cpu_equals_ranked_reference(
    seed: int, n: int, frac: float, largest: bool, garbage: bool, dtype: str
) -> None:
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(2, n, generator=g).to(getattr(torch, dtype))  # bf16: many ties
    candidates = torch.rand(2, n, generator=g) < 0.6
    if garbage:  # padding may hold anything: non-candidates with NaN / +-inf are never selected
        junk = torch.tensor([math.nan, math.inf, -math.inf], dtype=values.dtype)
        values = torch.where(candidates, values, junk[torch.randint(0, 3, (2, n), generator=g)])
    n_cand = int(candidates.sum())
    k = int(frac * n_cand)
    got = topk_mask(values, candidates, k, largest=largest)
    assert got.dtype == torch.bool and got.shape == candidates.shape
    assert int(got.sum()) == min(k, n_cand) and bool((got <= candidates).all())
    if k:
        assert torch.equal(got, _reference(values, candidates, k, largest)) or _tied(values, got, candidates,
                                                                                     largest)


def _tied(values: torch.Tensor, got: torch.Tensor, candidates: torch.Tensor, largest: bool) -> bool:
    """Same multiset of selected values as the reference (ties may be broken differently only when equal)."""
    sel, rest = values[got].float(), values[candidates & ~got].float()
    if rest.numel() == 0:
        return True
    return bool(sel.min() >= rest.max()) if largest else bool(sel.max() <= rest.min())


def test_infinite_candidates_keep_their_rank() -> None:
    values = torch.tensor([[-math.inf, -3.0, -1.0, -math.inf, 0.5, math.inf]])
    candidates = torch.tensor([[True, True, True, False, True, True]])
    smallest = topk_mask(values, candidates, 2, largest=False)
    assert smallest.tolist() == [[True, True, False, False, False, False]]
    largest = topk_mask(values, candidates, 1, largest=True)
    assert largest.tolist() == [[False, False, False, False, False, True]]
    # two tied -inf candidates and k = 1: ranked fallback picks exactly one
    tied = topk_mask(torch.tensor([[-math.inf, -math.inf, 0.0]]), torch.ones(1, 3, dtype=torch.bool), 1,
                     largest=False)
    assert int(tied.sum()) == 1 and not bool(tied[0, 2])


def test_nan_candidates_are_never_selected_and_counts_hold() -> None:
    values = torch.tensor([[math.nan, 1.0, 2.0, 3.0]])
    candidates = torch.ones(1, 4, dtype=torch.bool)
    got = topk_mask(values, candidates, 2, largest=True)
    assert got.tolist() == [[False, False, True, True]]
    assert count_true(candidates) == 4 and count_true(torch.zeros(3, dtype=torch.bool)) == 0


@pytest.mark.parametrize("largest", [True, False])
def test_threshold_selection_and_kth_largest(largest: bool) -> None:
    values = torch.tensor([[0.1, 0.5, 0.9, 0.5], [math.nan, 0.7, -math.inf, 0.2]])
    candidates = torch.tensor([[True, True, True, False], [True, True, True, True]])
    got = select_top_fraction(values, candidates, 0.5, threshold=0.5, largest=largest)
    ref = candidates & ((values >= 0.5) if largest else (values <= 0.5))
    assert torch.equal(got, ref)
    assert torch.equal(select_at_least(values, candidates, 0.5), candidates & (values >= 0.5))
    assert kth_largest(torch.tensor([3.0, 1.0, 2.0, 5.0]), 2) == 3.0
    assert kth_largest(torch.tensor([1.0, 2.0], dtype=torch.bfloat16), 1) == 2.0
    assert kth_largest(torch.tensor([]), 1) is None
