"""Kill and resume through the real commands, at the points where a run can die: during the warm start, mid-GRPO
(after a step was logged, while a checkpoint is half-written), during the final evaluation, and with the disk full
while checkpointing; ``stare eval`` killed mid-way. After each, the re-run ends with the same ``metrics.jsonl``
values, final weights and ``eval.json`` as an uninterrupted run (bit-identical, one machine), and nothing
half-written (checkpoint, cache entry, result file) is ever used. ``stare compare`` killed mid-grid:
``tests/compare/test_compare.py``. Kills are a real SIGKILL of a ``stare train`` process (warm start) or an exception
injected at a chosen point that nothing catches (everything else: a crash leaves what a kill leaves)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from stare_rl import cli  # noqa: E402
from stare_rl.io.runlog import CONTROLLER_FILE, TRAINER_STATE_FILE, RunLayout, read_metrics  # noqa: E402

pytestmark = pytest.mark.slow

# A small warm start (1 layer, 32 wide, 64 rows, 2 SFT steps) and 4 GRPO steps with a checkpoint every step.
TINY = ["--tiny_hidden_size", "32", "--tiny_num_layers", "1", "--warmstart_max_steps", "2",
        "--warmstart_batch_size", "16", "--warmstart_train_rows", "64", "--warmstart_eval_rows", "8",
        "--warmstart_k", "2",
        "--warmstart_stop_avg_at_k", "1.0", "--warmstart_stop_greedy_acc", "1.0",
        "--max_steps", "4", "--save_steps", "1", "--per_device_train_batch_size", "8", "--num_generations", "4",
        "--max_completion_length", "3", "--reward", "task", "--eval_size", "8", "--eval_k", "2",
        "--disable_tqdm", "true"]


class Killed(BaseException):
    """An injected crash: a BaseException, so no ``except Exception`` on the way up softens it (like SIGKILL)."""


def _one_digit_sums(path: Path) -> str:
    rows = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in range(10) for b in range(10 - a)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _argv(data: str, run: Path, cache: Path, *extra: str) -> list[str]:
    return ["train", *TINY, "--dataset", data, "--output_dir", str(run), "--cache_dir", str(cache), *extra]


def _weights(model_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


def _same_weights(a: Path, b: Path) -> bool:
    wa, wb = _weights(a), _weights(b)
    return wa.keys() == wb.keys() and all(wa[k].equal(wb[k]) for k in wa)


def _untimed(run: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if "time" not in k and "per_second" not in k} for r in read_metrics(run)]


def assert_same_run(run: Path, ref: Path) -> None:
    """Every logged value, the final weights, both evaluations and the last controller state are identical."""
    assert [r["step"] for r in read_metrics(run)] == [1, 2, 3, 4]
    assert _untimed(run) == _untimed(ref)
    assert _same_weights(run / "model", ref / "model")
    for name in ("eval.json", "eval_initial.json"):
        assert (run / name).read_text() == (ref / name).read_text(), name
    assert (run / "checkpoint-4" / CONTROLLER_FILE).read_text() == (ref / "checkpoint-4" / CONTROLLER_FILE).read_text()
    assert "- optimisation: 4 steps" in (run / "README.md").read_text()
    assert not list(run.glob(".*.tmp")) and not list(run.glob("checkpoint-5"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    """``(data file, warm-start cache, run dir)`` of one uninterrupted run."""
    tmp = tmp_path_factory.mktemp("reference")
    data, cache, run = _one_digit_sums(tmp / "sums.jsonl"), tmp / "cache", tmp / "run"
    assert cli.main(_argv(data, run, cache)) == 0
    assert any(r["critic/score/mean"] > 0 for r in read_metrics(run))  # rewards to learn from: GRPO moved
    return data, cache, run


KILL_IN_WARM_START = """
import os, signal, sys
from stare_rl.train import warmstart

step_end = warmstart._StopOnMetric.on_step_end

def on_step_end(self, args, state, control, **kwargs):
    if state.global_step == 1:  # after the first SFT step, before the model is saved
        os.kill(os.getpid(), signal.SIGKILL)
    return step_end(self, args, state, control, **kwargs)

