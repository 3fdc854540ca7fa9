"""STARE (and every stare-rl method) in your own TRL script: the public TRL API.

A GRPOTrainer script becomes a stare-rl script by changing the import, the two class names and adding the
method::

    from stare_rl.trl import StareGRPOConfig, StareGRPOTrainer

    args = StareGRPOConfig(output_dir="out", method="stare", variant="C2", ...)   # was GRPOConfig(...)
    trainer = StareGRPOTrainer(model=..., reward_funcs=..., args=args, train_dataset=...)  # was GRPOTrainer
    trainer.train()

:class:`StareGRPOConfig` is TRL's ``GRPOConfig`` plus ``method``, that method's fields, the step options and the
clipped surrogate (``HfArgumentParser``, ``TrlParser`` and YAML work as with TRL's config);
:class:`StareGRPOTrainer` takes exactly ``GRPOTrainer``'s arguments. ``stare train`` builds its trainer through
this same API. Field by field: docs/train.md, "Use it in your own TRL script". ``callbacks=[CheckpointOnSignal()]``
makes a SIGTERM (a scheduler's preemption) finish the step, checkpoint it and stop, as ``stare train`` does.
"""

from __future__ import annotations

from stare_rl.engines.trl.callbacks import CheckpointOnSignal
from stare_rl.engines.trl.config import StareGRPOConfig
from stare_rl.engines.trl.rewards import make_reward_func
from stare_rl.engines.trl.trainer import StareGRPOTrainer

__all__ = ["CheckpointOnSignal", "StareGRPOConfig", "StareGRPOTrainer", "make_reward_func"]
