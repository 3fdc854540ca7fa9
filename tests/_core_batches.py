"""Random ``TokenBatch`` factory shared by the core method tests (not a test module)."""

from __future__ import annotations

import torch

from stare_rl.core.types import TokenBatch


def random_batch(
    seed: int,
    b: int = 4,
    t: int = 8,
    *,
    mask_p: float = 0.8,
    offpolicy: bool = True,
    token_adv: bool = False,
    dtype: torch.dtype = torch.float32,
) -> TokenBatch:
    """A GRPO-like batch: ragged mask, per-row advantages broadcast over tokens, entropy in [0, 4], an
    old-policy entropy (a separate draw in [0, 4], as after an update the two differ) and a 0/1 reward (1 where
    A > 0).

    ``log_prob`` is a leaf tensor with ``requires_grad=True``; ``token_adv`` draws a fresh advantage per token.
    """
    g = torch.Generator().manual_seed(seed)
    log_prob = -torch.empty(b, t, dtype=dtype).exponential_(1.0, generator=g)  # (B, T) log pi in (-inf, 0]
    noise = 0.3 * torch.randn(b, t, generator=g, dtype=dtype) if offpolicy else torch.zeros(b, t, dtype=dtype)
    old_log_prob = log_prob + noise
    mask = (torch.rand(b, t, generator=g) < mask_p).to(dtype)  # (B, T)
    if token_adv:
        adv = torch.randn(b, t, generator=g, dtype=dtype)
    else:
        adv = torch.randn(b, 1, generator=g, dtype=dtype).expand(b, t).clone()
    adv = adv * mask
    entropy = 4.0 * torch.rand(b, t, generator=g, dtype=dtype)
    old_entropy = 4.0 * torch.rand(b, t, generator=g, dtype=dtype)
    return TokenBatch(
        log_prob=log_prob.requires_grad_(True),
        old_log_prob=old_log_prob,
        advantages=adv,
        mask=mask,
        entropy=entropy,
        old_entropy=old_entropy,
        rewards=(adv > 0).to(dtype) * mask,  # a 0/1 outcome consistent with the advantage's sign (no extra draw)
    )


def with_(batch: TokenBatch, **changes: torch.Tensor | None) -> TokenBatch:
    """Copy of ``batch`` with some fields replaced; ``log_prob`` becomes a fresh leaf requiring grad."""
    fields = {
        "log_prob": batch.log_prob,
        "old_log_prob": batch.old_log_prob,
        "advantages": batch.advantages,
        "mask": batch.mask,
        "entropy": batch.entropy,
        "old_entropy": batch.old_entropy,
        "rewards": batch.rewards,
    }
    fields.update(changes)
    shape = fields["log_prob"].shape
    for name in ("old_entropy", "rewards"):
        if name not in changes and fields[name] is not None and fields[name].shape != shape:
            fields[name] = None  # rows cut from the other fields only: none of it for the cut batch
    fields["log_prob"] = fields["log_prob"].detach().clone().requires_grad_(True)
    return TokenBatch(**fields)


EDGE_CASES = ("no_valid", "zero_adv", "single_token", "masked_rows")


def edge_case_batch(case: str, seed: int) -> TokenBatch:
    """A random (3, 5) batch turned into one numerical edge case (advantages stay 0 on padding)."""
    batch = random_batch(seed, 3, 5)
    mask, adv = batch.mask.clone(), batch.advantages
    if case == "no_valid":
        mask.zero_()
    elif case == "zero_adv":
        adv = torch.zeros_like(adv)
    elif case == "single_token":
        mask.zero_()
        mask[1, 2] = 1.0
    elif case == "masked_rows":
        mask[0] = 0.0
        mask[2] = 0.0
    else:
        raise ValueError(f"case={case!r} is not one of {list(EDGE_CASES)}")
    return with_(batch, mask=mask, advantages=adv * mask)


def assert_finite_on_edge_case(method: str, case: str, seed: int, zero_without_advantage: bool = True) -> None:
    """Loss, gradient and metrics of ``method`` are finite on an edge case; nothing valid gives 0, and A = 0 too
    unless the method has a term that does not depend on the advantage (``zero_without_advantage=False``)."""
    from stare_rl import aggregate, compute_loss

    batch = edge_case_batch(case, seed)
    out = compute_loss(method, batch)
    loss = aggregate(out.token_loss, batch.mask)
    (grad,) = torch.autograd.grad(loss, batch.log_prob)
    assert torch.isfinite(loss) and bool(torch.isfinite(grad).all())
    assert all(bool(torch.isfinite(v)) for v in out.metrics.values())
    if case == "no_valid" or (case == "zero_adv" and zero_without_advantage):
        assert float(loss.detach()) == 0.0 and bool((grad == 0).all())


def assert_verl_loss_equals_core(method: str) -> None:
    """verl's registry has ``stare_rl.<method>``; called the way verl calls a policy loss it equals the core."""
    import verl  # noqa: F401  (the stare_rl plugin registers on import)
    from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY
    from verl.workers.config import FSDPActorConfig

    from stare_rl import aggregate, compute_loss
    from stare_rl.engines.verl import adapter as V

    fn = POLICY_LOSS_REGISTRY[f"stare_rl.{method}"]
    assert fn._stare_rl_method == method
    batch = random_batch(3, 4, 7)
    pl = V.StareRLPolicyLossConfig()
    cfg = FSDPActorConfig(policy_loss=pl, rollout_n=4, ppo_micro_batch_size_per_gpu=2, clip_ratio_low=0.2,
                          clip_ratio_high=0.28)
    with V.step_state(V.StepState(entropy=batch.entropy)):
        loss, metrics = fn(batch.old_log_prob, batch.log_prob, batch.advantages, batch.mask, "token-mean", cfg)
    out = compute_loss(method, batch, V.method_config(method, pl), V.surrogate_config(cfg, "token-mean"))
    torch.testing.assert_close(loss, aggregate(out.token_loss, batch.mask), rtol=1e-6, atol=1e-7)
    assert metrics and all(k.startswith(("actor/", "loss/")) for k in metrics), sorted(metrics)
    assert "pg_clipfrac" not in out.metrics or "actor/pg_clipfrac" in metrics  # verl's own names kept
