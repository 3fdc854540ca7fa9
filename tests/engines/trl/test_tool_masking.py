"""Tool-output tokens are not the policy's actions: on a hand-made multi-turn batch, changing the tool-result
tokens, their log-probs, old log-probs or entropies changes nothing the loss side computes — the loss and its
gradient (hence every token weight), STARE's surprisal thresholds, STEER's normalisation, the gate's entropy,
the quadrant diagnostics and every logged metric. A control perturbation of a model token must change them
(so the test can fail).

TRL: real ``StareGRPOTrainer`` (real TRL GRPOTrainer with ``tools=``), the batch TRL's ``_generate`` would
hand over (``tool_mask`` 0 on tool results) injected in place of generation, per-token log-probs injected in
place of the model forward. verl: the ``response_mask`` that verl's agent loop builds for tool turns
(``AgentLoopWorker._postprocess``) fed through verl's policy-loss calling convention and the exact entry
point's step entropy.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch

trl = pytest.importorskip("trl")

from stare_rl.engines.trl import trainer as trl_engine  # noqa: E402
from stare_rl.engines.trl.config import StareGRPOConfig  # noqa: E402
from stare_rl.engines.trl.trainer import StareGRPOTrainer  # noqa: E402

B, T = 4, 12
# completion layout per row: 1 = model token, 0 = tool result (TRL's tool_mask), padding past completion_mask
TOOL_MASK = torch.tensor([
    [1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1],
    [1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1],
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],  # answered without a tool
    [1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1],
])
LENGTHS = torch.tensor([12, 10, 6, 9])
COMPLETION_MASK = (torch.arange(T)[None, :] < LENGTHS[:, None]).int()
TOOL = (TOOL_MASK == 0) & (COMPLETION_MASK == 1)  # (B, T) tool-result tokens inside the completion
REWARDS = torch.tensor([1.0, 0.0, 1.0, 0.0])


def hand_made(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g) * 3 - 0.05
    return {
        "logps": old + 0.2 * torch.randn(B, T, generator=g),
        "old": old,
        "entropy": torch.rand(B, T, generator=g) * 2,
        "ids": torch.randint(4, 30, (B, T), generator=g),
    }


def perturb_tool_tokens(data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Wildly different tool results: other tokens, log-probs, old log-probs and entropies there."""
    out = {k: v.clone() for k, v in data.items()}
    out["logps"][TOOL] = -9.0
    out["old"][TOOL] = -0.01
    out["entropy"][TOOL] = 7.5
    out["ids"][TOOL] = 5
    return out


