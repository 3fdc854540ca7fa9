"""Bad input to ``stare train``: one clear line naming the field or row and the value, exit status 2, and
nothing written (no warm start, no run directory, an existing run left as it was). Every case is refused before
any compute, so none of them trains. Run through the real CLI entry (``stare_rl.cli.main``), in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("trl")

from stare_rl import cli  # noqa: E402


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small random models of the tiny architecture: ``plain`` (no chat template, 64 positions) and
    ``small_vocab`` (an embedding with fewer rows than the tokenizer has tokens)."""
    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer
    from stare_rl.tasks import get_task

    tok = build_char_tokenizer(get_task("arithmetic").alphabet)
    out = {}
    for name, overrides in (("plain", {}), ("small_vocab", {"vocab_size": 8}), ("corrupt", {}), ("no_pad", {})):
        path = tmp_path_factory.mktemp(name)
        model = build_tiny_model(tok, hidden_size=16, num_layers=1, num_heads=2, max_position_embeddings=64)
        if "vocab_size" in overrides:
            model.resize_token_embeddings(overrides["vocab_size"])
        model.save_pretrained(path)
        if name == "no_pad":  # a tokenizer that can neither pad nor end a completion
            no_pad = build_char_tokenizer(get_task("arithmetic").alphabet)
            no_pad.pad_token, no_pad.eos_token = None, None
            no_pad.save_pretrained(path)
        else:
            tok.save_pretrained(path)
        if name == "corrupt":  # a download or copy cut short
            weights = path / "model.safetensors"
            weights.write_bytes(weights.read_bytes()[:100])
        out[name] = path
    return out


