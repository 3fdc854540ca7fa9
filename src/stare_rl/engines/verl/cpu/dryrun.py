"""``stare verl-dryrun``: a verl recipe (ours or a user's config) for N steps on the CPU with a tiny model.

:func:`build_assets` writes, offline, a tiny Qwen2 model with the character tokenizer (newline included, a chat
template that renders the prompt as is) and verl-format parquet files of the arithmetic task;
:func:`dryrun_command` returns the command line: the recipe, then :func:`cpu_overrides` (sizes, the CPU
settings listed below), then the user's overrides, which win. The CPU platform is selected by the
environment (:func:`dryrun_env`: ``VERL_PLATFORM=stare_cpu``), which Ray's workers inherit.

CPU settings (issue #23's list of what stock verl 0.9 lacks, each with where it is handled):
  - TransferQueue reserves a Ray CPU per storage unit and one for its controller: one storage unit and
    ``ray_kwargs.ray_init.num_cpus`` above the core count (Ray's CPUs are logical);
  - no CPU platform, gloo backend string, FSDP engine for cuda/npu only: :mod:`stare_rl.engines.verl.cpu`;
  - no rollout without vLLM/SGLang/TRT-LLM: ``rollout.name=hf`` (:mod:`~stare_rl.engines.verl.cpu.rollout`);
  - FSDP1 cannot initialise on the CPU: ``strategy=fsdp2``;
  - FlashAttention by default: ``+model.override_config.attn_implementation=sdpa``, no padding removal;
  - verl's resource pool asks Ray for GPUs: one logical GPU declared to Ray (nothing uses it);
  - float32 everywhere (the recipes' fp16/bf16 are GPU settings).
Algorithm settings of the recipe stay, except DAPO dynamic sampling (off: a random tiny model's groups all
agree, and refilling would never end) and the sizes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from stare_rl.core.registry import BASELINE_METHOD, list_methods
from stare_rl.engines.verl.adapter import method_config, verl_field_name
from stare_rl.engines.verl.cpu import PLATFORM_ENV, PLATFORM_NAME, ROLLOUT_NAME
from stare_rl.models.tiny import build_tiny_model
from stare_rl.models.tokenizer import build_char_tokenizer
from stare_rl.tasks import get_task
from stare_rl.tasks.rewards import number_reward

DATA_SOURCE = "stare_rl/arithmetic"
CHAT_SOURCE = "stare_rl/chat_arithmetic"  # a real chat model's data (--model): scored by the final number
CHAT_TEMPLATE = "{{- bos_token -}}{%- for m in messages -%}{{- m['content'] -}}{%- endfor -%}"
EXACT_MODULE = "stare_rl.engines.verl.main"
FP32_MIXED_PRECISION = "{param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}"  # FSDP's default param dtype is bf16
PLAIN_MODULE = "verl.trainer.main_ppo"


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None, **_: Any) -> float:
    """The dry run's reward: 1 for the right sum, else half the share of answer characters in place.

    DEVIATION (dry run only): a random tiny model never answers right, so a 0/1 reward would give every
    group the same reward and zero advantages; the partial credit makes the update non-trivial.
    """
    if data_source == CHAT_SOURCE:  # a real chat model answers in words: no partial credit needed

        return number_reward(solution_str, ground_truth)
    text = solution_str.split("<eos>")[0].strip()
    if text == ground_truth:
        return 1.0
    hits = sum(a == b for a, b in zip(text, ground_truth, strict=False))
    return 0.5 * hits / max(len(ground_truth), 1)


def build_assets(out: str | Path, *, n_train: int = 64, n_test: int = 16, seed: int = 0,
                 model: str | Path | None = None) -> dict[str, str]:
    """Write the tiny model and the data under ``out``; return their paths (idempotent: kept when present).

    With ``model`` (a real chat model's dir), that model is used as it is and the data are the chat questions of
    the ``chat_arithmetic`` task (``chat_*.parquet``), scored by the final number the model writes."""
    import pandas as pd

    out = Path(out).expanduser().resolve()
    prefix = "chat_" if model is not None else ""
    paths = {"model": Path(model) if model is not None else out / "model",
             "train": out / f"{prefix}train.parquet", "test": out / f"{prefix}test.parquet"}
    task = get_task("chat_arithmetic" if model is not None else "arithmetic")
    source = CHAT_SOURCE if model is not None else DATA_SOURCE
    if not (paths["model"] / "config.json").is_file():
        tok = build_char_tokenizer(task.alphabet)  # newline included (verl's Qwen agent-loop check)
        tok.chat_template = CHAT_TEMPLATE
        model = build_tiny_model(tok, hidden_size=32, num_layers=2, num_heads=2, seed=seed)
        model.save_pretrained(paths["model"])
        tok.save_pretrained(paths["model"])
    for split, n in (("train", n_train), ("test", n_test)):
        if paths[split].is_file():
            continue
        rows = [{"data_source": source, "prompt": _messages(r["prompt"]),
                 "ability": "math", "reward_model": {"style": "rule", "ground_truth": r["answer"]},
                 "extra_info": {"index": i, "split": split}}
                for i, r in enumerate(task.make_split(split, n, seed))]
        out.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_parquet(paths[split])
    return {k: str(v) for k, v in paths.items()}


def _messages(prompt: Any) -> list[dict[str, str]]:
    return prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]


# A real chat model (--model): its prompts are its chat template around a question (SmolLM2's system turn
# included: ~45 tokens), it answers in a sentence, and it was pretrained (TRL's GRPO learning rate, not the
# random tiny model's).
REAL_MODEL_SIZES = {"prompt_length": 64, "response_length": 32, "lr": 1e-6}


def cpu_overrides(assets: dict[str, str], out: str | Path, steps: int, *, batch: int = 4, n: int = 4,
                  response_length: int = 8, real_model: bool = False) -> list[str]:
    """The Hydra overrides that make a recipe run on the CPU with the tiny model (see the module docstring), or
    with a real chat model's sizes (``real_model``: :data:`REAL_MODEL_SIZES`)."""
    out = Path(out).expanduser().resolve()
    prompt_length, lr = 16, 1e-3
    if real_model:
        prompt_length, response_length, lr = (REAL_MODEL_SIZES[k] for k in ("prompt_length", "response_length", "lr"))
    a, r, ref = "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref"
    return [
        f"data.train_files={assets['train']}", f"data.val_files={assets['test']}",
        f"data.train_batch_size={batch}", f"data.max_prompt_length={prompt_length}",
        f"data.max_response_length={response_length}",
        "data.filter_overlong_prompts=false", "data.dataloader_num_workers=0",
        "algorithm.filter_groups.enable=false",
        f"actor_rollout_ref.model.path={assets['model']}", "actor_rollout_ref.model.use_remove_padding=false",
        "actor_rollout_ref.model.enable_gradient_checkpointing=false",
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        f"{a}.strategy=fsdp2", f"{ref}.strategy=fsdp2", f"{a}.fsdp_config.dtype=float32", f"{ref}.fsdp_config.dtype=float32",
        *(f"+{role}.fsdp_config.mixed_precision={FP32_MIXED_PRECISION}" for role in (a, ref)),
        f"{a}.ppo_mini_batch_size={batch}", f"{a}.use_dynamic_bsz=false", f"{a}.ppo_micro_batch_size_per_gpu={batch * n}",
        f"{a}.optim.lr={lr:g}",
        f"{r}.name={ROLLOUT_NAME}", f"{r}.n={n}", f"{r}.dtype=float32", f"{r}.tensor_model_parallel_size=1",
        f"{r}.log_prob_use_dynamic_bsz=false", f"{r}.log_prob_micro_batch_size_per_gpu={batch * n}",
        f"{ref}.log_prob_use_dynamic_bsz=false", f"{ref}.log_prob_micro_batch_size_per_gpu={batch * n}",
        f"{r}.checkpoint_engine.backend=naive", f"{r}.agent.num_workers=1", f"{r}.val_kwargs.n=1",
        f"{r}.free_cache_engine=false",
        "reward.num_workers=1", f"reward.custom_reward_function.path={Path(__file__).resolve()}",
        "reward.custom_reward_function.name=compute_score",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
        "trainer.device=cpu", "trainer.nnodes=1", "trainer.n_gpus_per_node=1",
        f"trainer.total_training_steps={steps}", "trainer.val_before_train=false", "trainer.test_freq=-1",
        f"trainer.save_freq={steps}", f"trainer.default_local_dir={out / 'checkpoints'}",
        "trainer.logger=[console,file]", "trainer.resume_mode=auto",
        "ray_kwargs.ray_init.num_cpus=8", "+ray_kwargs.ray_init.num_gpus=1",
        f"hydra.run.dir={out / 'hydra'}",  # Hydra's log folder under --out, not ./outputs/<date> in the cwd
    ]


def recipe_location(recipe: str) -> tuple[str, str]:
    """``(config dir, config name)`` of a shipped recipe name (``stare_qwen25_math_1p5b``) or a YAML path."""
    path = Path(recipe).expanduser()
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return str(path.resolve().parent), path.stem
    from importlib import resources

    root = Path(str(resources.files("stare_rl") / "recipes" / "verl"))
    if (root / f"{recipe}.yaml").is_file():
        return str(root), recipe
    shipped = sorted(p.stem for p in root.glob("*.yaml"))
    raise ValueError(f"recipe={recipe!r}: neither a YAML file nor a shipped recipe (one of {shipped})")


def compose_config(config_dir: str, name: str, overrides: list[str]) -> Any:
    """The run's verl config, composed by verl's own Hydra loader (as the launched entry point will; overrides of
    Hydra's own settings, ``hydra.*``, only apply to a launched run)."""
    from hydra import compose, initialize_config_dir

    overrides = [o for o in overrides if not o.lstrip("+~").startswith("hydra.")]
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name=name, overrides=overrides)


