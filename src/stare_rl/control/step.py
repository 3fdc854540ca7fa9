"""One step controller for every engine: measure -> controllers -> global statistics -> frozen context.

Once per generation (step) batch, before any update on it, an engine adapter hands this rank's micro-batches
to :meth:`StepController.begin_step`, which

1. measures the token-mean entropy of the current policy over the valid tokens of all micro-batches and
   ranks (:func:`stare_rl.control.base.global_token_mean`);
2. updates the controllers: the method's own (declared at ``register_method``) plus the set-up's extra ones
   (e.g. the adaptive entropy-bonus coefficient);
3. computes the method's global statistics when its config asks for them (:class:`~stare_rl.core.registry.GlobalStats`:
   candidates of every micro-batch, gathered over ranks with :func:`~stare_rl.core.selection.gather_values`,
   reduced by the method's pure helper);
4. freezes controller outputs and statistics into the :class:`~stare_rl.core.types.LossContext` used for every
   update on that batch.

Its state (the controllers') is saved next to an engine checkpoint as ``CONTROLLER_FILE`` and restored on
resume. One resume rule for every controller: a checkpoint saved with another method, another set of controllers
or another value of any controller's state-defining settings (``Controller.settings``) is refused, naming each
field with its saved and requested values (:meth:`StepController.check_checkpoint`, called by every engine's resume
path before any compute). Nothing here names a method: every method-specific part comes from its :class:`MethodSpec`.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from stare_rl.control.base import Controller, StepObservation, global_token_mean, setting_differences
from stare_rl.control.target import EntropyTarget
from stare_rl.core.registry import get_method
from stare_rl.core.selection import gather_values
from stare_rl.core.types import LossContext, TokenBatch
from stare_rl.io.runlog import CONTROLLER_FILE, read_json, write_json_atomic

logger = logging.getLogger(__name__)


class StepController:
    """The per-step orchestration of one method's controllers and global statistics (engine-neutral).

    Args:
        method: registered method name.
        method_config: an instance of its config class (default config when None).
        extra_controllers: controllers of the set-up rather than the method (e.g. ``"adaptive_entropy"``);
            their names must not clash with the method's.
        group: process group for the all-reduce / all-gathers (None = default group, or single process).

    Attributes:
        spec: the method's :class:`~stare_rl.core.registry.MethodSpec`.
        controllers: name -> controller (the names key the saved state).
        needs_entropy: the batches must carry ``entropy`` (the method needs it, or a controller measures it).
    """

    def __init__(
        self,
        method: str,
        method_config: Any = None,
        *,
        extra_controllers: dict[str, Controller] | None = None,
        group: Any = None,
    ) -> None:
        self.spec = get_method(method)
        self.config = method_config if method_config is not None else self.spec.config_cls()
        if not isinstance(self.config, self.spec.config_cls):
            raise ValueError(f"method_config for method {method!r} must be {self.spec.config_cls.__name__}, "
                             f"got {type(self.config).__name__}")
        self.controllers: dict[str, Controller] = self.spec.make_controllers(self.config)
        for name, ctrl in (extra_controllers or {}).items():
            if name in self.controllers:
                raise ValueError(f"extra controller {name!r} clashes with method {method!r}'s own controller")
            self.controllers[name] = ctrl
        self.group = group
        self.start_entropy: float | None = None  # the first step batch's entropy: relative targets resolve from it
        self._metrics: dict[str, float] = {}

    @property
    def method(self) -> str:
        return self.spec.name

    @property
    def needs_entropy(self) -> bool:
        return self.spec.entropy_needed(self.config) or bool(self.controllers)

    @property
    def global_stats_enabled(self) -> bool:
        return self.spec.global_stats is not None and bool(self.spec.global_stats.enabled(self.config))

    @property
    def active(self) -> bool:
        """Whether :meth:`begin_step` computes anything (controllers to update or global statistics)."""
        return bool(self.controllers) or self.global_stats_enabled

    # ----------------------------------------------------------------------------- the step

    def begin_step(self, batches: TokenBatch | Sequence[TokenBatch], step: int) -> LossContext:
        """Measure H -> update the controllers -> global statistics -> the frozen context of this step batch.

        Args:
            batches: this rank's micro-batch(es) of the step batch, as the policy is before any update on it.
            step: 0-based generation-batch index.
        """
        batches = _as_list(batches)
        self.update(batches, step)
        return self.context(batches)

    @torch.no_grad()
    def update(self, batches: TokenBatch | Sequence[TokenBatch], step: int) -> None:
        """Steps 1-2 of :meth:`begin_step` only: measure H and update the controllers (no global statistics)."""
        batches = _as_list(batches)
        if not batches:
            raise ValueError("batches is empty; pass this rank's micro-batch(es) of the step batch")
        if not self.controllers and any(b.entropy is None for b in batches):
            self._metrics = {}
            return  # nothing to measure it for
        if any(b.entropy is None for b in batches):
            raise ValueError(f"controllers {sorted(self.controllers)} need batch.entropy (the current policy's), "
                             "got entropy=None")
        h = global_token_mean(batches, "entropy", self.group)  # STARE §4.3: whole step batch, all ranks
        if self.start_entropy is None:  # measured once, before the first update; restored on resume
            self.start_entropy = h
            for line in far_target_warnings(self.controllers, h):
                logger.warning(line)
        obs = StepObservation(entropy=h, step=int(step), batches=tuple(batches), group=self.group,
                              start_entropy=self.start_entropy)
        metrics = {"batch_entropy": h, "start_entropy": self.start_entropy}
        for ctrl in self.controllers.values():
            ctrl.update(obs)
            metrics.update(ctrl.metrics())
        self._metrics = metrics

    @torch.no_grad()
    def context(self, batches: TokenBatch | Sequence[TokenBatch] = (), generator: torch.Generator | None = None
                ) -> LossContext:
        """The controllers' current outputs plus (when enabled) the global statistics of ``batches``."""
        stats: dict[str, Any] = {}
        batches = _as_list(batches)
        if self.global_stats_enabled:
            stats.update(self.global_stats(batches))
        for ctrl in self.controllers.values():
            stats.update(ctrl.context())
        return LossContext(stats=stats, generator=generator)

    def global_stats(self, batches: TokenBatch | Sequence[TokenBatch]) -> dict[str, Any]:
        """The method's global statistics over ``batches`` of this rank and every rank of the group.

        Each candidate slot is concatenated over the micro-batches and all-gathered over the ranks, then the
        method's ``reduce`` turns the gathered slots into ``LossContext.stats`` entries; every rank gets the
        same values. ``{}`` for a method without global statistics.
        """
        gs = self.spec.global_stats
        if gs is None:
            return {}
        batches = _as_list(batches)
        if not batches:
            raise ValueError("batches is empty; pass this rank's micro-batch(es) of the step batch")
        parts = [tuple(gs.candidates(b, self.config)) for b in batches]
        gathered = tuple(gather_values(torch.cat([p[i] for p in parts]), self.group) for i in range(len(parts[0])))
        return dict(gs.reduce(gathered, self.config))

    # ----------------------------------------------------------------------------- state

    def metrics(self) -> dict[str, float]:
        """This step's ``batch_entropy`` and every controller's metrics (engines add their prefix)."""
        return dict(self._metrics)

    def state_dict(self) -> dict[str, Any]:
        """``{controller name: its state}`` (JSON-able plain values)."""
        return {name: ctrl.state_dict() for name, ctrl in self.controllers.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore every controller from ``state`` (``{name: its state}``); ValueError, before anything is
        restored, when the controllers or their state-defining settings differ (:meth:`resume_differences`)."""
        diffs = self.resume_differences(state)
        if diffs:
            raise ValueError(f"controller state of other settings: {'; '.join(diffs)}")
        for name, ctrl in self.controllers.items():
            ctrl.load_state_dict(state[name])

    def resume_differences(self, state: dict[str, Any], method: str | None = None) -> list[str]:
        """What differs between saved controller ``state`` (and its ``method``, when given) and this run's
        request: ``"<field>: saved <a>, requested <b>"`` per setting; empty when resuming is consistent."""
        if method is not None and method != self.method:
            return [f"method: saved {method!r}, requested {self.method!r}"]
        if set(state) != set(self.controllers):  # e.g. weight_control or entropy_bonus changed
            return [f"controllers: saved {sorted(state)}, requested {sorted(self.controllers)} (a setting that "
                    "chooses them changed, e.g. weight_control or entropy_bonus)"]
        return [f"{d} (controller {name!r})" for name, ctrl in self.controllers.items()
                for d in setting_differences(ctrl, state[name])]

    def check_checkpoint(self, checkpoint_dir: str | os.PathLike) -> None:
        """Refuse (ValueError) to resume from ``checkpoint_dir`` when its saved controller state was made under
        other settings than this run's; each differing field is named with both values. Nothing to check when
        the checkpoint has no ``CONTROLLER_FILE``."""
        path = Path(checkpoint_dir) / CONTROLLER_FILE
        if not path.exists():
            return
        saved = read_json(path)
        diffs = self.resume_differences(saved["controllers"], saved.get("method"))
        if diffs:
            raise ValueError(
                f"resume from {checkpoint_dir}: this run's settings differ from the checkpoint's ({'; '.join(diffs)}). "
                "The saved controller state only holds under the settings it was made with: resume with the saved "
                "values, or start a new run in another output_dir")

    def save(self, checkpoint_dir: str | os.PathLike) -> Path:
        """Write ``CONTROLLER_FILE`` into ``checkpoint_dir`` atomically; returns its path."""
        path = Path(checkpoint_dir) / CONTROLLER_FILE
        write_json_atomic(path, {"method": self.method, "controllers": self.state_dict(),
                                 "start_entropy": self.start_entropy})
        return path

    def load(self, checkpoint_dir: str | os.PathLike) -> bool:
        """Restore from ``checkpoint_dir/CONTROLLER_FILE`` (after :meth:`check_checkpoint`); False (with a warning
        if state is lost) when absent."""
        path = Path(checkpoint_dir) / CONTROLLER_FILE
        if not path.exists():
            if self.controllers:
                logger.warning("%s has no %s: controllers %s start fresh", checkpoint_dir, CONTROLLER_FILE,
                               sorted(self.controllers))
            return False
        self.check_checkpoint(checkpoint_dir)
        saved = read_json(path)
        self.load_state_dict(saved["controllers"])
        if saved.get("start_entropy") is not None:  # files written before relative targets have none
            self.start_entropy = float(saved["start_entropy"])
        return True


FAR_TARGET_RATIO = 3.0  # an absolute target this many times above or below the start entropy is warned about


def far_target_warnings(controllers: dict[str, Controller], start_entropy: float) -> list[str]:
    """One line per controller whose absolute target is far (x3 or more) from the starting batch entropy: a gate
    that never opens, or a controller pushing towards a value set for another model. Relative targets follow
    the start and are never warned about."""
    out = []
    for name, ctrl in controllers.items():
        target = getattr(ctrl, "target", None)
        if not isinstance(target, EntropyTarget) or target.relative or not math.isfinite(start_entropy):
            continue
        value = float(target.spec.absolute)
        ratio = start_entropy / value if value > 0 else math.inf
        spread = max(ratio, 1 / ratio) if ratio > 0 else math.inf
        if spread >= FAR_TARGET_RATIO * (1 - 1e-9):  # x3 exactly counts, whatever the rounding
            where = "above" if ratio > 1 else "below"
            out.append(f"{name}: {target.name}={target.spec.spelling()} is absolute and the policy's starting batch entropy "
                       f"is {start_entropy:.3f}, {ratio:.2g}x the target ({where} it): it was set for another "
                       "model's entropy; a relative target (e.g. target_entropy: 0.5x) follows this model's start")
    return out


def _as_list(batches: TokenBatch | Sequence[TokenBatch]) -> list[TokenBatch]:
    return [batches] if isinstance(batches, TokenBatch) else list(batches)
