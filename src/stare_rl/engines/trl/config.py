"""TRL configuration of stare-rl: :class:`StareGRPOConfig` (TRL's GRPOConfig with stare-rl's fields) and the
GRPOConfig loss fields that stare-rl replaces."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from trl import GRPOConfig

# GRPOConfig fields that stare-rl replaces: field -> (TRL default, what to use instead).
SUPERSEDED_FIELDS: dict[str, tuple[Any, str]] = {
    "loss_type": ("dapo", "loss_agg_mode"),
    "epsilon": (0.2, "clip_ratio_low"),
    "epsilon_high": (None, "clip_ratio_high"),
    "delta": (None, "clip_ratio_c (dual clip)"),
    "scale_rewards": ("group", "advantage_estimator (grpo | drgrpo | rloo)"),
    "top_entropy_quantile": (1.0, "method high_entropy (rho)"),
    "entropy_coef": (0.0, "entropy_bonus fixed|adaptive and bonus_coef"),
    "use_adaptive_entropy": (False, "entropy_bonus adaptive"),
    "importance_sampling_level": ("token", "a token-level method"),
    "off_policy_mask_threshold": (None, "(not supported)"),
    "beta": (0.0, "(KL to a reference model is not supported by stare-rl methods)"),
    "multi_objective_aggregation": ("sum_then_normalize", "(a single reward)"),
}


@dataclasses.dataclass
class StareGRPOConfig(GRPOConfig):
    """TRL's GRPOConfig with stare-rl defaults: log every step; bf16 only where a CUDA device exists."""

    logging_steps: float = dataclasses.field(
        default=1, metadata={"help": "Log (and write metrics.jsonl) every this many optimizer steps."}
    )
    bf16: bool | None = dataclasses.field(
        default=None, metadata={"help": "bf16 mixed precision; default: on when a CUDA device is present, else off."}
    )

    def __post_init__(self) -> None:
        if not torch.cuda.is_available():
            self.bf16 = False if self.bf16 is None else self.bf16
            self.dataloader_pin_memory = False  # nothing to pin to on CPU (silences a torch warning)
        super().__post_init__()


def check_superseded(args: GRPOConfig) -> None:
    """ValueError if a GRPOConfig field that a stare-rl field replaces was changed from TRL's default."""
    for name, (default, instead) in SUPERSEDED_FIELDS.items():
        value = getattr(args, name)
        if value != default:
            raise ValueError(f"{name}={value!r} is TRL's own loss setting and is not used by stare-rl; use {instead}")


__all__ = ["SUPERSEDED_FIELDS", "StareGRPOConfig", "check_superseded"]
