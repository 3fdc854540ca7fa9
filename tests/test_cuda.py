"""On a CUDA device: the core gives the CPU's numbers, bf16 logits stay finite, and a real TRL trainer and
``stare train`` train, checkpoint and resume on the GPU in bf16.

Skipped where torch sees no CUDA device (CI has none); ``scripts/test.sh --cuda`` runs only these and fails when
no device is found instead of skipping. docs/benchmarks.md says where they last ran.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from _core_batches import EDGE_CASES, edge_case_batch, random_batch
from _tiny import save_tiny_model
from stare_rl import LossContext, aggregate, compute_loss, list_methods
from stare_rl.core.registry import get_method
from stare_rl.core.tokens import token_stats
from stare_rl.core.types import TokenBatch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (scripts/test.sh --cuda requires one)"),
]

_FIELDS = tuple(f.name for f in dataclasses.fields(TokenBatch))  # every input, as TokenBatch declares them


def _moved(batch: TokenBatch, device: str) -> TokenBatch:
    """``batch`` on ``device``; ``log_prob`` a fresh leaf requiring grad there."""
    fields = {n: (None if getattr(batch, n) is None else getattr(batch, n).detach().to(device)) for n in _FIELDS}
    fields["log_prob"] = fields["log_prob"].clone().requires_grad_(True)
    return TokenBatch(**fields)


def _loss_grad_metrics(name: str, batch: TokenBatch, gate_on: bool) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """Loss, its gradient w.r.t. ``log_prob`` and the metrics, with the method's whole-batch statistics (when its
    default config asks for them) computed on the batch's device, as the step controller does."""
    spec = get_method(name)
    cfg = spec.config_cls()
    stats: dict[str, Any] = {"gate_on": gate_on}
    if spec.global_stats is not None and spec.global_stats.enabled(cfg):
        stats.update(spec.global_stats.reduce(spec.global_stats.candidates(batch, cfg), cfg))
    # a CPU generator for both devices: Clip-Cov draws its random subset on the generator's device, then moves it
    ctx = LossContext(stats=stats, generator=torch.Generator().manual_seed(0))
    out = compute_loss(name, batch, cfg, context=ctx)
    loss = aggregate(out.token_loss, batch.mask)
    (grad,) = torch.autograd.grad(loss, batch.log_prob)
    return loss.detach(), grad, {k: torch.as_tensor(v).detach() for k, v in out.metrics.items()}


