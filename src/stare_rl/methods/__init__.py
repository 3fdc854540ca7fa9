"""Built-in methods; importing this package registers them. One method, one file (STARE, with its controllers and variants, one package)."""

from stare_rl.methods import (  # noqa: F401
    archer,
    ce_gppo,
    clip_cov,
    entrocraft,
    entropic,
    entropy_advantage,
    high_entropy,
    kl_cov,
    stare,
    steer,
    vanilla,
)
