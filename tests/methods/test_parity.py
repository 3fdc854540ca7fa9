"""Parity with the reference implementations: one case per JSON vector in ``$PARITY_VECTORS``.

The vectors (``tests/parity_vectors`` by default; a relative ``$PARITY_VECTORS`` is resolved against the repository
root) were produced by running the STARE / STEER papers' public code; see the README there. Tolerance: ``|got - ref| <= 1e-5 + 1e-4 |ref|``;
masks, k and counts must match exactly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from stare_rl import LossContext, SurrogateConfig, TokenBatch, aggregate, compute_loss, make_config
from stare_rl.core.types import LossOutput

REPO_ROOT = Path(__file__).resolve().parents[2]
ATOL, RTOL = 1e-5, 1e-4


def vectors_dir() -> Path:
    path = Path(os.environ.get("PARITY_VECTORS", "tests/parity_vectors"))
    return path if path.is_absolute() else (REPO_ROOT / path).resolve()


def vector_files() -> list[Path]:
    folder = vectors_dir()
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_parity_vectors_present() -> None:
    """No vectors is a failure, not a skip: an empty parity suite would hide a broken set-up."""
    assert vector_files(), f"no parity vectors (*.json) in {vectors_dir()} (set PARITY_VECTORS to the folder)"


def _f32(x: Any) -> torch.Tensor:
    return torch.from_numpy(np.asarray(x, dtype=np.float32))


def _close(got: torch.Tensor | float, ref: Any, what: str) -> None:
    got_t = torch.as_tensor(got, dtype=torch.float64)
    ref_t = torch.as_tensor(np.asarray(ref, dtype=np.float64))
    err = (got_t - ref_t).abs()
    bound = ATOL + RTOL * ref_t.abs()
    bad = err > bound
    assert not bool(bad.any()), (
        f"{what}: max |got - ref| = {float(err.max()):.3g} at {int(bad.sum())} position(s)"
    )


def _method_config(method: str, p: dict[str, Any]) -> tuple[Any, LossContext]:
    if method == "stare":
        keys = ("variant", "top_p_ratio", "reweight_w", "reweight_m", "target_entropy")
        cfg = make_config("stare", **{k: p[k] for k in keys})
        return cfg, LossContext(stats={"gate_on": bool(p["gate_on"])})
    if method == "steer":
        cfg = make_config(
            "steer",
            mapping="linear" if p["linear"] else "exp",
            token_weight_min=p["token_weight_min"],
            token_weight_max=p["token_weight_max"],
        )
        return cfg, LossContext()
    if method == "kl_cov":
        return make_config(
            "kl_cov", kl_cov_ratio=p["kl_cov_ratio"], ppo_kl_coef=p["ppo_kl_coef"]
        ), LossContext()
    if method == "vanilla":
        return make_config("vanilla"), LossContext()
    raise AssertionError(f"parity vector for unknown method {method!r}")


def _run(case: dict[str, Any]) -> tuple[LossOutput, torch.Tensor, torch.Tensor, TokenBatch]:
    p, inp = case["params"], case["inputs"]
    log_prob = _f32(inp["log_prob"]).requires_grad_(True)
    batch = TokenBatch(
        log_prob=log_prob,
        old_log_prob=_f32(inp["old_log_prob"]),
        advantages=_f32(inp["advantages"]),
        mask=_f32(inp["response_mask"]),
        entropy=_f32(inp["entropy"]) if "entropy" in inp else None,
        # the reference's `entropys` come from its old log-prob pass: STEER reads them as the old entropy
        old_entropy=_f32(inp["entropy"]) if "entropy" in inp else None,
    )
    surrogate = SurrogateConfig(
        clip_ratio_low=p.get("clip_ratio_low", 0.2),
        clip_ratio_high=p.get("clip_ratio_high", 0.28),
        clip_ratio_c=p.get("clip_ratio_c", 3.0),
        loss_agg_mode=p["loss_agg_mode"],
    )
    cfg, ctx = _method_config(case["method"], p)
    out = compute_loss(case["method"], batch, cfg, surrogate, ctx)
    loss = aggregate(out.token_loss, batch.mask, p["loss_agg_mode"])
    (grad,) = torch.autograd.grad(loss, log_prob)
    return out, loss.detach(), grad, batch


def _check_stare(out: LossOutput, o: dict[str, Any]) -> None:
    for name in ("l_plus", "l_minus"):
        assert torch.equal(out.masks[name], torch.tensor(o[name], dtype=torch.bool)), f"{name} differs"
    for ours, ref in (
        ("k_plus", "k_plus"),
        ("k_minus", "k_minus"),
        ("n_pos_candidates", "n_pos_candidates"),
        ("n_neg_candidates", "n_neg_candidates"),
    ):
        assert int(out.metrics[ours]) == o[ref], f"{ours}={int(out.metrics[ours])}, reference {o[ref]}"
    m = o["metrics"]
    assert "gate_on" not in out.metrics  # an input handed in by the gate (ctx), logged by the controller
    same = {
        "top_p_ratio": "actor/stare/top_ratio",
        "pos_candidate_frac": "actor/stare/positive_candidate_ratio",
        "neg_candidate_frac": "actor/stare/negative_candidate_ratio",
        "l_plus_frac": "actor/stare/positive_reweight_ratio",
        "l_minus_frac": "actor/stare/negative_reweight_ratio",
        "mean_weight": "actor/stare/mean_weight",
        "reweight_w": "actor/stare/positive_weight",
        "reweight_m": "actor/stare/negative_weight",
        "pg_clipfrac": "actor/pg_clipfrac",
        "pg_clipfrac_lower": "actor/pg_clipfrac_lower",
        "ppo_kl": "actor/ppo_kl",
    }
    for ours, ref in same.items():
        _close(out.metrics[ours], m[ref], f"metric {ours}")


def _check_steer(out: LossOutput, o: dict[str, Any], batch: TokenBatch) -> None:
    from stare_rl.methods.steer import steer_omega

    valid = batch.valid
    _close(steer_omega(batch)[valid], np.asarray(o["omega_abs"])[valid.numpy()], "omega_abs (valid)")
    _close(out.metrics["omega_abs_max"], o["omega_abs_max_valid"], "omega_abs_max")
    _close(out.metrics["omega_abs_min"], o["omega_abs_min_valid"], "omega_abs_min")
    for name in ("pg_clipfrac", "ppo_kl", "pg_clipfrac_lower"):
        _close(out.metrics[name], o["metrics"][name], f"metric {name}")
    for name in ("token_weights_mean", "token_weights_min", "token_weights_max"):
        _close(out.metrics[name], o["metrics"][name], f"metric {name}")


def _check_kl_cov(out: LossOutput, o: dict[str, Any]) -> None:
    assert torch.equal(out.masks["kl_selected"], torch.tensor(o["kl_selected"], dtype=torch.bool)), (
        "kl_selected"
    )
    assert int(out.metrics["kl_cov_k"]) == o["k"], f"k={int(out.metrics['kl_cov_k'])}, reference {o['k']}"
    _close(out.metrics["ppo_kl_abs"], o["metrics"]["ppo_kl_abs"], "metric ppo_kl_abs")


def _check_vanilla(out: LossOutput, o: dict[str, Any]) -> None:
    for name in ("pg_clipfrac", "ppo_kl", "pg_clipfrac_lower"):
        _close(out.metrics[name], o["metrics"][name], f"metric {name}")


@pytest.mark.parametrize("path", vector_files(), ids=lambda p: p.stem)
def test_parity(path: Path) -> None:
    case = json.loads(path.read_text())
    out, loss, grad, batch = _run(case)
    o = case["outputs"]
    _close(loss, o["pg_loss"], "pg_loss")
    _close(grad, o["grad_log_prob"], "grad wrt log_prob")
    assert torch.isfinite(loss) and bool(torch.isfinite(grad).all())
    if "token_weights" in o:
        _close(out.token_weights, o["token_weights"], "token_weights")
    checks = {
        "stare": lambda: _check_stare(out, o),
        "steer": lambda: _check_steer(out, o, batch),
        "kl_cov": lambda: _check_kl_cov(out, o),
        "vanilla": lambda: _check_vanilla(out, o),
    }
    checks[case["method"]]()
