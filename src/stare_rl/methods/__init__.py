"""Built-in methods; importing this package registers them. One method, one file."""

from stare_rl.methods import (  # noqa: F401
    clip_cov,
    high_entropy,
    kl_cov,
    stare,
    stare_sensitivity,
    steer,
    vanilla,
)
