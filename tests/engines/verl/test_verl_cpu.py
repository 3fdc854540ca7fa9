"""The verl CPU mode's parts without Ray (the runs are in test_verl_e2e.py): activation only when asked, the
version pin, the platform, the gloo backend, the hf rollout's sampling and weight sync, the dry-run assets
(verl's own Qwen newline check, verl's own Hydra loader and validator) and ``stare verl-dryrun``'s errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verl")

import torch  # noqa: E402

from stare_rl.engines.verl import cpu  # noqa: E402
from stare_rl.engines.verl.cpu import dryrun as D  # noqa: E402


@pytest.fixture(scope="module")
def assets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return D.build_assets(tmp_path_factory.mktemp("dryrun") / "assets", n_train=8, n_test=4)


def test_version_pin_names_the_version_and_the_fix() -> None:
    cpu.check_verl_version("0.9.1")
    with pytest.raises(RuntimeError, match=r"verl 0\.9\.x only, found verl 0\.8\.2; install verl==0\.9\.\*"):
        cpu.check_verl_version("0.8.2")


@pytest.mark.slow  # a fresh interpreter: seconds
@pytest.mark.parametrize("asked", [False, True])
def test_cpu_mode_is_inert_unless_asked(asked: bool) -> None:
    """A bare `import verl` (the plugin loads) registers the platform and the hf rollout only with
    VERL_PLATFORM=stare_cpu; then verl's own get_platform() is the CPU and its process group is gloo."""
    probe = ("import verl\n"
             "from verl.plugin.platform.platform_manager import PlatformRegistry\n"
             "from verl.workers.rollout.replica import RolloutReplicaRegistry\n"
             "from verl.workers.engine.base import EngineRegistry\n"
             "print('stare_cpu' in PlatformRegistry.registered_names(), 'hf' in RolloutReplicaRegistry._registry,\n"
             "      'cpu' in EngineRegistry._engines['language_model']['fsdp2'])\n"
             "if 'stare_cpu' in PlatformRegistry.registered_names():\n"
             "    from verl.utils.device import get_device_name, get_nccl_backend, get_device_id\n"
             "    print(get_device_name(), get_nccl_backend(), get_device_id())\n")
    env = {k: v for k, v in os.environ.items() if k != cpu.PLATFORM_ENV}
    if asked:
        env[cpu.PLATFORM_ENV] = cpu.PLATFORM_NAME
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 0, out.stderr[-2000:]
    assert lines[0] == ("True True True" if asked else "False False False")
    assert lines[1:] == (["cpu gloo cpu"] if asked else [])


def test_platform_and_device_module_answer_verls_calls() -> None:
    from stare_rl.engines.verl.cpu.platform import StareCPUPlatform

    p = StareCPUPlatform()
    assert (p.device_name, p.communication_backend_name(), p.current_device()) == ("cpu", "gloo", "cpu")
    assert not p.is_platform_available(use_smi_check=True)  # never auto-detected on a GPU machine
    dev = p.device_module
    dev.empty_cache()
    assert dev.mem_get_info() == (0, 0) and dev.memory_allocated() == 0 and dev.device_count() >= 1
    state = dev.get_rng_state()
    a = torch.rand(3)
    dev.set_rng_state(state)
    assert torch.equal(a, torch.rand(3))


def test_gloo_process_group_replaces_the_duplicate_backend_string() -> None:
    from stare_rl.engines.verl.cpu.platform import _gloo_process_group

    seen = []
    wrapped = _gloo_process_group(lambda timeout_second=None, backend=None: seen.append(backend))
    wrapped()
    wrapped(backend="cpu:gloo")
    assert seen == ["cpu:gloo", "cpu:gloo"]


def test_sampling_matches_the_processed_distribution() -> None:
    from stare_rl.engines.verl.cpu.rollout import sample_next

    logits = torch.tensor([2.0, 1.0, 0.5, -1.0])
    g = torch.Generator().manual_seed(0)
    assert sample_next(logits, 0.0, 1.0, -1, g)[0] == 0  # greedy
    token, logp = sample_next(logits, 1.0, 1.0, 1, g)  # top-k 1: certain
    assert token == 0 and logp == pytest.approx(0.0)
    counts = torch.zeros(4)
    for _ in range(400):
        token, logp = sample_next(logits, 1.0, 0.7, -1, g)
        counts[token] += 1
    probs = torch.softmax(logits, -1)  # top-p 0.7 keeps {0, 1} (0.61 < 0.7 <= 0.83)
    assert counts[2:].sum() == 0 and counts[1] > 0
    kept = probs[:2] / probs[:2].sum()
    token, logp = sample_next(logits, 1.0, 0.7, -1, torch.Generator().manual_seed(1))
    assert logp == pytest.approx(float(kept[token].log()))  # the renormalised kept distribution, as vLLM reports