@pytest.mark.parametrize("gate_on", [True, False])
@pytest.mark.parametrize("name", list_methods())
def test_every_method_gives_the_cpus_loss_gradient_and_metrics_on_cuda(name: str, gate_on: bool) -> None:
    batch = random_batch(sorted(list_methods()).index(name), 16, 64)
    cpu = _loss_grad_metrics(name, _moved(batch, "cpu"), gate_on)
    gpu = _loss_grad_metrics(name, _moved(batch, "cuda"), gate_on)
    assert gpu[0].device.type == "cuda" and gpu[1].device.type == "cuda"
    torch.testing.assert_close(gpu[0].cpu(), cpu[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gpu[1].cpu(), cpu[1], rtol=1e-5, atol=1e-7)
    assert gpu[2].keys() == cpu[2].keys()
    for key in cpu[2]:
        torch.testing.assert_close(gpu[2][key].cpu(), cpu[2][key], rtol=1e-5, atol=1e-6, msg=key)


@pytest.mark.parametrize("case", EDGE_CASES)
@pytest.mark.parametrize("name", list_methods())
def test_every_method_is_finite_on_edge_cases_on_cuda(name: str, case: str) -> None:
    batch = _moved(edge_case_batch(case, seed=sorted(list_methods()).index(name)), "cuda")
    loss, grad, metrics = _loss_grad_metrics(name, batch, gate_on=True)
    assert bool(torch.isfinite(loss)) and bool(torch.isfinite(grad).all())
    assert all(bool(torch.isfinite(v).all()) for v in metrics.values())
    if case == "no_valid":
        assert float(loss) == 0.0 and bool((grad == 0).all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_token_stats_at_llm_vocabulary_match_the_cpu(dtype: torch.dtype) -> None:
    """The fused per-token pass (log pi, entropy, sum pi^2, sum pi^2 log pi) and its gradient at V = 151,936:
    CUDA equals the CPU on the same logits, bf16 logits included (upcast per chunk), and nothing is NaN."""
    g = torch.Generator().manual_seed(0)
    logits = (4 * torch.randn(2, 24, 151_936, generator=g)).to(dtype)
    tokens = torch.randint(0, 151_936, (2, 24), generator=g)
    w = torch.randn(2, 24, generator=g)

    def run(device: str) -> tuple[torch.Tensor, ...]:
        x = logits.to(device).requires_grad_(True)
        s = token_stats(x, tokens.to(device), temperature=0.7, chunk_size=16, entropy=True, second_moments=True)
        (gx,) = torch.autograd.grad((w.to(device) * (s.log_prob + s.entropy)).sum(), x)
        return s.log_prob, s.entropy, s.sum_p2, s.sum_p2_logp, gx.float()

    for got, ref in zip(run("cuda"), run("cpu"), strict=True):
        assert bool(torch.isfinite(got).all())
        torch.testing.assert_close(got.cpu(), ref, rtol=2e-4, atol=2e-5)


# ----- the engines on the GPU, bf16 -----
@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny"), "arithmetic")


def _stare_trainer(out: Path, **grpo: Any) -> Any:
    """The TRL engine's tiny STARE trainer (tests/engines/trl), on the GPU (``use_cpu=False``), bf16 by default:
    the gate's target inside the run's entropy range, adaptive W/M and bonus, so that every controller moves."""
    pytest.importorskip("trl")
    from test_trl_engine import make_trainer

    return make_trainer(out, "stare", {"variant": "C2", "target_entropy": 2.73, "weight_control": "paper"},
                        method_args={"entropy_bonus": "adaptive"},  # its target: the same target_entropy
                        use_cpu=False, **grpo)


def test_the_trl_trainer_trains_in_bf16_on_cuda_with_the_gate_and_quadrants(tmp_path: Path) -> None:
    trainer = _stare_trainer(tmp_path / "run", max_steps=3)
    assert trainer.args.bf16 is True  # TRL's default where a CUDA device is present
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert next(trainer.model.parameters()).device.type == "cuda"
    logs = [r for r in trainer.state.log_history if "control/gate_on" in r]
    assert len(logs) == 3
    for r in logs:
        for key, value in r.items():
            if isinstance(value, float):
                assert value == value, f"{key} is NaN at step {r.get('step')}"  # noqa: PLR0124
    assert any(k.startswith("quadrant/") for k in logs[-1])
    assert any(not torch.equal(p.detach().cpu(), before[n].cpu()) for n, p in trainer.model.named_parameters())


def test_the_auto_fallback_bonus_acts_on_cuda_in_bf16(tmp_path: Path) -> None:
    """tests/methods/stare/test_auto_fallback.py's run on the GPU in bf16: W reaches its bound, the bonus takes
    the rest of the demand (within its cap), the entropy reaches the loss with its gradient, nothing NaN."""
    pytest.importorskip("trl")
    from test_auto_fallback import fallback_trainer

    trainer = fallback_trainer(tmp_path / "run", use_cpu=False)
    assert trainer.args.bf16 is True
    trainer.train()
    logs = [r for r in trainer.state.log_history if "loss" in r]
    assert len(logs) == 4 and all(r["loss"] == r["loss"] for r in logs)  # noqa: PLR0124  (no NaN)
    actuators = [r["control/auto_actuator"] for r in logs]
    assert actuators == sorted(actuators) and actuators[-1] == 2.0  # selection first, then selection + bonus
    assert 0.0 < logs[-1]["control/entropy_coef"] <= 0.5
    assert logs[-1]["control/reweight_w"] == pytest.approx(1.5)


@pytest.mark.slow
def test_a_killed_cuda_run_resumed_from_its_checkpoint_matches_the_uninterrupted_one(tmp_path: Path) -> None:
    """tests/train/test_resume.py on the GPU: controller state included; CUDA kernels may reorder sums, so the
    comparison allows a relative 1e-4 (the CPU test asks for 1e-6). The GPU's bf16 run takes another entropy path
    than the CPU's: its gate need not cross the CPU-calibrated target (on an H200 it stayed off), so only the
    gate's logged values are compared, not asked to switch."""
    from test_resume import COMPARED, Kill

    from stare_rl.io.runlog import CONTROLLER_FILE, read_json, read_metrics

    common = dict(max_steps=6, save_strategy="steps", save_steps=2, lr_scheduler_type="linear", learning_rate=1e-2)
    _stare_trainer(tmp_path / "full", **common).train()
    run = tmp_path / "killed"
    _stare_trainer(run, callbacks=[Kill(5)], **common).train()
    _stare_trainer(run, **common).train(resume_from_checkpoint=str(run / "checkpoint-4"))
    full, resumed = read_metrics(tmp_path / "full"), read_metrics(run)
    assert [r["step"] for r in resumed] == [r["step"] for r in full] == [1, 2, 3, 4, 5, 6]
    for a, b in zip(full, resumed, strict=True):
        for key in COMPARED:
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), (a["step"], key, a[key], b[key])
    fc = read_json(tmp_path / "full" / "checkpoint-6" / CONTROLLER_FILE)["controllers"]
    rc = read_json(run / "checkpoint-6" / CONTROLLER_FILE)["controllers"]
    assert set(fc) == set(rc) == {"gate", "schedule", "adaptive_entropy"}


@pytest.mark.slow
def test_stare_train_on_cuda_trains_resumes_and_evaluates(tiny_model_dir: Path, tmp_path: Path) -> None:
    """``stare train`` on a GPU (what a user gets: bf16 on, the model on CUDA): a relative target resolved once,
    a checkpoint, a resume that trains nothing more after the last step, the final evaluation."""
    pytest.importorskip("trl")
    from stare_rl.io.runlog import CONTROLLER_FILE, read_metrics
    from stare_rl.train import run as train

    run = tmp_path / "run"
    argv = ["--model", str(tiny_model_dir), "--output_dir", str(run), "--max_steps", "3", "--save_steps", "3",
            "--per_device_train_batch_size", "16", "--num_generations", "4", "--train_size", "64",
            "--eval_size", "8", "--eval_k", "4", "--method", "stare", "--weight_control", "auto",
            "--target_entropy", "0.5x", "--disable_tqdm", "true"]
    assert train.main(argv) == 0
    records = read_metrics(run)
    assert [r["step"] for r in records] == [1, 2, 3]
    assert all(r["loss"] == r["loss"] for r in records)  # noqa: PLR0124  (no NaN)
    targets = {r["control/target_entropy"] for r in records}
    assert len(targets) == 1 and 0.0 < targets.pop() < 10.0  # 0.5x the first batch's entropy, resolved once
    assert (run / "checkpoint-3" / CONTROLLER_FILE).is_file()
    reference = (run / "eval.json").read_text()
    result = json.loads(reference)
    assert result["n"] == 8 and 0.0 <= result["avg@4"] <= 1.0
    (run / "eval.json").unlink()  # killed during the final evaluation
    assert train.main([*argv, "--resume_from_checkpoint", "last"]) == 0
    assert [r["step"] for r in read_metrics(run)] == [1, 2, 3] and (run / "eval.json").is_file()


def test_the_held_out_evaluation_leaves_the_cuda_rng_where_it_was(tiny_model_dir: Path) -> None:
    """heldout.evaluate samples on the model's device with its own seed: the training's CUDA generator must be where
    it was afterwards (else a cached initial evaluation, which skips the sampling, would change the run after it)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from stare_rl.evaluation import heldout

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).to("cuda")
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    rows = [{"prompt": f"{a}+{a}=", "answer": str(2 * a)} for a in range(4)]
    torch.cuda.manual_seed(123)
    before, cpu_before = torch.cuda.get_rng_state(), torch.get_rng_state()
    result = heldout.evaluate(model, tok, rows, lambda c, a: float(c.strip() == a), k=2, max_new_tokens=4, seed=7,
                              progress=False)
    assert result["n"] == 4
    assert torch.equal(torch.cuda.get_rng_state(), before) and torch.equal(torch.get_rng_state(), cpu_before)


@pytest.mark.slow
def test_a_cached_initial_evaluation_changes_nothing_after_it_on_cuda(tiny_model_dir: Path, tmp_path: Path) -> None:
    """tests/train/test_eval_cache.py on the GPU (bf16): the second cell of one seed reads the first one's evaluation
    of the start, and trains exactly as a cell that evaluated it itself."""
    pytest.importorskip("trl")
    from stare_rl.io.runlog import read_metrics
    from stare_rl.train import run as train

    cache = tmp_path / "cache"
    argv = ["--model", str(tiny_model_dir), "--max_steps", "2", "--save_steps", "10", "--per_device_train_batch_size",
            "16", "--num_generations", "4", "--train_size", "64", "--eval_size", "8", "--eval_k", "4",
            "--initial_eval", "true", "--disable_tqdm", "true", "--cache_dir", str(cache)]
    for name, extra in (("a", []), ("b", []), ("c", ["--initial_eval_cache", "false"])):
        assert train.main([*argv, *extra, "--output_dir", str(tmp_path / name)]) == 0
    assert len(list((cache / "evals").iterdir())) == 1
    initial = {(tmp_path / n / "eval_initial.json").read_text() for n in "abc"}
    assert len(initial) == 1
    runs = [read_metrics(tmp_path / n) for n in "bc"]
    assert [r["step"] for r in runs[0]] == [r["step"] for r in runs[1]] == [1, 2]
    for a, b in zip(*runs, strict=True):  # CUDA kernels may reorder sums: 1e-4 relative, as the resume test
        for key in ("loss", "actor/entropy", "rewards/reward/mean", "actor/grad_norm"):
            if key in a:
                assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), (a["step"], key)


@pytest.mark.slow
def test_stare_compare_on_cuda_reads_its_reference_from_the_cells_evaluation(tiny_model_dir: Path,
                                                                            tmp_path: Path) -> None:
    """``stare compare`` on a GPU: the reference evaluation of the starting model runs where the cells' trainer puts
    the model, so it is the cell's own evaluation of its start, read back from the eval cache."""
    pytest.importorskip("trl")
    import yaml

    from stare_rl.compare import run as compare

    grid = {"out": str(tmp_path / "grid"), "seeds": [0], "parallel": 1,
            "base": {"model": str(tiny_model_dir), "max_steps": 1, "save_steps": 1, "per_device_train_batch_size": 8,
                     "num_generations": 4, "train_size": 16, "eval_size": 8, "eval_k": 2, "initial_eval": True,
                     "cache_dir": str(tmp_path / "cache"), "report_to": "none"},
            "methods": {"grpo": {"method": "vanilla"}}}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    assert compare.main(["--config", str(tmp_path / "grid.yaml")]) == 0
    reference = json.loads((tmp_path / "grid" / "reference" / "warm_start" / "seed0" / "eval.json").read_text())
    start = json.loads((tmp_path / "grid" / "runs" / "grpo" / "seed0" / "eval_initial.json").read_text())
    assert {k: v for k, v in reference.items() if k != "model"} == start
    assert len(list((tmp_path / "cache" / "evals").iterdir())) == 1  # one evaluation: the reference read it back