def perturb_model_token(data: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {k: v.clone() for k, v in data.items()}
    out["logps"][0, 1] -= 4.0  # a model token of a rewarded row: becomes a high-surprisal token
    out["entropy"][0, 1] += 3.0
    return out


# ----- TRL -----
def _trainer(tmp_path: Path, method: str, method_kwargs: dict[str, Any]) -> StareGRPOTrainer:
    from datasets import Dataset

    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.tasks import get_task

    task = get_task("calc_tool")
    tok = task.build_tokenizer()
    model = build_tiny_model(tok, hidden_size=32, num_layers=2, num_heads=2, seed=0)
    rows = [{"prompt": task.chat_prompt(r), "answer": r["answer"]} for r in task.make_split("train", 8, 0)]
    args = StareGRPOConfig(method=method, **method_kwargs, output_dir=str(tmp_path), per_device_train_batch_size=B, num_generations=B,
                           max_completion_length=T, max_steps=1, save_strategy="no", use_cpu=True, seed=0,
                           disable_tqdm=True, report_to="none", max_tool_calling_iterations=3)
    return StareGRPOTrainer(model=model, reward_funcs=lambda completions, **kw: [0.0] * len(completions),
                            args=args, train_dataset=Dataset.from_list(rows), processing_class=tok,
                            tools=list(task.tools))


def _context_stats(ctx: Any) -> dict[str, Any]:
    """Everything the method reads from its context (gate, thresholds, schedule)."""
    return copy.deepcopy(dict(ctx.stats))


def _run_trl(trainer: StareGRPOTrainer, data: dict[str, torch.Tensor], monkeypatch: pytest.MonkeyPatch) -> dict:
    """One loss evaluation on the hand-made batch: loss, d loss / d logps, what the method saw, metrics."""
    logps = data["logps"].clone().requires_grad_(True)
    seen: dict[str, Any] = {}
    real_compute_loss = trl_engine.compute_loss

    def recording_compute_loss(method, batch, cfg, surrogate, ctx):  # noqa: ANN001, ANN202
        seen["mask"] = batch.mask.detach().clone()
        seen["stats"] = _context_stats(ctx)
        out = real_compute_loss(method, batch, cfg, surrogate, ctx)
        seen["weights"] = (out.token_weights * batch.mask).detach().clone()
        return out

    def fake_logps(model, input_ids, attention_mask, logits_to_keep, *a, **kw):  # noqa: ANN001, ANN202
        assert logits_to_keep == T
        return logps, data["entropy"].clone(), None

    def fake_generation(self, inputs):  # noqa: ANN001, ANN202 - the batch TRL's tool loop would produce
        return {
            "prompt_ids": torch.full((B, 3), 7), "prompt_mask": torch.ones(B, 3, dtype=torch.int),
            "completion_ids": data["ids"] * COMPLETION_MASK, "completion_mask": COMPLETION_MASK.clone(),
            "tool_mask": TOOL_MASK.clone(), "advantages": torch.zeros(B), "old_per_token_logps": data["old"].clone(),
            "num_items_in_batch": COMPLETION_MASK.sum(),
        }

    monkeypatch.setattr(trl_engine, "compute_loss", recording_compute_loss)
    monkeypatch.setattr(trainer, "_get_per_token_logps_and_entropies", fake_logps)
    monkeypatch.setattr(trl.GRPOTrainer, "_generate_and_score_completions", fake_generation)
    trainer.model.train()
    trainer._metrics["train"].clear()
    trainer._rewards = REWARDS.unsqueeze(1)  # (N, F) as TRL's _calculate_rewards leaves them
    trainer.current_gradient_accumulation_steps = 1  # set by transformers' training loop
    inputs = trainer._generate_and_score_completions([{}] * B)
    loss = trainer._compute_loss(trainer.model, inputs)
    (grad,) = torch.autograd.grad(loss, logps)
    metrics = {k: list(v) for k, v in trainer._metrics["train"].items()}
    return {"loss": loss.detach(), "grad": grad, "metrics": metrics, **seen}


def _assert_same(a: dict, b: dict) -> None:
    torch.testing.assert_close(a["loss"], b["loss"], rtol=0, atol=1e-6)
    torch.testing.assert_close(a["grad"], b["grad"], rtol=0, atol=1e-7)
    torch.testing.assert_close(a["weights"], b["weights"], rtol=0, atol=1e-7)
    assert a["stats"] == b["stats"]
    assert a["metrics"].keys() == b["metrics"].keys()
    for key in a["metrics"]:
        assert a["metrics"][key] == pytest.approx(b["metrics"][key], abs=1e-6), key


METHODS = [
    ("stare", {"target_entropy": 5.0}),                              # gate on: weights != 1 on selected tokens
    ("stare", {"target_entropy": 5.0, "selection_scope": "global"}),  # global surprisal thresholds via ctx
    ("steer", {}),                                                    # STEER's per-batch entropy normalisation
    ("high_entropy", {}),                                             # entropy quantile (80/20) mask
]


@pytest.mark.slow
@pytest.mark.parametrize(("method", "kwargs"), METHODS)
def test_trl_tool_tokens_change_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str,
                                        kwargs: dict[str, Any]) -> None:
    trainer = _trainer(tmp_path, method, kwargs)
    data = hand_made()
    base = _run_trl(trainer, data, monkeypatch)
    assert torch.equal(base["mask"].bool(), (TOOL_MASK * COMPLETION_MASK).bool())  # the method sees no tool token
    assert torch.all(base["grad"][TOOL] == 0)
    _assert_same(base, _run_trl(trainer, perturb_tool_tokens(data), monkeypatch))
    control = _run_trl(trainer, perturb_model_token(data), monkeypatch)
    assert not torch.equal(control["grad"], base["grad"])
    gate_keys = [k for k in base["metrics"] if "entropy" in k and k.startswith("control/")]
    if method == "stare":  # the gate's input is the model tokens' entropy
        assert gate_keys and any(base["metrics"][k] != control["metrics"][k] for k in gate_keys)
    assert any(base["metrics"][k] != control["metrics"][k] for k in base["metrics"] if k.startswith("quadrant/"))


