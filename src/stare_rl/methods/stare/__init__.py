"""STARE (surprisal-targeted re-weighting under a closed-loop entropy gate) and everything that is only STARE's.

- :mod:`~stare_rl.methods.stare.config`: the config family, its validation, the controllers it asks for, the metrics.
- :mod:`~stare_rl.methods.stare.loss`: the registered ``stare`` loss (§4.2-§4.3).
- :mod:`~stare_rl.methods.stare.gate`: the target-entropy gate (§4.3) and the adaptive W/M schedule (§4.4).
- :mod:`~stare_rl.methods.stare.auto`: ``weight_control: auto``, this project's PI controller on log W.
- :mod:`~stare_rl.methods.stare.sensitivity`: the ``stare_sensitivity`` variant (selection by S(a)).

Importing this package registers ``stare`` and ``stare_sensitivity``.
"""

from stare_rl.methods.stare import loss, sensitivity  # noqa: F401  (registers the methods)
