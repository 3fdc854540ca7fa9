"""Every shipped verl recipe composes with verl's own Hydra config tree and validator, and its actor config
(with the stare-rl policy-loss dataclass) instantiates; overrides are validated. CPU only, no training."""

from __future__ import annotations

import os
import re
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl")

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.trainer.ppo.utils import need_critic, need_reference_policy  # noqa: E402
from verl.utils.config import omega_conf_to_dataclass, validate_config  # noqa: E402

from stare_rl.engines.verl import adapter as V  # noqa: E402

RECIPES = Path(str(resources.files("stare_rl") / "recipes" / "verl"))
NAMES = sorted(p.stem for p in RECIPES.glob("*.yaml"))


def load(name: str, overrides: list[str] | None = None) -> Any:
    with initialize_config_dir(config_dir=str(RECIPES), version_base=None):
        cfg = compose(config_name=name, overrides=overrides or [])
    OmegaConf.resolve(cfg)
    return cfg


# The papers' run scripts, as verl 0.9 config paths. STARE: hp-luo/STARE@bffb9e7
# recipe/STARE/scripts/run_short_cot_qwen2.5_math_7b_{STARE,GRPO_ds}.sh (identical but for the STARE switches).
# STEER: zz-haooo/STEER@b31df71 run/run_exp.sh and run/run_linear.sh (identical but for the map), on verl 0.4
# defaults where the script sets nothing (precision bfloat16, validation top_p 0.7 in its ppo_trainer.yaml).
A, R = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
SHARED_SCRIPT = {
    "data.max_prompt_length": 1024, "data.max_response_length": 3072, "data.truncation": "left",
    f"{R}.n": 8, f"{R}.temperature": 1.0, f"{R}.top_p": 1.0, f"{R}.top_k": -1,
    f"{R}.val_kwargs.temperature": 1.0, f"{R}.val_kwargs.top_p": 0.7, f"{R}.val_kwargs.do_sample": True,
    f"{A}.optim.lr": 1e-6, f"{A}.clip_ratio_low": 0.2, f"{A}.clip_ratio_high": 0.28, f"{A}.clip_ratio_c": 10.0,
    f"{A}.loss_agg_mode": "token-mean", f"{A}.use_kl_loss": False, f"{A}.entropy_coeff": 0, f"{A}.grad_clip": 1.0,
    "algorithm.adv_estimator": "grpo", "algorithm.use_kl_in_reward": False, "trainer.n_gpus_per_node": 8,
}
STARE_SCRIPT = {
    **SHARED_SCRIPT, "data.train_batch_size": 64, f"{A}.ppo_mini_batch_size": 64,  # on-policy: one update
    f"{A}.use_dynamic_bsz": True, f"{A}.ppo_max_token_len_per_gpu": 8192, f"{R}.log_prob_max_token_len_per_gpu": 12288,
    f"{R}.tensor_model_parallel_size": 1, f"{R}.val_kwargs.n": 32, "algorithm.filter_groups.enable": True,
    f"{A}.fsdp_config.dtype": "float16", "actor_rollout_ref.ref.fsdp_config.dtype": "float16",
    f"{R}.dtype": "float16", "trainer.save_freq": 10, "trainer.test_freq": 10, "trainer.val_before_train": False,
}
STARE_METHOD = {f"{A}.policy_loss.stare_{k}": v for k, v in dict(
    variant="O1", top_p_ratio=0.1, reweight_w=1.1, reweight_m=0.9, target_entropy=0.3).items()}
STEER_SCRIPT = {
    **SHARED_SCRIPT, "data.train_batch_size": 512, f"{A}.ppo_mini_batch_size": 32,
    f"{A}.ppo_micro_batch_size_per_gpu": 8, f"{A}.use_dynamic_bsz": False, f"{R}.log_prob_micro_batch_size_per_gpu": 8,
    f"{R}.tensor_model_parallel_size": 4, "algorithm.filter_groups.enable": False, "data.filter_overlong_prompts": True,
    f"{A}.fsdp_config.dtype": "bfloat16", "actor_rollout_ref.ref.fsdp_config.dtype": "bfloat16",
    f"{R}.dtype": "bfloat16", "trainer.nnodes": 1, "trainer.total_epochs": 10, "trainer.save_freq": 10,
}
STEER_MAPS = {  # run_exp.sh / run_linear.sh: token_weight_min, token_weight_max, linear
    "exp": {f"{A}.policy_loss.steer_mapping": "exp", f"{A}.policy_loss.steer_token_weight_min": 0.8,
            f"{A}.policy_loss.steer_token_weight_max": 1.0},
    "linear": {f"{A}.policy_loss.steer_mapping": "linear", f"{A}.policy_loss.steer_token_weight_min": 0.8,
               f"{A}.policy_loss.steer_token_weight_max": 1.2},
}
# Where a recipe keeps its own value: path -> (script value, our value); each is a DEVIATION in docs/verl.md.
STARE_DEVIATIONS = {"algorithm.filter_groups.metric": ("acc", "reward"), "trainer.nnodes": (2, 1),
                    "trainer.total_epochs": (1000, 10)}
