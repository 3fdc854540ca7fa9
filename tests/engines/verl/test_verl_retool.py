"""The ReTool-style verl recipe (multi-turn tool use, sandboxed code interpreter, STARE loss) composes with
verl's own Hydra config tree and validator through run.sh, instantiates verl's actor and multi-turn rollout
dataclasses, and its code tool loads through verl's function-tool loader and runs. CPU only, no training."""

from __future__ import annotations

import asyncio
import os
import subprocess
from importlib import resources
from pathlib import Path

import pytest

pytest.importorskip("verl")

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.trainer.ppo.utils import need_critic, need_reference_policy  # noqa: E402
from verl.utils.config import omega_conf_to_dataclass, validate_config  # noqa: E402

from stare_rl.engines.verl import adapter as V  # noqa: E402

RECIPES = Path(str(resources.files("stare_rl") / "recipes" / "verl"))
NAME = "retool/stare_retool_qwen25_7b"


def run_sh_args(tmp_path: Path, *extra: str) -> list[str]:
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "python3").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGS_OUT"\n')
    (fake / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "ARGS_OUT": str(tmp_path / "args"),
           "TRAIN_FILES": "/d/dapo.parquet", "VAL_FILES": "/d/aime.parquet", "MODEL_PATH": "/m/retool-sft"}
    subprocess.run(["bash", str(RECIPES / "run.sh"), NAME, *extra], env=env, check=True, timeout=30)
    return (tmp_path / "args").read_text().splitlines()


def test_retool_recipe_composes_validates_and_instantiates(tmp_path: Path) -> None:
    args = run_sh_args(tmp_path, "trainer.total_epochs=1")
    assert args[:4] == ["-m", "stare_rl.engines.verl.main", f"--config-path={RECIPES}", f"--config-name={NAME}"]
    with initialize_config_dir(config_dir=str(RECIPES), version_base=None):
        cfg = compose(config_name=NAME, overrides=args[4:])
    OmegaConf.resolve(cfg)
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    from stare_rl.engines.verl import main as verl_main

    verl_main.check_config(cfg)
    assert (cfg.data.train_files, cfg.data.val_files, cfg.actor_rollout_ref.model.path) == (
        "/d/dapo.parquet", "/d/aime.parquet", "/m/retool-sft")
    assert cfg.trainer.total_epochs == 1 and cfg.trainer.v1.trainer_mode == "stare_rl"
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    pl = actor.policy_loss
    assert isinstance(pl, V.StareRLPolicyLossConfig) and pl.loss_mode == "stare" and pl.gate_entropy == "exact"
    stare = V.method_config("stare", pl)
    assert (stare.top_p_ratio, stare.reweight_w, stare.target_entropy) == (0.1, 1.1, 0.3)
    assert (actor.clip_ratio_low, actor.clip_ratio_high, actor.clip_ratio_c) == (0.2, 0.28, 10.0)
    rollout = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    mt = rollout.multi_turn
    assert mt.enable and mt.format == "hermes" and mt.max_assistant_turns == 16
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "tool_agent"
    assert Path(mt.function_tool_path) == RECIPES / "retool" / "code_tool.py"
    assert cfg.data.max_response_length == 16384 and cfg.actor_rollout_ref.rollout.n == 16
    assert cfg.actor_rollout_ref.rollout.dtype == "bfloat16"  # the precision group composes too


def test_code_tool_loads_through_verl_and_runs_sandboxed() -> None:
    from verl.tools.function_tool import load_function_tools_from_path, normalize_function_tool_return

    tools = load_function_tools_from_path(str(RECIPES / "retool" / "code_tool.py"))
    (tool,) = [t for t in tools if t.name == "code_interpreter"]
    assert "code" in tool.tool_schema.function.parameters.properties
    response, reward, _ = normalize_function_tool_return(asyncio.run(tool.call({"code": "print(6*7)"})))
    assert response.text == "42" and reward == 0.0
    crash = asyncio.run(tool.call({"code": "raise ValueError('boom')"}))
    assert "ValueError: boom" in crash
