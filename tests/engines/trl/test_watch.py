"""Run-time faults: a reward that never pays, groups that never differ, NaN/inf losses and weights, reward
functions that return NaN or the wrong number of scores. Defined behaviour and one clear message each."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("trl")

from transformers import TrainerControl, TrainerState  # noqa: E402

from stare_rl.engines.trl.watch import TrainingWatch, check_reward_func  # noqa: E402


def _feed(watch: TrainingWatch, logs: list[dict[str, float]]) -> TrainerControl:
    state, control = TrainerState(), TrainerControl()
    for step, record in enumerate(logs, start=1):
        state.global_step = step
        control = watch.on_log(None, state, control, logs=dict(record))
    return control


def test_zero_reward_for_n_steps_warns_once_naming_the_reward(caplog: pytest.LogCaptureFixture) -> None:
    watch = TrainingWatch(patience=3, reward_note="reward: math (reward=auto)")
    with caplog.at_level(logging.WARNING, logger="stare_rl.engines.trl.watch"):
        _feed(watch, [{"critic/score/mean": 0.0}] * 2 + [{"critic/score/mean": 0.5}] + [{"critic/score/mean": 0.0}] * 5)
    assert len(watch.warnings) == 1  # 2 zeros, a reset, then 5 zeros: one warning at the 3rd of those
    assert "reward was 0 for every completion in the last 3 steps (to step 6)" in watch.warnings[0]
    assert "\\boxed{...}" in watch.warnings[0] and "In use: reward: math (reward=auto)" in watch.warnings[0]
    assert watch.warnings[0] in caplog.text


def test_identical_rewards_in_every_group_warn() -> None:
    watch = TrainingWatch(patience=2)
    _feed(watch, [{"critic/score/mean": 1.0, "frac_reward_zero_std": 1.0}] * 2)
    assert len(watch.warnings) == 1 and "all advantages are 0" in watch.warnings[0]
    watch = TrainingWatch(patience=2)
    _feed(watch, [{"critic/score/mean": 0.4, "frac_reward_zero_std": 0.5}] * 4)
    assert watch.warnings == []


@pytest.mark.parametrize("key, value", [("loss", math.nan), ("actor/grad_norm", math.inf)])
def test_non_finite_loss_stops_without_saving(key: str, value: float) -> None:
    watch = TrainingWatch()
    control = _feed(watch, [{"loss": 0.1, "actor/grad_norm": 1.0}, {"loss": 0.1, "actor/grad_norm": 1.0, key: value}])
    assert control.should_training_stop and not control.should_save
    assert watch.stopped.startswith(f"training stopped at step 2: {key} is {value}")


def test_non_finite_weights_stop_before_the_next_generation() -> None:
    model = torch.nn.Linear(2, 2)
    watch, state, control = TrainingWatch(), TrainerState(global_step=4), TrainerControl(should_save=True)
    watch.on_step_end(None, state, control, model=model)
    assert watch.stopped is None and control.should_save
    with torch.no_grad():
        model.weight[0, 1] = math.inf
    watch.on_step_end(None, state, control, model=model)
    assert control.should_training_stop and not control.should_save
    assert "step 4: the weights are no longer finite" in watch.stopped


def test_reward_func_with_the_wrong_count_or_nan() -> None:
    def short(prompts: list, completions: list, **kw: Any) -> list[float]:
        return [1.0] * (len(completions) - 1)

    def nan_some(prompts: list, completions: list, **kw: Any) -> list[float]:
        return [math.nan, 1.0, math.inf, None]

    with pytest.raises(ValueError, match="reward function 'short' returned 3 scores for 4 completions"):
        check_reward_func(short)(["p"] * 4, ["c"] * 4)
    logged: list[tuple[str, float]] = []
    scores = check_reward_func(nan_some)(["p"] * 4, ["c"] * 4, log_metric=lambda k, v: logged.append((k, v)))
    assert scores == [None, 1.0, None, None] and logged == [("reward/nonfinite", 2.0)]


def test_per_sample_reward_returning_nan_scores_zero_and_is_counted() -> None:
    from stare_rl.engines.trl.rewards import make_reward_func

    logged: list[tuple[str, float]] = []
    reward = make_reward_func(lambda c, a: math.nan if c == "bad" else 1.0, timeout_s=5.0)
    scores = reward(["p"] * 3, ["bad", "ok", "bad"], answer=["1"] * 3, log_metric=lambda k, v: logged.append((k, v)))
    assert scores == [0.0, 1.0, 0.0] and logged == [("reward/errors", 2.0)]


@pytest.mark.slow
def test_stare_train_warns_on_a_reward_that_is_always_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """A random tiny model never writes the answers of this data: reward 0 every step -> the warning, all groups
    dropped by dynamic sampling -> loss 0 and nothing NaN, and the run still finishes (status 0)."""
    import json

    from stare_rl import cli
    from stare_rl.io.runlog import read_metrics
    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer
    from stare_rl.tasks import get_task

    tok = build_char_tokenizer(get_task("arithmetic").alphabet)
    model_dir = tmp_path / "model"
    build_tiny_model(tok, hidden_size=16, num_layers=1, num_heads=2, seed=0).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{a}+{a}=", "answer": "9" * 12}) + "\n" for a in range(40)))
    run = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="stare_rl.engines.trl.watch"):
        status = cli.main(["train", "--model", str(model_dir), "--dataset", str(data), "--reward", "task",
                           "--output_dir", str(run), "--max_steps", "3", "--save_steps", "10",
                           "--per_device_train_batch_size", "8", "--num_generations", "4",
                           "--max_completion_length", "4", "--dynamic_sampling", "true", "--dynamic_sampling_mode", "mask",
                           "--warn_after_steps", "2",
                           "--eval_k", "2", "--disable_tqdm", "true"])
    assert status == 0
    assert "the reward was 0 for every completion in the last 2 steps (to step 2)" in caplog.text
    records = read_metrics(run)
    assert [r["step"] for r in records] == [1, 2, 3]
    assert all(r["dynamic_sampling/kept"] == 0.0 and r["loss"] == 0.0 for r in records)
    card = (run / "README.md").read_text()
    assert "GRPO fine-tuning with the **stare** policy loss" in card and "[None]" not in card
    assert (run / "model" / "README.md").read_text() == card
    out = capsys.readouterr().out
    assert "reward: task (reward=task)" in out and "8 rows held out from dataset" in out


def test_tied_lm_head_missing_key_message_is_dropped_on_resume_only_when_tied() -> None:
    """transformers warns "missing keys ['lm_head.weight']" when resuming a tied-embedding model (the tie restores
    it); ``stare train`` drops exactly that message, and keeps it for a real missing weight or an untied head."""
    import inspect

    import transformers.trainer

    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer
    from stare_rl.tasks import get_task
    from stare_rl.train.run import _quiet_tied_weight_warning

    prefix = "There were missing keys in the checkpoint model loaded: "
    assert prefix in inspect.getsource(transformers.trainer)  # the message this filter is written for
    tok = build_char_tokenizer(get_task("arithmetic").alphabet)
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    log = logging.getLogger("transformers.trainer")
    handler = Keep()
    log.addHandler(handler)
    try:
        for tied in (True, False):
            model = build_tiny_model(tok, hidden_size=16, num_layers=1, num_heads=2, tie_word_embeddings=tied)
            with _quiet_tied_weight_warning(model):
                log.warning(prefix + "['lm_head.weight'].")
                log.warning(prefix + "['model.norm.weight'].")
        log.warning(prefix + "['lm_head.weight'].")  # outside: untouched
    finally:
        log.removeHandler(handler)
    assert seen == [prefix + "['model.norm.weight'].", prefix + "['lm_head.weight'].",
                    prefix + "['model.norm.weight'].", prefix + "['lm_head.weight']."]
