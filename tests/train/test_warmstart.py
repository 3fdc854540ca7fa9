"""Warm start through TRL's SFTTrainer on a tiny budget: a loadable HF model dir, metric stop, cache hits."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from stare_rl.tasks import get_task
from stare_rl.train.warmstart import (
    TASK_INFO_FILE,
    WARMSTART_FILE,
    WarmStartConfig,
    cache_key,
    read_task_info,
    sft_rows,
    warm_start,
)

TINY = dict(hidden_size=32, num_layers=1, num_heads=2, batch_size=16, train_rows=64, eval_rows=8, k=2,
            warmup_steps=0)


def test_warm_start_saves_loadable_model_and_hits_cache(tmp_path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cfg = WarmStartConfig(max_steps=4, eval_every=2, stop_greedy_acc=1.0, stop_avg_at_k=1.0, **TINY)
    path = warm_start("countdown", tmp_path, config=cfg, progress=False)
    assert path.parent == tmp_path and path.name.startswith("countdown-")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]  # atomic: no leftovers
    info = json.loads((path / WARMSTART_FILE).read_text())
    assert info["steps"] == 4 and not info["reached_stop_metric"]
    assert [h["step"] for h in info["history"]] == [2, 4]
    assert all(0.0 <= h["avg@2"] <= 1.0 and h["entropy"] > 0 for h in info["history"])
    assert read_task_info(path) == {"task": "countdown", "task_kwargs": info["task_kwargs"]}
    model = AutoModelForCausalLM.from_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path)
    assert model.config.hidden_size == 32 and model.config.vocab_size == len(tok)
    out = model.generate(**tok(["3,5,7:26="], return_tensors="pt"), max_new_tokens=4, do_sample=False,
                         pad_token_id=tok.pad_token_id)
    assert 10 < out.shape[1] <= 14  # prompt: <bos> + 9 characters; at most 4 new tokens

    mtime = (path / "config.json").stat().st_mtime_ns
    start = time.perf_counter()
    assert warm_start("countdown", tmp_path, config=cfg, progress=False) == path
    assert time.perf_counter() - start < 1.0  # a cache hit does not train
    assert (path / "config.json").stat().st_mtime_ns == mtime
    # a different setting (seed) is a different cache entry
    other = warm_start("countdown", tmp_path, config=cfg, seed=1, progress=False)
    assert other != path and (other / "config.json").is_file()


def test_warm_start_stops_on_metric_and_force_retrains(tmp_path) -> None:
    cfg = WarmStartConfig(max_steps=50, eval_every=2, stop_greedy_acc=0.0, stop_avg_at_k=1.0, **TINY)
    path = warm_start("arithmetic", tmp_path, config=cfg, progress=False)
    info = json.loads((path / WARMSTART_FILE).read_text())
    assert info["reached_stop_metric"] and info["steps"] == 2  # threshold 0 is met at the first evaluation
    assert json.loads((path / TASK_INFO_FILE).read_text())["task"] == "arithmetic"
    mtime = (path / "config.json").stat().st_mtime_ns
    assert warm_start("arithmetic", tmp_path, config=cfg, force=True, progress=False) == path
    assert (path / "config.json").stat().st_mtime_ns != mtime


def test_fixed_steps_report_the_metric_without_stopping(tmp_path) -> None:
    """stop_on_metric false: a threshold met at the first evaluation does not stop it; max_steps steps, the
    metric history reported, with the schedule and data mixture asked for (part of the cache key)."""
    cfg = WarmStartConfig(max_steps=6, eval_every=2, stop_greedy_acc=0.0, stop_avg_at_k=0.0, stop_on_metric=False,
                          correct_frac=0.5, lr_scheduler="cosine", **TINY)
    path = warm_start("arithmetic", tmp_path, config=cfg, progress=False)
    info = json.loads((path / WARMSTART_FILE).read_text())
    assert info["steps"] == 6 and [h["step"] for h in info["history"]] == [2, 4, 6]
    assert not info["reached_stop_metric"]
    assert info["config"]["correct_frac"] == 0.5 and info["config"]["lr_scheduler"] == "cosine"
    task = get_task("arithmetic")
    keys = {cache_key(task, c, 0) for c in (cfg, dataclasses.replace(cfg, correct_frac=1.0),
                                            dataclasses.replace(cfg, lr_scheduler="linear"),
                                            dataclasses.replace(cfg, stop_on_metric=True))}
    assert len(keys) == 4


def test_sft_rows_mix_exactly_the_asked_fraction_of_wrong_answers() -> None:
    task = get_task("arithmetic")
    rows = task.make_split("train", 1000, 0)
    for frac in (1.0, 0.35, 0.0):
        data = sft_rows(task, rows, 0, correct_frac=frac)
        assert [d["prompt"] for d in data] == [r["prompt"] for r in rows]
        correct = sum(task.reward(d["completion"], r["answer"]) for d, r in zip(data, rows, strict=True))
        assert correct == round(frac * len(rows))
    assert sft_rows(task, rows, 0, 0.35) == sft_rows(task, rows, 0, 0.35) != sft_rows(task, rows, 1, 0.35)
    assert sft_rows(task, rows, 0) == [{"prompt": r["prompt"], "completion": r["answer"]} for r in rows]


def test_warm_start_config_validation() -> None:
    with pytest.raises(ValueError, match="batch_size=0"):
        WarmStartConfig(batch_size=0)
    with pytest.raises(ValueError, match="stop_avg_at_k=1.5"):
        WarmStartConfig(stop_avg_at_k=1.5)
    with pytest.raises(ValueError, match="learning_rate"):
        WarmStartConfig(learning_rate=0.0)
    with pytest.raises(ValueError, match="correct_frac=-0.1"):
        WarmStartConfig(correct_frac=-0.1)
    with pytest.raises(ValueError, match="lr_scheduler='step'"):
        WarmStartConfig(lr_scheduler="step")
    with pytest.raises(ValueError, match="known tasks"):
        warm_start("nope", "/tmp/unused-stare-cache")
    with pytest.raises(ValueError, match="correct_frac=0.5: task 'countdown' defines no wrong completions"):
        warm_start("countdown", "/tmp/unused-stare-cache", config=WarmStartConfig(correct_frac=0.5))


def test_processes_sharing_a_cache_train_a_setting_once(tmp_path, monkeypatch, caplog) -> None:
    """Two runs that need the same warm start at once (``stare compare`` cells, two terminals): the second waits on
    the first's lock and reads its model instead of training the same one beside it; a failed training releases
    the lock, so the next run trains."""
    import threading

    from stare_rl.train import warmstart

    calls, started = [], threading.Event()

    def fake_train(task, config, seed, out, progress):
        calls.append(out.name)
        started.set()
        time.sleep(0.5)  # the second caller arrives while this one trains
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")
        return {"steps": 1}

    monkeypatch.setattr(warmstart, "_train", fake_train)
    cfg = WarmStartConfig(**TINY)
    paths = []
    first = threading.Thread(target=lambda: paths.append(warm_start("arithmetic", tmp_path, config=cfg, progress=False)))
    first.start()
    assert started.wait(10)
    with caplog.at_level("WARNING", logger="stare_rl.train.warmstart"):
        second = warm_start("arithmetic", tmp_path, config=cfg, progress=False)  # blocks until the first is done
    first.join()
    assert len(calls) == 1 and paths == [second] and (second / WARMSTART_FILE).is_file()
    assert any("is training" in r.getMessage() and second.name in r.getMessage() for r in caplog.records)
    assert [p.name for p in tmp_path.iterdir()] == [second.name]  # no .tmp-* left, and the lock file is deleted

    def failing_train(task, config, seed, out, progress):
        raise RuntimeError("killed mid-way")

    monkeypatch.setattr(warmstart, "_train", failing_train)
    with pytest.raises(RuntimeError, match="killed mid-way"):
        warm_start("arithmetic", tmp_path, config=cfg, seed=1, progress=False)
    monkeypatch.setattr(warmstart, "_train", fake_train)
    again = warm_start("arithmetic", tmp_path, config=cfg, seed=1, progress=False)  # the lock was released
    assert len(calls) == 2 and (again / WARMSTART_FILE).is_file()
