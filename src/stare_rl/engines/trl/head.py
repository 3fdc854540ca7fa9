"""A switch between TRL's fused LM-head forward with and without the full-vocabulary entropy."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


class LMHeadSwitch:
    """TRL 1.16's fused LM head with the entropy on or off per call.

    ``GRPOTrainer.__init__`` patches the model with ``add_fused_lm_head(outputs=("log_probs", "entropy"))``: the
    entropy is then computed in every call, inside the tile pass that computes the log-probs (one more
    multiply-add and sum per logit, about 2-6% of a step at V = 151,936 with a small hidden size,
    docs/benchmarks.md). This keeps that forward and adds a log-prob-only one
    (``add_fused_lm_head(outputs=("log_probs",))``); :meth:`entropy` selects one for a call. Models whose
    forward is not TRL's patched one keep it (always with entropy).
    """

    def __init__(self, model: Any, temperature: float, cast_lm_head_to_fp32: bool) -> None:
        from trl.trainer.utils import add_fused_lm_head

        self.model = model
        self.with_entropy = model.__dict__.get("forward")  # TRL's patched, bound forward
        self.without_entropy = None
        func = getattr(self.with_entropy, "__func__", None)
        if func is not None and getattr(func, "__wrapped__", None) is type(model).forward:
            add_fused_lm_head(model, temperature=temperature, cast_lm_head_to_fp32=cast_lm_head_to_fp32,
                              outputs=("log_probs",))  # wraps TRL's forward (generation still goes through it)
            self.without_entropy = model.__dict__["forward"]
            model.forward = self.with_entropy  # the default stays TRL's own

    @contextlib.contextmanager
    def entropy(self, needed: bool) -> Iterator[None]:
        """Within the block, fused calls compute the entropy only if ``needed``."""
        if needed or self.without_entropy is None:
            yield
            return
        self.model.forward = self.without_entropy
        try:
            yield
        finally:
            self.model.forward = self.with_entropy



__all__ = ["LMHeadSwitch"]