def entry_module(cfg: Any) -> str:
    """The exact entry point when the composed config asks for it (``trainer.v1.trainer_mode=stare_rl``)."""
    mode = cfg.trainer.get("v1", {}).get("trainer_mode", "sync") if cfg.trainer.get("use_v1", False) else "sync"
    return EXACT_MODULE if mode == "stare_rl" else PLAIN_MODULE


def run_info(cfg: Any, recipe: str, module: str) -> dict[str, Any]:
    """What ``stare report`` reads from ``run_config.json``: the method (loss mode) and the target entropy; and the
    method's settings as the run uses them (``method_settings``: every field, unset ones resolved, e.g.
    ``auto_w_max`` from ``auto_fallback``), where verl's own config shows ``null``."""
    policy_loss = cfg.actor_rollout_ref.actor.policy_loss
    method = str(policy_loss.get("loss_mode", BASELINE_METHOD)).removeprefix("stare_rl.")
    target = policy_loss.get(verl_field_name(method, "target_entropy"), None)  # the method's own field
    settings = dataclasses.asdict(method_config(method, policy_loss)) if method in list_methods() else None
    return {"engine": "verl", "recipe": recipe, "entry_point": module, "method": method,
            "target_entropy": target, "seed": cfg.data.get("seed", None), "method_settings": settings}