def _jsonl(path: Path, rows: list) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def _files(tmp: Path) -> dict[str, str]:
    """Every data/config file the cases refer to, by name."""
    arith = [{"prompt": f"{a}+{a}=", "answer": str(2 * a)} for a in range(10, 30)]
    chat = [{"prompt": [{"role": "user", "content": "1+1="}], "answer": "2"}] * 2
    files = {
        "empty": _jsonl(tmp / "empty.jsonl", []),
        "mul": _jsonl(tmp / "mul.jsonl", [*arith[:3], {"prompt": "12*3=", "answer": "36"}, {"prompt": "2^3", "answer": "8"}]),
        "chat": _jsonl(tmp / "chat.jsonl", [*arith[:5], *chat]),
        "long": _jsonl(tmp / "long.jsonl", [*arith[:5], {"prompt": "1" * 200 + "+1=", "answer": "2"}]),
        "broken": _jsonl(tmp / "broken.jsonl", [arith[0], "{not json", arith[1], {"prompt": "1+1="},
                                                {"prompt": "", "answer": "2"}]),
        "conflict": _jsonl(tmp / "conflict.jsonl", [*arith[:4], {"prompt": arith[1]["prompt"], "answer": "999"}]),
        "unparsable": _jsonl(tmp / "unparsable.jsonl", [*arith[:5], {"prompt": "7+7=", "answer": "+="}]),
        "tiny_data": _jsonl(tmp / "tiny_data.jsonl", arith[:3]),
        "arith": _jsonl(tmp / "arith.jsonl", arith),
    }
    (tmp / "model.Q4_1.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    files["gguf"] = str(tmp / "model.Q4_1.gguf")
    for name, text in {
        "lr_type": "learning_rate: fast\n",
        "steps_float": "max_steps: 1.5\n",
        "lr_list": "learning_rate: [1.0e-4, 2.0e-4]\n",
        "model_bool": "model: true\n",
        "ds_word": "dynamic_sampling: maybe\n",
        "sched": "lr_scheduler_type: cosinus\n",
        "steer_top_p": "method: steer\ntop_p_ratio: 0.2\n",
        "as_list": "- learning_rate\n- 1.0e-4\n",
        "lr_null": "learning_rate: null\n",
        "typo": "method: stare\nlerning_rate: 0.1\n",
    }.items():
        (tmp / f"{name}.yaml").write_text(text)
        files[name] = str(tmp / f"{name}.yaml")
    return files


# (argv, expected fragment of the one-line message); {name} = a file of _files, {tmp} = the test's tmp dir.
CASES = [
    # numbers
    (["--learning_rate", "-1e-4"], "learning_rate=-0.0001 must be a finite number > 0"),
    (["--learning_rate=-1e-4"], "learning_rate=-0.0001 must be a finite number > 0"),
    (["--learning_rate", "nan"], "learning_rate=nan is not a number"),
    (["--reweight_w", "inf"], "reweight_w=inf must be a finite number"),
    (["--reweight_w", "nan"], "reweight_w=nan must be >= 1"),
    (["--top_p_ratio", "nan"], "top_p_ratio=nan must be in [0, 1]"),
    (["--bonus_coef", "nan"], "bonus_coef=nan is not a number"),
    (["--target_entropy", "-0.1"], "target_entropy=-0.1 must be a number >= 0"),
    (["--target_entropy", "0.5y"], "target_entropy='0.5y' must be a number >= 0 (absolute) or a string '<ratio>x'"),
    (["--method", "entropic", "--target_entropy=-0.5x"], "target_entropy='-0.5x' must be a number >= 0"),
    (["--entropy_bonus", "adaptive", "--target_entropy", "half"], "target_entropy='half' must be a number"),
    (["--entropy_bonus", "adaptive", "--bonus_target_entropy", "half"], "target_entropy='half' must be a number"),
    (["--method", "vanilla", "--target_entropy", "0.5"], "or entropy_bonus='adaptive' (its target)"),
    (["--save_steps", "-5"], "save_steps=-5.0 must be > 0"),
    (["--max_steps", "0"], "max_steps=0 must be >= 1"),
    (["--temperature", "0"], "temperature=0.0 must be a finite number > 0"),
    (["--top_p", "1.5"], "top_p=1.5 must be in (0, 1]"),
    (["--seed", "-1"], "seed=-1 must be in [0, 2**32)"),
    (["--max_steps", "ten"], "--max_steps: invalid int value: 'ten'"),
    # types in a config file
    (["--config", "{lr_type}"], "learning_rate='fast' in {lr_type}: expected a float"),
    (["--config", "{steps_float}"], "max_steps=1.5 in {steps_float}: expected an integer"),
    (["--config", "{lr_list}"], "learning_rate=[0.0001, 0.0002] in {lr_list}: expected a single value"),
    (["--config", "{model_bool}"], "model=True in {model_bool}: expected a string, got a boolean"),
    (["--config", "{ds_word}"], "dynamic_sampling='maybe' in {ds_word}: expected true or false"),
    (["--config", "{sched}"], "lr_scheduler_type='cosinus' in {sched}: expected one of"),
    (["--config", "{as_list}"], "must be a mapping of field: value, got list"),
    (["--config", "{lr_null}"], "learning_rate=null in {lr_null}: a value is required"),
    # a method's field with another method
    (["--method", "steer", "--top_p_ratio", "0.2"],
     "top_p_ratio belongs to stare (and stare_sensitivity), not to method='steer'"),
    (["--config", "{steer_top_p}"], "top_p_ratio belongs to stare (and stare_sensitivity), not to method='steer' (in"),
    # batch arithmetic
    (["--per_device_train_batch_size", "12", "--num_generations", "8"], "must be divisible by num_generations (8)"),
    (["--num_generations", "1", "--per_device_train_batch_size", "8"], "at least 2 generations per prompt"),
    # files
    (["--dataset", "{tmp}/missing.jsonl"], "dataset='{tmp}/missing.jsonl': no such file or directory"),
    (["--dataset", "{arith}", "--eval_dataset", "{tmp}/nope.parquet"], "eval_dataset='{tmp}/nope.parquet': no such file"),
    (["--dataset", "{empty}"], "dataset='{empty}' has no rows"),
    (["--dataset", "{broken}"],
     "dataset='{broken}': 3 bad row(s) of 5: line 2: not valid JSON (Expecting property name enclosed in double quotes);"
     " line 4: missing field 'answer' (or 'reward_model.ground_truth'); fields: ['prompt']; line 5: field 'prompt' "
     "is empty"),
    # data against the model and the reward
    (["--dataset", "{mul}", "--reward", "task"],
     "dataset='{mul}': characters '*^' are not in the vocabulary of model='tiny' (they would become '<unk>'): line 4, "
     "line 5"),
    (["--dataset", "{chat}", "--reward", "task"],
     "dataset='{chat}': line 6, line 7: the prompt is a list of chat messages but the tokenizer of model='tiny' has no "
     "chat template"),
    (["--dataset", "{chat}", "--reward", "task", "--model", "{model_plain}"], "has no chat template"),
    (["--dataset", "{long}", "--reward", "task"],
     "dataset='{long}': line 6: prompt longer than model='tiny' can read (line 6: 204 tokens, "
     "max_position_embeddings=128)"),
    (["--dataset", "{conflict}", "--reward", "task"],
     "dataset='{conflict}': line 5: same prompt as an earlier row with a different answer (line 5: '999', line 2: "
     "'22')"),
    (["--dataset", "{unparsable}", "--reward", "math"],
     "dataset='{unparsable}': math-verify cannot parse the answer of line 6 (line 6: '+=')"),
    (["--dataset", "{tiny_data}", "--reward", "task"], "dataset has 3 row(s): too few to hold out an evaluation split"),
    (["--model", "{model_small_vocab}", "--dataset", "{arith}"],
     "the tokenizer has 17 tokens but the model's embedding has 8 rows"),
    # names, files, settings (one table for every bad input)
    (["--method", "nope"], "method='nope' is not registered"),
    (["--learning_rat", "1e-4"], "unknown field 'learning_rat'"),
    (["--config", "{tmp}/missing.yaml"], "no such file"),
    (["--config", "{typo}"], "unknown field 'lerning_rate'"),
    (["--dataset", "{tmp}/missing.parquet"], "dataset='{tmp}/missing.parquet': no such file"),
    (["--model", "./no/such/model"], "no such directory"),
    (["--model", "{tmp}"], "cannot be loaded offline"),
    # the real-model path
    (["--model", "{gguf}"], "model='{gguf}' is a GGUF file, not a Hugging Face model dir"),
    (["--model", "{model_corrupt}", "--dataset", "{arith}"], "model='{model_corrupt}' cannot be loaded offline"),
    (["--model", "{model_no_pad}", "--dataset", "{arith}"], "has neither a pad_token nor an eos_token"),
    (["--dataset", "{unparsable}", "--reward", "number"],
     "dataset='{unparsable}': the answer of line 6 (line 6: '+=') is not a number, so reward=number could never"),
    (["--task", "chat_arithmetic"], "task='chat_arithmetic' asks chat questions in words, which model='tiny' cannot"),
    (["--tiny_hidden_size", "192"], "tiny_hidden_size=192: the arithmetic task's warm-start recipe was measured at "
     "hidden 64 only"),
    (["--tiny_hidden_size", "192", "--learning_rate", "1e-4"], "set the recipe for this width (warmstart_learning_rate"),
    (["--reward", "words"], "reward='words' is not one of ['auto', 'task', 'math', 'number']"),
    (["--per_device_train_batch_size", "10", "--num_generations", "4"], "divisible by num_generations (4)"),
    (["--epsilon", "0.3"], "epsilon=0.3 is TRL's own loss setting"),
    (["--reweight_w", "0.5"], "reweight_w=0.5 must be >= 1"),
    (["--variant", "X3"], "variant='X3'"),
    (["--method", "vanilla", "--weight_control", "paper"], "weight_control belongs to stare (and stare_sensitivity), not to method='vanilla'"),
    (["--weight_control", "sometimes"], "weight_control='sometimes'"),
    (["--weight_control", "paper", "--reweight_w", "1.6"], "weight_control='paper': reweight_w=1.6"),
    (["--entropy_bonus", "sometimes"], "entropy_bonus='sometimes'"),
    (["--resume_from_checkpoint", "{tmp}/nope"], "no such checkpoint directory"),
    (["--resume_from_checkpoint", "last"], "no checkpoint-* in output_dir"),
    (["--task", "sudoku"], "task='sudoku' is not known"),
    (["--torch_threads", "0"], "torch_threads=0 must be >= 1"),
    # output directory
    (["--output_dir", "{tmp}/a_file/run"], "output_dir='{tmp}/a_file/run': '{tmp}/a_file' is a file, not a directory"),
]


@pytest.mark.parametrize("argv, message", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_bad_input_one_line_exit_2_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model_dirs: dict[str, Path], argv: list[str], message: str
) -> None:
    names = {**_files(tmp_path), "tmp": str(tmp_path), **{f"model_{k}": str(v) for k, v in model_dirs.items()}}
    (tmp_path / "a_file").write_text("not a directory\n")
    argv = [a.format(**names) for a in argv]
    cache, run = tmp_path / "cache", tmp_path / "run"
    extra = [] if any(a.startswith("--output_dir") for a in argv) else ["--output_dir", str(run)]
    before = sorted(p.name for p in tmp_path.iterdir())
    status = cli.main(["train", *argv, "--cache_dir", str(cache), *extra])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("stare train: error:")]
    assert status == 2, err
    assert len(errors) == 1 and message.format(**names) in errors[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no cache, no run dir, nothing else


def test_output_dir_holding_another_run_is_refused_and_left_intact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    (run / "checkpoint-100").mkdir(parents=True)
    (run / "config.yaml").write_text("seed: 0\n")
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    snapshot = {p: p.read_bytes() if p.is_file() else None for p in run.rglob("*")}
    status = cli.main(["train", "--output_dir", str(run), "--cache_dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert status == 2
    assert (f"output_dir={str(run)!r} already holds a run (checkpoint-100, config.yaml, metrics.jsonl); pass "
            "--resume_from_checkpoint last to continue it") in err
    assert {p: p.read_bytes() if p.is_file() else None for p in run.rglob("*")} == snapshot
    assert not (tmp_path / "cache").exists()


def _read_only_dir(tmp_path: Path) -> Path:
    """A directory this process cannot write into (root ignores file modes: then a kernel fs that refuses)."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    for candidate in (Path("/sys"), Path("/proc")):
        try:
            fd, probe = tempfile.mkstemp(dir=candidate)
        except OSError:
            return candidate
        os.close(fd)
        os.unlink(probe)
    pytest.skip("no read-only directory available to this (root) process")


def test_read_only_output_dir_is_refused_before_compute(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ro = _read_only_dir(tmp_path)
    run = ro / "stare-run"
    status = cli.main(["train", "--output_dir", str(run), "--cache_dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert status == 2
    assert f"output_dir={str(run)!r} is not writable ({ro}:" in err, err
    assert not run.exists() and not (tmp_path / "cache").exists()


def test_identical_duplicate_prompts_are_kept_with_a_warning(tmp_path: Path) -> None:
    from stare_rl.train import run as train

    rows = [{"prompt": f"{a}+1=", "answer": str(a + 1)} for a in range(10)]
    data = _jsonl(tmp_path / "dup.jsonl", [*rows, rows[2], rows[2], rows[7]])
    plan = train.plan_run(["--dataset", data, "--reward", "task", "--output_dir", str(tmp_path / "run")])
    prep = train.prepare(plan)
    assert any("3 row(s) repeat an earlier prompt and answer (line 11, line 12, line 13); kept" in w
               for w in prep.warnings), prep.warnings
    assert len(prep.train_rows) + len(prep.eval_rows) == 13  # refused nothing, dropped nothing


def test_own_data_evaluates_on_rows_held_out_from_training(tmp_path: Path) -> None:
    from stare_rl.train import run as train

    rows = [{"prompt": f"{a}+1=", "answer": str(a + 1)} for a in range(100, 150)]
    data = _jsonl(tmp_path / "d.jsonl", rows)
    prep = train.prepare(train.plan_run(["--dataset", data, "--reward", "task", "--eval_size", "256",
                                         "--output_dir", str(tmp_path / "run")]))
    train_prompts = {r["prompt"] for r in prep.train_rows}
    assert len(prep.eval_rows) == 10 and len(prep.train_rows) == 40  # a fifth held out (eval_size is larger)
    assert not train_prompts & {r["prompt"] for r in prep.eval_rows}
    assert prep.eval_rows != rows[:10]  # drawn, not the first rows
    assert any("10 rows held out from dataset" in n for n in prep.notes)
    assert any(n.startswith("reward: task") for n in prep.notes)


def test_math_reward_with_a_model_that_cannot_write_boxed_warns(tmp_path: Path) -> None:
    from stare_rl.train import run as train

    data = _jsonl(tmp_path / "d.jsonl", [{"prompt": f"{a}+1=", "answer": str(a + 1)} for a in range(20)])
    prep = train.prepare(train.plan_run(["--dataset", data, "--output_dir", str(tmp_path / "run")]))
    assert any(n.startswith("reward: math (reward=auto)") for n in prep.notes)
    assert any("which model='tiny' cannot write" in w and "every reward will be 0" in w for w in prep.warnings)


@pytest.mark.slow  # a fresh Python process: seconds
def test_exit_status_2_from_the_installed_entry_point(tmp_path: Path) -> None:
    """The same refusal through a real process (``python -m stare_rl.cli``): status 2, one line, nothing made."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src"), "OMP_NUM_THREADS": "1"}
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "stare_rl.cli", "train", "--learning_rate", "-1e-4",
                           "--output_dir", str(run), "--cache_dir", str(tmp_path / "c")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "stare train: error: learning_rate=-0.0001 must be a finite number > 0")
    assert not run.exists() and not (tmp_path / "c").exists()