warmstart._StopOnMetric.on_step_end = on_step_end
from stare_rl import cli
sys.exit(cli.main(sys.argv[1:]))
"""


def test_sigkill_during_the_warm_start_then_resume_last_matches(
    tmp_path: Path, reference: tuple[str, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data, ref_cache, ref_run = reference
    run, cache = tmp_path / "run", tmp_path / "cache"  # an empty cache: this run must warm-start itself
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", KILL_IN_WARM_START, *_argv(data, run, cache)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == -signal.SIGKILL, stderr[-2000:]
    # the killed warm start's temporary dir, never a cache entry, and its lock file (its lock died with it)
    lock, partial = sorted(cache.iterdir())
    assert partial.name.startswith(".tmp-") and partial.name.endswith(f"-{proc.pid}")
    assert lock.name == ".lock-" + partial.name[len(".tmp-"):-len(f"-{proc.pid}")]
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml"]  # killed before any checkpoint

    # without --resume_from_checkpoint the run dir is refused (never overwritten) ...
    assert cli.main(_argv(data, run, cache)) == 2
    assert "already holds a run (config.yaml); pass --resume_from_checkpoint last" in capsys.readouterr().err
    # ... with `last` the run starts again from step 0: a new warm start (the partial one is removed), then GRPO
    assert cli.main(_argv(data, run, cache, "--resume_from_checkpoint", "last")) == 0
    assert "holds a run stopped before its first complete checkpoint; starting it again from step 0" in (
        capsys.readouterr().out)
    (entry,) = [p for p in cache.iterdir() if p.name != "evals"]  # the partial dir and the stale lock are gone
    (ref_entry,) = [p for p in ref_cache.iterdir() if p.name != "evals"]
    assert entry.name == ref_entry.name and _same_weights(entry, ref_entry)
    history = [json.loads((e / "warmstart.json").read_text())["history"] for e in (entry, ref_entry)]
    assert history[0] == history[1]
    assert_same_run(run, ref_run)


def test_killed_mid_grpo_then_in_the_final_evaluation_resumes_identically(
    tmp_path: Path, reference: tuple[str, Path, Path], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers import Trainer

    import stare_rl.evaluation.heldout

    data, cache, ref_run = reference  # the reference's warm start is cached: every run here starts from it
    run = tmp_path / "run"
    argv = _argv(data, run, cache)

    # 1. killed while writing checkpoint-3: step 3 is logged, the model saved, the optimizer not yet
    save_optimizer = Trainer._save_optimizer_and_scheduler

    def crash_at_3(self, output_dir):  # noqa: ANN001, ANN202
        if self.state.global_step == 3:
            raise Killed
        return save_optimizer(self, output_dir)

    with monkeypatch.context() as m:
        m.setattr(Trainer, "_save_optimizer_and_scheduler", crash_at_3)
        with pytest.raises(Killed):
            cli.main(argv)
    assert [r["step"] for r in read_metrics(run)] == [1, 2, 3]
    half = run / "checkpoint-3"
    assert (half / "model.safetensors").is_file() and not (half / TRAINER_STATE_FILE).exists()
    assert RunLayout(run).last_checkpoint() == run / "checkpoint-2"

    # 2. resumed from checkpoint-2 (not the half-written 3), trained to the end; killed while saving model/
    save_model = Trainer.save_model

    def crash_after_weights(self, output_dir=None, _internal_call=False):  # noqa: ANN001, ANN202
        save_model(self, output_dir, _internal_call)
        if not _internal_call:  # the final model, not a checkpoint
            raise Killed

    with monkeypatch.context() as m:
        m.setattr(Trainer, "save_model", crash_after_weights)
        with pytest.raises(Killed):
            cli.main([*argv, "--resume_from_checkpoint", "last"])
    assert [r["step"] for r in read_metrics(run)] == [1, 2, 3, 4]  # step 3 of the killed run replaced
    assert (run / "checkpoint-4" / TRAINER_STATE_FILE).is_file() and not (run / "model").exists()
    assert (run / ".model.partial" / "model.safetensors").is_file()  # never read; replaced by the next save

    # 3. resumed from checkpoint-4, the last step: nothing trained; killed in the final evaluation
    def crash(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise Killed

    with monkeypatch.context() as m:
        m.setattr(stare_rl.evaluation.heldout, "evaluate", crash)
        with pytest.raises(Killed):
            cli.main([*argv, "--resume_from_checkpoint", "last"])
    assert (run / "model" / "model.safetensors").is_file() and not (run / "eval.json").exists()
    assert not (run / ".model.partial").exists()

    # 4. resumed from checkpoint-4 again: model/ saved again and evaluated
    assert cli.main([*argv, "--resume_from_checkpoint", "last"]) == 0
    assert "is the last step; saving and evaluating it" in capsys.readouterr().out
    assert_same_run(run, ref_run)


SIGTERM_IN_STEP_2 = """
import os, signal, sys
from stare_rl.engines.trl import callbacks

def on_step_begin(self, args, state, control, **kwargs):
    if state.global_step == 1:  # as step 2 starts: the scheduler's SIGTERM arrives mid-step
        os.kill(os.getpid(), signal.SIGTERM)

