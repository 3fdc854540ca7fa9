"""The public TRL API (``from stare_rl.trl import StareGRPOConfig, StareGRPOTrainer``): a GRPOTrainer script with
two class names changed and ``method=...`` added. The config is TRL's (flags, YAML, TrlParser), its method fields
come from the registry and are validated like ``stare train``'s; the trainer takes GRPOTrainer's arguments and
trains with what a TRL user sets up (chat data, several weighted rewards, LoRA, accumulation, several
iterations, tensorboard, checkpoint + resume, ``accelerate launch`` on 2 processes); the examples run."""

from __future__ import annotations

import ast
import copy
import dataclasses
import difflib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

trl = pytest.importorskip("trl")

from stare_rl.core.registry import get_method, list_methods, make_config  # noqa: E402
from stare_rl.core.surrogate import SurrogateConfig  # noqa: E402
from stare_rl.engines.trl.options import TARGET_FIELD, StepOptions  # noqa: E402
from stare_rl.io.runlog import read_metrics  # noqa: E402
from stare_rl.trl import StareGRPOConfig, StareGRPOTrainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def _config(tmp_path: Path, **kwargs: Any) -> StareGRPOConfig:
    base = dict(output_dir=str(tmp_path / "run"), per_device_train_batch_size=16, num_generations=4,
                max_completion_length=4, learning_rate=1e-2, max_steps=2, save_strategy="no", use_cpu=True, seed=0,
                disable_tqdm=True, report_to="none", lr_scheduler_type="constant")
    return StareGRPOConfig(**{**base, **kwargs})


def _help(cls: type, name: str) -> str:
    return {f.name: f for f in dataclasses.fields(cls)}[name].metadata.get("help", "")


# ----- the config -----
def test_the_public_classes_are_trls_subclasses() -> None:
    assert issubclass(StareGRPOConfig, trl.GRPOConfig) and issubclass(StareGRPOTrainer, trl.GRPOTrainer)
    assert StareGRPOConfig.__module__.startswith("stare_rl.") and StareGRPOTrainer.__module__.startswith("stare_rl.")