def test_resume_last_skips_a_half_written_checkpoint(tmp_path: Path) -> None:
    """A run killed while writing checkpoint-200 (no trainer_state.json, no controller state yet): `last` is 100."""
    from stare_rl.io.runlog import CONTROLLER_FILE, TRAINER_STATE_FILE, RunLayout

    run = tmp_path / "run"
    for step, files in ((100, (TRAINER_STATE_FILE, CONTROLLER_FILE)), (200, ("model.safetensors",)),
                        (300, (TRAINER_STATE_FILE,))):
        (run / f"checkpoint-{step}").mkdir(parents=True)
        for name in files:
            (run / f"checkpoint-{step}" / name).write_text("{}")
    assert RunLayout(run).last_checkpoint() == run / "checkpoint-100"  # 300 lacks the controller state
    (run / "checkpoint-300" / CONTROLLER_FILE).write_text("{}")
    assert RunLayout(run).last_checkpoint() == run / "checkpoint-300"


def test_a_killed_warm_start_leaves_nothing_that_is_used(tmp_path: Path) -> None:
    """A warm start killed mid-way leaves ``.tmp-<name>-<pid>``: never read as a cache entry, removed by the next
    warm start of the same setting (its process is gone); a live process's directory is left alone."""
    from stare_rl.tasks import get_task
    from stare_rl.train.warmstart import WarmStartConfig, _remove_orphans, cache_key

    name = f"arithmetic-{cache_key(get_task('arithmetic'), WarmStartConfig(), 0)}"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan, live = tmp_path / f".tmp-{name}-{int(dead.stdout)}", tmp_path / f".tmp-{name}-{os.getpid()}"
    for d in (orphan, live):
        d.mkdir()
        (d / "config.json").write_text("{}")  # half-written: no warmstart.json
    assert not (tmp_path / name).exists()
    _remove_orphans(tmp_path, name)
    assert not orphan.exists() and live.is_dir()
