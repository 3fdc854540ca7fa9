"""A resumed run with a changed controller setting is refused before any compute, through the real ``stare train``
and through the TRL API trainer (the rule itself, for every controller: tests/control/test_resume_rule.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _tiny import save_tiny_model

pytest.importorskip("trl")

from test_trl_engine import make_trainer  # noqa: E402

from stare_rl.io.runlog import CONTROLLER_FILE, read_json, read_metrics  # noqa: E402
from stare_rl.train import run as train  # noqa: E402


def test_stare_train_resume_with_a_changed_target_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = save_tiny_model(tmp_path / "tiny", "arithmetic")
    run = tmp_path / "run"
    argv = ["--model", str(model), "--output_dir", str(run), "--max_steps", "1", "--save_steps", "1",
            "--per_device_train_batch_size", "8", "--num_generations", "4", "--train_size", "16",
            "--final_eval", "false", "--initial_eval", "false", "--weight_control", "paper",
            "--target_entropy", "100", "--disable_tqdm", "true"]
    assert train.main(argv) == 0
    saved = read_json(run / "checkpoint-1" / CONTROLLER_FILE)["controllers"]
    assert saved["gate"]["target_entropy"]["spec"] == 100.0 and set(saved) == {"gate", "schedule"}
    capsys.readouterr()

    resumed = [*argv[:argv.index("--target_entropy")], "--target_entropy", "0.5", "--max_steps", "2",
               "--resume_from_checkpoint", "last"]
    assert train.main(resumed) == 2
    err = capsys.readouterr().err
    assert err.startswith("stare train: error: resume from ")
    assert "target_entropy: saved 100.0, requested 0.5 (controller 'gate')" in err
    assert "target_entropy: saved 100.0, requested 0.5 (controller 'schedule')" in err
    assert [r["step"] for r in read_metrics(run)] == [1]  # nothing trained
    assert not (run / "checkpoint-2").exists()

    # the same settings resume (and record the new max_steps only)
    same = [*argv[:argv.index("--max_steps")], "--max_steps", "2", *argv[argv.index("--max_steps") + 2:],
            "--resume_from_checkpoint", "last"]
    assert train.main(same) == 0
    assert [r["step"] for r in read_metrics(run)] == [1, 2]


def test_trl_api_trainer_refuses_a_changed_setting_before_any_step(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = make_trainer(out, "entropic", {"target_entropy": 0.3}, max_steps=1, save_strategy="steps", save_steps=1)
    first.train()
    checkpoint = out / "checkpoint-1"
    assert read_json(checkpoint / CONTROLLER_FILE)["controllers"]["entropic_pi"]["target_entropy"]["spec"] == 0.3
    again = make_trainer(out, "entropic", {"target_entropy": 0.3, "kp": 2.0}, max_steps=2, save_strategy="steps",
                         save_steps=1)
    for resume in (str(checkpoint), True):  # a path, and HF's "the last checkpoint of output_dir"
        with pytest.raises(ValueError, match=r"kp: saved 1\.0, requested 2\.0 \(controller 'entropic_pi'\)"):
            again.train(resume_from_checkpoint=resume)
    assert again.state.global_step == 0 and [r["step"] for r in read_metrics(out)] == [1]
