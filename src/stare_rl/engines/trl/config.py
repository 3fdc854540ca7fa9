"""TRL configuration of stare-rl: :class:`StareGRPOConfig`, TRL's GRPOConfig plus the method, its fields, the
step options and the clipped surrogate, and the GRPOConfig loss fields that stare-rl replaces.

No stare-rl field is listed twice: the step options and the surrogate are copied from
:class:`~stare_rl.engines.trl.options.StepOptions` and :class:`~stare_rl.core.surrogate.SurrogateConfig`, and the
method fields are generated from the method registry (every registered method's config fields, default ``None``
= the chosen method's own default, help from the config's field metadata). Methods registered after this module
is imported have no fields here: register them before importing it.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import torch
from trl import GRPOConfig

from stare_rl.control.setup import LossSetup
from stare_rl.core.registry import BASELINE_METHOD, get_method, list_methods
from stare_rl.core.surrogate import SurrogateConfig
from stare_rl.engines.trl.options import TARGET_FIELD, StepOptions

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


def _copied(cls: type) -> list[tuple[str, Any, dataclasses.Field]]:
    """``(name, type, field)`` of every field of ``cls``, with its default and help: copied, not re-listed."""
    hints = typing.get_type_hints(cls)
    return [(f.name, hints[f.name], dataclasses.field(default=f.default, default_factory=f.default_factory,
                                                       metadata=dict(f.metadata)))
            for f in dataclasses.fields(cls)]


def method_field_owners() -> dict[str, list[str]]:
    """Field name -> the registered methods whose own config has it (sorted), over every registered method."""
    owners: dict[str, list[str]] = {}
    for name in list_methods():
        for f in dataclasses.fields(get_method(name).config_cls):
            owners.setdefault(f.name, []).append(name)
    return owners


def field_default(f: dataclasses.Field) -> Any:
    """A dataclass field's default value (its factory called)."""
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


def _generated_method_fields() -> list[tuple[str, Any, dataclasses.Field]]:
    """One optional field per name in any registered method's config: default ``None`` (= the chosen method's
    own default), help from the method configs' metadata with each method's default. A name the step options
    define too (``target_entropy``: the method's and the adaptive bonus's target) is the step options' field."""
    out = []
    for name, methods in method_field_owners().items():
        if name in OPTION_FIELDS:
            continue
        parts: dict[str, list[str]] = {}  # help text -> ["method: default", ...]
        hint = None
        for method in methods:
            cls = get_method(method).config_cls
            f = {f.name: f for f in dataclasses.fields(cls)}[name]
            hint = typing.get_type_hints(cls)[name]
            parts.setdefault(f.metadata.get("help", ""), []).append(f"{method}: {field_default(f)!r}")
        text = " ".join(f"[{', '.join(who)}] {help_}".strip() for help_, who in parts.items())
        help_ = f"Method field. {text} Unset: the chosen method's default."
        out.append((name, hint | None, dataclasses.field(default=None, metadata={"help": help_})))
    return out


def _with_fields(*groups: list[tuple[str, Any, dataclasses.Field]]) -> Any:
    """Class decorator (inside ``@dataclass``): add generated fields after the class's own."""

    def add(cls: type) -> type:
        for group in groups:
            for name, hint, f in group:
                cls.__annotations__[name] = hint
                setattr(cls, name, f)
        return cls

    return add


OPTION_FIELDS = tuple(f.name for f in dataclasses.fields(StepOptions))
SURROGATE_FIELDS = tuple(f.name for f in dataclasses.fields(SurrogateConfig))