callbacks.CheckpointOnSignal.on_step_begin = on_step_begin
from stare_rl import cli
sys.exit(cli.main(sys.argv[1:]))
"""


def test_sigterm_mid_grpo_checkpoints_that_step_and_resume_last_matches(
    tmp_path: Path, reference: tuple[str, Path, Path]
) -> None:
    """`kill PID` (a scheduler's preemption): step 2 finishes and is checkpointed although save_steps is 3, the
    exit status is 128 + 15 with one line saying how to go on, and the resumed run equals the uninterrupted one."""
    data, cache, ref_run = reference
    run = tmp_path / "run"
    argv = [*_argv(data, run, cache), "--save_steps", "3"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", SIGTERM_IN_STEP_2, *argv], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr[-2000:]
    said = proc.stdout + proc.stderr
    assert (f"stare train: stopped by SIGTERM after step 2: {run / 'checkpoint-2'} holds it (no final model or "
            "evaluation yet); re-run the same command with --resume_from_checkpoint last") in said
    assert [r["step"] for r in read_metrics(run)] == [1, 2]
    assert [c.name for c in RunLayout(run).checkpoints()] == ["checkpoint-2"]
    assert not (run / "model").exists() and not (run / "eval.json").exists()
    assert not (run / "train_summary.json").exists()
    assert cli.main([*argv, "--resume_from_checkpoint", "last"]) == 0
    assert_same_run(run, ref_run)


@pytest.mark.parametrize("where", ["controller state", "optimizer", "metrics"])
def test_disk_full_while_checkpointing_one_line_and_the_last_checkpoint_resumes(
    tmp_path: Path, reference: tuple[str, Path, Path], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """ENOSPC while writing checkpoint-3 (keeping one checkpoint: HF deletes older ones once a new one is
    complete), or ``metrics.jsonl`` at step 3: a one-line error naming the file and the last complete checkpoint;
    checkpoint-2 intact, a half-written checkpoint-3 removed; resuming from checkpoint-2 ends like the
    uninterrupted run."""
    import torch

    import stare_rl.control.step
    import stare_rl.io.runlog

    data, cache, ref_run = reference
    run = tmp_path / "run"
    argv = _argv(data, run, cache, "--save_total_limit", "1")
    full = {"controller state": run / "checkpoint-3" / CONTROLLER_FILE, "optimizer": run / "checkpoint-3" /
            "optimizer.pt", "metrics": run / "metrics.jsonl"}[where]

    def no_space(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(full))

    write_json, torch_save, write_metrics = (stare_rl.control.step.write_json_atomic, torch.save,
                                             stare_rl.io.runlog.MetricsWriter.write)
    with monkeypatch.context() as m:
        if where == "controller state":
            m.setattr(stare_rl.control.step, "write_json_atomic",
                      lambda path, obj: (no_space if "checkpoint-3" in str(path) else write_json)(path, obj))
        elif where == "optimizer":
            m.setattr(torch, "save", lambda obj, f, *a, **k: (no_space if "checkpoint-3" in str(f) else torch_save)(
                obj, f, *a, **k))
        else:
            m.setattr(stare_rl.io.runlog.MetricsWriter, "write",
                      lambda self, step, metrics: (no_space if step == 3 else write_metrics)(self, step, metrics))
        assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    intact = f"the last complete checkpoint {run / 'checkpoint-2'} is intact: free space, then re-run with " \
             "--resume_from_checkpoint last"
    expected = (f"could not write {full}: [Errno 28] No space left on device; {intact}" if where == "metrics" else
                f"could not write checkpoint {run / 'checkpoint-3'}: [Errno 28] No space left on device ({full}); "
                f"the half-written checkpoint was removed; {intact}")
    assert err[-1] == f"stare train: error: {expected}", err[-3:]
    assert sorted(p.name for p in run.glob("checkpoint-*")) == ["checkpoint-2"]
    assert RunLayout(run).last_checkpoint() == run / "checkpoint-2"
    assert not (run / "model").exists() and not (run / "eval.json").exists()

    assert cli.main([*argv, "--resume_from_checkpoint", "last"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in run.glob("checkpoint-*")) == ["checkpoint-4"]
    assert_same_run(run, ref_run)


def test_stare_eval_killed_mid_way_then_rerun_gives_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed in its third generate call: the result file of an earlier evaluation stays as it was (never a
    half-written one), no temporary file is left; the re-run writes what an uninterrupted run writes."""
    import stare_rl.evaluation.heldout
    from _tiny import save_tiny_model

    model = save_tiny_model(tmp_path / "model")
    out, ref = tmp_path / "eval.json", tmp_path / "reference.json"
    argv = ["eval", "--model", str(model), "--n", "6", "--k", "2", "--batch-size", "2", "--no-progress"]
    assert cli.main([*argv, "--out", str(ref)]) == 0
    out.write_text('{"earlier": "evaluation"}')
    generate, calls = stare_rl.evaluation.heldout._generate, []

    def crash_third(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        if len(calls) == 3:
            raise Killed
        return generate(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(stare_rl.evaluation.heldout, "_generate", crash_third)
        with pytest.raises(Killed):
            cli.main([*argv, "--out", str(out)])
    assert len(calls) == 3 and out.read_text() == '{"earlier": "evaluation"}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.json", "model", "reference.json"]
    assert cli.main([*argv, "--out", str(out)]) == 0
    capsys.readouterr()
    assert out.read_text() == ref.read_text()
