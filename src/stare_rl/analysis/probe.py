"""The estimator probe: predicted vs measured per-token entropy change after one real optimiser step.

For a fixed batch of sampled responses, each estimator of :mod:`stare_rl.analysis.estimators` predicts how
one policy-gradient step changes the entropy H of every response position. The probe takes that step for
real (SGD or AdamW, on a copy of the parameters), re-runs the policy on the same inputs, and scores the
predictions against ``H_after - H_before`` per estimator, overall and per quadrant (STEER's Table 1
measurement).

Effective advantage: the estimators are evaluated with ``g_t = -dL/dlog pi_t`` (the loss's own per-token
coefficient, from autograd) in place of ``A_t``. For the vanilla loss with token-mean aggregation
``g_t = A_t / N``; for re-weighting methods it includes the weights and clipping, so the same probe scores
any registered loss. In the logit-independent limit a plain SGD step of size eta then changes the entropy by
``-eta * g_t * S(a_t) + O(eta^2)`` exactly, so the fitted scale of the ``exact`` estimator is ``eta``.

Two policies share one interface, a module whose ``forward()`` returns ``(B, T, V)`` logits for the
fixed batch: :class:`CausalLMPolicy` (a real model, parameters shared across positions) and
:class:`LogitTable` (one free logit vector per position, initialised from the model's logits: the
logit-independent limit).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import nn

from stare_rl.analysis.estimators import ESTIMATORS, predicted_changes, score
from stare_rl.core.aggregate import aggregate
from stare_rl.core.quadrants import QUADRANTS, quadrant_masks
from stare_rl.core.registry import BASELINE_METHOD, compute_loss
from stare_rl.core.types import LossContext, TokenBatch

OPTIMIZERS = ("sgd", "adamw")


@dataclass(frozen=True)
class ProbeBatch:
    """A fixed batch of sampled sequences, aligned for next-token prediction.

    Args:
        input_ids: ``(B, L)`` prompt + response token ids, right-padded.
        attention_mask: ``(B, L)`` 1 on real tokens.
        response_mask: ``(B, L-1)`` 1 where target ``input_ids[:, t+1]`` is a response token.
        advantages: ``(B, L-1)`` per-token advantages (sequence advantage broadcast).
        rewards: optional ``(B, L-1)`` each response's reward at its tokens (methods that declare
            ``needs_rewards``, e.g. Entrocraft).
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    response_mask: torch.Tensor
    advantages: torch.Tensor
    rewards: torch.Tensor | None = None

    def __post_init__(self) -> None:
        b, length = self.input_ids.shape
        for name in ("response_mask", "advantages") + (("rewards",) if self.rewards is not None else ()):
            shape = tuple(getattr(self, name).shape)
            if shape != (b, length - 1):
                raise ValueError(f"{name} has shape {shape}, expected {(b, length - 1)} (targets of input_ids)")

    @property
    def targets(self) -> torch.Tensor:
        """``(B, L-1)`` the token predicted at each position."""
        return self.input_ids[:, 1:]


class CausalLMPolicy(nn.Module):
    """A causal LM evaluated on the fixed batch: ``forward() -> (B, L-1, V)`` next-token logits."""

    def __init__(self, model: nn.Module, batch: ProbeBatch) -> None:
        super().__init__()
        self.model = model
        self.batch = batch

    def forward(self) -> torch.Tensor:
        out = self.model(input_ids=self.batch.input_ids, attention_mask=self.batch.attention_mask)
        return out.logits[:, :-1]  # (B, L-1, V)


