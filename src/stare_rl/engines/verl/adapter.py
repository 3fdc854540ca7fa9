"""verl adapter: every stare-rl method as a verl policy loss, configured through ``policy_loss``.

This is the only module (with :mod:`stare_rl.engines.verl.main`, the optional exact-gate entry point) that
imports verl, and it does so lazily. It translates tensors, configs and metric names; every formula and
every global statistic comes from the core (:func:`stare_rl.compute_loss`,
:class:`stare_rl.control.step.StepController`).

- :func:`register` puts each core method into ``verl.trainer.ppo.core_algos.POLICY_LOSS_REGISTRY`` as
  ``stare_rl.<name>`` and, unless verl already ships a loss of that name (``vanilla``, ``clip_cov``,
  ``kl_cov``), as ``<name>``. It runs on ``import verl`` through the ``verl.plugins`` entry point.
- ``StareRLPolicyLossConfig`` (built on first access from the core configs, so defaults live once) is
  verl's ``PolicyLossConfig`` plus one ``<method>_<field>`` per core config field, selected with
  ``actor_rollout_ref.actor.policy_loss._target_=stare_rl.engines.verl.adapter.StareRLPolicyLossConfig``.
- :func:`exact_ppo_loss` wraps verl's ``ppo_loss`` (installed with ``set_loss_fn`` by the entry point) to
  hand the per-step controller state and the actor's entropy to the registered loss.
- In the loss, :func:`loss_context` rebuilds the method's :class:`~stare_rl.control.step.StepController` from
  the driver's saved state (or, plugin-only, updates the gate from a surprisal estimate) and computes the
  global statistics over the data-parallel ranks.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import logging
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from stare_rl.control.base import StepObservation, global_token_mean, is_memoryless
from stare_rl.control.setup import bonus_controllers
from stare_rl.control.step import StepController
from stare_rl.core.advantages import broadcast_to_tokens
from stare_rl.core.legacy import current_settings
from stare_rl.core.metrics import loss_metric
from stare_rl.core.registry import compute_loss, get_method, list_methods
from stare_rl.core.surrogate import SurrogateConfig
from stare_rl.core.types import LossContext, TokenBatch

logger = logging.getLogger(__name__)

NAME_PREFIX = "stare_rl."
CONFIG_CLASS_NAME = "StareRLPolicyLossConfig"
CONFIG_TARGET = f"{__name__}.{CONFIG_CLASS_NAME}"
STATE_KEY = "stare_rl_step_state"  # non-tensor key the entry point adds to the actor's update batch
STATS_KEY = "stare_rl_step_stats"  # ... and the method's global statistics of the whole step batch
GATE_MODES = ("auto", "surprisal", "exact")  # policy_loss.gate_entropy
OLD_GATE_FIELD = "stare_gate"  # its old name (stare_rl.core.legacy.RENAMED_SETTINGS), still a field: Hydra refuses
# an override of a key the config does not declare, so a recipe that sets it would not reach the reader
VERL_SELECTION_SCOPE = "global"  # under verl, selections span all data-parallel ranks by default
_VERL_METRICS = {"pg_clipfrac", "pg_clipfrac_lower", "ppo_kl"}  # verl's own names, kept as actor/<name>


@dataclass(frozen=True)
class StepState:
    """What the exact entry point hands the registered loss for one micro-batch (None = not provided).

    Args:
        controllers: the driver's ``StepController.state_dict()`` after this step's update (the STARE gate from
            the batch token-mean entropy of the whole step, measured before the update; the §4.4 schedule).
        entropy: ``(B, T)`` detached entropy of the actor at each response token (80/20 mask, sensitivity).
        old_entropy: ``(B, T)`` entropy of the old policy, stored by verl's old log-prob pass (STEER).
        rewards: ``(B,)`` each response's outcome reward (the sum of verl's ``rm_scores``; Entrocraft).
        step_stats: the method's global statistics over the whole step batch (``selection_scope='global'``),
            computed once by the driver before the update; when None, the loss gathers them per micro-batch
            over the DP ranks (plugin-only path).
        group: data-parallel process group for the global statistics (verl's ``dp_group``).
    """

    controllers: dict[str, Any] | None = None
    entropy: torch.Tensor | None = None
    old_entropy: torch.Tensor | None = None
    step_stats: dict[str, Any] | None = None
    group: Any = None
    rewards: torch.Tensor | None = None


_STEP_STATE: contextvars.ContextVar[StepState | None] = contextvars.ContextVar("stare_rl_step_state", default=None)


@contextlib.contextmanager
def step_state(state: StepState) -> Iterator[None]:
    """Make ``state`` visible to the registered losses called inside the block."""
    token = _STEP_STATE.set(state)
    try:
        yield
    finally:
        _STEP_STATE.reset(token)


# ----------------------------------------------------------------------------- config translation


def verl_field_name(method: str, field_name: str, base_fields: set[str] | None = None) -> str:
    """``policy_loss`` field of a core config field: verl's own name if verl has it, else ``<method>_<field>``.

    The one owner of the mapping: verl's ``policy_loss`` block is flat and shared by every loss mode, so a field two
    methods share (``target_entropy``) needs the method in its name there; nothing else spells that prefix.
    ``base_fields``: verl's own ``PolicyLossConfig`` field names (None: read from verl)."""
    base_fields = _base_fields() if base_fields is None else base_fields
    if field_name in base_fields or field_name.startswith(f"{method}_"):
        return field_name
    return f"{method}_{field_name}"


def _base_fields() -> set[str]:
    from verl.workers.config import PolicyLossConfig

    return {f.name for f in dataclasses.fields(PolicyLossConfig)}


def _verl_default(f: dataclasses.Field) -> Any:
    if f.name == "selection_scope":
        return VERL_SELECTION_SCOPE
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc]