STEER_DEVIATIONS = {f"{R}.val_kwargs.n": (1, 32), "trainer.test_freq": (1, 10)}


def paper_values(name: str) -> tuple[dict[str, Any], dict[str, tuple[Any, Any]]]:
    """(script values the 7B recipe ``name`` must carry, its deviations) for recipe ``name``."""
    if name.startswith(("grpo_ds", "stare")):
        return {**STARE_SCRIPT, **(STARE_METHOD if name.startswith("stare") else {})}, STARE_DEVIATIONS
    steer = STEER_MAPS["linear" if name.startswith("steer_linear") else "exp"] if name.startswith("steer") else {}
    return {**STEER_SCRIPT, **steer}, STEER_DEVIATIONS


def test_every_method_and_size_has_a_recipe_with_its_baseline() -> None:
    setups = {"grpo_ds", "stare", "grpo", "steer"}  # STARE's setup: grpo_ds + stare; STEER's: grpo + steer
    assert set(NAMES) == {f"{m}_qwen25_math_{s}" for m in setups for s in ("7b", "1p5b")} | {
        "steer_linear_qwen25_math_7b"}


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith("_7b")])
def test_7b_recipe_carries_the_paper_script_values(name: str) -> None:
    """Every setting the paper's script pins, read from the recipe files as verl's Hydra composes them."""
    cfg = load(name)
    script, deviations = paper_values(name)
    assert {path: OmegaConf.select(cfg, path) for path in script} == script
    assert {path: OmegaConf.select(cfg, path) for path in deviations} == {p: v[1] for p, v in deviations.items()}


@pytest.mark.parametrize("name", [n for n in NAMES if n.endswith("_1p5b")])
def test_quick_start_keeps_the_algorithm_of_its_paper_setup(name: str) -> None:
    cfg, paper = load(name), load(name.replace("_1p5b", "_7b"))
    scale = {"data.train_batch_size", f"{A}.ppo_mini_batch_size", "trainer.n_gpus_per_node", "trainer.total_epochs"}
    same = set(paper_values(name)[0]) - scale
    assert {p: OmegaConf.select(cfg, p) for p in same} == {p: OmegaConf.select(paper, p) for p in same}
    updates = cfg.data.train_batch_size // cfg.actor_rollout_ref.actor.ppo_mini_batch_size
    assert updates == paper.data.train_batch_size // paper.actor_rollout_ref.actor.ppo_mini_batch_size
    assert updates == (1 if name.startswith(("grpo_ds", "stare")) else 16)  # STARE on-policy; STEER 512 / 32


def test_precision_is_one_recipe_field() -> None:
    """`precision=bf16|fp16` sets the actor's, the reference's and the rollout's dtype together."""
    dtypes = [f"{A}.fsdp_config.dtype", "actor_rollout_ref.ref.fsdp_config.dtype", f"{R}.dtype"]
    for name, override, want in (("stare_qwen25_math_7b", "precision=bf16", "bfloat16"),
                                 ("steer_qwen25_math_7b", "precision=fp16", "float16")):
        cfg = load(name, [override])
        assert [OmegaConf.select(cfg, p) for p in dtypes] == [want] * 3


