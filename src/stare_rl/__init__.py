"""stare-rl: token-level entropy control for RL fine-tuning of language models.

The core is engine-agnostic: pure functions on ``(B, T)`` tensors, registered by name.

    >>> from stare_rl import TokenBatch, compute_loss, list_methods
    >>> out = compute_loss("stare", batch, context=LossContext(stats={"gate_on": True}))
    >>> loss = aggregate(out.token_loss, batch.mask, "token-mean")
"""

from stare_rl.core.aggregate import AGG_MODES, aggregate
from stare_rl.core.registry import compute_loss, get_method, list_methods, make_config
from stare_rl.core.surrogate import SurrogateConfig, clipped_surrogate
from stare_rl.core.types import LossContext, LossOutput, TokenBatch

__version__ = "0.1.0"

__all__ = [
    "AGG_MODES",
    "LossContext",
    "LossOutput",
    "SurrogateConfig",
    "TokenBatch",
    "aggregate",
    "clipped_surrogate",
    "compute_loss",
    "get_method",
    "list_methods",
    "make_config",
]