def _adapter_fields() -> list[tuple[str, type, dataclasses.Field]]:
    return [
        ("gate_entropy", str, dataclasses.field(default="auto", metadata={"help": (
            "An adapter setting, not a method field: how verl measures the entropy that a memoryless controller "
            "reads (STARE's §4.3 gate, of stare and stare_sensitivity; weight_control auto has no hard gate). "
            "auto: the exact gate when run through stare_rl.engines.verl.main, else "
            "the surprisal estimate. surprisal: token-mean of -old_log_prob over the micro-batch (all DP ranks), "
            "an unbiased estimate of the token-mean entropy, even under the entry point. exact: require the entry "
            "point (batch entropy measured once per step).")})),
        (OLD_GATE_FIELD, str | None, dataclasses.field(default=None, metadata={"help": (
            "The old name of gate_entropy, read as it with a warning (rename it: the old name will be dropped).")})),
    ]


def _config_specs() -> list[tuple[str, str | None, str | None, Any, dataclasses.Field]]:
    """(verl name, method, core field, type, field) for every field the verl config adds."""
    base, specs, seen = _base_fields(), [], {}
    for method in list_methods():
        cls = get_method(method).config_cls
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            name = verl_field_name(method, f.name, base)
            if name in seen:
                raise ValueError(f"policy_loss field {name!r} is claimed by methods {seen[name]!r} and {method!r}")
            seen[name] = method
            spec = dataclasses.field(default=_verl_default(f), metadata=dict(f.metadata))
            specs.append((name, method, f.name, hints[f.name], spec))
    specs += [(n, None, None, t, f) for n, t, f in _adapter_fields()]
    return specs


def method_config(method: str, policy_loss: Any) -> Any:
    """The core config of ``method`` from a verl ``policy_loss`` (ours or verl's plain one: missing = default)."""
    base, cls = _base_fields(), get_method(method).config_cls
    kwargs = {}
    for f in dataclasses.fields(cls):
        name = verl_field_name(method, f.name, base)
        kwargs[f.name] = getattr(policy_loss, name) if hasattr(policy_loss, name) else _verl_default(f)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        # Name the setting as the user spelled it in verl: the field whose value alone fails the core's validation.
        bad = [f for f in dataclasses.fields(cls) if not _valid_alone(cls, f.name, kwargs[f.name])]
        where = ", ".join(f"actor_rollout_ref.actor.policy_loss.{verl_field_name(method, f.name, base)}="
                          f"{kwargs[f.name]!r}" for f in bad) or "actor_rollout_ref.actor.policy_loss"
        raise ValueError(f"{where}: {e} (method {method!r})") from e


def _valid_alone(cls: type, name: str, value: Any) -> bool:
    """Whether ``cls`` accepts ``name=value`` with every other field at its default."""
    try:
        cls(**{name: value})
    except (TypeError, ValueError):
        return False
    return True


def _validate_policy_loss(self: Any) -> None:
    """``__post_init__`` of the verl config: types, then every core config's own validation."""
    for name, _method, _core, typ, _f in _config_specs():
        value = getattr(self, name)
        ok = isinstance(value, typ) if typ in (str, bool) else (
            isinstance(value, (int, float)) and not isinstance(value, bool) if typ is float else True)
        if not ok:
            raise ValueError(f"actor_rollout_ref.actor.policy_loss.{name}={value!r} must be a {typ.__name__}")
    for method in list_methods():
        method_config(method, self)
    gate_entropy(self)


