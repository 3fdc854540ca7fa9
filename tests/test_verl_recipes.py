"""Every shipped verl recipe composes with verl's own Hydra config tree and validator, and its actor config
(with the stare-rl policy-loss dataclass) instantiates; overrides are validated. CPU only, no training."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl")

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.trainer.ppo.utils import need_critic, need_reference_policy  # noqa: E402
from verl.utils.config import omega_conf_to_dataclass, validate_config  # noqa: E402

from stare_rl.engines import verl as V  # noqa: E402

RECIPES = Path(str(resources.files("stare_rl") / "recipes" / "verl"))
NAMES = sorted(p.stem for p in RECIPES.glob("*.yaml"))


def load(name: str, overrides: list[str] | None = None) -> Any:
    with initialize_config_dir(config_dir=str(RECIPES), version_base=None):
        cfg = compose(config_name=name, overrides=overrides or [])
    OmegaConf.resolve(cfg)
    return cfg


def test_every_method_and_size_has_a_recipe_with_its_baseline() -> None:
    assert set(NAMES) == {f"{m}_qwen25_math_{s}" for m in ("grpo_ds", "stare", "steer") for s in ("7b", "1p5b")}
    script = (RECIPES / "run.sh").read_text()
    assert "verl.trainer.main_ppo" in script and "stare_rl.engines.verl_main" in script


@pytest.mark.parametrize("name", NAMES)
def test_recipe_composes_validates_and_instantiates(name: str) -> None:
    cfg = load(name)
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)  # verl's own instantiation path (Hydra)
    method, size = re.match(r"(\w+?)_qwen25_math_(\w+)", name).groups()  # type: ignore[union-attr]
    # the papers' shared setup
    assert (actor.clip_ratio_low, actor.clip_ratio_high, actor.loss_agg_mode) == (0.2, 0.28, "token-mean")
    assert actor.optim.lr == 1e-6 and not actor.use_kl_loss and not cfg.algorithm.use_kl_in_reward
    assert cfg.data.max_response_length == 3072 and cfg.actor_rollout_ref.rollout.n == 8
    assert cfg.data.train_batch_size == (64 if size == "7b" else 32)
    assert cfg.algorithm.filter_groups.enable  # GRPO-ds: dynamic sampling under every method
    pl = actor.policy_loss
    if method == "grpo_ds":
        assert pl.loss_mode == "vanilla"
        return
    assert isinstance(pl, V.StareRLPolicyLossConfig) and pl.loss_mode == method
    if method == "stare":
        stare = V.method_config("stare", pl)
        assert (stare.top_p_ratio, stare.reweight_w, stare.target_entropy, stare.selection_scope) == (
            0.1, 1.1, 0.3, "global")
        assert pl.stare_gate == "exact"
    else:
        steer = V.method_config("steer", pl)
        assert (steer.mapping, steer.token_weight_min, steer.selection_scope) == ("exp", 0.8, "global")
        assert actor.calculate_entropy  # STEER needs the actor's entropy in the loss


def test_plugin_overrides_on_the_baseline_recipe() -> None:
    cfg = load("grpo_ds_qwen25_math_1p5b", [
        f"actor_rollout_ref.actor.policy_loss._target_={V.CONFIG_TARGET}",
        "actor_rollout_ref.actor.policy_loss.loss_mode=stare",
        "+actor_rollout_ref.actor.policy_loss.stare_top_p_ratio=0.2",
        "+actor_rollout_ref.actor.policy_loss.stare_variant=C2",
    ])
    pl = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor).policy_loss
    assert V.method_config("stare", pl).top_p_ratio == 0.2 and V.method_config("stare", pl).variant == "C2"
    assert pl.stare_gate == "auto"  # plugin-only path: surprisal estimate unless run through verl_main


def test_bad_override_is_a_clear_error_naming_the_field() -> None:
    cfg = load("stare_qwen25_math_7b", ["actor_rollout_ref.actor.policy_loss.stare_top_p_ratio=1.5"])
    with pytest.raises(Exception, match=r"policy_loss\.stare_top_p_ratio=1\.5 must be in \[0, 1\]"):
        omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    cfg = load("stare_qwen25_math_7b", ["+actor_rollout_ref.actor.policy_loss.stare_top_p=0.2"])
    with pytest.raises(Exception, match="stare_top_p"):  # unknown field: rejected, not ignored
        omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
