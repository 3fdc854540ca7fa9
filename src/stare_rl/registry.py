"""Name -> method registry (in the spirit of verl's ``register_policy_loss``).

A method is a pure function ``fn(batch, cfg, surrogate, ctx) -> LossOutput`` plus its frozen config class.
Methods register themselves on import of :mod:`stare_rl.methods`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from stare_rl.surrogate import SurrogateConfig
from stare_rl.types import LossContext, LossOutput, TokenBatch

MethodFn = Callable[[TokenBatch, Any, SurrogateConfig, LossContext], LossOutput]


@dataclass(frozen=True)
class GlobalStats:
    """How a method's whole-step-batch statistics are computed across micro-batches and ranks."""

    candidates: Callable[[TokenBatch, Any], tuple[torch.Tensor, ...]]
    reduce: Callable[[tuple[torch.Tensor, ...], Any], dict[str, Any]]
    enabled: Callable[[Any], bool] = lambda cfg: True


@dataclass(frozen=True)
class MethodSpec:
    name: str
    fn: MethodFn
    config_cls: type
    needs_entropy: bool = False
    needs_old_entropy: bool = False
    gated: bool = False
    global_stats: GlobalStats | None = None
    controllers: Callable[[Any], dict[str, Any]] | None = None


_REGISTRY: dict[str, MethodSpec] = {}


def register_method(
    name: str,
    config_cls: type,
    *,
    needs_entropy: bool = False,
    needs_old_entropy: bool = False,
    gated: bool = False,
    global_stats: GlobalStats | None = None,
    controllers: Callable[[Any], dict[str, Any]] | None = None,
) -> Callable[[MethodFn], MethodFn]:
    """Decorator: register ``fn`` under ``name`` with its frozen config dataclass."""

    def deco(fn: MethodFn) -> MethodFn:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise ValueError(f"method {name!r} is already registered")
        _REGISTRY[name] = MethodSpec(
            name, fn, config_cls, needs_entropy, needs_old_entropy, gated, global_stats, controllers
        )
        return fn

    return deco


def _ensure_loaded() -> None:
    import stare_rl.methods  # noqa: F401  (registers the built-in methods)


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
    return spec.fn(batch, cfg, surrogate or SurrogateConfig(), context or LossContext())