def gate_entropy(policy_loss: Any) -> str:
    """``policy_loss.gate_entropy`` (a verl config or its raw mapping; missing = ``auto``), checked, with the old
    name ``stare_gate`` read through :func:`stare_rl.core.legacy.current_settings` (the one reader of old names)."""
    given = {k: policy_loss.get(k) for k in ("gate_entropy", OLD_GATE_FIELD) if policy_loss.get(k) is not None}
    if given.get("gate_entropy") == "auto" and OLD_GATE_FIELD in given:
        del given["gate_entropy"]  # the field's default, not a choice: the old name's value stands
    where = "actor_rollout_ref.actor.policy_loss"
    mode = current_settings(given, where).get("gate_entropy", "auto")
    if mode not in GATE_MODES:
        raise ValueError(f"{where}.gate_entropy={mode!r} is not one of {list(GATE_MODES)}")
    return mode


@functools.cache
def _config_class() -> type:
    from verl.workers.config import PolicyLossConfig

    specs = [(name, typ, f) for name, _m, _c, typ, f in _config_specs()]
    cls = dataclasses.make_dataclass(
        CONFIG_CLASS_NAME, specs, bases=(PolicyLossConfig,),
        namespace={"__post_init__": _validate_policy_loss, "__module__": __name__,
                   "__doc__": "verl PolicyLossConfig + one <method>_<field> per stare-rl config field."},
    )
    cls.__qualname__ = CONFIG_CLASS_NAME
    return cls


def __getattr__(name: str) -> Any:  # PEP 562: the config class exists only once verl is importable
    if name == CONFIG_CLASS_NAME:
        return _config_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----------------------------------------------------------------------------- the policy losses


def surrogate_config(actor_config: Any, loss_agg_mode: str) -> SurrogateConfig:
    """verl's clip settings (``clip_ratio_low/high`` fall back to ``clip_ratio``) as a SurrogateConfig."""
    low = actor_config.clip_ratio_low if actor_config.clip_ratio_low is not None else actor_config.clip_ratio
    high = actor_config.clip_ratio_high if actor_config.clip_ratio_high is not None else actor_config.clip_ratio
    c = actor_config.get("clip_ratio_c", 3.0)
    return SurrogateConfig(clip_ratio_low=low, clip_ratio_high=high, clip_ratio_c=c, loss_agg_mode=loss_agg_mode)


def loss_context(name: str, batch: TokenBatch, cfg: Any, policy_loss: Any,
                 state: StepState | None) -> tuple[LossContext, dict[str, float]]:
    """``(LossContext, metrics)`` of one micro-batch: the driver's controller state + global statistics over the DP
    ranks; ``metrics`` are those of the controllers re-set here from the surprisal estimate (the gate the loss
    applied, logged as ``loss/<key>``: no driver logs it), empty when the driver's state is used as it is.

    The entry point's trainer runs the method's StepController once per step and sends its ``state_dict``;
    here a StepController of the same method is rebuilt from it, so every micro-batch sees the same controller
    outputs. Plugin-only (no state), the method's memoryless controllers (``Controller.memoryless``, e.g.
    STARE's gate) are updated from the surprisal estimate below; any other controller needs the driver's state.
    """
    group = state.group if state is not None else None
    ctrl = StepController(name, cfg, group=group)
    exact = state is not None and state.controllers is not None
    if exact:
        ctrl.load_state_dict(state.controllers)
    memoryless = sorted(k for k, c in ctrl.controllers.items() if is_memoryless(c))
    logged: dict[str, float] = {}
    stateful = sorted(set(ctrl.controllers) - set(memoryless))  # these need the driver's per-step state
    mode = gate_entropy(policy_loss)
    if not exact and (stateful or (memoryless and mode == "exact")):
        raise ValueError(
            f"policy_loss.gate_entropy='exact' / controllers {stateful} of method {name!r} (e.g. weight_control, "
            "EntroPIC's PI) need the per-step state of the exact entry point: run "
            "`python -m stare_rl.engines.verl.main ...` instead of verl.trainer.main_ppo")
    if ctrl.controllers and (not exact or mode == "surprisal"):
        if not memoryless:  # e.g. weight_control='auto': a continuous strength with history, nothing to re-set
            raise ValueError(f"policy_loss.gate_entropy='surprisal' re-sets a memoryless controller (a hard gate), but "
                             f"method {name!r} has none (controllers {sorted(ctrl.controllers)}, e.g. "
                             "weight_control='auto'): use gate_entropy 'auto' or 'exact' with stare_rl.engines.verl.main")
        # STARE §4.3 gate, plugin-only: E_{a~pi_old}[-log pi_old(a)] = H(pi_old), so the token-mean surprisal of
        # the old policy is an unbiased estimate of the token-mean entropy (micro-batch, all DP ranks).
        # DEVIATION: the reference gates on the exact batch token-mean entropy measured once per step.
        h_hat = -global_token_mean(batch, "old_log_prob", group)
        for key in memoryless:
            ctrl.controllers[key].update(StepObservation(entropy=h_hat, step=0, group=group))
            logged.update(ctrl.controllers[key].metrics())
    if state is not None and state.step_stats is not None and ctrl.global_stats_enabled:
        # selection_scope='global': the whole step batch's statistics, computed once by the driver
        stats = dict(state.step_stats)
        for controller in ctrl.controllers.values():
            stats.update(controller.context())
        return LossContext(stats=stats), logged
    return ctrl.context([batch]), logged  # plugin-only global scope: this micro-batch over the DP ranks


