"""Typed containers shared by every method and engine adapter.

A method receives a :class:`TokenBatch` (all ``(B, T)`` tensors), its own frozen config and a frozen
:class:`LossContext` (a method-owned mapping of controller outputs and global statistics), and returns a
:class:`LossOutput` whose per-token loss is aggregated by :func:`stare_rl.core.aggregate.aggregate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import torch


@dataclass(frozen=True)
class TokenBatch:
    """One (micro-)batch of sampled tokens.

    Args:
        log_prob: ``(B, T)`` log pi_theta(a_t) of the current policy (carries the gradient).
        old_log_prob: ``(B, T)`` log pi_old(a_t) of the behaviour policy (no gradient needed).
        advantages: ``(B, T)`` per-token advantages (GRPO broadcasts the sequence advantage).
        mask: ``(B, T)`` 1 on valid response tokens, 0 on padding (bool or float).
        entropy: optional ``(B, T)`` full-vocabulary entropy of the current policy at each position.
        old_entropy: optional ``(B, T)`` full-vocabulary entropy of the behaviour (old) policy at each position.
        rewards: optional ``(B, T)`` the response's scalar outcome reward at each of its tokens (broadcast as the
            sequence advantage is); for methods that act on the raw reward rather than the group-relative advantage.
    """

    log_prob: torch.Tensor
    old_log_prob: torch.Tensor
    advantages: torch.Tensor
    mask: torch.Tensor
    entropy: torch.Tensor | None = None
    old_entropy: torch.Tensor | None = None
    rewards: torch.Tensor | None = None

    def __post_init__(self) -> None:
        ref = self.log_prob
        if ref.dim() != 2:
            raise ValueError(f"log_prob must be a (B, T) tensor, got shape {tuple(ref.shape)}")
        if not ref.is_floating_point():
            raise ValueError(f"log_prob must be a floating tensor, got dtype {ref.dtype}")
        named = {"old_log_prob": self.old_log_prob, "advantages": self.advantages, "mask": self.mask}
        for name in ("entropy", "old_entropy", "rewards"):
            if getattr(self, name) is not None:
                named[name] = getattr(self, name)
        for name, t in named.items():
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
            if t.shape != ref.shape:
                raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(ref.shape)} like log_prob")
            if t.device != ref.device:
                raise ValueError(f"{name} is on device {t.device}, expected {ref.device} like log_prob")
            if name != "mask" and t.dtype != ref.dtype:
                raise ValueError(f"{name} has dtype {t.dtype}, expected {ref.dtype} like log_prob")
        valid = self.valid
        for name in ("log_prob", "old_log_prob", "advantages", "entropy", "old_entropy", "rewards"):
            t = getattr(self, name)
            if t is not None and not bool(torch.isfinite(t.detach()[valid]).all()):
                raise ValueError(f"{name} contains NaN or inf at valid (mask=1) positions")

    @property
    def valid(self) -> torch.Tensor:
        """``(B, T)`` bool mask of valid tokens."""
        return self.mask > 0

    @property
    def mask_f(self) -> torch.Tensor:
        """``(B, T)`` mask as the dtype of log_prob (0/1)."""
        return self.valid.to(self.log_prob.dtype)

    @property
    def n_valid(self) -> int:
        return int(self.valid.sum())


@dataclass(frozen=True)
class LossContext:
    """Frozen per-update state handed to a method by the engine (through :class:`~stare_rl.control.step.StepController`).

    Args:
        stats: method-owned values, read with :meth:`get`: controller outputs (updated once per generation
            batch, outside the loss; e.g. ``gate_on``, ``reweight_w``, ``entropy_coef``) and statistics of the
            *global* batch gathered across micro-batches and ranks (e.g. ``surprisal_threshold_pos``,
            ``omega_max``). Each method documents the keys it reads; a missing key (or ``None``) means "not
            provided": the method then computes the statistic from the batch it was handed.
        generator: torch.Generator for methods with random choices (Clip-Cov).
    """

    stats: Mapping[str, Any] = field(default_factory=dict)
    generator: torch.Generator | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.stats, Mapping):
            raise ValueError(f"stats must be a mapping of name -> value, got {type(self.stats).__name__}")
        object.__setattr__(self, "stats", MappingProxyType(dict(self.stats)))  # frozen: a read-only copy

    def get(self, key: str, default: Any = None) -> Any:
        """``stats[key]``, or ``default`` when the key is absent or ``None``."""
        value = self.stats.get(key)
        return default if value is None else value


@dataclass
class LossOutput:
    """What a method returns.

    Args:
        token_loss: ``(B, T)`` per-token loss (weights already applied, 0 on padding), ready for
            :func:`stare_rl.core.aggregate.aggregate`.
        token_weights: ``(B, T)`` multiplicative per-token weights (no gradient); 1 for unweighted methods.
        metrics: scalar tensors (detached), named without engine prefixes, e.g. ``"pg_clipfrac"``.
        masks: named ``(B, T)`` bool selections (``"l_plus"``, ``"l_minus"``, ``"kl_selected"``, ...).
    """

    token_loss: torch.Tensor
    token_weights: torch.Tensor
    metrics: dict[str, torch.Tensor] = field(default_factory=dict)
    masks: dict[str, torch.Tensor] = field(default_factory=dict)
