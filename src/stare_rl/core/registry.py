"""Name -> method registry (in the spirit of verl's ``register_policy_loss``).

A method is a pure function ``fn(batch, cfg, surrogate, ctx) -> LossOutput`` plus its frozen config class
and its traits (entropy needs, gate, global statistics, controllers), all declared at :func:`register_method`.
Methods register themselves on import of :mod:`stare_rl.methods`; nothing outside a method's file names it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from stare_rl.core.surrogate import SurrogateConfig
from stare_rl.core.types import LossContext, LossOutput, TokenBatch

BUILTIN_METHODS = "stare_rl.methods"  # the package whose import registers the built-in methods
BASELINE_METHOD = "vanilla"  # plain GRPO/PPO clipped surrogate: the default wherever no method is chosen (verl's too)

MethodFn = Callable[[TokenBatch, Any, SurrogateConfig, LossContext], LossOutput]


@dataclass(frozen=True)
class GlobalStats:
    """How a method's whole-step-batch statistics are computed across micro-batches and ranks.

    Args:
        candidates: ``(batch, cfg) -> tuple of 1-D tensors`` from one micro-batch (e.g. the surprisals of its
            valid A > 0 and A < 0 tokens). The step controller concatenates each slot over this rank's
            micro-batches and all-gathers it over the ranks.
        reduce: ``(gathered slots, cfg) -> {key: value}``: the pure helper turning the gathered values into
            entries of ``LossContext.stats`` (e.g. thresholds).
        enabled: ``cfg -> bool``: whether this config asks for them (e.g. ``selection_scope == "global"``).
    """

    candidates: Callable[[TokenBatch, Any], tuple[torch.Tensor, ...]]
    reduce: Callable[[tuple[torch.Tensor, ...], Any], dict[str, Any]]
    enabled: Callable[[Any], bool] = lambda cfg: True


@dataclass(frozen=True)
class MetricSpec:
    """A metric a method wants plotted and tabled (reports read these from the registry, never by name).

    Args:
        key: the logged name in the one namespace of :mod:`stare_rl.core.metrics` (e.g. ``control/gate_on``).
        label: panel and table label.
        short: name in the training progress bar (None: not shown there).
        ylim: fixed y-range of its panel (None: automatic).
    """

    key: str
    label: str
    short: str | None = None
    ylim: tuple[float, float] | None = None


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its loss function, config class and traits (declared once, at registration).

    Args:
        name: registered name.
        fn: ``fn(batch, cfg, surrogate, ctx) -> LossOutput``.
        config_cls: the frozen config dataclass.
        needs_entropy: ``batch.entropy`` (current policy, full vocabulary, with its gradient) must be given: a
            bool, or ``cfg -> bool`` when only some settings need it; read it with :meth:`entropy_needed`.
        needs_old_entropy: ``batch.old_entropy`` (behaviour / old policy) must be given.
        needs_rewards: ``batch.rewards`` (each response's raw outcome reward) must be given.
        global_stats: how to compute whole-step-batch statistics (None: the method has none).
        controllers: ``cfg -> {name: controller}`` (:class:`stare_rl.control.base.Controller`); the names key the
            saved state. None: the method keeps no state across steps.
        metrics: the method's metrics worth a plot panel and a table column (:class:`MetricSpec`).
    """

    name: str
    fn: MethodFn
    config_cls: type
    needs_entropy: bool | Callable[[Any], bool] = False
    needs_old_entropy: bool = False
    global_stats: GlobalStats | None = None
    controllers: Callable[[Any], dict[str, Any]] | None = None
    metrics: tuple[MetricSpec, ...] = ()
    needs_rewards: bool = False

    def entropy_needed(self, cfg: Any = None) -> bool:
        """Whether the loss needs ``batch.entropy`` under ``cfg`` (None: the default config)."""
        if callable(self.needs_entropy):
            return bool(self.needs_entropy(cfg if cfg is not None else self.config_cls()))
        return bool(self.needs_entropy)

    def make_controllers(self, cfg: Any) -> dict[str, Any]:
        """This method's controllers for ``cfg`` (``{}`` when it keeps no state)."""
        return dict(self.controllers(cfg)) if self.controllers is not None else {}


_REGISTRY: dict[str, MethodSpec] = {}


def register_method(
    name: str,
    config_cls: type,
    *,
    needs_entropy: bool | Callable[[Any], bool] = False,
    needs_old_entropy: bool = False,
    global_stats: GlobalStats | None = None,
    controllers: Callable[[Any], dict[str, Any]] | None = None,
    metrics: tuple[MetricSpec, ...] = (),
    needs_rewards: bool = False,
) -> Callable[[MethodFn], MethodFn]:
    """Decorator: register ``fn`` under ``name`` with its frozen config dataclass and traits (see :class:`MethodSpec`)."""

    def deco(fn: MethodFn) -> MethodFn:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise ValueError(f"method {name!r} is already registered")
        _REGISTRY[name] = MethodSpec(name, fn, config_cls, needs_entropy, needs_old_entropy, global_stats,
                                     controllers, tuple(metrics), needs_rewards)
        return fn

    return deco


def _ensure_loaded() -> None:
    # The built-in methods register themselves when their package is imported. Found by name, as a plug-in
    # would be: the core is the bottom layer and never imports ``methods/`` (the import contract checks it).
    importlib.import_module(BUILTIN_METHODS)


def list_methods() -> list[str]:
    """Names of all registered methods, sorted."""
    _ensure_loaded()
    return sorted(_REGISTRY)


def get_method(name: str) -> MethodSpec:
    """The :class:`MethodSpec` registered under ``name``; unknown names list the known ones."""
    _ensure_loaded()
    if name not in _REGISTRY:
        raise ValueError(f"method={name!r} is not registered; known methods: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def declared_metrics() -> list[MetricSpec]:
    """Every registered method's declared metrics, each key once, in method-name order."""
    _ensure_loaded()
    seen: dict[str, MetricSpec] = {}
    for name in sorted(_REGISTRY):
        for spec in _REGISTRY[name].metrics:
            seen.setdefault(spec.key, spec)
    return list(seen.values())


def make_config(name: str, **kwargs: Any) -> Any:
    """Build method ``name``'s config from keyword arguments, rejecting unknown fields by name."""
    cls = get_method(name).config_cls
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise ValueError(f"unknown field(s) {unknown} for method {name!r}; known fields: {sorted(known)}")
    return cls(**kwargs)


def compute_loss(
    name: str,
    batch: TokenBatch,
    config: Any = None,
    surrogate: SurrogateConfig | None = None,
    context: LossContext | None = None,
) -> LossOutput:
    """Run method ``name`` on ``batch``; ``None`` arguments take their defaults (the papers' values)."""
    spec = get_method(name)
    cfg = config if config is not None else spec.config_cls()
    if not isinstance(cfg, spec.config_cls):
        raise ValueError(f"config for method {name!r} must be {spec.config_cls.__name__}, got {type(cfg).__name__}")
    for attr, needed, what in (("entropy", spec.entropy_needed(cfg), "per-token entropy"),
                               ("old_entropy", spec.needs_old_entropy, "per-token entropy"),
                               ("rewards", spec.needs_rewards, "each response's outcome reward")):
        if needed and getattr(batch, attr) is None:
            raise ValueError(f"method {name!r} needs batch.{attr} ({what}), got {attr}=None")
    return spec.fn(batch, cfg, surrogate or SurrogateConfig(), context or LossContext())