class LogitTable(nn.Module):
    """The logit-independent limit: one free ``(V,)`` logit vector per position, no shared parameters."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.table = nn.Parameter(logits.detach().clone())  # (B, T, V)

    def forward(self) -> torch.Tensor:
        return self.table


class LinearHead(nn.Module):
    """Sharing through the unembedding only: ``logits_t = W h_t`` with the model's final features ``h_t``
    frozen and the ``(V, d)`` output matrix ``W`` trainable (a softmax-linear policy; between the logit table
    and the full model).
    """

    def __init__(self, features: torch.Tensor, weight: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("features", features.detach().clone())  # (B, T, d)
        self.weight = nn.Parameter(weight.detach().clone())  # (V, d)

    def forward(self) -> torch.Tensor:
        return self.features @ self.weight.T  # (B, T, V)

    @classmethod
    def from_policy(cls, policy: CausalLMPolicy, atol: float = 1e-6) -> LinearHead:
        """Features and output matrix of ``policy``'s model; raises ``ValueError`` when ``W h`` does not
        reproduce its logits (a head with a bias, soft-capping or scaling)."""
        b = policy.batch
        head = policy.model.get_output_embeddings()
        with torch.no_grad():
            out = policy.model(input_ids=b.input_ids, attention_mask=b.attention_mask, output_hidden_states=True)
            lin = cls(out.hidden_states[-1][:, :-1], head.weight)
            err = float((lin() - out.logits[:, :-1]).abs().max())
        if getattr(head, "bias", None) is not None or err > atol:
            raise ValueError(f"model head is not a plain linear map of the last hidden state (max error {err:.2e})")
        return lin


@dataclass(frozen=True)
class StepSpec:
    """One optimiser step to measure: ``optimizer`` in :data:`OPTIMIZERS` and its learning rate."""

    optimizer: str
    lr: float

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={self.optimizer!r} must be one of {list(OPTIMIZERS)}")
        if not self.lr > 0:
            raise ValueError(f"lr={self.lr} must be > 0")


@dataclass(frozen=True)
class LossSpec:
    """The loss whose step is measured: a registered method and an aggregation mode."""

    method: str = BASELINE_METHOD
    loss_agg_mode: str = "token-mean"
    method_config: object | None = None
    context: LossContext = field(default_factory=LossContext)


def _entropy(logits: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits, dim=-1)  # (B, T, V)
    return -(logp.exp() * logp).sum(-1)  # (B, T)


def _make_optimizer(params: list[nn.Parameter], step: StepSpec) -> torch.optim.Optimizer:
    if step.optimizer == "sgd":
        return torch.optim.SGD(params, lr=step.lr)
    # weight decay 0: only the policy-gradient step moves the parameters
    return torch.optim.AdamW(params, lr=step.lr, weight_decay=0.0)


def loss_and_coefficient(
    policy: nn.Module, batch: ProbeBatch, loss: LossSpec
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Forward the policy once; return (scalar loss, ``(B, T, V)`` logits, ``(B, T)`` g = -dL/dlog pi)."""
    logits = policy()  # (B, T, V)
    logp_all = torch.log_softmax(logits, dim=-1)
    log_prob = logp_all.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
    entropy = -(logp_all.exp() * logp_all).sum(-1)  # (B, T)
    adv = batch.advantages.to(log_prob.dtype)
    rewards = None if batch.rewards is None else batch.rewards.to(log_prob.dtype)
    tb = TokenBatch(log_prob, log_prob.detach(), adv, batch.response_mask, entropy.detach(), rewards=rewards)
    out = compute_loss(loss.method, tb, loss.method_config, None, loss.context)
    value = aggregate(out.token_loss, batch.response_mask, loss.loss_agg_mode)
    (grad_logp,) = torch.autograd.grad(value, log_prob, retain_graph=True)
    return value, logits, -grad_logp.detach()


def measure_step(policy: nn.Module, batch: ProbeBatch, loss: LossSpec, step: StepSpec) -> dict[str, torch.Tensor]:
    """Take one optimiser step on a copy of ``policy``; measure the per-position entropy change.

    Returns:
        ``logits`` ``(B, T, V)`` before the step, ``g`` ``(B, T)`` effective advantage, ``dh`` ``(B, T)``
        measured ``H_after - H_before`` (the policy itself is left unchanged).
    """
    work = copy.deepcopy(policy)
    work.eval()  # no dropout: the only change between the two forwards is the step
    params = [p for p in work.parameters() if p.requires_grad]
    opt = _make_optimizer(params, step)
    opt.zero_grad(set_to_none=True)
    value, logits, g = loss_and_coefficient(work, batch, loss)
    logits = logits.detach().clone()  # a LogitTable returns its parameter: keep the pre-step values
    value.backward()
    opt.step()
    with torch.no_grad():
        dh = _entropy(work()) - _entropy(logits)  # (B, T)
    return {"logits": logits, "g": g, "dh": dh}


def _score_table(
    preds: dict[str, torch.Tensor], dh: torch.Tensor, groups: dict[str, torch.Tensor]
) -> dict[str, dict[str, dict[str, float]]]:
    return {name: {g: score(p[m], dh[m]) for g, m in groups.items()} for name, p in preds.items()}