def test_hf_server_generates_with_the_models_log_probs_and_takes_new_weights(assets: dict[str, str]) -> None:
    from transformers import AutoModelForCausalLM

    from stare_rl.engines.verl.cpu.rollout import HFGenerateServer

    server = HFGenerateServer(assets["model"], response_length=5, max_model_len=64, seed=0)
    prompt = [1, 5, 6, 14, 7, 15]
    out = server.generate("r0", prompt_ids=prompt, sampling_params={"temperature": 1.0, "top_p": 1.0, "top_k": -1})
    assert 1 <= len(out.token_ids) <= 5 and len(out.log_probs) == len(out.token_ids)
    model = AutoModelForCausalLM.from_pretrained(assets["model"], attn_implementation="sdpa").eval()
    ids = torch.tensor([prompt + out.token_ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0, len(prompt) - 1:-1].float(), -1)  # (R, V)
    expected = logp.gather(-1, torch.tensor(out.token_ids)[:, None]).squeeze(-1)
    torch.testing.assert_close(torch.tensor(out.log_probs), expected, atol=1e-4, rtol=1e-4)
    state = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
    assert server.load_weights(state, global_steps=3) == len(state)
    assert all(float(p.abs().sum()) == 0 for p in server.model.parameters())
    with pytest.raises(KeyError, match="not in the rollout model"):
        server.load_weights({"no.such.weight": torch.zeros(1)})


def test_assets_pass_verls_qwen_newline_check_and_chat_template(assets: dict[str, str]) -> None:
    """What stopped the tiny Qwen2 in verl's agent loop (#23): its tokenizer, as verl loads it, has a one-token
    newline; the chat template renders the prompt as is."""
    from verl.utils import hf_tokenizer
    from verl.utils.tokenizer.continuous_token import QwenContinuousTokenBuilder

    tok = hf_tokenizer(assets["model"])
    QwenContinuousTokenBuilder(tok)  # raises "Expected Qwen newline to tokenize to one token" otherwise
    ids = tok.apply_chat_template([{"role": "user", "content": "12+34="}], add_generation_prompt=True, tokenize=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    assert tok.decode(ids) == "<bos>12+34="


def test_dry_run_reward_gives_partial_credit() -> None:
    assert D.compute_score(D.DATA_SOURCE, "46<eos>", "46") == 1.0
    assert D.compute_score(D.DATA_SOURCE, "47", "46") == 0.25
    assert D.compute_score(D.DATA_SOURCE, "", "46") == 0.0


@pytest.mark.parametrize("recipe", ["stare_qwen25_math_1p5b", "steer_qwen25_math_1p5b", "grpo_ds_qwen25_math_1p5b"])
def test_cpu_overrides_compose_and_validate_with_verls_loader(recipe: str, assets: dict[str, str],
                                                              tmp_path: Path) -> None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    config_dir, name = D.recipe_location(recipe)
    overrides = D.cpu_overrides(assets, tmp_path, 2)
    assert f"hydra.run.dir={tmp_path.resolve() / 'hydra'}" in overrides  # no ./outputs/ in the user's cwd
    cfg = D.compose_config(config_dir, name, overrides)
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert cfg.actor_rollout_ref.rollout.name == cpu.ROLLOUT_NAME and cfg.actor_rollout_ref.actor.strategy == "fsdp2"
    assert cfg.trainer.total_training_steps == 2 and cfg.actor_rollout_ref.model.path == assets["model"]
    expected = D.PLAIN_MODULE if recipe.startswith("grpo") else D.EXACT_MODULE
    assert D.entry_module(cfg) == expected
    info = D.run_info(cfg, recipe, expected)
    assert info["method"] == {"stare": "stare", "steer": "steer", "grpo": "vanilla"}[recipe.split("_")[0]]
    assert info["target_entropy"] == (0.3 if recipe.startswith("stare") else None)
    if recipe.startswith("stare"):  # the settings in use, unset ones resolved (verl's config says null)
        assert cfg.actor_rollout_ref.actor.policy_loss.get("stare_auto_w_max") is None
        assert info["method_settings"]["auto_w_max"] == 50.0 and info["method_settings"]["top_p_ratio"] == 0.1
    json.dumps(info)  # run_config.json


def test_cli_print_only_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stare_rl.cli import main

    assert main(["verl-dryrun", "grpo_ds_qwen25_math_1p5b", "--out", str(tmp_path), "--print-only",
                 "trainer.total_training_steps=3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("VERL_PLATFORM=stare_cpu") and f"-m {D.PLAIN_MODULE}" in out
    assert out.rstrip().endswith("trainer.total_training_steps=3")  # the user's overrides come last
    assert main(["verl-dryrun", "no_such_recipe", "--out", str(tmp_path), "--print-only"]) == 2
    assert "recipe='no_such_recipe': neither a YAML file nor a shipped recipe" in capsys.readouterr().err
    assert main(["verl-dryrun", "grpo_ds_qwen25_math_1p5b", "--steps", "0", "--print-only"]) == 2
    assert "--steps=0 must be >= 1" in capsys.readouterr().err


def test_a_user_model_path_to_a_real_lm_gets_chat_data_and_its_sizes(tmp_path: Path) -> None:
    """`stare verl-dryrun <recipe> actor_rollout_ref.model.path=<real LM dir>` (issue 41): the same as `--model`;
    a tiny character model's dir stays on the tiny data."""
    import json as _json

    real = tmp_path / "real"
    real.mkdir()
    (real / "config.json").write_text(_json.dumps({"vocab_size": 49152}))
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    (tiny / "config.json").write_text(_json.dumps({"vocab_size": 17}))
    assert D._user_model([f"actor_rollout_ref.model.path={real}"]) == real.resolve()
    assert D._user_model([f"actor_rollout_ref.model.path={tiny}"]) is None
    assert D._user_model(["data.max_prompt_length=64"]) is None
    overrides = D.cpu_overrides({"train": "t", "test": "v", "model": str(real)}, tmp_path, 2, real_model=True)
    assert "data.max_prompt_length=64" in overrides and "data.max_response_length=32" in overrides
    assert "actor_rollout_ref.actor.optim.lr=1e-06" in overrides