def test_the_trainer_takes_exactly_grpotrainers_arguments() -> None:
    def params(fn: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert params(StareGRPOTrainer.__init__) == params(trl.GRPOTrainer.__init__)


def test_method_fields_are_generated_from_every_registered_method() -> None:
    fields = {f.name: f for f in dataclasses.fields(StareGRPOConfig)}
    assert fields["method"].default == "vanilla"
    for method in list_methods():
        for f in dataclasses.fields(get_method(method).config_cls):
            assert fields[f.name].default is None, f"{method}.{f.name}: unset must mean the method's default"
            if f.name == TARGET_FIELD:  # the step options' field: the target of the method and of the adaptive bonus
                continue
            text = fields[f.name].metadata["help"]
            assert method in text and f.metadata.get("help", "") in text, f"{method}.{f.name}: help not carried over"
    for cls in (StepOptions, SurrogateConfig):  # copied with their defaults and help, not re-listed
        for f in dataclasses.fields(cls):
            assert fields[f.name].default == f.default and fields[f.name].metadata == f.metadata


def test_set_fields_reach_the_method_config_and_unset_ones_keep_its_defaults(tmp_path: Path) -> None:
    setup = _config(tmp_path, method="stare", variant="C2", top_p_ratio=0.2, dynamic_sampling=True,
                    entropy_bonus="fixed", bonus_coef=0.01, clip_ratio_high=0.3).loss_setup()
    assert setup.method == "stare" and setup.method_config == make_config("stare", variant="C2", top_p_ratio=0.2)
    assert setup.dynamic_sampling and setup.entropy_bonus.coef == 0.01 and setup.surrogate.clip_ratio_high == 0.3
    assert _config(tmp_path, method="steer").loss_setup().method_config == make_config("steer")
    # a field two methods share goes to whichever is chosen
    assert _config(tmp_path, method="entropic", target_entropy=0.7).loss_setup().method_config.target_entropy == 0.7


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "steer", "variant": "C2"}, "variant='C2' belongs to method stare (and stare_sensitivity), not to "
                                           "method='steer'"),
    ({"method": "stare", "reweight_w": 0.5}, "reweight_w=0.5 must be >= 1"),
    ({"method": "stare", "dynamic_sampling_mode": "drop"}, "dynamic_sampling_mode='drop' is not one of"),
    ({"method": "stare", "clip_ratio_c": 0.5}, "clip_ratio_c=0.5 must be > 1"),
    ({"method": "no_such_method"}, "method='no_such_method' is not registered; known methods: ["),
    ({"epsilon": 0.3}, "epsilon=0.3 is TRL's own loss setting and is not used by stare-rl; use clip_ratio_low"),
    ({"loss_type": "grpo"}, "loss_type='grpo' is TRL's own loss setting"),
])
def test_bad_values_are_refused_at_construction(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as err:
        _config(tmp_path, **kwargs)
    assert message in str(err.value)


@pytest.mark.parametrize("flags", [["--reweight_w", "0.5"], ["--dynamic_sampling_mode", "drop"],
                                   ["--clip_ratio_c", "0.5"], ["--epsilon", "0.3"]])
def test_the_same_error_as_stare_train(tmp_path: Path, flags: list[str]) -> None:
    from transformers import HfArgumentParser

    from stare_rl.train.plan import plan_run

    with pytest.raises(ValueError) as from_cli:
        plan_run(["--method", "stare", "--output_dir", str(tmp_path / "a"), *flags])
    with pytest.raises(ValueError) as from_api:
        HfArgumentParser((StareGRPOConfig,)).parse_args_into_dataclasses(
            ["--method", "stare", "--output_dir", str(tmp_path / "b"), *flags])
    assert str(from_cli.value) == str(from_api.value)


def test_stare_train_plans_with_the_public_config(tmp_path: Path) -> None:
    """`stare train` parses into the same StareGRPOConfig a TRL script builds (one path, not two)."""
    from stare_rl.train.plan import plan_run

    plan = plan_run(["--method", "steer", "--token_weight_min", "0.7", "--dynamic_sampling", "true",
                     "--output_dir", str(tmp_path / "run")])
    assert type(plan.grpo) is StareGRPOConfig and plan.setup == plan.grpo.loss_setup()
    api = _config(tmp_path, method="steer", token_weight_min=0.7, dynamic_sampling=True)
    assert plan.setup == api.loss_setup()


def test_flags_yaml_and_trlparser_give_the_same_config(tmp_path: Path) -> None:
    import yaml
    from transformers import HfArgumentParser

    values = {"output_dir": str(tmp_path / "run"), "method": "stare", "variant": "C2", "weight_control": "paper",
              "dynamic_sampling": True, "dynamic_sampling_mode": "mask", "clip_ratio_high": 0.3,
              "num_generations": 4, "per_device_train_batch_size": 8, "report_to": "none"}
    (path := tmp_path / "run.yaml").write_text(yaml.safe_dump(values))
    flags = [tok for k, v in values.items() for tok in (f"--{k}", str(v))]
    (from_flags,) = HfArgumentParser((StareGRPOConfig,)).parse_args_into_dataclasses(flags)
    (from_yaml,) = HfArgumentParser((StareGRPOConfig,)).parse_yaml_file(str(path))
    (from_trl,) = trl.TrlParser((StareGRPOConfig,)).parse_args_and_config(["--config", str(path)])
    setups = [c.loss_setup() for c in (from_flags, from_yaml, from_trl)]
    assert setups[0] == setups[1] == setups[2]
    assert setups[0].method_config == make_config("stare", variant="C2", weight_control="paper")
    assert setups[0].dynamic_sampling_mode == "mask" and setups[0].surrogate.clip_ratio_high == 0.3
    (path2 := tmp_path / "bad.yaml").write_text(yaml.safe_dump({**values, "method": "steer"}))
    with pytest.raises(ValueError, match=r"(variant|weight_control)='\w+' belongs to method stare"):
        trl.TrlParser((StareGRPOConfig,)).parse_args_and_config(["--config", str(path2)])


def test_a_plain_grpoconfig_is_refused_with_what_to_use() -> None:
    with pytest.raises(TypeError, match=r"needs a StareGRPOConfig .* StareGRPOConfig\(method=\.\.\., \.\.\.\)"):
        StareGRPOTrainer(model="unused", reward_funcs=[], args=trl.GRPOConfig(output_dir="unused", report_to="none", use_cpu=True))


# ----- the examples -----
def _code(path: Path) -> list[str]:
    """The lines of a script after its module docstring."""
    text = path.read_text()
    return text.splitlines()[ast.parse(text).body[0].end_lineno:]


def test_the_stare_example_is_the_plain_trl_script_with_the_api_lines_changed() -> None:
    diff = [line for line in difflib.unified_diff(_code(EXAMPLES / "trl_grpo.py"), _code(EXAMPLES / "trl_stare.py"),
                                                  lineterm="", n=0) if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert sorted(diff) == sorted([
        "-from trl import GRPOConfig, GRPOTrainer, TrlParser",
        "+from trl import TrlParser",
        "+from stare_rl.trl import StareGRPOConfig, StareGRPOTrainer",
        "-    parser = TrlParser((GRPOConfig,))",
        "+    parser = TrlParser((StareGRPOConfig,))",
        '+        method="stare",',
        "-    trainer = GRPOTrainer(",
        "+    trainer = StareGRPOTrainer(",
    ])


def _env() -> dict[str, str]:
    src = str(ROOT / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
            "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def _run_example(cmd: list[str], out: Path) -> list[dict[str, Any]]:
    # target_entropy 5 > the random model's ~2.7: STARE's gate is on, so its reweighting acts in every step
    done = subprocess.run([*cmd, "--output_dir", str(out), "--max_steps", "2", "--target_entropy", "5",
                           "--disable_tqdm", "true"], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return read_metrics(out)


@pytest.mark.slow
def test_the_stare_example_trains_with_stare(tmp_path: Path) -> None:
    logs = _run_example([sys.executable, str(EXAMPLES / "trl_stare.py")], tmp_path / "run")
    assert [r["step"] for r in logs] == [1, 2]
    for r in logs:
        assert r["control/gate_on"] == 1.0 and r["loss/reweight_w"] == pytest.approx(1.1)  # STARE's defaults
        assert r["loss/l_plus_frac"] > 0 and "rewards/correct/mean" in r and "rewards/digits_only/mean" in r


@pytest.mark.slow
def test_the_stare_example_under_accelerate_launch_on_2_processes(tmp_path: Path) -> None:
    # accelerate's --cpu always starts one process; --multi_gpu starts torchrun, and with use_cpu (the example's
    # default) the two processes join one gloo group (MULTI_CPU)
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    logs = _run_example([*launch, str(EXAMPLES / "trl_stare.py")], tmp_path / "run")
    assert [r["step"] for r in logs] == [1, 2] and all(r["control/gate_on"] == 1.0 for r in logs)
    # 2 ranks x 16 rows of 5 prompt tokens (<bos> a + b =) each: one process alone counts at most 16 x (5 + 3)
    assert logs[0]["num_tokens"] >= 2 * 16 * 5


def test_the_verl_example_names_existing_recipes_and_its_overrides_load() -> None:
    pytest.importorskip("verl")
    from test_verl_recipes import RECIPES, load

    text = (EXAMPLES / "verl_stare.sh").read_text()
    recipe = text.split("--config-name=", 1)[1].split()[0]
    assert (RECIPES / f"{recipe}.yaml").is_file() and (RECIPES / "run.sh").is_file()
    assert "python3 -m stare_rl.engines.verl.main" in text
    block = text.split("# overrides:begin", 1)[1].split("# overrides:end")[0].splitlines()
    overrides = [line.strip() for line in block if line.strip() and not line.strip().endswith(("(", ")"))]
    assert overrides, "no overrides found between the markers"
    cfg = load(recipe, overrides)
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    from stare_rl.engines.verl import adapter as V
    from stare_rl.engines.verl import main as verl_main

    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    verl_main.check_config(cfg)  # the entry point the example launches
    loss = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor).policy_loss  # verl's own instantiation
    assert loss.loss_mode == "stare" and V.method_config("stare", loss).variant == "C2"


# ----- what a TRL user sets up -----
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"


def _chat_parts() -> tuple[Any, Any, Any]:
    """Tiny model, a character tokenizer with a chat template, and conversational prompts."""
    from datasets import Dataset

    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer

    tok = build_char_tokenizer("0123456789+=")
    tok.chat_template = CHAT_TEMPLATE
    model = build_tiny_model(tok, hidden_size=32, num_layers=2, num_heads=2, seed=0)
    rows = [{"prompt": [{"role": "user", "content": f"{a}+{b}="}], "answer": str(a + b)}
            for a in range(10) for b in range(10 - a)]
    return model, tok, Dataset.from_list(rows)


def _text(completion: Any) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def digit_share(completions: list, **kwargs: Any) -> list[float]:
    return [sum(ch.isdigit() for ch in _text(c)) / max(len(_text(c)), 1) for c in completions]


def length_penalty(completions: list, **kwargs: Any) -> list[float]:
    return [-len(_text(c)) / 4 for c in completions]


def test_chat_data_weighted_rewards_accumulation_iterations_and_tensorboard(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", str(tmp_path / "tb"))
    model, tok, ds = _chat_parts()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    seen: list[Any] = []

    def recorded(completions: list, **kwargs: Any) -> list[float]:
        seen.extend(completions)
        return digit_share(completions)

    args = _config(tmp_path, method="stare", target_entropy=5.0, reward_weights=[1.0, 0.5],
                   per_device_train_batch_size=8, gradient_accumulation_steps=2, num_iterations=2,
                   report_to="tensorboard")
    trainer = StareGRPOTrainer(model=model, reward_funcs=[recorded, length_penalty], args=args, train_dataset=ds,
                               processing_class=tok)
    trainer.train()
    assert seen and all(isinstance(c, list) and c[-1]["role"] == "assistant" for c in seen)  # chat completions
    logs = read_metrics(tmp_path / "run")
    assert [r["step"] for r in logs] == [1, 2]
    assert all(r["loss/l_plus_frac"] > 0 for r in logs)  # STARE reweights in every update
    # one generation per 2 accumulated micro-batches x 2 iterations: the rewards and the controller's step are
    # logged where a generation happened
    generated = [r for r in logs if "critic/score/mean" in r]
    assert generated and all(r["control/gate_on"] == 1.0 for r in generated)
    for r in generated:  # TRL's reward is the weighted sum of the functions; its mean the weighted sum of the means
        weighted = r["rewards/recorded/mean"] + 0.5 * r["rewards/length_penalty/mean"]
        assert r["critic/score/mean"] == pytest.approx(weighted, abs=1e-5)
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])]
    assert len(changed) == len(before), f"unchanged: {sorted(set(before) - set(changed))}"
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = list((tmp_path / "tb").rglob("events.out.tfevents.*"))
    tags = EventAccumulator(str(events)).Reload().Tags()["scalars"]
    assert {"train/control/gate_on", "train/loss/mean_weight", "train/critic/score/mean"} <= set(tags)


def test_lora_trains_only_the_adapter(tmp_path: Path) -> None:
    peft = pytest.importorskip("peft")
    model, tok, ds = _chat_parts()
    base = {n: p.detach().clone() for n, p in model.named_parameters()}
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    trainer = StareGRPOTrainer(model=model, reward_funcs=digit_share, args=_config(tmp_path, method="steer"),
                               train_dataset=ds, processing_class=tok, peft_config=config)
    lora = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" in n}
    trainer.train()
    assert lora and all(not torch.equal(p, lora[n]) for n, p in trainer.model.named_parameters() if n in lora)
    after = {n.replace("base_model.model.", "").replace(".base_layer", ""): p
             for n, p in trainer.model.named_parameters() if "lora_" not in n}
    assert set(after) == set(base) and all(torch.equal(after[n], base[n]) for n in base)
    assert "loss/mean_weight" in read_metrics(tmp_path / "run")[-1]


def test_checkpoint_and_resume_restore_the_controller_state(tmp_path: Path) -> None:
    from test_trl_engine import digit_reward, tiny_parts

    def trainer(out: str) -> StareGRPOTrainer:
        model, tok, ds = tiny_parts()
        # adaptive W/M with the gate on from the start: the schedule moves every step
        args = _config(tmp_path, output_dir=str(tmp_path / out), method="stare", variant="C2",
                       weight_control="paper", target_entropy=5.0, max_steps=3, save_strategy="steps", save_steps=1)
        return StareGRPOTrainer(model=model, reward_funcs=digit_reward, args=args, train_dataset=ds,
                                processing_class=tok)

    full = trainer("full")
    fresh = copy.deepcopy(full.controller_state())
    full.train()
    resumed = trainer("resumed")
    resumed.train(resume_from_checkpoint=str(tmp_path / "full" / "checkpoint-2"))
    assert resumed.controller_state() == full.controller_state() != fresh
    at_2 = json.loads((tmp_path / "full" / "checkpoint-2" / "trainer_state.json").read_text())["global_step"]
    assert at_2 == 2 and [r["step"] for r in read_metrics(tmp_path / "resumed")] == [3]
    assert read_metrics(tmp_path / "resumed")[0] == {**read_metrics(tmp_path / "full")[2],
                                                      **_timings(read_metrics(tmp_path / "resumed")[0])}


def _timings(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if "time" in k or "per_second" in k}


def test_docs_list_every_field_stare_rl_adds_with_its_default() -> None:
    """docs/train.md documents the API field by field: each added field, and each method field per method."""
    text = (ROOT / "docs" / "train.md").read_text()
    added = [f for f in dataclasses.fields(StareGRPOConfig) if f.name not in
             {g.name for g in dataclasses.fields(trl.GRPOConfig)} and f.name not in
             {g.name for m in list_methods() for g in dataclasses.fields(get_method(m).config_cls)}]
    assert added and added[0].name == "method"
    for f in added:
        assert f"| `{f.name}` | `{f.default!r}` |" in text, f"docs/train.md: no row for {f.name}"
    for m in list_methods():
        for f in dataclasses.fields(get_method(m).config_cls):
            assert f"| `{m}` | `{f.name}` | `{f.default!r}` |" in text, f"docs/train.md: no row for {m}.{f.name}"

