"""STARE's settings and what they build: the config family (O1/C2 fields, the gate's target, the W/M control
and the ``auto_*`` settings), their validation, the controllers a config asks for, and the metrics STARE declares.

Shared by :mod:`~stare_rl.methods.stare.loss` and :mod:`~stare_rl.methods.stare.sensitivity`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from stare_rl.control.base import Controller
from stare_rl.control.target import canonical_target
from stare_rl.core.metrics import control_metric, mask_fraction_metric, selection_share_metric
from stare_rl.core.registry import MetricSpec
from stare_rl.core.selection import SCOPE_DEFAULT_NOTE, SELECTION_SCOPES
from stare_rl.methods.stare.auto import AUTO, AutoWeightConfig, AutoWeightController
from stare_rl.methods.stare.gate import GATE, StareGate, StareWeightSchedule

STARE_VARIANTS = ("O1", "C2")
SCOPES = SELECTION_SCOPES  # micro_batch (= batch, the reference) | global (whole step batch)
WEIGHT_CONTROLS = ("fixed", "paper", "auto")


@dataclass(frozen=True)
class StareControlFields(AutoWeightConfig):
    """The fields every STARE-style config shares: W and M, the gate's target (§4.3), the W/M control (§4.4), the
    ``auto_*`` settings of ``weight_control='auto'`` (inherited from
    :class:`~stare_rl.methods.stare.auto.AutoWeightConfig`: one name per setting everywhere), and the variant and
    P, whose defaults and help each method sets (a field a subclass declares again keeps its place in the order).

    Validation (:func:`check_stare_fields`) checks the STARE fields first and the ``auto_*`` fields last."""

    reweight_w: float = field(
        default=1.1, metadata={"help": "W >= 1: weight of L+ tokens while the gate is on."}
    )
    reweight_m: float = field(
        default=0.9, metadata={"help": "M in (0, 1]: weight of L- tokens while the gate is on (C2 only)."}
    )
    target_entropy: float | str = field(
        default=0.3,
        metadata={
            "help": "H_tgt: the gate is on while the batch token-mean entropy is below it (§4.3); also the target of "
            "weight_control paper / auto. A number >= 0 (absolute), or '<r>x' (e.g. '0.5x'): r times the entropy "
            "measured on the first step batch before any update, resolved once, logged and saved (docs/methods.md)."
        },
    )
    weight_control: str = field(
        default="fixed",
        metadata={
            "help": "fixed: W and M stay at reweight_w / reweight_m. paper: STARE §4.4 adaptive schedule, W and M "
            "move by weight_alpha per step from the entropy error (the STARE run script's switch). auto: this "
            "project's PI controller sets log W = -log M every step from the entropy error and replaces the hard "
            "gate (W = M = 1 above the target); reweight_w / reweight_m are then unused (docs/methods.md)."
        },
    )
    weight_alpha: float = field(
        default=0.01, metadata={"help": "§4.4 schedule step per generation batch (STARE run script: 0.01)."}
    )
    weight_w_max: float = field(
        default=1.5, metadata={"help": "§4.4 schedule upper bound of W (STARE run script: 1.5)."}
    )
    weight_m_min: float = field(
        default=0.5, metadata={"help": "§4.4 schedule lower bound of M (STARE run script: 0.5)."}
    )
    variant: str = field(default="O1", metadata={"help": "O1: W on L+ only. C2: W on L+ and M on L- (two-sided)."})
    top_p_ratio: float = field(
        default=0.1, metadata={"help": "P in [0, 1]: fraction of each advantage-sign set selected."}
    )

    def __post_init__(self) -> None:
        check_stare_fields(self)


@dataclass(frozen=True)
class StareConfig(StareControlFields):
    """STARE hyper-parameters; defaults are the paper's 7B recipe (STARE README / run script, §5).

    For 14B/32B models the authors recommend the milder ``reweight_w=1.05, reweight_m=0.95``.
    """

    variant: str = field(
        default="O1",
        metadata={"help": "O1: W on L+ only (the paper's default). C2: W on L+ and M on L- (two-sided)."},
    )
    top_p_ratio: float = field(
        default=0.1,
        metadata={"help": "P in [0, 1]: fraction of each advantage-sign set selected by surprisal."},
    )
    selection_scope: str = field(
        default="batch",
        metadata={
            "help": "micro_batch (alias batch): select inside the batch handed to the loss (reference). "
            "global: the engine gathers "
            "surprisals of the whole global batch and passes thresholds through LossContext."
            + SCOPE_DEFAULT_NOTE
        },
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.selection_scope not in SCOPES:
            raise ValueError(f"selection_scope={self.selection_scope!r} is not one of {list(SCOPES)}")


def check_stare_fields(cfg: StareControlFields) -> None:
    """Validate (and normalise the variant of) a frozen STARE-style config: variant, P, W, M, H_tgt, W/M control,
    then the ``auto_*`` settings."""
    variant = str(cfg.variant).upper()
    if variant not in STARE_VARIANTS:
        raise ValueError(f"variant={cfg.variant!r} is not one of {list(STARE_VARIANTS)}")
    object.__setattr__(cfg, "variant", variant)
    if not 0.0 <= cfg.top_p_ratio <= 1.0:
        raise ValueError(f"top_p_ratio={cfg.top_p_ratio} must be in [0, 1]")
    check_stare_weights(cfg.reweight_w, cfg.reweight_m)
    object.__setattr__(cfg, "target_entropy", canonical_target("target_entropy", cfg.target_entropy))
    if cfg.weight_control not in WEIGHT_CONTROLS:
        raise ValueError(f"weight_control={cfg.weight_control!r} is not one of {list(WEIGHT_CONTROLS)}")
    if cfg.weight_control == "paper":
        try:
            StareWeightSchedule.from_config(cfg)
        except ValueError as err:  # name the config fields, not the controller's arguments
            raise ValueError(f"weight_control='paper': {err} (weight_alpha / weight_w_max / weight_m_min)") from err
    # validates the auto_* fields whatever the mode (a typo fails before a long run), and resolves an unset
    # auto_w_max from auto_fallback (W_MAX_ALONE or HAND_OFF_W) and an unset auto_bonus_span from it: the config
    # holds the values the run uses
    auto = auto_weight_config(cfg)
    object.__setattr__(cfg, "auto_w_max", auto.auto_w_max)
    object.__setattr__(cfg, "auto_bonus_span", auto.auto_bonus_span)


def auto_weight_config(cfg: StareControlFields) -> AutoWeightConfig:
    """The :class:`~stare_rl.methods.stare.auto.AutoWeightConfig` of a STARE-style config's ``auto_*`` fields."""
    return AutoWeightConfig(**{f.name: getattr(cfg, f.name) for f in fields(AutoWeightConfig)})


