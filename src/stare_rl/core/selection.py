"""Small pure helpers for batch-level selections (top-k counts, thresholds) and their global versions.

A method selects "the top fraction of valid tokens" either inside the batch it is handed (the reference
behaviour, which depends on the micro-batch / GPU layout) or against a threshold computed once from the
values of the whole global batch: the engine gathers the candidate values across micro-batches and ranks
(:func:`gather_values`), calls the same helper, and passes the threshold in through ``LossContext``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

# STARE reference rounding: int(P * n + 0.999999) absorbs float noise (P=0.28, n=25 -> 7, math.ceil -> 8).
_CEIL_EPS = 0.999999

# selection_scope values of every method with selections. micro_batch (alias batch): inside the batch handed to
# the loss, i.e. per micro-batch and rank, the reference behaviour. global: over the whole step batch, all
# micro-batches and ranks (the engines compute it once per step through StepController).
SELECTION_SCOPES = ("micro_batch", "batch", "global")
# The one difference of default between the engines, said in every selection_scope field's help.
SCOPE_DEFAULT_NOTE = (" Default batch (the reference's) here and under TRL; under verl the policy_loss field defaults "
                      "to global (the whole step batch: verl splits it into micro-batches and ranks, docs/verl.md).")


def topk_count(ratio: float, count: int, rounding: str = "ceil") -> int:
    """Number of tokens to select out of ``count`` candidates.

    ``rounding="ceil"`` (STARE): ``int(ratio * count + 0.999999)``, at least 1, at most count; 0 if ratio == 0
    or count == 0. ``rounding="floor"`` (KL-Cov / Clip-Cov): ``max(1, int(count * ratio))`` capped at count.
    """
    if count <= 0 or ratio <= 0.0:
        return 0
    if rounding == "ceil":
        k = int(float(ratio) * float(count) + _CEIL_EPS)
    elif rounding == "floor":
        k = int(math.floor(float(count) * float(ratio)))
    else:
        raise ValueError(f"rounding={rounding!r} must be 'ceil' or 'floor'")
    return max(1, min(k, count))


def kth_largest(values: torch.Tensor, k: int) -> float | None:
    """The k-th largest entry of a 1-D tensor (``None`` when k == 0 or values is empty).

    Selecting ``values >= kth_largest(values, k)`` picks exactly k entries when there are no ties.
    """
    values = values.detach().reshape(-1)
    if k <= 0 or values.numel() == 0:
        return None
    k = min(k, values.numel())
    if values.device.type == "cpu":  # numpy's introselect: ~10x faster than torch.kthvalue on CPU, same value
        arr = _as_numpy(values)
        return float(np.partition(arr, arr.size - k)[arr.size - k])
    # linear-time selection; a sorted top-k of k entries costs ~10x more on CPU for large k
    return float(torch.kthvalue(values, values.numel() - k + 1).values)


def select_at_least(values: torch.Tensor, candidates: torch.Tensor, threshold: float | None) -> torch.Tensor:
    """``(B, T)`` bool: candidates whose value is >= threshold (nothing when threshold is None)."""
    if threshold is None:
        return torch.zeros_like(candidates, dtype=torch.bool)
    return _compare_select(values, candidates, threshold, at_least=True)


def _compare_select(values: torch.Tensor, candidates: torch.Tensor, threshold: float, at_least: bool) -> torch.Tensor:
    """``candidates & (values >= t)`` (or ``<= t``); in numpy on CPU, where a compare to bool is ~10x cheaper."""
    values = values.detach()
    if values.device.type != "cpu" or candidates.device.type != "cpu":
        return candidates & ((values >= threshold) if at_least else (values <= threshold))
    arr = _as_numpy(values)
    hit = np.greater_equal(arr, threshold) if at_least else np.less_equal(arr, threshold)  # (B, T) bool
    return torch.from_numpy(np.logical_and(hit, candidates.numpy(), out=hit))


def count_true(mask: torch.Tensor) -> int:
    """Number of True entries of a bool tensor (numpy's count on CPU: ~4x cheaper than torch's)."""
    if mask.device.type == "cpu" and mask.dtype == torch.bool:
        return int(np.count_nonzero(mask.numpy()))
    return int(torch.count_nonzero(mask))


def gather_values(values: torch.Tensor, group=None) -> torch.Tensor:
    """All-gather a 1-D tensor of varying length from every rank (identity without torch.distributed).

    Engine-side helper: methods never call it; adapters use it to build global statistics.
    """
    import torch.distributed as dist

    values = values.detach().reshape(-1)
    if not (dist.is_available() and dist.is_initialized()):
        return values
    world = dist.get_world_size(group)
    n = torch.tensor([values.numel()], device=values.device, dtype=torch.long)
    sizes = [torch.zeros_like(n) for _ in range(world)]
    dist.all_gather(sizes, n, group=group)
    max_n = int(max(int(s) for s in sizes))
    padded = torch.zeros(max_n, dtype=values.dtype, device=values.device)
    padded[: values.numel()] = values
    chunks = [torch.zeros_like(padded) for _ in range(world)]
    dist.all_gather(chunks, padded, group=group)
    return torch.cat([c[: int(s)] for c, s in zip(chunks, sizes, strict=True)])


def top_fraction_threshold(values: torch.Tensor, ratio: float, rounding: str = "ceil") -> float:
    """Threshold that selects the top ``ratio`` fraction of a 1-D tensor of candidate values.

    This is the pure global-scope helper: call it on the values gathered from the whole global batch
    (:func:`gather_values`) and pass the result to a method through ``LossContext``; selecting
    ``values >= threshold`` then picks the same tokens as a top-k over the whole batch (exactly k when there are
    no ties), whatever the micro-batch or rank layout.

    Returns:
        The k-th largest value with ``k = topk_count(ratio, n, rounding)``; ``math.inf`` when k == 0 (ratio 0
        or no candidates), so that nothing is selected. Never ``None``: ``None`` in ``LossContext`` means
        "not provided".
    """
    values = values.detach().reshape(-1)
    k = topk_count(ratio, values.numel(), rounding)
    kth = kth_largest(values, k)
    return math.inf if kth is None else kth


def topk_mask(
    values: torch.Tensor,
    candidates: torch.Tensor,
    k: int,
    *,
    largest: bool = True,
    n_candidates: int | None = None,
) -> torch.Tensor:
    """``(B, T)`` bool: exactly the k candidates with the largest (or smallest) value (batch scope).

    Fast path: the k-th extreme candidate value by one selection (numpy's ``partition`` on CPU,
    :func:`_select_k_cpu`; ``torch.kthvalue`` with a pre-filter elsewhere) and one comparison. If ties at that
    value would select more than k, the candidates are ranked in row-major order with ``torch.topk`` instead
    (the reference behaviour; ``largest=False`` ranks the negated values, so that selecting the smallest ``x``
    breaks ties exactly like selecting the largest ``-x``). ``k`` is clamped to the number of candidates
    (``n_candidates`` when the caller already counted them); k <= 0 selects nothing.
    """
    n = count_true(candidates) if n_candidates is None else n_candidates
    k = min(int(k), n)
    if k <= 0:
        return torch.zeros_like(candidates, dtype=torch.bool)
    values = values.detach()
    if values.device.type == "cpu":
        fast = _select_k_cpu(values, candidates, k, largest)
        if fast is not None:
            return fast
        return _topk_mask_ranked(values if largest else -values, candidates, k)  # ties at the k-th value
    fill = -math.inf if largest else math.inf
    key = torch.where(candidates, values, fill).reshape(-1)  # (B*T,) non-candidates never selected
    kth, n_selected = _kth_exact(key, k, largest)  # the k-th extreme candidate value
    if not math.isfinite(float(kth)):  # an infinite candidate value: compare on the candidates only
        selected = candidates & ((values >= kth) if largest else (values <= kth))
        n_selected = None
    else:
        selected = (key >= kth if largest else key <= kth).view_as(candidates)  # (B, T)
    if n_selected is None:
        n_selected = int(torch.count_nonzero(selected))
    if n_selected == k:
        return selected
    return _topk_mask_ranked(values if largest else -values, candidates, k)  # ties at the k-th value


def _select_k_cpu(
    values: torch.Tensor, candidates: torch.Tensor, k: int, largest: bool
) -> torch.Tensor | None:
    """CPU fast path of :func:`topk_mask`: ``(B, T)`` bool of exactly k candidates, or ``None`` on a tie.

    In numpy, whose copy, partition, compare and count kernels are 5-10x faster than torch's on CPU for
    selections and bool outputs (measured, ``benchmarks/bench_losses.py``): ``key = +-values`` with ``+inf`` on
    non-candidates (whatever they hold), the k-th smallest key by one in-place ``partition`` (exact,
    linear), then ``candidates & (values <= kth)`` (``>= -kth`` for the largest). ``None`` (the caller ranks
    with ``torch.topk``) when ties at the k-th value would select more than k, or when the k-th key is not
    finite-or--inf (``+inf`` / NaN candidates reached: rare, ranked exactly by the caller).
    """
    arr = _as_numpy(values)  # (B, T) view when float32/64
    cand = candidates.numpy()
    key = np.negative(arr) if largest else arr.copy()  # (B, T) fresh: the k smallest keys are the answer
    np.copyto(key, np.inf, where=~cand)  # non-candidates never selected (padding may hold NaN / -inf)
    flat = key.reshape(-1)
    flat.partition(k - 1)  # in place: flat[k - 1] is the k-th smallest key
    kth = float(flat[k - 1])
    if math.isnan(kth) or kth == math.inf:
        return None
    hit = np.greater_equal(arr, -kth) if largest else np.less_equal(arr, kth)  # (B, T) bool
    np.logical_and(hit, cand, out=hit)
    if int(np.count_nonzero(hit)) != k:  # ties at the k-th value
        return None
    return torch.from_numpy(hit)


def _as_numpy(values: torch.Tensor) -> np.ndarray:
    """A CPU tensor as a float32/float64 numpy array (a view when it already is one; bf16/fp16 upcast exactly)."""
    if values.dtype not in (torch.float32, torch.float64):
        values = values.float()
    return values.numpy()


def _kth_exact(key: torch.Tensor, k: int, largest: bool, stride: int = 8) -> tuple[torch.Tensor, int | None]:
    """Exact k-th largest (or smallest) entry of a 1-D tensor, 1 <= k <= key.numel().

    Large inputs are pre-filtered: an extreme quantile of a strided subsample (a ~4 sigma margin beyond the
    expected k/stride-th) is a bound t0; if at least k entries are beyond t0, the k-th extreme overall is the
    k-th extreme of those few entries (exact). Otherwise, or for small inputs, one ``torch.kthvalue``.

    Returns:
        ``(kth, n_at_least)``: the value (0-dim) and, when the pre-filter ran, how many entries of ``key``
        are at least as extreme as it (counted on the few pre-filtered entries); else ``None``.
    """
    n = key.numel()
    if n >= 16384 and 2 * k < n // 4:
        sub = key[::stride]  # (n / stride,)
        expected = k / stride  # entries of sub beyond the true k-th extreme, on average
        j = min(sub.numel(), int(expected + 4.0 * math.sqrt(expected)) + 16)
        t0 = torch.kthvalue(sub, sub.numel() - j + 1 if largest else j).values
        few = torch.masked_select(key, key >= t0 if largest else key <= t0)  # (c,) cheaper than key[mask]
        c = few.numel()
        if c >= k:
            kth = torch.kthvalue(few, c - k + 1 if largest else k).values
            return kth, int(torch.count_nonzero(few >= kth if largest else few <= kth))
    return torch.kthvalue(key, n - k + 1 if largest else k).values, None


def _topk_mask_ranked(values: torch.Tensor, candidates: torch.Tensor, k: int) -> torch.Tensor:
    """Exactly k candidates by ``torch.topk`` over the candidates in row-major order (ties as topk breaks them)."""
    selected = torch.zeros_like(candidates, dtype=torch.bool)
    flat_idx = candidates.reshape(-1).nonzero(as_tuple=False).squeeze(-1)  # (n,) positions of candidates
    cand_values = values.reshape(-1)[flat_idx]  # (n,)
    top = torch.topk(cand_values, k, largest=True).indices  # (k,)
    selected.view(-1)[flat_idx[top]] = True
    return selected


def select_top_fraction(
    values: torch.Tensor,
    candidates: torch.Tensor,
    ratio: float,
    rounding: str = "ceil",
    threshold: float | None = None,
    *,
    largest: bool = True,
    n_candidates: int | None = None,
) -> torch.Tensor:
    """``(B, T)`` bool: the top ``ratio`` fraction of ``candidates`` by ``values``.

    With ``threshold=None`` (batch scope) the top ``topk_count(ratio, #candidates, rounding)`` candidates of
    this batch are selected. With a threshold from :func:`top_fraction_threshold` (global scope) the
    candidates whose value is >= threshold are selected. Generic: STARE, the 80/20 entropy mask and KL-Cov
    use it. ``largest=False`` selects the smallest values instead (the threshold then selects ``values <=
    threshold``); ``n_candidates`` saves a count when the caller already has it.
    """
    if threshold is not None:
        if largest:
            return select_at_least(values, candidates, threshold)
        return _compare_select(values, candidates, threshold, at_least=False)
    n = count_true(candidates) if n_candidates is None else n_candidates
    return topk_mask(values, candidates, topk_count(ratio, n, rounding), largest=largest, n_candidates=n)
