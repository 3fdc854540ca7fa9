"""``stare train``, step 1: argv -> a :class:`Plan` (every field parsed and validated, before any compute).

The command line is TRL's convention: YAML (``--config``, layered on the embedded default) overridden by
``--key value`` flags, over GRPOConfig + the model/task, method, surrogate and warm-start sections.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stare_rl.core.legacy import current_flags
from stare_rl.core.registry import get_method, list_methods
from stare_rl.engines.trl.options import TARGET_FIELD
from stare_rl.models.pretrained import is_pretrained_name
from stare_rl.train.argv import (
    coerce_config_values,
    join_negative_values,
    owners_of_field,
    raise_instead_of_exit,
)
from stare_rl.train.checks import check_numbers, check_output_dir
from stare_rl.train.config import (
    DEFAULT_CONFIG,
    TINY_SHAPE_FIELDS,
    ModelTaskArgs,
    WarmStartArgs,
    base_config_name,
    load_task_config,
    load_yaml_config,
    warmstart_arg_name,
)
from stare_rl.train.warmstart import WarmStartConfig

CONFIG_BASES = ("default", "none")
EPILOG = (
    "Fields come from TRL's GRPOConfig, the model/task and method sections, the shared clipped surrogate and "
    "the chosen method's own config (shown for --method, default stare). YAML keys and --flags use the same "
    "names. The embedded default (stare_rl/configs/default.yaml) is always the base: --config is layered on it. "
    "Docs: docs/train.md."
)


@dataclass
class Plan:
    """A fully parsed and validated run, before any compute."""

    grpo: Any  # a StareGRPOConfig: TRL's config + the method, its fields, the step options, the surrogate
    task_args: ModelTaskArgs
    setup: Any  # grpo.loss_setup()
    explicit: dict[str, Any]
    warmstart: WarmStartArgs = dataclasses.field(default_factory=WarmStartArgs)
    base_note: str = ""  # which config(s) the run starts from


@dataclass(frozen=True)
class _PreParsed:
    config: str | None
    config_base: str
    method: str | None
    task: str | None
    model: str | None
    help: bool
    rest: list[str]  # argv without --config / --config_base


def _pre_parse(argv: list[str]) -> _PreParsed:
    """What decides the parser and the base (config, method, task, model), without the full parser."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    pre.add_argument("--config_base", default="default", choices=CONFIG_BASES)
    pre.add_argument("--method", default=None)
    pre.add_argument("--task", default=None)
    pre.add_argument("--model", default=None)
    pre.add_argument("-h", "--help", action="store_true")
    raise_instead_of_exit(pre)
    known, _ = pre.parse_known_args(argv)
    rest = _drop_flag(_drop_flag(argv, "--config"), "--config_base")
    return _PreParsed(known.config, known.config_base, known.method, known.task, known.model, known.help, rest)


def _drop_flag(argv: list[str], flag: str) -> list[str]:
    out, skip = [], False
    for i, tok in enumerate(argv):
        if skip:
            skip = False
        elif tok == flag:
            skip = i + 1 < len(argv)
        elif not tok.startswith(flag + "="):
            out.append(tok)
    return out


def build_parser(method: str) -> Any:
    """HfArgumentParser over StareGRPOConfig (TRL's GRPOConfig + method, step options, surrogate and method fields:
    the public TRL API's config) + ModelTaskArgs + WarmStartArgs. Only ``method``'s own method fields are shown
    and accepted, with the method's defaults."""
    from transformers import HfArgumentParser

    # imports TRL: only building the parser needs it (importing this module, as compare does, does not)
    from stare_rl.engines.trl.config import SUPERSEDED_FIELDS, StareGRPOConfig, field_default

    spec = get_method(method)
    parser = HfArgumentParser(
        (StareGRPOConfig, ModelTaskArgs, WarmStartArgs),
        prog="stare train",
        description=f"GRPO with a stare-rl method on TRL (method fields shown: {method}).",
        epilog=EPILOG,
        conflict_handler="error",
    )
    parser.add_argument("--config", default=None,
                        help="YAML file of field: value, layered on the embedded default (its keys win).")
    parser.add_argument("--config_base", default="default", choices=CONFIG_BASES,
                        help="What --config is layered on: 'default' (the embedded default.yaml) or 'none' (the "
                        "library defaults of each field, as `stare compare` cells do).")
    own = {f.name: f for f in dataclasses.fields(spec.config_cls)}
    foreign = _foreign_fields(method)
    for action in parser._actions:
        if action.dest in SUPERSEDED_FIELDS:
            action.help = f"[not used by stare-rl; use {SUPERSEDED_FIELDS[action.dest][1]}] " + (action.help or "")
        elif action.dest == TARGET_FIELD and action.dest in own:  # also the adaptive bonus's: default None (step options)
            action.help = f"{own[action.dest].metadata.get('help')} Also the adaptive entropy bonus's target. " \
                          f"Unset: {field_default(own[action.dest])!r} ({method}'s default), for the bonus too."
        elif action.dest in own:  # the chosen method's field: its own help and default
            action.help, action.default = own[action.dest].metadata.get("help"), field_default(own[action.dest])
        elif action.dest in foreign:
            action.help = argparse.SUPPRESS
        elif action.dest == "method":
            action.default = method  # the app's choice (the embedded default's), not the library's baseline
    for name, f in own.items():  # as HfArgumentParser spells a boolean that defaults to True
        if field_default(f) is True:
            parser.add_argument(f"--no_{name}", f"--no-{name.replace('_', '-')}", action="store_false", dest=name,
                                help=f"Set {name} to false.")
    return parser


