"""The pure core: containers, the method registry, token quantities, the shared surrogate and aggregation,
selection helpers, advantage estimators, the entropy bonus and the quadrant diagnostics. Pure functions on
``(B, T)`` tensors; imports nothing else of stare_rl."""
