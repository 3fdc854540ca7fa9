"""DAPO dynamic sampling with refill: keep generating until the batch holds enough informative groups.

DAPO (Yu et al. 2025, §3.2) drops every group whose rewards all agree (zero advantage, no gradient) and
samples more prompts until the batch is full again, so the update always sees ``target_groups`` groups with
signal. The STARE script does the same (``algorithm.filter_groups``: generate, filter, concatenate, repeat up
to ``max_num_gen_batches`` rounds, then truncate to the train batch). :class:`GroupRefill` is that loop's
bookkeeping on plain tensors, independent of any engine: the engine generates a round, hands the gathered
rows and rewards to :meth:`GroupRefill.add`, asks :attr:`GroupRefill.done`, and finally takes
:meth:`GroupRefill.result`.

DEVIATION (from the reference, which raises once ``max_num_gen_batches`` rounds did not fill the batch): at
the limit the batch is filled with constant-reward groups from the rounds generated, in order, with keep = 0
(they carry no gradient, exactly what masking does), so the batch size never changes and training goes on;
``dynamic_sampling/short_groups`` counts them.

Rows are dicts of per-row values: tensors whose first dimension is the row (``(N,)`` or ``(N, L, ...)``) and
lists of length ``N``. Tensors of two or more dimensions are padded along dimension 1 when rounds differ in
length: keys in ``left_pad_keys`` (prompt ids and masks, left-padded by the engines) on the left, all others
on the right, with ``pad_values.get(key, 0)``. 0-dim tensors (batch totals) are dropped: the engine
recomputes them for the final batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from stare_rl.core.advantages import dynamic_sampling_mask

Rows = dict[str, Any]


def pad_to(t: torch.Tensor, length: int, *, left: bool, value: float | int = 0) -> torch.Tensor:
    """``t`` of shape ``(N, L, ...)`` padded along dimension 1 to ``length`` (on the left or the right)."""
    missing = length - t.shape[1]
    if missing < 0:
        raise ValueError(f"pad_to: tensor length {t.shape[1]} > target length {length}")
    if missing == 0:
        return t
    pad = t.new_full((t.shape[0], missing, *t.shape[2:]), value)
    return torch.cat([pad, t] if left else [t, pad], dim=1)


def cat_rows(parts: Sequence[Rows], left_pad_keys: Sequence[str] = (), pad_values: Mapping[str, Any] | None = None
             ) -> Rows:
    """Row-wise concatenation of several row dicts with the same keys (see the module docstring)."""
    if not parts:
        raise ValueError("cat_rows needs at least one part")
    keys = list(parts[0])
    if any(list(p) != keys for p in parts[1:]):
        raise ValueError(f"cat_rows: parts have different keys: {[sorted(p) for p in parts]}")
    pad_values = pad_values or {}
    out: Rows = {}
    for key in keys:
        values = [p[key] for p in parts]
        if isinstance(values[0], torch.Tensor):
            if values[0].dim() == 0:
                continue  # a batch total: recomputed by the caller
            if values[0].dim() >= 2:
                length = max(v.shape[1] for v in values)
                values = [pad_to(v, length, left=key in left_pad_keys, value=pad_values.get(key, 0)) for v in values]
            out[key] = torch.cat(values, dim=0)
        else:
            out[key] = [x for v in values for x in v]
    return out


def take_rows(rows: Rows, index: torch.Tensor) -> Rows:
    """The rows at ``index`` (a 1-D long tensor), in that order."""
    picked = index.tolist()
    return {k: v[index.to(v.device)] if isinstance(v, torch.Tensor) else [v[i] for i in picked]
            for k, v in rows.items() if not (isinstance(v, torch.Tensor) and v.dim() == 0)}


@dataclass
class GroupRefill:
    """Collects informative groups over generation rounds until ``target_groups`` are in hand.

    Args:
        group_size: completions per prompt (rows of one group are consecutive).
        target_groups: groups in the final batch (the generation batch's own number of groups).
        max_rounds: at most this many rounds, the first included (the script's ``max_num_gen_batches``).
        left_pad_keys, pad_values: how rows of different lengths are padded (see :func:`cat_rows`).
    """

    group_size: int
    target_groups: int
    max_rounds: int
    left_pad_keys: tuple[str, ...] = ()
    pad_values: Mapping[str, Any] = field(default_factory=dict)
    rounds: int = 0
    generated_groups: int = 0
    _kept: list[tuple[Rows, torch.Tensor]] = field(default_factory=list)    # (rows, rewards) with signal
    _filler: list[tuple[Rows, torch.Tensor]] = field(default_factory=list)  # constant-reward groups

    def __post_init__(self) -> None:
        for name in ("group_size", "target_groups", "max_rounds"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be an integer >= 1")

    @property
    def kept_groups(self) -> int:
        return sum(r.numel() for _, r in self._kept) // self.group_size

    @property
    def done(self) -> bool:
        """Enough informative groups, or the round limit reached."""
        return self.kept_groups >= self.target_groups or self.rounds >= self.max_rounds

    def add(self, rows: Rows, rewards: torch.Tensor) -> None:
        """One round: ``rows`` (all ranks, ``N`` rows, whole groups) and their ``(N,)`` rewards."""
        n = rewards.numel()
        if rewards.dim() != 1 or n % self.group_size:
            raise ValueError(f"rewards {tuple(rewards.shape)} must be (N,) with N a multiple of "
                             f"group_size={self.group_size}")
        keep = dynamic_sampling_mask(rewards, group_size=self.group_size)  # (N,) bool, whole groups
        self.rounds += 1
        self.generated_groups += n // self.group_size
        for flag, store in ((True, self._kept), (False, self._filler)):
            index = torch.nonzero(keep == flag).flatten()
            if index.numel():
                store.append((take_rows(rows, index), rewards[index.to(rewards.device)]))

    def result(self) -> tuple[Rows, torch.Tensor, torch.Tensor, dict[str, float]]:
        """(rows, rewards ``(M,)``, keep ``(M,)`` float, metrics), ``M = target_groups * group_size``.

        The informative groups in generation order, truncated to the target, then (only when the round
        limit stopped the loop short) constant-reward groups with keep = 0 up to the target.
        """
        if self.rounds == 0:
            raise ValueError("GroupRefill.result() before any add()")
        want = self.target_groups * self.group_size
        parts, rewards, keep = [], [], []
        have = 0
        for store, flag in ((self._kept, 1.0), (self._filler, 0.0)):
            for rows, r in store:
                if have >= want:
                    break
                take = min(r.numel(), want - have)
                index = torch.arange(take)
                parts.append(take_rows(rows, index))
                rewards.append(r[:take])
                keep.append(torch.full((take,), flag, device=r.device))
                have += take
        kept = min(self.kept_groups, self.target_groups)
        metrics = {
            "dynamic_sampling/gen_rounds": float(self.rounds),
            "dynamic_sampling/generated_groups": float(self.generated_groups),
            "dynamic_sampling/informative_frac": self.kept_groups / self.generated_groups,
            "dynamic_sampling/short_groups": float(self.target_groups - kept),
        }
        return (cat_rows(parts, self.left_pad_keys, self.pad_values), torch.cat(rewards), torch.cat(keep),
                metrics)