# What reports plot and tables show for STARE (and its sensitivity variant): the gate, W and M, the selections.
STARE_METRICS = (
    MetricSpec(control_metric("gate_on"), "gate on (share of seeds)", short="gate", ylim=(-0.05, 1.05)),
    MetricSpec(control_metric("reweight_w"), "W (L+ weight)"),
    MetricSpec(control_metric("reweight_m"), "M (L- weight)"),
    MetricSpec(control_metric("entropy_coef"), "entropy bonus c (adaptive or auto_fallback)"),
    MetricSpec(mask_fraction_metric("l_plus"), "L+ token fraction"),
    MetricSpec(mask_fraction_metric("l_minus"), "L- token fraction"),
    MetricSpec(selection_share_metric("l_plus"), "L+ share of |predicted dH|"),
    MetricSpec(selection_share_metric("l_minus"), "L- share of |predicted dH|"),
)


def stare_controllers(cfg: StareControlFields) -> dict[str, Controller]:
    """A STARE-style config's controllers: the §4.3 gate, plus the §4.4 W/M schedule when ``weight_control='paper'``;
    with ``weight_control='auto'`` only the PI controller, which sets ``gate_on``, ``reweight_w`` and ``reweight_m``."""
    if cfg.weight_control == "auto":
        return {AUTO: AutoWeightController(cfg.target_entropy, auto_weight_config(cfg))}
    ctrls: dict[str, Controller] = {GATE: StareGate(cfg.target_entropy)}
    if cfg.weight_control == "paper":
        ctrls["schedule"] = StareWeightSchedule.from_config(cfg)
    return ctrls


def check_stare_weights(reweight_w: float, reweight_m: float) -> None:
    """Raise ValueError unless W >= 1 and 0 < M <= 1 (used by the config and the adaptive schedule)."""
    if not reweight_w >= 1.0:
        raise ValueError(f"reweight_w={reweight_w} must be >= 1 (W amplifies L+)")
    if not 0.0 < reweight_m <= 1.0:
        raise ValueError(f"reweight_m={reweight_m} must be in (0, 1] (M attenuates L-)")