def _foreign_fields(method: str) -> set[str]:
    """StareGRPOConfig's method fields that ``method`` does not have (refused by name, see _check_keys), less the
    names the step options share (``target_entropy``: also the adaptive bonus's)."""
    # imports TRL: only checking a run's keys needs it (importing this module, as compare does, does not)
    from stare_rl.engines.trl.config import OPTION_FIELDS, method_field_owners

    own = {f.name for f in dataclasses.fields(get_method(method).config_cls)}
    return set(method_field_owners()) - own - set(OPTION_FIELDS)


def _known_fields(parser: Any, foreign: set[str]) -> set[str]:
    """Field names (YAML keys) of the parser, ``foreign`` excluded."""
    return {a.dest for a in parser._actions if a.dest not in {"help", "config", "config_base", *foreign}}


def _known_flags(parser: Any, foreign: set[str]) -> set[str]:
    """Every ``--flag`` spelling (dashes, ``--no_x`` for booleans), without the leading dashes, ``foreign``
    excluded."""
    return {opt[2:] for a in parser._actions if a.dest not in foreign
            for opt in a.option_strings if opt.startswith("--")} - {"help"}


def _check_keys(keys: list[str], known: set[str], where: str, method: str) -> None:
    for key in keys:
        if key in known:
            continue
        owners = owners_of_field(key.replace("-", "_"), list_methods(), lambda m: get_method(m).config_cls)
        if owners:
            others = f" (and {', '.join(owners[1:])})" if len(owners) > 1 else ""
            raise ValueError(f"{key} belongs to {owners[0]}{others}, not to method={method!r} (in {where}); "
                             f"add --method {owners[0]} or drop {key}")
        close = difflib.get_close_matches(key, sorted(known), n=3)
        hint = f"; did you mean {close}?" if close else ""
        raise ValueError(f"unknown field {key!r} in {where}{hint} (see `stare train --help`)")


def _cli_keys(argv: list[str]) -> list[str]:
    return [tok[2:].split("=", 1)[0] for tok in argv if tok.startswith("--")]


BASE_NOTES = {
    DEFAULT_CONFIG: "the embedded default (default.yaml: the tiny model)",
    "pretrained.yaml": "the real-model base (pretrained.yaml: TRL's GRPOConfig defaults, learning_rate 1e-6; "
                       "none of the tiny model's settings)",
}


def _layered_config(config: str | None, config_base: str = "default", task: str | None = None,
                    model: str | None = None) -> tuple[dict[str, Any], dict[str, str], str, str]:
    """``(values, origin of each key, note, base file)``: the embedded base, with ``config``'s keys on top (or
    ``config`` alone with ``config_base='none'``). The base is the tiny model's default, or the real-model base
    when the model (``--model``, else the config's ``model``) is anything but ``tiny``; on that base a chat model
    with no task named gets ``chat_arithmetic``. Without ``config``, an embedded task's own defaults
    (``configs/<task>.yaml``) go on top of the base."""
    own = load_yaml_config(config) if config is not None else {}
    model = model or str(own.get("model", ModelTaskArgs.model))
    base_name = base_config_name(model)
    embedded = BASE_NOTES[base_name]
    default = load_yaml_config(None, base_name)
    origin = dict.fromkeys(default, embedded)
    if base_name != DEFAULT_CONFIG and not task and "task" not in own and is_chat_model(model):
        default["task"], origin["task"] = CHAT_TASK, f"the real-model base (model={model!r} is a chat model)"
    if config is not None and config_base == "none":
        return (own, dict.fromkeys(own, config),
                f"config: {config} alone (config_base none: library defaults below)", base_name)
    if config is not None:
        origin.update(dict.fromkeys(own, config))
        return {**default, **own}, origin, f"config: {config} on top of {embedded}", base_name
    name = task or str(default.get("task", ModelTaskArgs.task))
    task_own = load_task_config(name)
    origin.update(dict.fromkeys(task_own, f"the embedded {name}.yaml"))
    note = f"config: {embedded}" + (f" + the embedded {name}.yaml" if task_own else "")
    return {**default, **task_own}, origin, note, base_name


CHAT_TASK = "chat_arithmetic"  # the embedded task of a chat model run without a task or a dataset


def is_chat_model(model: str) -> bool:
    """Whether ``model`` (a name of ``stare models list`` or a local dir) has a chat template, read from its files
    without loading it. A Hub id or an unreadable dir counts as not a chat model."""
    if is_pretrained_name(model):
        return True
    path = Path(model).expanduser()
    if (path / "chat_template.jinja").is_file() or (path / "chat_template.json").is_file():
        return True
    try:
        import json

        return bool(json.loads((path / "tokenizer_config.json").read_text()).get("chat_template"))
    except (OSError, ValueError):
        return False


