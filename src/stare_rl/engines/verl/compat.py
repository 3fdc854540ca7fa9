"""verl 0.9 + trl >= 1.x in one environment: the value-head import verl's workers make, answered.

verl 0.9.1 ``models/transformers/monkey_patch.py`` (``apply_monkey_patch``, run on every FSDP actor, critic
and reference model at start-up) does, whenever ``trl`` is importable::

    try:
        from trl.experimental.ppo import AutoModelForCausalLMWithValueHead
    except ImportError:
        from trl import AutoModelForCausalLMWithValueHead
    AutoModelForCausalLMWithValueHead.state_dict = <torch.nn.Module.state_dict>

trl 1.16 (what ``stare-rl[trl]`` pins) has neither name, so with both extras installed every verl actor
dies with ImportError before the first step, on any device. The only other users of the class in verl are
``utils/model.py`` (``load_valuehead_model``: a critic whose checkpoint is not a ``*ForTokenClassification``,
PPO with a value model, never GRPO) and ``hasattr(module, "v_head")`` checks.

We keep trl (the TRL engine needs it) and answer that one import: :func:`install` appends to
``sys.meta_path`` a finder for the single module name ``trl.experimental.ppo`` that is consulted only after
Python's own finders found nothing, i.e. only where trl lacks the module. It serves a module whose
``AutoModelForCausalLMWithValueHead`` is a stand-in class: setting ``state_dict`` on it is harmless (no model
is ever an instance of it), and building one raises an error that says what to do. The plugin module
(:mod:`stare_rl.engines.verl.plugin`) installs it, so it is active exactly in the processes that ``import
verl`` with stare-rl installed, and nowhere else; a trl that still ships the class is left alone.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

SHIMMED_MODULE = "trl.experimental.ppo"
CLASS_NAME = "AutoModelForCausalLMWithValueHead"
MARKER = "__stare_rl_shim__"


class AutoModelForCausalLMWithValueHead:
    """Stand-in for trl's removed value-head wrapper (see the module docstring); never instantiated."""

    __stare_rl_shim__ = True

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "verl asked trl for AutoModelForCausalLMWithValueHead (a critic whose checkpoint is not a "
            "*ForTokenClassification model), which the installed trl no longer has; stare-rl only answers "
            "verl's start-up import. Use a *ForTokenClassification critic checkpoint (num_labels=1), or GRPO "
            "(no critic), or a trl that still ships trl.experimental.ppo in a separate environment.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.from_pretrained()


class _ShimLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # default module creation

    def exec_module(self, module: types.ModuleType) -> None:
        module.__doc__ = f"stare-rl stand-in for {SHIMMED_MODULE} (see {__name__})."
        setattr(module, CLASS_NAME, AutoModelForCausalLMWithValueHead)
        setattr(module, MARKER, True)


class TrlValueHeadFinder(importlib.abc.MetaPathFinder):
    """Finds ``trl.experimental.ppo`` and nothing else; last in ``sys.meta_path``, so a real one wins."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != SHIMMED_MODULE:
            return None
        return importlib.util.spec_from_loader(fullname, _ShimLoader())


def install() -> None:
    """Append the finder to ``sys.meta_path`` once. Imports nothing (trl is imported only if verl asks)."""
    if not any(isinstance(f, TrlValueHeadFinder) for f in sys.meta_path):
        sys.meta_path.append(TrlValueHeadFinder())


def uninstall() -> None:
    """Remove the finder (tests)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TrlValueHeadFinder)]
    if getattr(sys.modules.get(SHIMMED_MODULE), MARKER, False):
        del sys.modules[SHIMMED_MODULE]
