"""``stare train``: help, clear errors before any compute, and a short end-to-end run evaluated by ``stare eval``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from _tiny import save_tiny_model

pytest.importorskip("trl")

from stare_rl.io.runlog import CONTROLLER_FILE, read_metrics  # noqa: E402
from stare_rl.train import run as train  # noqa: E402


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small random model of the project's tiny architecture, saved as a normal HF model dir."""
    return save_tiny_model(tmp_path_factory.mktemp("tiny"), "arithmetic")


def test_help_lists_every_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert train.main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--learning_rate", "--num_generations", "--use_vllm", "--model", "--dataset", "--method",
                 "--dynamic_sampling", "--entropy_bonus", "--clip_ratio_low", "--loss_agg_mode", "--reweight_w",
                 "--target_entropy", "--config"):
        assert flag in out, flag
    assert "[not used by stare-rl; use clip_ratio_low]" in out  # TRL's epsilon points to ours
    assert train.main(["--method", "steer", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--token_weight_min" in out and "--reweight_w" not in out


@pytest.mark.slow
def test_train_end_to_end_then_eval_and_rerun_from_saved_config(
    tmp_path: Path, tiny_model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    argv = ["--model", str(tiny_model_dir), "--output_dir", str(run), "--max_steps", "2", "--save_steps", "1",
            "--per_device_train_batch_size", "16", "--num_generations", "4", "--train_size", "32",
            "--eval_size", "4", "--eval_k", "2", "--target_entropy", "100", "--disable_tqdm", "true"]
    assert train.main(argv) == 0
    out = capsys.readouterr().out
    assert str(run.resolve()) in out and "metrics.jsonl" in out and "eval.json" in out
    records = read_metrics(run)
    assert [r["step"] for r in records] == [1, 2]
    assert all(r["control/gate_on"] == 1.0 and "quadrant/neg_low_frac" in r for r in records)
    assert (run / "checkpoint-2" / CONTROLLER_FILE).is_file()
    assert (run / "model" / "config.json").is_file() and (run / "model" / "tokenizer.json").is_file()
    result = json.loads((run / "eval.json").read_text())
    assert result["n"] == 4 and 0.0 <= result["avg@2"] <= 1.0

    # killed during the final evaluation: resuming from the last checkpoint trains nothing more (HF's loop alone
    # would run a step past max_steps) and gives the same evaluation
    reference = (run / "eval.json").read_text()
    (run / "eval.json").unlink()
    assert train.main([*argv, "--resume_from_checkpoint", "last"]) == 0
    assert [r["step"] for r in read_metrics(run)] == [1, 2] and not (run / "checkpoint-3").exists()
    assert (run / "eval.json").read_text() == reference
    capsys.readouterr()

    from stare_rl.commands import eval as eval_cmd

    out_json = tmp_path / "eval2.json"
    assert eval_cmd.main(["--model", str(run / "model"), "--n", "4", "--k", "2", "--out", str(out_json)]) == 0
    assert json.loads(out_json.read_text())["n"] == 4

    run2 = tmp_path / "run2"
    assert train.main(["--config", str(run / "config.yaml"), "--output_dir", str(run2), "--max_steps", "1",
                       "--final_eval", "false"]) == 0
    assert [r["step"] for r in read_metrics(run2)] == [1]
    assert not (run2 / "eval.json").exists()


def test_warmstart_fields_are_validated_before_compute(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in ((["--warmstart_stop_avg_at_k", "1.5"], "warmstart_stop_avg_at_k=1.5 must be in [0, 1]"),
                          (["--warmstart_max_steps", "0"], "warmstart_max_steps=0 must be a positive integer"),
                          (["--warmstart_batch_size", "0"], "warmstart_batch_size=0 must be a positive integer"),
                          (["--eval_every", "-1"], "eval_every=-1 must be an integer >= 0"),
                          (["--eval_samples", "0"], "eval_samples=0 must be >= 1"),
                          (["--warmstart_seed", "-1"], "warmstart_seed=-1 must be an integer >= 0"),
                          (["--tiny_hidden_size", "130"], "tiny_hidden_size=130 must be divisible by num_heads=4"),
                          (["--tiny_num_layers", "0"], "tiny_num_layers=0 must be a positive integer"),
                          (["--tiny_num_heads", "3"], "tiny_hidden_size=64 must be divisible by num_heads=3"),
                          (["--warmstart_correct_frac", "1.2"], "warmstart_correct_frac=1.2 must be in [0, 1]"),
                          (["--warmstart_lr_scheduler", "step"], "warmstart_lr_scheduler='step' is not one of"),
                          (["--warmstart_stop_on_metric", "maybe"], "warmstart_stop_on_metric"),
                          (["--weight_control", "auto", "--auto_kp", "-1"], "auto_kp=-1.0 must be a finite number")):
        cache = tmp_path / "cache"
        assert train.main([*argv, "--cache_dir", str(cache), "--output_dir", str(tmp_path / "run")]) == 2
        assert message in capsys.readouterr().err
        assert not cache.exists()


def _embedded_warmstart() -> dict[str, object]:
    """The embedded default.yaml's warm-start settings and tiny-model shape as WarmStartConfig keyword arguments."""
    from stare_rl.train.config import load_yaml_config

    return {k.removeprefix("warmstart_").removeprefix("tiny_"): v for k, v in load_yaml_config(None).items()
            if k.startswith(("warmstart_", "tiny_")) and k != "warmstart_seed"}


@pytest.mark.slow
def test_a_cold_warm_start_then_bf16_grpo_in_the_same_process(tmp_path: Path) -> None:
    """A GPU user's first ``stare train`` (found on an H200): the warm start trains in float32, then the GRPO
    trainer asks accelerate for bf16 (the default on a GPU) in the same process; accelerate refused to change the
    state the warm start had fixed ("AcceleratorState has already been initialized"). Reproduced on the CPU with
    ``--bf16 true --use_cpu true``; now the GRPO run sets up its own state and trains."""
    run = tmp_path / "run"
    argv = ["--cache_dir", str(tmp_path / "cache"), "--warmstart_max_steps", "2", "--tiny_hidden_size", "32",
            "--tiny_num_layers", "1", "--bf16", "true", "--use_cpu", "true", "--max_steps", "1",
            "--per_device_train_batch_size", "8", "--num_generations", "4", "--train_size", "16",
            "--final_eval", "false", "--disable_tqdm", "true", "--output_dir", str(run)]
    assert train.main(argv) == 0
    assert [r["step"] for r in read_metrics(run)] == [1]
    assert "bf16: true" in (run / "config.yaml").read_text()


@pytest.mark.slow
def test_warmstart_fields_reach_the_warm_start_and_grpo_seeds_share_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from stare_rl.tasks import get_task
    from stare_rl.train.warmstart import WarmStartConfig, cache_key

    cache = tmp_path / "cache"
    common = ["--cache_dir", str(cache), "--warmstart_max_steps", "1", "--warmstart_stop_avg_at_k", "0.9",
              "--warmstart_stop_greedy_acc", "1.0", "--warmstart_learning_rate", "0.002", "--max_steps", "1",
              "--per_device_train_batch_size", "8", "--num_generations", "4", "--train_size", "16",
              "--final_eval", "false", "--disable_tqdm", "true"]
    for seed in (0, 1):  # two GRPO seeds: one warm start (warmstart_seed defaults to 0)
        assert train.main([*common, "--seed", str(seed), "--output_dir", str(tmp_path / f"run{seed}")]) == 0
        assert [r["step"] for r in read_metrics(tmp_path / f"run{seed}")] == [1]
    capsys.readouterr()
    expected = WarmStartConfig(**{**_embedded_warmstart(), "max_steps": 1, "stop_avg_at_k": 0.9,
                                  "stop_greedy_acc": 1.0, "learning_rate": 0.002})
    cached = sorted(p.name for p in cache.iterdir() if p.name != "evals")  # evals: initial_eval's cache
    assert cached == [f"arithmetic-{cache_key(get_task('arithmetic'), expected, 0)}"]
    info = json.loads((cache / cached[0] / "warmstart.json").read_text())
    assert info["seed"] == 0 and info["steps"] == 1 and info["config"] == dataclasses.asdict(expected)
    assert "warmstart_seed: 0" in (tmp_path / "run1" / "config.yaml").read_text()


@pytest.mark.slow
def test_the_warm_start_cache_follows_xdg_and_stare_rl_cache_and_cache_dir_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --cache_dir: the warm start is cached under $XDG_CACHE_HOME/stare-rl, or $STARE_RL_CACHE when set;
    --cache_dir beats both (stare_rl.io.cache). The later runs find a copy of the first one's entry (a cache hit
    in the directory the rule names, no second warm start)."""
    import shutil

    common = ["--tiny_hidden_size", "16", "--tiny_num_layers", "1", "--warmstart_max_steps", "1", "--max_steps", "1",
              "--per_device_train_batch_size", "8", "--num_generations", "4", "--train_size", "16",
              "--final_eval", "false", "--disable_tqdm", "true"]
    monkeypatch.delenv("STARE_RL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert train.main([*common, "--output_dir", str(tmp_path / "run0")]) == 0
    assert f"cached in {tmp_path / 'xdg' / 'stare-rl'}" in capsys.readouterr().out
    (entry,) = (tmp_path / "xdg" / "stare-rl").iterdir()
    assert entry.name.startswith("arithmetic-")
    for name in ("override", "given"):
        shutil.copytree(entry, tmp_path / name / entry.name)
    monkeypatch.setenv("STARE_RL_CACHE", str(tmp_path / "override"))
    assert train.main([*common, "--output_dir", str(tmp_path / "run1")]) == 0
    assert f"warm start: {tmp_path / 'override' / entry.name}\n" in capsys.readouterr().out
    assert train.main([*common, "--cache_dir", str(tmp_path / "given"), "--output_dir", str(tmp_path / "run2")]) == 0
    assert f"warm start: {tmp_path / 'given' / entry.name}\n" in capsys.readouterr().out


@pytest.mark.slow
def test_tiny_shape_fields_key_the_warm_start_and_auto_weight_control_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tiny_hidden_size`` / ``tiny_num_layers`` build and cache a model of that shape; ``--weight_control auto``
    runs through ``stare train`` and logs the controller's quantities."""
    from stare_rl.tasks import get_task
    from stare_rl.train.warmstart import WarmStartConfig, cache_key

    cache, run = tmp_path / "cache", tmp_path / "run"
    assert train.main(["--cache_dir", str(cache), "--tiny_hidden_size", "32", "--tiny_num_layers", "1",
                       "--warmstart_max_steps", "1", "--max_steps", "2", "--per_device_train_batch_size", "8",
                       "--num_generations", "4", "--train_size", "16", "--final_eval", "false",
                       "--disable_tqdm", "true", "--weight_control", "auto", "--variant", "C2",
                       "--target_entropy", "100", "--output_dir", str(run)]) == 0
    capsys.readouterr()
    embedded = _embedded_warmstart()
    assert embedded["correct_frac"] < 1 and embedded["stop_on_metric"] is False
    expected = WarmStartConfig(**{**embedded, "hidden_size": 32, "num_layers": 1, "max_steps": 1})
    cached = sorted(p.name for p in cache.iterdir() if p.name != "evals")  # evals: initial_eval's cache
    assert cached == [f"arithmetic-{cache_key(get_task('arithmetic'), expected, 0)}"]
    model_cfg = json.loads((cache / cached[0] / "config.json").read_text())
    assert model_cfg["hidden_size"] == 32 and model_cfg["num_hidden_layers"] == 1
    records = read_metrics(run)
    assert [r["step"] for r in records] == [1, 2]
    # far below the target 100: the error is +1, the strength climbs at the rate limit, W = 1 / M
    assert [r["control/auto_strength"] for r in records] == pytest.approx([0.25, 0.5])
    assert all(r["control/reweight_m"] == pytest.approx(1.0 / r["control/reweight_w"]) for r in records)
    assert "auto" in json.loads((run / "checkpoint-2" / CONTROLLER_FILE).read_text())["controllers"]


def test_config_file_is_layered_on_the_embedded_default(tmp_path: Path) -> None:
    """A config file with two keys changes those two; every other value is the no-argument default's."""
    from stare_rl.train.config import load_yaml_config

    cfg = tmp_path / "two.yaml"
    cfg.write_text("max_steps: 7\nseed: 3\n")
    plan = train.plan_run(["--config", str(cfg), "--learning_rate", "3e-4", "--output_dir", str(tmp_path / "run")])
    default = load_yaml_config(None)
    assert plan.grpo.max_steps == 7 and plan.grpo.seed == 3 and plan.grpo.learning_rate == 3e-4  # file, flag
    assert plan.grpo.per_device_train_batch_size == default["per_device_train_batch_size"] == 128
    assert plan.warmstart.warmstart_learning_rate == default["warmstart_learning_rate"] == 2e-3
    assert plan.task_args.torch_threads == default["torch_threads"] == 1
    assert plan.base_note == f"config: {cfg} on top of the embedded default (default.yaml: the tiny model)"
    assert train.plan_run(["--output_dir", str(tmp_path / "r2")]).base_note == \
        "config: the embedded default (default.yaml: the tiny model)"


def test_config_base_none_starts_from_the_library_defaults(tmp_path: Path) -> None:
    """`stare compare` cells: the file alone; the saved config.yaml pins the default's keys, so a re-run of it
    (layered on the default) gets the same values."""
    from stare_rl.train.config import load_yaml_config

    cfg = tmp_path / "two.yaml"
    cfg.write_text("max_steps: 7\nseed: 3\n")
    plan = train.plan_run(["--config", str(cfg), "--config_base", "none", "--output_dir", str(tmp_path / "run")])
    assert plan.grpo.max_steps == 7 and plan.grpo.per_device_train_batch_size == 8  # GRPOConfig's default
    assert plan.warmstart.warmstart_learning_rate is None and plan.task_args.torch_threads is None
    assert "alone (config_base none" in plan.base_note
    assert set(load_yaml_config(None)) <= set(plan.explicit)
    assert plan.explicit["per_device_train_batch_size"] == 8 and plan.explicit["lr_scheduler_type"] == "linear"


def test_stare_train_keeps_the_no_flag_of_a_method_boolean_that_defaults_to_true(tmp_path: Path) -> None:
    import dataclasses

    from stare_rl.core.registry import get_method, list_methods
    from stare_rl.train.plan import plan_run

    true_by_default = [(m, f.name) for m in list_methods() for f in dataclasses.fields(get_method(m).config_cls)
                       if f.default is True]
    assert true_by_default
    for method, name in true_by_default:
        plan = plan_run(["--method", method, f"--no_{name}", "--output_dir", str(tmp_path / method)])
        assert getattr(plan.setup.method_config, name) is False


def test_an_enum_valued_field_is_saved_as_its_plain_value(tmp_path: Path) -> None:
    """`--save_strategy no` parses to TRL's SaveStrategy enum; config.yaml must hold "no", not a Python object
    (yaml.safe_dump refused it and stare train crashed before training)."""
    from enum import Enum

    from stare_rl.train.config import load_yaml_config

    plan = train.plan_run(["--save_strategy", "no", "--output_dir", str(tmp_path / "run")])
    assert isinstance(plan.explicit["save_strategy"], Enum)  # the parsed value, what used to crash the writer
    train._write_config(tmp_path / "config.yaml", plan.explicit)
    assert load_yaml_config(str(tmp_path / "config.yaml"))["save_strategy"] == "no"


def test_a_model_dir_starts_from_the_real_model_base_and_records_only_what_it_uses(tmp_path: Path) -> None:
    """Issue 41: any model but `tiny` gets TRL's defaults, never the tiny model's learning rate or warm-start
    fields; a dataset run's config holds no embedded-task field; a chat model given no task gets chat_arithmetic."""
    model = save_tiny_model(tmp_path / "m")
    data = tmp_path / "d.jsonl"
    data.write_text("".join(f'{{"prompt": "{a}+{a}=", "answer": "{2 * a}"}}\n' for a in range(10, 30)))
    plan = train.plan_run(["--model", str(model), "--dataset", str(data), "--output_dir", str(tmp_path / "r")])
    assert plan.base_note.startswith("config: the real-model base (pretrained.yaml")
    assert plan.grpo.learning_rate == 1e-6 and plan.explicit["learning_rate"] == 1e-6
    assert not {"task", "train_size", "warmstart_seed"} & set(plan.explicit)
    assert not [k for k in plan.explicit if k.startswith(("tiny_", "warmstart_"))]
    tiny = train.plan_run(["--dataset", str(data), "--output_dir", str(tmp_path / "t")])  # the tiny model needs its task
    assert tiny.explicit["task"] == "arithmetic" and tiny.grpo.learning_rate == 2e-4
    (model / "chat_template.jinja").write_text("{{ messages[0]['content'] }}")
    chat = train.plan_run(["--model", str(model), "--output_dir", str(tmp_path / "c")])
    assert chat.task_args.task == "chat_arithmetic" and chat.grpo.max_steps == 20  # + chat_arithmetic.yaml