def _plain(value: Any) -> Any:
    """A YAML-safe value (enums as their value)."""
    return getattr(value, "value", value)


def plan_run(argv: list[str]) -> Plan | None:
    """Parse and validate ``argv`` (``None`` after printing --help). Raises ValueError on bad input."""
    argv = current_flags(join_negative_values(list(argv)))  # old setting names (--bonus_target_entropy) as today's
    pre = _pre_parse(argv)
    config, task, rest = pre.config, pre.task, pre.rest
    base, origin, base_note, base_name = _layered_config(config, pre.config_base, task, pre.model)
    method = pre.method or str(base.get("method", "stare"))
    parser = build_parser(method)
    raise_instead_of_exit(parser)
    if pre.help:
        parser.print_help()
        return None
    foreign = _foreign_fields(method)
    known = _known_fields(parser, foreign)
    own_keys = [k for k in base if origin[k] == config]
    _check_keys(own_keys, known, config or "", method)
    base = {k: v for k, v in base.items() if k in known}  # the default's keys of another method are dropped
    _check_keys(_cli_keys(rest), _known_flags(parser, foreign), "the command line", method)
    task = task or str(base.get("task", ModelTaskArgs.task))
    run_name = f"{method}-{task}-{time.strftime('%Y%m%d-%H%M%S')}"
    parser.set_defaults(**{"output_dir": str(Path("runs") / run_name), **coerce_config_values(base, parser, origin)})
    parsed = parser.parse_args_into_dataclasses(args=rest, look_for_args_file=False)
    grpo, task_args, warmstart = parsed[:3]  # [3]: --config namespace
    setup = grpo.loss_setup()  # StareGRPOConfig validated the method, its fields, the options and the surrogate
    options, surrogate, method_cfg = grpo.step_options(), setup.surrogate, setup.method_config
    check_numbers(grpo, (task_args, options, surrogate, method_cfg, warmstart))
    check_output_dir(grpo.output_dir, resuming=grpo.resume_from_checkpoint is not None)
    given = {k for k, where in origin.items() if where == config} | set(_cli_keys(rest))
    check_tiny_width(task_args, warmstart, given, task)
    explicit = {**base, **{k: getattr(grpo, k, None) for k in _cli_keys(rest) if hasattr(grpo, k)}}
    explicit["method"] = grpo.method
    for obj in (task_args, options, surrogate, method_cfg, warmstart):
        explicit.update(dataclasses.asdict(obj))
    for key in load_yaml_config(None, base_name):  # pin the base's keys: config.yaml re-runs the same on any base
        if key not in explicit and hasattr(grpo, key):
            explicit[key] = _plain(getattr(grpo, key))
    for key in unused_fields(task_args):  # config.yaml and the model card hold only what the run uses
        explicit.pop(key, None)
    return Plan(grpo=grpo, task_args=task_args, setup=setup, explicit=explicit, warmstart=warmstart,
                base_note=base_note)


def unused_fields(ta: ModelTaskArgs) -> list[str]:
    """Fields that do nothing in this run: the warm start's and the tiny model's on any other model; the embedded
    task's when a dataset supplies the rows (and the reward is not the task's)."""
    unused = []
    if ta.model != "tiny":
        unused += [warmstart_arg_name(f.name) for f in dataclasses.fields(WarmStartConfig)] + ["warmstart_seed"]
    if ta.dataset is not None and ta.model != "tiny" and ta.reward != "task":
        unused += ["task", "train_size"]
    return unused


# The tiny model's width that each embedded task's warm-start recipe (its learning rates) was measured on.
RECIPE_WIDTHS = {"calc_tool": 128}


def check_tiny_width(ta: ModelTaskArgs, ws: WarmStartArgs, given: set[str], task: str | None) -> None:
    """Refuse a tiny-model width that the embedded warm-start recipe was not measured on while the whole recipe is
    still the embedded one (no ``warmstart_*`` field set): the hidden-64 recipe left a hidden-192 warm start at
    held-out greedy 0.016 after 2000 steps, and GRPO then trained a model that could not do the task (issue 41)."""
    width_arg = warmstart_arg_name("hidden_size")
    if ta.model != "tiny" or width_arg not in given:
        return
    name = task or ta.task
    width = RECIPE_WIDTHS.get(name, 64)
    hidden = getattr(ws, width_arg)
    recipe_args = {warmstart_arg_name(f.name) for f in dataclasses.fields(WarmStartConfig)
                   if f.name not in TINY_SHAPE_FIELDS}  # the recipe: every warm-start setting but the model's shape
    own_recipe = bool(recipe_args & given)
    if hidden not in (None, width) and not own_recipe:
        raise ValueError(
            f"{width_arg}={hidden}: the {name} task's warm-start recipe was measured at hidden {width} only "
            "and does not learn at other widths unchanged; set the recipe for this width (warmstart_learning_rate, "
            "warmstart_max_steps) and learning_rate (measured: hidden 512 learns with --warmstart_learning_rate "
            "5e-4 --learning_rate 1e-4)")
