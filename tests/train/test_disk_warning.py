"""``stare train`` warns before training when the output disk cannot hold what the run writes (checkpoints kept at
once and the final model), with sizes derived by hand here; and the warning reaches a real run's log."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from stare_rl.train import checks

# nn.Linear(10, 10) in fp32: 110 parameters, 440 bytes; a checkpoint holds them and Adam's two fp32 moments
WEIGHTS, CHECKPOINT = 440, 440 + 2 * 440


def _grpo(**kw):
    base = dict(save_strategy="steps", save_steps=10, max_steps=100, save_total_limit=2, num_train_epochs=1.0)
    return SimpleNamespace(**{**base, **kw})


def _warn(monkeypatch, tmp_path: Path, free: int, model=None, **kw) -> str | None:
    monkeypatch.setattr(checks, "free_bytes", lambda path: free)
    return checks.disk_warning(model or torch.nn.Linear(10, 10), _grpo(**kw), str(tmp_path / "not" / "yet"))


def test_checkpoint_bytes_by_hand() -> None:
    assert checks.checkpoint_bytes(torch.nn.Linear(10, 10)) == (WEIGHTS, CHECKPOINT)
    frozen = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.Linear(10, 10))
    frozen[0].requires_grad_(False)
    assert checks.checkpoint_bytes(frozen) == (2 * WEIGHTS, 2 * WEIGHTS + 2 * WEIGHTS)  # moments of the trainable
    frozen.peft_config = {"default": None}  # an adapter model saves only its trainable weights
    assert checks.checkpoint_bytes(frozen) == (WEIGHTS, WEIGHTS + 2 * WEIGHTS)
    half = torch.nn.Linear(10, 10).to(torch.bfloat16)
    assert checks.checkpoint_bytes(half) == (220, 220 + 440)


def test_the_warning_counts_the_checkpoints_kept_at_once_and_the_final_model(monkeypatch, tmp_path: Path) -> None:
    # 10 saves, save_total_limit 2: 3 exist for a moment (the new one before the oldest is rotated away)
    need = 3 * CHECKPOINT + WEIGHTS
    assert _warn(monkeypatch, tmp_path, need) is None
    msg = _warn(monkeypatch, tmp_path, need - 1)
    assert msg is not None and "output_dir=" in msg and "3 checkpoint(s)" in msg and "save_total_limit" in msg
    assert "--resume_from_checkpoint last" in msg
    # no limit: every one of the 4 saves (save_steps 0.25 of 100 steps) is kept
    need4 = 4 * CHECKPOINT + WEIGHTS
    assert _warn(monkeypatch, tmp_path, need4, save_steps=0.25, save_total_limit=None) is None
    assert "4 checkpoint(s)" in _warn(monkeypatch, tmp_path, need4 - 1, save_steps=0.25, save_total_limit=None)
    # fewer saves than the limit allows; no checkpoints at all
    assert _warn(monkeypatch, tmp_path, 2 * CHECKPOINT + WEIGHTS, save_steps=50, save_total_limit=5) is None
    assert "2 checkpoint(s)" in _warn(monkeypatch, tmp_path, 2 * CHECKPOINT + WEIGHTS - 1, save_steps=50,
                                      save_total_limit=5)
    assert _warn(monkeypatch, tmp_path, WEIGHTS, save_strategy="no") is None
    assert "0 checkpoint(s)" in _warn(monkeypatch, tmp_path, WEIGHTS - 1, save_strategy="no")


@pytest.mark.slow
def test_a_real_run_warns_before_training_and_still_runs(monkeypatch, tmp_path: Path, caplog) -> None:
    pytest.importorskip("trl")
    from _tiny import save_tiny_model
    from stare_rl.train import run as train

    model = save_tiny_model(tmp_path / "tiny", "arithmetic")
    monkeypatch.setattr(checks, "free_bytes", lambda path: 1000)  # a nearly full disk
    argv = ["--model", str(model), "--output_dir", str(tmp_path / "run"), "--max_steps", "1", "--save_steps", "1",
            "--per_device_train_batch_size", "8", "--num_generations", "4", "--train_size", "16",
            "--final_eval", "false", "--disable_tqdm", "true"]
    with caplog.at_level("WARNING"):
        assert train.main(argv) == 0
    warned = [r.getMessage() for r in caplog.records if "GB free on its disk" in r.getMessage()]
    assert len(warned) == 1 and "1 checkpoint(s)" in warned[0]
