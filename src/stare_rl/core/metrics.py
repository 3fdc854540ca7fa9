"""One metric namespace, the same from every engine (TRL, verl's plug-in and exact entry point).

================================  ==========================================================================
``control/<key>``                 the step controller: ``batch_entropy`` and every controller's ``metrics()``
``loss/<key>``                    the loss: its ``LossOutput.metrics``, ``mean_weight`` (mean token weight) and
                                  ``<mask>_frac`` (valid-token fraction of each selection mask it returns)
``actor/<key>``                   verl's own names, shared by both engines (``actor/pg_loss``, ``actor/entropy``,
                                  ``actor/pg_clipfrac``, ...)
``dynamic_sampling/<key>``        DAPO dynamic sampling (kept rows, refill rounds)
``quadrant/<key>``                the four-quadrant entropy diagnostics (:mod:`stare_rl.core.quadrants`)
================================  ==========================================================================

A method declares which of its metrics are worth plotting at registration
(``register_method(..., metrics=(MetricSpec(...), ...))``); reports and tables read them from the registry.
Runs written before this namespace (``stare/<key>`` from TRL, ``stare_rl/<key>`` and ``actor/<method>/<key>``
from verl) are read under the current names by :func:`current_name`, and so is ``actor/loss/<key>``: verl's
actor prefixes every policy-loss metric with ``actor/``, which no plugin can change. Names that logged a value
another name also carried (:data:`RETIRED`) are read under the name that still carries it.
"""

from __future__ import annotations

from collections.abc import Iterable

CONTROL = "control/"
LOSS = "loss/"
ACTOR = "actor/"
DYNAMIC_SAMPLING = "dynamic_sampling/"
QUADRANT = "quadrant/"

BATCH_ENTROPY = CONTROL + "batch_entropy"  # the step controller's whole-batch token-mean entropy
MEAN_WEIGHT = LOSS + "mean_weight"  # mean token weight of the loss over valid tokens


def control_metric(key: str) -> str:
    """``control/<key>``: a step-controller metric."""
    return CONTROL + key


def loss_metric(key: str) -> str:
    """``loss/<key>``: a loss metric (a key that already has a namespace, ``a/b``, is kept as it is)."""
    return key if "/" in key else LOSS + key


def selection_share_metric(mask: str) -> str:
    """``quadrant/<mask>_share``: a selection's share of the predicted |dH| (:func:`~stare_rl.core.quadrants.quadrant_stats`)."""
    return f"{QUADRANT}{mask}_share"


def mask_fraction_metric(mask: str) -> str:
    """``loss/<mask>_frac``: the valid-token fraction of a selection mask the loss returned."""
    return f"{LOSS}{mask}_frac"


# Older TRL runs logged controller metrics and the ``stare`` loss's metrics both under ``stare/``; these came
# from controllers (the gate, the W/M schedule, weight_control auto, EntroPIC, the adaptive entropy bonus).
_LEGACY_CONTROL_KEYS = {"batch_entropy", "gate_on", "reweight_w", "reweight_m", "entropy_coef"}
_LEGACY_CONTROL_PREFIXES = ("auto_", "entropic_")


# Names retired because they repeated a value logged under another name (issue 44: each value logged once).
RETIRED = {
    CONTROL + "auto_target": CONTROL + "target_entropy",  # weight_control auto's target
    CONTROL + "entropic_target_entropy": CONTROL + "target_entropy",  # EntroPIC's target
}


def _legacy_is_control(rest: str) -> bool:
    return rest in _LEGACY_CONTROL_KEYS or rest.startswith(_LEGACY_CONTROL_PREFIXES)


def current_name(key: str, methods: Iterable[str] = ()) -> str:
    """The current name of a metric ``key`` as logged by any version (unchanged when already current).

    Args:
        key: the logged name.
        methods: registered method names (older runs prefixed a loss's metrics with its method's name).
    """
    name = _current_namespace(key, methods)
    return RETIRED.get(name, name)


def _current_namespace(key: str, methods: Iterable[str]) -> str:
    """``key`` in the one namespace (the prefixes of older versions replaced)."""
    if key.startswith("stare/dynamic_sampling"):
        rest = key.removeprefix("stare/dynamic_sampling").lstrip("/_")
        return DYNAMIC_SAMPLING + rest
    if key.startswith("stare_rl/"):  # verl's exact entry point logged only the step controller's metrics
        return CONTROL + key.removeprefix("stare_rl/")
    if key.startswith("stare/"):
        rest = key.removeprefix("stare/")
        return CONTROL + rest if _legacy_is_control(rest) else LOSS + rest
    head, _, rest = key.partition("/")
    if head == "actor" and rest.startswith(LOSS) and rest != LOSS:  # verl's actor prefixes the loss's metrics
        return rest
    if head == "actor" and "/" in rest and rest.split("/", 1)[0] in set(methods):
        return LOSS + rest.split("/", 1)[1]
    if rest and "/" not in rest and head in set(methods):
        return LOSS + rest
    return key