# ----- verl -----
def _verl_agent_batch() -> Any:
    """The step batch verl's agent loop hands the trainer for tool episodes of the layout above.

    Each ``AgentLoopOutput`` carries ``response_mask`` as verl's ``ToolAgentLoop`` builds it (1 = generated,
    0 = tool response); verl's own ``_agent_loop_postprocess`` pads it and ``_postprocess`` batches it.
    """
    import asyncio
    import types

    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput, AgentLoopWorker

    from stare_rl.tasks import get_task

    worker = object.__new__(AgentLoopWorker)  # only the padding/batching methods are used: no Ray, no server
    worker.tokenizer = get_task("calc_tool").build_tokenizer()
    worker.processor = None
    worker.rollout_config = types.SimpleNamespace(prompt_length=4, response_length=T)
    worker.reward_loop_worker_handles = None
    worker.distillation_enabled = False
    worker.mm_processor_kwargs = None
    outputs = []
    for row in range(B):
        n = int(LENGTHS[row])
        out = AgentLoopOutput(prompt_ids=[1, 48, 9], response_ids=list(range(5, 5 + n)),
                              response_mask=TOOL_MASK[row, :n].tolist(), num_turns=3, metrics=AgentLoopMetrics())
        outputs.append(asyncio.run(worker._agent_loop_postprocess(out, False, raw_prompt=[])))
    return worker._postprocess(outputs)


def _verl_advantages(response_mask: torch.Tensor) -> torch.Tensor:
    return (REWARDS - REWARDS.mean()).unsqueeze(1).expand(B, T) * response_mask  # verl's GRPO advantage layout


def _driver_step_stats(name: str, data: dict[str, torch.Tensor], response_mask: torch.Tensor, pl: Any) -> dict:
    """The exact entry point's driver: the method's global statistics over the whole step batch (TransferQueue
    fields ``old_log_probs``, ``advantages``, ``response_mask``, ``entropy``), once per step."""
    from tensordict import TensorDict

    from stare_rl.control.step import StepController
    from stare_rl.engines.verl import adapter as V
    from stare_rl.engines.verl.main import step_stats_batch

    method = name.split(".")[1]
    td = TensorDict({"old_log_probs": data["old"], "advantages": _verl_advantages(response_mask),
                     "response_mask": response_mask, "entropy": data["entropy"]}, batch_size=[B])
    return StepController(method, V.method_config(method, pl)).global_stats(step_stats_batch(td))