@dataclasses.dataclass
@_with_fields(_copied(StepOptions), _copied(SurrogateConfig), _generated_method_fields())
class StareGRPOConfig(GRPOConfig):
    r"""
    Configuration class for [`StareGRPOTrainer`]: TRL's [`~trl.GRPOConfig`] plus the policy-loss method of
    stare-rl (STARE, STEER, Clip-Cov, KL-Cov, ...), that method's own fields, the step options and the clipped
    surrogate. Every field is a keyword argument, a ``--flag`` of ``HfArgumentParser`` / ``TrlParser`` and a YAML
    key, exactly like TRL's own config.

    Parameters:
        > stare-rl: the method

        method (`str`, *optional*, defaults to `"vanilla"`):
            Registered policy-loss method (`stare_rl.list_methods()`); `vanilla` is the plain clipped surrogate.
        <method fields> (*optional*, default `None`):
            Every field of every registered method's config (e.g. STARE's `variant`, `top_p_ratio`, `reweight_w`,
            `target_entropy`; STEER's `mapping`, `token_weight_min`); `None` keeps the chosen method's default
            (the paper's value). Setting a field the chosen method does not have is an error naming it.

        > stare-rl: step options (any method)

        advantage_estimator (`str`, defaults to `"grpo"`), dynamic_sampling (`bool`, defaults to `False`),
        dynamic_sampling_mode (`"refill"` or `"mask"`), max_num_gen_batches (`int`, defaults to `10`),
        refill_batch_multiplier (`int`, defaults to `1`), entropy_bonus (`"off"`, `"fixed"` or `"adaptive"`),
        bonus_coef, bonus_step, bonus_coef_min, bonus_coef_max (`float`, *optional*), target_entropy (the
        target of the method and of the adaptive bonus, whichever holds one),
        quadrant_metrics (`bool`, defaults to `True`): see each field's help.

        > stare-rl: the clipped surrogate (replaces `epsilon`, `epsilon_high`, `delta`, `loss_type`)

        clip_ratio_low (`float`, defaults to `0.2`), clip_ratio_high (`float`, defaults to `0.28`),
        clip_ratio_c (`float`, defaults to `3.0`), loss_agg_mode (`str`, defaults to `"token-mean"`).

    TRL's own loss fields that these replace (`loss_type`, `epsilon`, `epsilon_high`, `delta`, `scale_rewards`,
    `beta`, `top_entropy_quantile`, `entropy_coef`, ...) must stay at TRL's defaults: a changed one is an error
    that says which field to use instead. Everything else (generation, vLLM, logging, checkpoints, PEFT, ...) is
    TRL's and passes through untouched. Defaults that differ from TRL: `logging_steps=1`; `bf16` on only when a
    CUDA device is present.
    """

    method: str = dataclasses.field(
        default=BASELINE_METHOD,
        metadata={"help": "Registered policy-loss method (stare_rl.list_methods()): e.g. stare, steer, clip_cov, "
                  "kl_cov, high_entropy; vanilla = the plain clipped surrogate. Its own fields are the method "
                  "fields below (unset: the method's default, the paper's value)."},
    )
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
        check_superseded(self)
        self.loss_setup()  # validates the method, its fields, the step options and the surrogate

    def method_config(self) -> Any:
        """The chosen method's config: its fields that are set, the method's defaults for the rest."""
        spec = get_method(self.method)  # unknown: ValueError listing the registered methods
        own = {f.name for f in dataclasses.fields(spec.config_cls)}
        for name, owners in method_field_owners().items():
            value = getattr(self, name, None)  # None also for a method registered after this class was built
            if name == TARGET_FIELD and self.entropy_bonus == "adaptive":
                continue  # the adaptive bonus's target, whatever the method
            if name not in own and value is not None:
                others = f" (and {', '.join(owners[1:])})" if len(owners) > 1 else ""
                bonus = " or entropy_bonus='adaptive' (its target)" if name == TARGET_FIELD else ""
                raise ValueError(f"{name}={value!r} belongs to method {owners[0]}{others}, not to "
                                 f"method={self.method!r}; set method={owners[0]!r}{bonus} or leave {name} unset")
        return spec.config_cls(**{n: getattr(self, n) for n in own if getattr(self, n, None) is not None})

    def step_options(self) -> StepOptions:
        """The step options (advantage estimator, dynamic sampling, entropy bonus, quadrant metrics)."""
        return StepOptions(**{n: getattr(self, n) for n in OPTION_FIELDS})

    def surrogate_config(self) -> SurrogateConfig:
        """The shared clipped surrogate."""
        return SurrogateConfig(**{n: getattr(self, n) for n in SURROGATE_FIELDS})

    def loss_setup(self) -> LossSetup:
        """What the trainer builds its loss and step controller from (validated)."""
        return self.step_options().loss_setup(self.method, self.method_config(), self.surrogate_config())


def check_superseded(args: GRPOConfig) -> None:
    """ValueError if a GRPOConfig field that a stare-rl field replaces was changed from TRL's default."""
    for name, (default, instead) in SUPERSEDED_FIELDS.items():
        value = getattr(args, name)
        if value != default:
            raise ValueError(f"{name}={value!r} is TRL's own loss setting and is not used by stare-rl; use {instead}")


__all__ = ["SUPERSEDED_FIELDS", "StareGRPOConfig", "check_superseded", "field_default", "method_field_owners"]