def dryrun_command(recipe: str, out: str | Path, steps: int, user_overrides: list[str], *,
                   module: str | None = None, model: str | Path | None = None) -> tuple[list[str], dict[str, str]]:
    """``(argv, assets)``: the verl command line of the dry run (its environment: :func:`dryrun_env`). Writes
    ``<out>/run_config.json`` (:func:`run_info`), so that ``stare report <out>`` labels the run. ``model``: a real
    chat model's dir instead of the tiny one (with chat questions and that model's sizes)."""
    config_dir, name = recipe_location(recipe)
    model = model if model is not None else _user_model(user_overrides)
    assets = build_assets(Path(out) / "assets", model=model)
    overrides = cpu_overrides(assets, out, steps, real_model=model is not None) + list(user_overrides)
    cfg = compose_config(config_dir, name, overrides)
    module = module or entry_module(cfg)
    (Path(out) / "run_config.json").write_text(json.dumps(run_info(cfg, recipe, module), indent=2))
    return [sys.executable, "-m", module, f"--config-path={config_dir}", f"--config-name={name}", *overrides], assets


MODEL_PATH_KEY = "actor_rollout_ref.model.path"
REAL_VOCAB = 1024  # the tiny models' character vocabularies have under 100 tokens; a real LM's has tens of thousands


def _user_model(overrides: list[str]) -> Path | None:
    """A model dir the user set with ``actor_rollout_ref.model.path=<dir>``: a real model, so the run gets chat data
    and that model's sizes, as with ``--model`` (the user's override still wins, coming last)."""
    given = [o.split("=", 1)[1] for o in overrides if o.lstrip("+").startswith(MODEL_PATH_KEY + "=")]
    path = Path(given[-1]).expanduser() if given else None
    if path is None or not (path / "config.json").is_file():
        return None
    vocab = json.loads((path / "config.json").read_text()).get("vocab_size") or 0
    return path.resolve() if vocab > REAL_VOCAB else None  # not a character-level tiny model


def dryrun_env(base: dict[str, str] | None = None, *, metrics_path: str | Path | None = None) -> dict[str, str]:
    """The environment of the dry run: the CPU platform, one thread per process, quiet tokenizers, and where
    verl's ``file`` logger writes (it truncates the file: give each run its own)."""
    env = dict(os.environ if base is None else base)
    env.update({PLATFORM_ENV: PLATFORM_NAME, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
                "RAY_DEDUP_LOGS": "0", "HYDRA_FULL_ERROR": "1", "TRL_EXPERIMENTAL_SILENCE": "1"})
    if metrics_path is not None:
        env["VERL_FILE_LOGGER_PATH"] = str(Path(metrics_path).expanduser().resolve())
    return env