def run_sh_args(tmp_path: Path, name: str, *extra: str) -> list[str]:
    """The python3 command line run.sh execs for recipe ``name`` (python3 replaced by a recorder on PATH)."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "python3").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGS_OUT"\n')
    (fake / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "ARGS_OUT": str(tmp_path / "args"),
           "TRAIN_FILES": "/d/train.parquet", "VAL_FILES": "/d/test.parquet", "MODEL_PATH": "/m/qwen"}
    subprocess.run(["bash", str(RECIPES / "run.sh"), name, *extra], env=env, check=True, timeout=30)
    return (tmp_path / "args").read_text().splitlines()


@pytest.mark.parametrize("name", NAMES)
def test_recipe_composes_validates_and_instantiates(tmp_path: Path, name: str) -> None:
    args = run_sh_args(tmp_path, name, "trainer.total_epochs=1")
    exact = not name.startswith("grpo")  # STARE/STEER: the exact entry point and its trainer mode
    assert args[:2] == ["-m", "stare_rl.engines.verl.main" if exact else "verl.trainer.main_ppo"]
    assert args[2:4] == [f"--config-path={RECIPES}", f"--config-name={name}"]
    cfg = load(name, args[4:])  # what that entry point's Hydra composes from run.sh's command line
    assert cfg.trainer.use_v1 and cfg.trainer.v1.trainer_mode == ("stare_rl" if exact else "sync")
    assert (cfg.data.train_files, cfg.data.val_files, cfg.actor_rollout_ref.model.path) == (
        "/d/train.parquet", "/d/test.parquet", "/m/qwen")
    assert cfg.trainer.total_epochs == 1  # extra overrides go last
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)  # verl's own instantiation path (Hydra)
    method = re.match(r"(\w+?)_qwen25_math_", name).group(1)  # type: ignore[union-attr]
    assert actor.clip_ratio_c == 10.0  # the instantiated dataclass carries the papers' dual-clip bound
    pl = actor.policy_loss
    if method.startswith("grpo"):
        assert pl.loss_mode == "vanilla"
        return
    assert isinstance(pl, V.StareRLPolicyLossConfig) and pl.loss_mode == method.removesuffix("_linear")
    if method == "stare":
        stare = V.method_config("stare", pl)
        assert (stare.top_p_ratio, stare.reweight_w, stare.target_entropy, stare.selection_scope) == (
            0.1, 1.1, 0.3, "global")
        assert pl.gate_entropy == "exact"
    else:
        steer = V.method_config("steer", pl)
        assert (steer.mapping, steer.token_weight_min, steer.selection_scope) == (
            "linear" if method == "steer_linear" else "exp", 0.8, "global")
        assert not actor.calculate_entropy  # STEER reads the old entropy verl stores; none in the update forward


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("grpo")])
def test_baseline_recipe_validates_under_the_exact_trainer_mode(name: str) -> None:
    """STARE/STEER recipes set this mode themselves (checked above); the baselines can run there too."""
    from stare_rl.engines.verl import main as verl_main

    cfg = load(name, ["trainer.use_v1=True", f"trainer.v1.trainer_mode={verl_main.TRAINER_MODE}"])
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    verl_main.check_config(cfg)  # the entry point's own checks (bypass mode, entropy for STEER, distillation)


def test_plugin_overrides_on_the_baseline_recipe() -> None:
    cfg = load("grpo_ds_qwen25_math_1p5b", [
        f"actor_rollout_ref.actor.policy_loss._target_={V.CONFIG_TARGET}",
        "actor_rollout_ref.actor.policy_loss.loss_mode=stare",
        "+actor_rollout_ref.actor.policy_loss.stare_top_p_ratio=0.2",
        "+actor_rollout_ref.actor.policy_loss.stare_variant=C2",
    ])
    pl = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor).policy_loss
    assert V.method_config("stare", pl).top_p_ratio == 0.2 and V.method_config("stare", pl).variant == "C2"
    assert pl.gate_entropy == "auto"  # plugin-only path: surprisal estimate unless run through verl_main


def test_bad_override_is_a_clear_error_naming_the_field() -> None:
    cfg = load("stare_qwen25_math_7b", ["actor_rollout_ref.actor.policy_loss.stare_top_p_ratio=1.5"])
    with pytest.raises(Exception, match=r"policy_loss\.stare_top_p_ratio=1\.5: top_p_ratio=1\.5 must be in \[0, 1\]"):
        omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    cfg = load("stare_qwen25_math_7b", ["+actor_rollout_ref.actor.policy_loss.stare_top_p=0.2"])
    with pytest.raises(Exception, match="stare_top_p"):  # unknown field: rejected, not ignored
        omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