def verl_token_batch(old_log_prob: torch.Tensor, log_prob: torch.Tensor, advantages: torch.Tensor,
                     response_mask: torch.Tensor, entropy: torch.Tensor | None = None,
                     old_entropy: torch.Tensor | None = None, rewards: torch.Tensor | None = None) -> TokenBatch:
    """Translate verl's policy-loss tensors (``(B, T)``; ``rewards`` ``(B,)``) into a TokenBatch in ``log_prob``'s
    dtype, each response's reward broadcast over its tokens."""
    dtype = log_prob.dtype
    if rewards is not None:
        rewards = broadcast_to_tokens(rewards.to(device=log_prob.device, dtype=dtype), response_mask)  # (B, T)
    return TokenBatch(log_prob=log_prob, old_log_prob=old_log_prob.to(dtype), advantages=advantages.to(dtype),
                      mask=response_mask, entropy=None if entropy is None else entropy.to(dtype),
                      old_entropy=None if old_entropy is None else old_entropy.to(dtype), rewards=rewards)


def _metric_name(method: str, key: str) -> str:
    """verl's own name for its metrics, else the one namespace's ``loss/<key>`` (as from TRL)."""
    return f"actor/{key}" if key in _VERL_METRICS else loss_metric(key)


def make_policy_loss(name: str) -> Callable[..., tuple[torch.Tensor, dict[str, Any]]]:
    """verl policy-loss function for core method ``name`` (signature of ``core_algos.PolicyLossFn``)."""
    get_method(name)  # unknown names raise here, listing the known ones

    def policy_loss(
        old_log_prob: torch.Tensor,
        log_prob: torch.Tensor,
        advantages: torch.Tensor,
        response_mask: torch.Tensor,
        loss_agg_mode: str = "token-mean",
        config: Any = None,
        rollout_is_weights: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        from verl.trainer.ppo.core_algos import agg_loss

        if config is None:
            raise ValueError(f"policy loss {name!r} needs config (verl's actor config), got None")
        cfg = method_config(name, config.policy_loss)
        state = _STEP_STATE.get()
        entropy = state.entropy if state is not None else None
        old_entropy = state.old_entropy if state is not None else None
        rewards = state.rewards if state is not None else None
        batch = verl_token_batch(old_log_prob, log_prob, advantages, response_mask, entropy, old_entropy,
                                 rewards)  # (B, T)
        try:
            ctx, controller_metrics = loss_context(name, batch, cfg, config.policy_loss, state)
            out = compute_loss(name, batch, cfg, surrogate_config(config, loss_agg_mode), ctx)
        except ValueError as e:
            if old_entropy is None and "old_entropy" in str(e):
                raise ValueError(f"{e}. The old policy's entropy is what verl's old log-prob pass stores (field "
                                 "'entropy'); verl hands it to a policy loss only through `python -m "
                                 "stare_rl.engines.verl.main` (not in rollout-correction bypass mode)") from e
            if entropy is None and "entropy" in str(e):
                raise ValueError(f"{e}. verl passes no entropy to a policy loss: run `python -m "
                                 "stare_rl.engines.verl.main` with actor_rollout_ref.actor.calculate_entropy=True"
                                 ) from e
            if rewards is None and "batch.rewards" in str(e):
                raise ValueError(f"{e}. verl hands a policy loss no rewards: run `python -m stare_rl.engines.verl.main` "
                                 "(its loss reads the reward manager's 'rm_scores' of the update batch)") from e
            raise
        token_loss = out.token_loss  # (B, T)
        if rollout_is_weights is not None:  # verl rollout correction (IS weights), as its own losses do
            token_loss = token_loss * rollout_is_weights
        loss = agg_loss(loss_mat=token_loss, loss_mask=response_mask, loss_agg_mode=loss_agg_mode,
                        **config.global_batch_info)
        return loss, {_metric_name(name, k): float(v) for k, v in {**out.metrics, **controller_metrics}.items()}

    policy_loss.__name__ = policy_loss.__qualname__ = f"stare_rl_{name}_policy_loss"
    policy_loss.__doc__ = f"stare-rl method {name!r} as a verl policy loss (see stare_rl.engines.verl.adapter)."
    policy_loss._stare_rl_method = name  # type: ignore[attr-defined]
    return policy_loss


def register() -> list[str]:
    """Register every core method in verl's policy-loss registry; returns the names added (idempotent).

    ``stare_rl.<name>`` always; the bare ``<name>`` unless verl already has its own loss of that name.
    """
    from verl.trainer.ppo import core_algos

    added = []
    for name in list_methods():
        fn = make_policy_loss(name)
        existing = core_algos.POLICY_LOSS_REGISTRY.get(name)
        bare_free = existing is None or hasattr(existing, "_stare_rl_method")
        for alias in [NAME_PREFIX + name] + ([name] if bare_free else []):
            core_algos.register_policy_loss(alias)(fn)
            added.append(alias)
        if not bare_free:
            logger.debug("verl ships its own %r loss; stare-rl's is loss_mode=%s%s", name, NAME_PREFIX, name)
    return added


# ----------------------------------------------------------------------------- exact-gate loss wrapper


def bonus_in_loss(actor_config: Any) -> bool:
    """Whether the loss mode's controllers set an entropy-bonus coefficient (``auto_fallback='bonus'``): its loss
    then adds ``-c H`` and needs the actor's entropy with its gradient."""
    policy_loss = actor_config.policy_loss
    mode = str(policy_loss.get("loss_mode", "")).removeprefix(NAME_PREFIX)
    return mode in list_methods() and bool(bonus_controllers(mode, method_config(mode, policy_loss)))


def exact_ppo_loss(config: Any, model_output: Any, data: Any, dp_group: Any = None) -> tuple[torch.Tensor, Any]:
    """verl's ``ppo_loss`` with the step state, the actor's entropy and the old entropy visible to the loss.

    Installed by :mod:`stare_rl.engines.verl.main` through ``set_loss_fn`` (as ``partial(exact_ppo_loss,
    config=actor_config)``). The entropy is verl's own (``actor.calculate_entropy=True``), detached unless the loss
    adds an entropy bonus of its own (:func:`bonus_in_loss`); the old
    entropy is the ``entropy`` field verl's old log-prob pass stored with the batch (STEER reads it); each
    response's reward is the sum of the reward manager's ``rm_scores`` (Entrocraft reads it); the controllers'
    state comes from the non-tensor field ``STATE_KEY`` that the trainer adds to the update batch.
    """
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils.losses import ppo_loss
    from verl.workers.utils.padding import no_padding_2_padding

    raw = tu.get_non_tensor_data(data=data, key=STATE_KEY, default=None)
    entropy = model_output.get("entropy", None)
    if entropy is not None:
        entropy = no_padding_2_padding(entropy, data)  # (B, T) response tokens
        if not bonus_in_loss(config):  # only an entropy bonus in the loss (auto_fallback) needs H's gradient
            entropy = entropy.detach()
    old_entropy = None
    if "entropy" in data.keys():  # written by verl's _compute_old_log_prob: the old policy's entropy
        old_entropy = data.select("entropy").to_padded_tensor()["entropy"].detach()  # (B, T), like old_log_probs
    rewards = None
    if "rm_scores" in data.keys():  # the reward manager's token-level scores: the outcome sits on the last token
        rewards = data.select("rm_scores").to_padded_tensor()["rm_scores"].detach().sum(dim=-1)  # (B,)
    step_stats = tu.get_non_tensor_data(data=data, key=STATS_KEY, default=None)
    state = StepState(controllers=raw, entropy=entropy, old_entropy=old_entropy, step_stats=step_stats,
                      group=dp_group, rewards=rewards)
    with step_state(state):
        return ppo_loss(config, model_output, data, dp_group)