def _verl_loss(name: str, data: dict[str, torch.Tensor], response_mask: torch.Tensor, pl: Any,
               step_stats: dict | None = None) -> dict[str, Any]:
    """verl's calling convention: ``get_policy_loss_fn(name)(old_log_prob, log_prob, advantages, response_mask,
    loss_agg_mode, config, rollout_is_weights)`` with the actor/old entropy (and, on the exact path, the driver's
    global statistics) in the entry point's step state."""
    pytest.importorskip("verl")
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    from verl.workers.config import FSDPActorConfig

    from stare_rl.engines.verl import adapter as V

    cfg = FSDPActorConfig(policy_loss=pl, rollout_n=B, ppo_micro_batch_size_per_gpu=2, clip_ratio_low=0.2,
                          clip_ratio_high=0.28)
    log_prob = data["logps"].clone().requires_grad_(True)
    adv = _verl_advantages(response_mask)
    state = V.StepState(entropy=data["entropy"].clone(), old_entropy=data["entropy"].clone(), step_stats=step_stats)
    with V.step_state(state):
        loss, metrics = get_policy_loss_fn(name)(old_log_prob=data["old"].clone(), log_prob=log_prob,
                                                 advantages=adv, response_mask=response_mask,
                                                 loss_agg_mode="token-mean", config=cfg, rollout_is_weights=None)
    (grad,) = torch.autograd.grad(loss, log_prob)
    return {"loss": loss.detach(), "grad": grad, "metrics": metrics}


VERL_METHODS = [
    ("stare_rl.stare", {"stare_target_entropy": 5.0}),                  # plugin gate from old surprisal
    ("stare_rl.stare", {"stare_target_entropy": 5.0, "stare_selection_scope": "global"}),
    ("stare_rl.steer", {}),
    ("stare_rl.high_entropy", {}),
]


@pytest.mark.parametrize(("name", "fields"), VERL_METHODS)
def test_verl_agent_loop_mask_keeps_tool_tokens_out(name: str, fields: dict[str, Any]) -> None:
    pytest.importorskip("verl")
    from tensordict import TensorDict

    from stare_rl.engines.verl import adapter as V
    from stare_rl.engines.verl.main import step_batch

    batch = _verl_agent_batch()
    response_mask = batch.batch["response_mask"]
    assert torch.equal(response_mask.bool(), (TOOL_MASK * COMPLETION_MASK).bool())  # verl's mask: tool 0, pad 0
    pl = V.StareRLPolicyLossConfig(loss_mode=name.split(".")[1], **fields)
    data = hand_made(1)
    base = _verl_loss(name, data, response_mask, pl)
    assert torch.all(base["grad"][TOOL] == 0)
    other = _verl_loss(name, perturb_tool_tokens(data), response_mask, pl)
    torch.testing.assert_close(other["loss"], base["loss"], rtol=0, atol=1e-6)
    torch.testing.assert_close(other["grad"], base["grad"], rtol=0, atol=1e-7)
    assert other["metrics"] == pytest.approx(base["metrics"], abs=1e-6)
    assert not torch.equal(_verl_loss(name, perturb_model_token(data), response_mask, pl)["grad"], base["grad"])
    # exact path: the driver's whole-step global statistics, then the loss that receives them
    stats = _driver_step_stats(name, data, response_mask, pl)
    assert _driver_step_stats(name, perturb_tool_tokens(data), response_mask, pl) == stats
    exact = _verl_loss(name, data, response_mask, pl, stats)
    exact_other = _verl_loss(name, perturb_tool_tokens(data), response_mask, pl, stats)
    torch.testing.assert_close(exact_other["grad"], exact["grad"], rtol=0, atol=1e-7)
    assert exact_other["metrics"] == pytest.approx(exact["metrics"], abs=1e-6)

    def gate_input(d: dict[str, torch.Tensor]) -> dict[str, float]:  # the exact entry point's step controller
        from stare_rl.control.step import StepController
        from stare_rl.methods.stare.config import StareConfig

        ctrl = StepController("stare", StareConfig(target_entropy=0.9))
        ctrl.update(step_batch(TensorDict({"entropy": d["entropy"], "response_mask": response_mask},
                                          batch_size=[B])), 0)
        return ctrl.metrics()

    base_gate = gate_input(data)
    assert gate_input(perturb_tool_tokens(data)) == pytest.approx(base_gate, abs=1e-12)
    assert gate_input(perturb_model_token(data)) != pytest.approx(base_gate, abs=1e-6)
    (h_key,) = [k for k in base_gate if k.endswith("batch_entropy")]
    assert base_gate[h_key] == pytest.approx(float(data["entropy"][response_mask.bool()].double().mean()))