def probe_step(
    policy: nn.Module, batch: ProbeBatch, loss: LossSpec, step: StepSpec
) -> dict[str, object]:
    """Measure one step and score every estimator, overall and per quadrant.

    Returns:
        A JSON-ready dict: ``optimizer``, ``lr``, ``mean_abs_dh``, ``mean_entropy``, ``scores``
        (estimator -> group -> :func:`stare_rl.analysis.estimators.score`) and ``quadrants``
        (group -> token fraction, measured and exact-predicted summed dH per valid token).
    """
    m = measure_step(policy, batch, loss, step)
    logits, g, dh = m["logits"], m["g"], m["dh"]
    valid = batch.response_mask > 0  # (B, T)
    targets = batch.targets
    log_prob = torch.log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    entropy = _entropy(logits)
    preds = predicted_changes(logits, targets, g)  # per unit step, (B, T) each
    groups = {"all": valid, **quadrant_masks(log_prob, entropy, batch.advantages, batch.response_mask)}
    groups["zero_adv"] = valid & (batch.advantages == 0)
    n_valid = max(int(valid.sum()), 1)
    exact_scale = score(preds["exact"][valid], dh[valid])["scale"]
    quadrants = {
        q: {
            "frac": float(groups[q].sum()) / n_valid,
            "dh_sum": float(dh[groups[q]].sum()) / n_valid,
            "dh_pred_exact_sum": exact_scale * float(preds["exact"][groups[q]].sum()) / n_valid,
        }
        for q in (*QUADRANTS, "zero_adv")
    }
    return {
        "optimizer": step.optimizer,
        "lr": step.lr,
        "n_tokens": int(valid.sum()),
        "mean_entropy": float(entropy[valid].mean()) if bool(valid.any()) else 0.0,
        "mean_abs_dh": float(dh[valid].abs().mean()) if bool(valid.any()) else 0.0,
        "dh_sum": float(dh[valid].sum()) / n_valid,
        "scores": _score_table({k: preds[k] for k in ESTIMATORS}, dh, groups),
        "quadrants": quadrants,
    }


def calibrate_lr(
    policy: nn.Module,
    batch: ProbeBatch,
    loss: LossSpec,
    optimizer: str,
    rel_change: float,
    lr0: float = 1e-4,
    tries: int = 4,
    tol: float = 0.05,
) -> float:
    """The learning rate whose step changes entropy by ``rel_change`` of the mean entropy (mean |dH| / mean H).

    Trial steps from ``lr0`` with linear rescaling (|dH| grows about linearly with a small step) until
    within ``tol`` (relative) or after ``tries`` steps. Matching the step's effect, not the lr, makes a
    shared-parameter model and the logit table comparable.
    """
    if not rel_change > 0:
        raise ValueError(f"rel_change={rel_change} must be > 0")
    lr = lr0
    for _ in range(tries):
        trial = probe_step(policy, batch, loss, StepSpec(optimizer, lr))
        rel = trial["mean_abs_dh"] / max(trial["mean_entropy"], 1e-12)
        if not rel > 0:
            raise ValueError(f"a step at lr={lr} did not change the entropy; is the batch's advantage all zero?")
        if abs(rel / rel_change - 1.0) <= tol:
            return lr
        lr = lr * rel_change / rel
    return lr


def run_probe(
    policies: dict[str, nn.Module],
    batch: ProbeBatch,
    loss: LossSpec,
    optimizers: tuple[str, ...] = OPTIMIZERS,
    rel_changes: tuple[float, ...] = (1e-4, 1e-2),
    lrs: tuple[float, ...] = (),
) -> list[dict[str, object]]:
    """Probe every policy x optimiser x step size; returns one :func:`probe_step` record per measured step.

    Step sizes are ``lrs`` when given, else learning rates calibrated to each of ``rel_changes`` per policy
    and optimiser (see :func:`calibrate_lr`). Each record gains ``policy`` and ``rel_change`` keys.
    """
    records: list[dict[str, object]] = []
    for pname, policy in policies.items():
        for opt in optimizers:
            plan = [(lr, None) for lr in lrs] or [
                (calibrate_lr(policy, batch, loss, opt, r), r) for r in rel_changes
            ]
            for lr, target in plan:
                rec = probe_step(policy, batch, loss, StepSpec(opt, lr))
                rec = {"policy": pname, "rel_change_target": target,
                       "rel_change": rec["mean_abs_dh"] / max(rec["mean_entropy"], 1e-12), **rec}
                records.append(rec)
    return records
