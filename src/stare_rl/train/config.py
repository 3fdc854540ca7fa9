"""Configuration of ``stare train``: model/task fields, method selection, and the engine-agnostic loss set-up.

The command line is TRL's convention: GRPOConfig fields (the engine) + :class:`ModelTaskArgs` +
:class:`MethodArgs` + :class:`stare_rl.core.surrogate.SurrogateConfig` + the chosen method's own config class,
from a YAML file (``--config``) overridden by ``--key value`` flags. Defaults live in those dataclasses only;
``configs/default.yaml`` is the embedded offline run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, get_type_hints

import yaml

from stare_rl.control.setup import LossSetup
from stare_rl.core.entropy_bonus import EntropyBonusConfig
from stare_rl.core.surrogate import SurrogateConfig
from stare_rl.train.warmstart import WarmStartConfig

DEFAULT_CONFIG = "default.yaml"
REWARDS = ("auto", "task", "math")


@dataclass(frozen=True)
class ModelTaskArgs:
    """What to train and on which data."""

    model: str = field(
        default="tiny",
        metadata={
            "help": "'tiny': the project's ~1M-parameter model for `task`, warm-started by SFT and cached in "
            "cache_dir. Otherwise a local Hugging Face model dir or a Hub id (pre-downloaded; no download at run time)."
        },
    )
    task: str = field(
        default="arithmetic",
        metadata={"help": "Embedded offline task generating prompts and verifiable rewards (e.g. arithmetic, countdown)."},
    )
    dataset: str | None = field(
        default=None,
        metadata={
            "help": "Training data instead of the embedded task: a parquet/jsonl file or a saved HF dataset dir with "
            "{prompt, answer} or the verl/DAPO schema (prompt as chat messages, reward_model.ground_truth)."
        },
    )
    eval_dataset: str | None = field(
        default=None,
        metadata={"help": "Held-out data for the final evaluation. Default: the task's test split, or with `dataset` "
                  "min(eval_size, a fifth) of its rows drawn with `seed` and removed from training."},
    )
    reward: str = field(
        default="auto",
        metadata={"help": "auto | task | math. auto: the task's reward, or math-verify on \\boxed{} for a dataset."},
    )
    train_size: int = field(default=4096, metadata={"help": "Number of training prompts drawn from the task."})
    eval_size: int = field(default=256, metadata={"help": "Number of held-out prompts for the final evaluation."})
    eval_k: int = field(default=8, metadata={"help": "Samples per prompt in the final evaluation (avg@k, pass@k)."})
    final_eval: bool = field(default=True, metadata={"help": "Evaluate the final model and write eval.json."})
    eval_every: int = field(
        default=0,
        metadata={"help": "Held-out learning curve: every this many steps (and at step 0) sample eval_samples "
                  "completions for eval_prompts held-out prompts; logs eval/avg@n, eval/pass@k (unbiased, k up to "
                  "n), eval/greedy_acc, eval/response_length to metrics.jsonl. 0 = off."},
    )
    eval_samples: int = field(
        default=32, metadata={"help": "Held-out curve: samples per prompt (n of the unbiased pass@k estimator)."}
    )
    eval_prompts: int = field(
        default=64, metadata={"help": "Held-out curve: the first this many of the eval_size held-out prompts."}
    )
    initial_eval: bool = field(
        default=False,
        metadata={"help": "Also evaluate the starting policy the same way before training (eval_initial.json), "
                  "so a run prints its own before/after numbers."},
    )
    cache_dir: str = field(
        default="~/.cache/stare-rl", metadata={"help": "Where the warm-started tiny models are cached."}
    )
    torch_threads: int | None = field(
        default=None,
        metadata={
            "help": "CPU threads for torch during the warm start, GRPO and evaluation (default: torch's choice). "
            "The tiny model's ops are too small to gain from more than 1, and on a busy machine extra threads "
            "stall badly."
        },
    )
    reward_timeout_s: float = field(
        default=10.0, metadata={"help": "A reward call running longer scores 0 (counted in reward/errors)."}
    )
    warn_after_steps: int = field(
        default=10,
        metadata={"help": "Warn when the reward is 0 for every completion (or identical within every prompt group) "
                  "for this many consecutive steps: nothing is being learnt."},
    )

    def __post_init__(self) -> None:
        if self.reward not in REWARDS:
            raise ValueError(f"reward={self.reward!r} is not one of {list(REWARDS)}")
        if self.torch_threads is not None and int(self.torch_threads) < 1:
            raise ValueError(f"torch_threads={self.torch_threads} must be >= 1 (or null for torch's default)")
        if not isinstance(self.eval_every, int) or isinstance(self.eval_every, bool) or self.eval_every < 0:
            raise ValueError(f"eval_every={self.eval_every!r} must be an integer >= 0 (0 = no held-out curve)")
        for name in ("train_size", "eval_size", "eval_k", "eval_samples", "eval_prompts", "warn_after_steps"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        if not (math.isfinite(self.reward_timeout_s) and self.reward_timeout_s > 0):
            raise ValueError(f"reward_timeout_s={self.reward_timeout_s} must be a finite number > 0")
        for name in ("dataset", "eval_dataset"):
            path = getattr(self, name)
            if path is not None and not Path(path).expanduser().exists():
                raise ValueError(f"{name}={path!r}: no such file or directory")
        if self.model != "tiny" and _looks_like_path(self.model) and not Path(self.model).expanduser().exists():
            raise ValueError(f"model={self.model!r}: no such directory")


def _with_warmstart_fields(cls: type) -> type:
    """Add one optional field per :class:`~stare_rl.train.warmstart.WarmStartConfig` field, named ``tiny_<name>``
    for the model shape and ``warmstart_<name>`` for the rest, with that field's help; ``None`` = its default.
    One definition: a new WarmStartConfig field is a new ``stare train`` flag and YAML key by itself."""
    hints = get_type_hints(WarmStartConfig)
    for f in dataclasses.fields(WarmStartConfig):
        name = warmstart_arg_name(f.name)
        cls.__annotations__[name] = hints[f.name] | None
        help_text = f"{f.metadata['help']} None: WarmStartConfig's {f.default!r}."
        setattr(cls, name, field(default=None, metadata={"help": help_text}))
    return dataclass(frozen=True)(cls)


def warmstart_arg_name(config_field: str) -> str:
    """The ``stare train`` name of a WarmStartConfig field: ``tiny_hidden_size``, ``warmstart_max_steps``."""
    return ("tiny_" if config_field in TINY_SHAPE_FIELDS else "warmstart_") + config_field


TINY_SHAPE_FIELDS = ("hidden_size", "num_layers", "num_heads")


@_with_warmstart_fields
class WarmStartArgs:
    """Settings of the supervised warm start of ``model: tiny`` (:mod:`stare_rl.train.warmstart`).

    Besides ``warmstart_seed``, one field per :class:`~stare_rl.train.warmstart.WarmStartConfig` field (added by
    ``_with_warmstart_fields``): ``tiny_<name>`` for the model shape, ``warmstart_<name>`` for the SFT settings;
    ``None`` means WarmStartConfig's own default. Every setting is part of the warm start's cache key, so runs
    with the same settings share one cached model.
    """

    warmstart_seed: int = field(
        default=0,
        metadata={"help": "Seed of the warm start (model init, SFT data order), separate from the GRPO `seed` so "
                  "runs with different seeds share one cached warm start."},
    )

    def __post_init__(self) -> None:
        if not isinstance(self.warmstart_seed, int) or isinstance(self.warmstart_seed, bool) or self.warmstart_seed < 0:
            raise ValueError(f"warmstart_seed={self.warmstart_seed!r} must be an integer >= 0")
        self.warmstart_config()  # validates the rest

    def warmstart_config(self) -> WarmStartConfig:
        """The :class:`~stare_rl.train.warmstart.WarmStartConfig` these settings describe."""
        given = {f.name: getattr(self, warmstart_arg_name(f.name)) for f in dataclasses.fields(WarmStartConfig)
                 if getattr(self, warmstart_arg_name(f.name)) is not None}
        try:
            return WarmStartConfig(**given)
        except (TypeError, ValueError) as err:  # name the command-line field, not WarmStartConfig's
            message = str(err)
            for f in sorted(dataclasses.fields(WarmStartConfig), key=lambda f: -len(f.name)):
                if message.startswith(f.name + "="):
                    raise ValueError(warmstart_arg_name(f.name) + message[len(f.name):]) from err
            raise ValueError(f"warm start settings: {message}") from err


def _looks_like_path(s: str) -> bool:
    return s.startswith((".", "/", "~")) or s.count("/") > 1


@dataclass(frozen=True)
class MethodArgs:
    """Which registered loss to train with, and the controllers and batch-level options around it.

    ``None`` for a controller setting means the controller's own default (:mod:`stare_rl.control.base`).
    """

    method: str = field(
        default="stare",
        metadata={"help": "Registered method (`stare train --help` lists them). Its own fields (e.g. STARE's "
                  "weight_control) are listed by `stare train --method NAME --help`."},
    )
    advantage_estimator: str = field(
        default="grpo", metadata={"help": "Registered advantage estimator: grpo | drgrpo | rloo (stare_rl.core.advantages)."}
    )
    dynamic_sampling: bool = field(
        default=False,
        metadata={"help": "DAPO dynamic sampling (§3.2): prompt groups whose rewards all agree carry no gradient; "
                  "see dynamic_sampling_mode for what replaces them."},
    )
    dynamic_sampling_mode: str = field(
        default="refill",
        metadata={"help": "refill: generate more prompt groups until the batch holds as many informative groups as "
                  "it has rows for, then truncate (DAPO and the STARE script; the batch size stays constant). "
                  "mask: keep the one generation and drop the constant groups from the loss (the batch shrinks)."},
    )
    max_num_gen_batches: int = field(
        default=10,
        metadata={"help": "refill: at most this many generation rounds per step, the first included (STARE script: "
                  "10). Short at the limit: the batch is filled with constant groups masked out of the loss."},
    )
    refill_batch_multiplier: int = field(
        default=1,
        metadata={"help": "refill: each extra round draws this many generation batches of prompts (the STARE script "
                  "generates 3 x the train batch per round)."},
    )
    entropy_bonus: str = field(
        default="off", metadata={"help": "off | fixed | adaptive: entropy bonus added to any method's loss."}
    )
    bonus_coef: float | None = field(
        default=None, metadata={"help": "Fixed bonus coefficient, or the adaptive controller's initial value."}
    )
    bonus_target_entropy: float | None = field(
        default=None, metadata={"help": "Adaptive bonus: target token-mean entropy (the coefficient grows below it)."}
    )
    bonus_step: float | None = field(default=None, metadata={"help": "Adaptive bonus: coefficient step per batch."})
    bonus_coef_min: float | None = field(default=None, metadata={"help": "Adaptive bonus: lower bound."})
    bonus_coef_max: float | None = field(default=None, metadata={"help": "Adaptive bonus: upper bound."})
    quadrant_metrics: bool = field(
        default=True,
        metadata={"help": "Log the four-quadrant token diagnostics (quadrant/*) and actor/entropy every step. Cost: "
                  "the full-vocabulary entropy of every token on every training forward (TRL: inside its fused "
                  "LM-head pass, a few percent of a step at V=151,936 with a small model, docs/benchmarks.md); off, "
                  "the entropy is computed only where the method or its controllers need it."},
    )

    def __post_init__(self) -> None:
        from stare_rl.core.advantages import list_advantages
        from stare_rl.core.registry import get_method

        get_method(self.method)  # unknown method -> ValueError listing the known ones
        if self.advantage_estimator not in list_advantages():
            raise ValueError(f"advantage_estimator={self.advantage_estimator!r} is not one of {list_advantages()}")
        if self.entropy_bonus not in BONUS_MODES:
            raise ValueError(f"entropy_bonus={self.entropy_bonus!r} is not one of {list(BONUS_MODES)}")
        if self.dynamic_sampling_mode not in DYNAMIC_SAMPLING_MODES:
            raise ValueError(f"dynamic_sampling_mode={self.dynamic_sampling_mode!r} is not one of "
                             f"{list(DYNAMIC_SAMPLING_MODES)}")
        for name in ("max_num_gen_batches", "refill_batch_multiplier"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}={value!r} must be an integer >= 1")

    def _given(self, prefix: str, names: tuple[str, ...]) -> dict[str, float]:
        return {n: getattr(self, prefix + n) for n in names if getattr(self, prefix + n) is not None}

    def loss_setup(self, method_config: Any, surrogate: SurrogateConfig) -> LossSetup:
        """The engine-agnostic :class:`LossSetup` (controller settings validated by building them)."""
        from stare_rl.control.base import AdaptiveEntropyCoef

        bonus = adaptive = None
        if self.entropy_bonus == "fixed":
            bonus = EntropyBonusConfig() if self.bonus_coef is None else EntropyBonusConfig(coef=self.bonus_coef)
        elif self.entropy_bonus == "adaptive":
            adaptive = self._given("bonus_", ("target_entropy", "step", "coef_min", "coef_max"))
            if self.bonus_coef is not None:
                adaptive["init"] = self.bonus_coef
            AdaptiveEntropyCoef(**adaptive)  # validates
        return LossSetup(
            method=self.method,
            method_config=method_config,
            surrogate=surrogate,
            advantage_estimator=self.advantage_estimator,
            dynamic_sampling=self.dynamic_sampling,
            dynamic_sampling_mode=self.dynamic_sampling_mode,
            max_num_gen_batches=self.max_num_gen_batches,
            refill_batch_multiplier=self.refill_batch_multiplier,
            entropy_bonus=bonus,
            adaptive_entropy=adaptive,
            quadrant_metrics=self.quadrant_metrics,
        )


BONUS_MODES = ("off", "fixed", "adaptive")
DYNAMIC_SAMPLING_MODES = ("refill", "mask")


def default_config_text() -> str:
    """The embedded default YAML (``stare train`` with no ``--config``)."""
    return resources.files("stare_rl").joinpath("configs", DEFAULT_CONFIG).read_text()


def load_task_config(task: str) -> dict[str, Any]:
    """The embedded defaults of one task (``configs/<task>.yaml``, e.g. the tool task's shorter run), or ``{}``.

    Applied on top of the embedded default when no ``--config`` is given; command-line flags still win.
    """
    path = resources.files("stare_rl").joinpath("configs", f"{task}.yaml")
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"embedded config for task={task!r} must be a mapping of field: value")
    return data


def load_yaml_config(path: str | None) -> dict[str, Any]:
    """A flat ``{field: value}`` mapping from a YAML file (``None``: the embedded default)."""
    if path is None:
        text, where = default_config_text(), f"<embedded {DEFAULT_CONFIG}>"
    else:
        p = Path(path).expanduser()
        if not p.is_file():
            raise ValueError(f"config={path!r}: no such file")
        text, where = p.read_text(), str(p)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(f"config={where!r} is not valid YAML: {err}") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"config={where!r} must be a mapping of field: value, got {type(data).__name__}")
    nested = sorted(k for k, v in data.items() if isinstance(v, dict) and k not in DICT_FIELDS)
    if nested:
        raise ValueError(f"config={where!r}: fields must be flat (field: value); nested sections {nested}")
    return data


# GRPOConfig fields whose value is itself a mapping.
DICT_FIELDS = {
    "model_init_kwargs",
    "generation_kwargs",
    "chat_template_kwargs",
    "transformers_continuous_batching_config",
    "gradient_checkpointing_kwargs",
    "lr_scheduler_kwargs",
}
