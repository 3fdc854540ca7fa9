"""Global scope across ranks: 2 gloo processes on CPU, each holding part of the batch, get exactly the weights
that one process computes on the whole batch (STARE thresholds, STEER max/min |Omega|, the 80/20 entropy
threshold, KL-Cov means and threshold, the gate's token-mean entropy), also when each rank holds several
micro-batches of the step batch; per-micro-batch (micro_batch / batch) scope does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from _core_batches import random_batch
from stare_rl import LossContext, TokenBatch, compute_loss, make_config
from stare_rl.control.base import global_token_mean
from stare_rl.control.step import StepController

WORLD = 2
ROWS = [slice(0, 3), slice(3, 8)]  # uneven on purpose: the gathers handle different lengths per rank


def _methods() -> dict[str, Any]:
    return {
        "stare": make_config("stare", variant="C2", top_p_ratio=0.2, reweight_w=1.3, reweight_m=0.7),
        "steer": make_config("steer"),
        "high_entropy": make_config("high_entropy"),
        "kl_cov": make_config("kl_cov", kl_cov_ratio=0.05),
    }


def _whole() -> TokenBatch:
    """8 x 24 tokens; rows 3.. (rank 1) are more surprising and of higher entropy than rows 0..2 (rank 0), so
    a per-rank top fraction differs from the global one."""
    b = random_batch(17, 8, 24, mask_p=0.85, token_adv=True)
    shift = torch.zeros(8, 1)
    shift[3:] = 1.0
    lp = b.log_prob.detach() * (1 + shift)  # (B, T)
    return TokenBatch(
        lp, lp + (b.old_log_prob - b.log_prob.detach()), b.advantages, b.mask, b.entropy + 2 * shift,
        old_entropy=b.old_entropy + 2 * shift,
    )


def _rows(batch: TokenBatch, rows: slice) -> TokenBatch:
    def cut(t: torch.Tensor) -> torch.Tensor:
        return t.detach()[rows].clone()

    return TokenBatch(
        cut(batch.log_prob),
        cut(batch.old_log_prob),
        cut(batch.advantages),
        cut(batch.mask),
        cut(batch.entropy),
        old_entropy=cut(batch.old_entropy),
    )


def _summary(method: str, batch: TokenBatch, cfg: Any, stats: dict[str, Any]) -> dict[str, torch.Tensor]:
    ctx = LossContext(stats={"gate_on": True, **stats}) if method == "stare" else LossContext(stats=stats)
    out = compute_loss(method, batch, cfg, context=ctx)
    return {"weights": out.token_weights.detach(), **{k: v for k, v in out.masks.items()}}


def _worker(rank: int, init_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        local = _rows(_whole(), ROWS[rank])
        results: dict[str, Any] = {"entropy_mean": global_token_mean(local)}
        for method, cfg in _methods().items():
            results[method] = _summary(method, local, cfg, StepController(method, cfg).global_stats(local))
            results[method + "/batch_scope"] = _summary(method, local, cfg, {})
            # global = the whole step batch: this rank's two micro-batches and the other rank's, in one statistic
            micro = [_rows(local, slice(0, 1)), _rows(local, slice(1, None))]
            step = StepController(method, cfg).global_stats(micro)
            parts = [_summary(method, mb, cfg, step) for mb in micro]
            results[method + "/micro_batches"] = {k: torch.cat([p[k] for p in parts]) for k in parts[0]}
        torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("gloo")
    mp.spawn(_worker, args=(str(tmp / "init"), str(tmp)), nprocs=WORLD, join=True)
    return [torch.load(tmp / f"rank{r}.pt") for r in range(WORLD)]


@pytest.mark.parametrize("method", list(_methods()))
def test_two_ranks_match_one_process_on_the_whole_batch(rank_results, method: str) -> None:
    whole = _whole()
    cfg = _methods()[method]
    reference = _summary(method, whole, cfg, {})  # one process, batch scope = the whole batch
    assert StepController(method, cfg).global_stats(whole)  # the single-process helper has something to say
    for key, ref in reference.items():
        got = torch.cat([rank_results[r][method][key] for r in range(WORLD)])
        assert torch.equal(got, ref), f"{method}: {key} differs between 2 ranks and 1 process"


@pytest.mark.parametrize("method", list(_methods()))
def test_global_scope_is_the_whole_step_batch_over_micro_batches_and_ranks(rank_results, method: str) -> None:
    """2 ranks x 2 micro-batches each: StepController's global statistics of the step batch give every micro-batch
    exactly the selection one process makes on the whole batch (what both engines now mean by `global`)."""
    reference = _summary(method, _whole(), _methods()[method], {})
    for key, ref in reference.items():
        got = torch.cat([rank_results[r][method + "/micro_batches"][key] for r in range(WORLD)])
        assert torch.equal(got, ref), f"{method}: {key} differs between 2 ranks x 2 micro-batches and 1 process"


@pytest.mark.parametrize("method", list(_methods()))
def test_micro_batch_scope_is_the_reference_per_batch_selection(method: str) -> None:
    """`micro_batch` (alias `batch`) is accepted by every method with selections and computes no global statistic."""
    for scope in ("micro_batch", "batch"):
        cfg = make_config(method, selection_scope=scope)
        assert not StepController(method, cfg).global_stats_enabled
    assert StepController(method, make_config(method, selection_scope="global")).global_stats_enabled


@pytest.mark.parametrize("method", list(_methods()))
def test_batch_scope_depends_on_the_layout(rank_results, method: str) -> None:
    whole = _whole()
    reference = _summary(method, whole, _methods()[method], {})
    key = {"stare": "l_plus", "steer": "weights", "high_entropy": "high_entropy", "kl_cov": "kl_selected"}[
        method
    ]
    per_rank = torch.cat([rank_results[r][method + "/batch_scope"][key] for r in range(WORLD)])
    assert not torch.equal(per_rank, reference[key])


def test_gate_entropy_is_the_global_token_mean(rank_results) -> None:
    whole = _whole()
    expected = global_token_mean(whole)
    assert (
        rank_results[0]["entropy_mean"]
        == rank_results[1]["entropy_mean"]
        == pytest.approx(expected, rel=1e-12)
    )
