"""Refuse, before Ray starts, a stare-rl loss that plain ``python -m verl.trainer.main_ppo`` cannot run.

Some methods need what only the exact entry point (:mod:`stare_rl.engines.verl.main`) provides: a stateful
controller updated once per step on the driver (STARE's ``weight_control`` schedule, EntroPIC's PI), the
exact gate (``gate_entropy=exact``), the actor's entropy in the loss, or the old policy's entropy (STEER). Run
through plain ``main_ppo`` they used to fail only in the actor's first update, after Ray, the workers and
the first rollout had started.

verl's ``main_ppo.main`` calls ``verl.utils.config.validate_config`` on the driver before ``ray.init``, and
binds it with ``from verl.utils.config import validate_config`` when the module runs, i.e. after ``import
verl`` has loaded our plugin. :func:`install` (called by the plugin) therefore wraps that one function, and
only in a process launched as ``verl.trainer.main_ppo`` (``sys.orig_argv``); the wrapper runs
:func:`entry_point_reasons` first and raises with the command to use instead, then calls verl's own
function unchanged. In any other process (workers, our entry point, tests) nothing is wrapped.
"""

from __future__ import annotations

import functools
import shlex
import sys
from typing import Any

from stare_rl.control.base import is_memoryless
from stare_rl.control.step import StepController
from stare_rl.core.registry import BASELINE_METHOD, get_method
from stare_rl.engines.verl.adapter import gate_entropy, method_config

PLAIN_MODULE = "verl.trainer.main_ppo"
ENTRY_MODULE = "stare_rl.engines.verl.main"


def entry_point_reasons(config: Any) -> list[str]:
    """Why ``config``'s stare-rl loss needs the exact entry point (empty: plain main_ppo runs it).

    Args:
        config: verl's whole config (OmegaConf). A loss mode that is not a stare-rl method gives ``[]``.
    """
    from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY

    policy_loss = config.actor_rollout_ref.actor.policy_loss
    loss_fn = POLICY_LOSS_REGISTRY.get(str(policy_loss.get("loss_mode", BASELINE_METHOD)))  # verl's default mode
    name = getattr(loss_fn, "_stare_rl_method", None)  # None: verl's own loss (or unknown: verl says so)
    if name is None:
        return []
    spec = get_method(name)
    ctrl = StepController(name, method_config(name, policy_loss))
    stateful = sorted(k for k, c in ctrl.controllers.items() if not is_memoryless(c))
    reasons = []
    if stateful:
        reasons.append(f"its controllers {stateful} keep state across steps, updated once per step on the driver")
    if ctrl.controllers and gate_entropy(policy_loss) == "exact":
        reasons.append("actor_rollout_ref.actor.policy_loss.gate_entropy='exact' asks for the batch entropy "
                       "measured once per step")
    if spec.entropy_needed(ctrl.config):
        reasons.append("its loss needs the actor's entropy, which verl hands a policy loss only through the entry "
                       "point (with actor_rollout_ref.actor.calculate_entropy=True)")
    if spec.needs_old_entropy:
        reasons.append("its loss needs the old policy's entropy, stored by verl's old log-prob pass and handed to "
                       "the loss only through the entry point")
    if spec.needs_rewards:
        reasons.append("its loss needs each response's reward (the reward manager's rm_scores), handed to the loss "
                       "only through the entry point")
    return reasons


def check_plain_main_ppo(config: Any, argv: list[str] | None = None) -> None:
    """Raise ``ValueError`` naming the loss mode, the reasons and the command to run instead."""
    reasons = entry_point_reasons(config)
    if not reasons:
        return
    mode = config.actor_rollout_ref.actor.policy_loss.loss_mode
    overrides = list(sys.argv[1:] if argv is None else argv)
    if not any(o.startswith("trainer.v1.trainer_mode=") for o in overrides):
        overrides.append("trainer.v1.trainer_mode=stare_rl")
    command = shlex.join(["python", "-m", ENTRY_MODULE, *overrides])
    raise ValueError(
        f"actor_rollout_ref.actor.policy_loss.loss_mode={mode!r} cannot run through plain python -m {PLAIN_MODULE}: "
        + "; ".join(reasons) + f". Run the exact entry point instead (same overrides):\n  {command}")


def launched_as_plain_main_ppo() -> bool:
    """Whether this process was started as ``python -m verl.trainer.main_ppo`` (or its file)."""
    argv = list(getattr(sys, "orig_argv", []))
    if "-m" in argv and argv.index("-m") + 1 < len(argv):
        return argv[argv.index("-m") + 1] == PLAIN_MODULE
    return any(a.replace("\\", "/").endswith("verl/trainer/main_ppo.py") for a in argv[1:2])


def install() -> bool:
    """Wrap ``verl.utils.config.validate_config`` with :func:`check_plain_main_ppo` in a plain main_ppo
    process; returns whether it did. Idempotent."""
    if not launched_as_plain_main_ppo():
        return False
    import verl.utils.config as verl_config

    original = verl_config.validate_config
    if getattr(original, "_stare_rl_guard", False):
        return True

    @functools.wraps(original)
    def validate_config(config: Any, *args: Any, **kwargs: Any) -> Any:
        check_plain_main_ppo(config)
        return original(config, *args, **kwargs)

    validate_config._stare_rl_guard = True  # type: ignore[attr-defined]
    verl_config.validate_config = validate_config
    return True
