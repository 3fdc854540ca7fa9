"""TRL adapter: the full-vocabulary entropy only where something needs it, and no extra forward when TRL
already made one (its old-log-prob pass)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("trl")

from test_trl_engine import make_trainer, step_logs  # noqa: E402

pytestmark = pytest.mark.slow


def _batch(trainer: Any) -> dict[str, Any]:
    """One generation batch of the trainer (TRL generation + our advantages), without training on it."""
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = trainer.args.gradient_accumulation_steps  # set by train()
    inputs = next(iter(trainer.get_train_dataloader()))
    return trainer._generate_and_score_completions(inputs)


def test_log_prob_only_head_gives_the_same_log_probs_and_no_entropy(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, "vanilla")
    head = trainer._head
    assert head.without_entropy is not None, "TRL's fused LM head was not recognised"
    batch = _batch(trainer)
    with torch.no_grad():
        lp_h, ent, _ = trainer._forward(trainer.model, batch, compute_entropy=True)
        lp, none, _ = trainer._forward(trainer.model, batch, compute_entropy=False)
    assert none is None and ent is not None and bool(torch.isfinite(ent).all())
    assert torch.equal(lp, lp_h)  # the entropy never changes the log-probs
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    with torch.no_grad(), head.entropy(False):
        out = trainer.model(input_ids=ids, labels=ids, fused_lm_head=True)
    assert out.entropy is None and trainer.model.forward == head.with_entropy  # kernel skipped it; restored
    with torch.no_grad():
        assert trainer.model(input_ids=ids, labels=ids, fused_lm_head=True).entropy is not None  # TRL default
    assert trainer.model.generate(input_ids=ids[:2, :3], max_new_tokens=2, do_sample=False).shape == (2, 5)


@pytest.mark.parametrize(
    "method, quadrants, wants",
    [("vanilla", True, True), ("vanilla", False, False), ("steer", False, True), ("stare", False, True)],
)
def test_entropy_computed_exactly_when_needed(tmp_path: Path, method: str, quadrants: bool, wants: bool) -> None:
    """Defaults (quadrant diagnostics on) keep the entropy; without them only the method or gate asks for it."""
    trainer = make_trainer(tmp_path, method, method_args={"quadrant_metrics": quadrants}, max_steps=1)
    asked: list[bool] = []
    forward = trainer._forward
    trainer._forward = lambda model, inputs, compute_entropy, **kw: (asked.append(compute_entropy),
                                                                     forward(model, inputs, compute_entropy, **kw))[1]
    trainer.train()
    assert asked == [wants]  # one training forward (spg = 1): STARE's gate measures on it
    (rec,) = step_logs(trainer)
    assert ("actor/entropy" in rec) == wants and math.isfinite(rec["loss"])
    if method == "stare":
        assert "control/batch_entropy" in rec


def test_controllers_reuse_trls_old_log_prob_pass(tmp_path: Path) -> None:
    """num_iterations = 2 makes TRL compute old log-probs over each generation batch (no grad, before any
    update on it): the gate is measured from that pass (same numbers as a fresh forward), with no extra one."""
    trainer = make_trainer(tmp_path, "stare", {"target_entropy": 100.0}, max_steps=2, per_device_train_batch_size=8,
                           gradient_accumulation_steps=2, num_iterations=2)
    assert trainer.args.steps_per_generation == 2
    fresh: list[tuple[torch.Tensor, torch.Tensor]] = []
    calls: list[str] = []
    update, forward = trainer._update_controllers, trainer._forward

    def spy_update(out: dict[str, Any]) -> Any:
        assert out.get("old_per_token_logps") is not None and out.get("old_entropy") is not None
        with torch.no_grad():
            fresh.append((*forward(trainer.model, out, True)[:2], out["old_entropy"], out["old_per_token_logps"]))
        calls.clear()
        ctx = update(out)
        assert calls == [], "an extra forward was made although TRL's pass had the numbers"
        return ctx

    trainer._update_controllers = spy_update
    trainer._forward = lambda model, inputs, compute_entropy, **kw: (calls.append("fwd"),
                                                                     forward(model, inputs, compute_entropy, **kw))[1]
    trainer.train()
    assert len(fresh) == 1  # one generation batch serves both optimizer steps
    lp, ent, captured, old = fresh[0]
    assert torch.equal(captured, ent) and torch.equal(old, lp)
    rec = step_logs(trainer)[0]
    assert rec["control/gate_on"] == 1.0 and math.isfinite(rec["control/batch_entropy"])
