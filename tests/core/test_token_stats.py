"""The fused one-pass token statistics (``stare_rl.core.tokens.token_stats``): values and gradients vs naive."""

from __future__ import annotations

import pytest
import torch

from stare_rl.core.tokens import (
    entropy_sensitivity,
    logprobs_and_entropy,
    sensitivity_from_stats,
    token_stats,
)


def _naive(z: torch.Tensor, tokens: torch.Tensor, tau: float) -> tuple[torch.Tensor, ...]:
    """log pi_a, H, sum pi^2, sum pi^2 log pi from a full log-softmax (autograd through torch ops)."""
    x = z if z.dtype == torch.float64 else z.float()
    logp = torch.log_softmax(x / tau, dim=-1)
    p = logp.exp()
    return (logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1), -(p * logp).sum(-1), (p * p).sum(-1),
            (p * p * logp).sum(-1))


@pytest.mark.parametrize("chunk", [1, 4, 64])
@pytest.mark.parametrize("tau", [0.6, 1.0, 1.7])
def test_values_equal_naive(chunk: int, tau: float) -> None:
    g = torch.Generator().manual_seed(chunk)
    z = 3 * torch.randn(3, 7, 50, generator=g)
    a = torch.randint(0, 50, (3, 7), generator=g)
    got = token_stats(z, a, tau, chunk, second_moments=True)
    for x, ref in zip(got, _naive(z, a, tau), strict=True):
        assert x.dtype == torch.float32 and x.shape == (3, 7)
        torch.testing.assert_close(x, ref)
    lp, ent = logprobs_and_entropy(z, a, tau, chunk)
    torch.testing.assert_close(got.log_prob, lp)
    torch.testing.assert_close(got.entropy, ent)
    only_lp = token_stats(z, a, tau, chunk, entropy=False)
    assert only_lp.entropy is None and only_lp.sum_p2 is None and only_lp.sum_p2_logp is None
    torch.testing.assert_close(only_lp.log_prob, got.log_prob)
    z16 = z.bfloat16()  # what models emit: upcast per chunk
    for x, ref in zip(token_stats(z16, a, tau, chunk, second_moments=True), _naive(z16, a, tau), strict=True):
        torch.testing.assert_close(x, ref)


def test_hand_derived_uniform_and_one_hot() -> None:
    """Uniform over V: log pi = -log V, H = log V, sum pi^2 = 1/V, sum pi^2 log pi = -log(V)/V."""
    v = 8
    st = token_stats(torch.zeros(1, v), torch.tensor([3]), second_moments=True)
    lv = torch.log(torch.tensor(float(v)))
    torch.testing.assert_close(st.log_prob, -lv.reshape(1))
    torch.testing.assert_close(st.entropy, lv.reshape(1))
    torch.testing.assert_close(st.sum_p2, torch.tensor([1.0 / v]))
    torch.testing.assert_close(st.sum_p2_logp, (-lv / v).reshape(1))
    torch.testing.assert_close(sensitivity_from_stats(st), torch.zeros(1), atol=1e-7, rtol=0)  # S = 0 at uniform
    peaked = torch.tensor([[80.0, 0.0, 0.0]])  # pi ~ one-hot: H ~ 0, sum pi^2 ~ 1, no NaN from exp underflow
    st = token_stats(peaked, torch.tensor([1]), second_moments=True)
    assert all(bool(torch.isfinite(x).all()) for x in st)
    assert float(st.entropy) == pytest.approx(0.0, abs=1e-6) and float(st.sum_p2) == pytest.approx(1.0)
    assert float(st.log_prob) == pytest.approx(-80.0, rel=1e-6)


@pytest.mark.parametrize("tau", [0.7, 1.0])
def test_gradients_equal_naive_all_outputs(tau: float) -> None:
    g = torch.Generator().manual_seed(3)
    z = torch.randn(2, 5, 13, generator=g, dtype=torch.float64, requires_grad=True)
    a = torch.randint(0, 13, (2, 5), generator=g)
    w = [torch.randn(2, 5, generator=g, dtype=torch.float64) for _ in range(4)]
    got = token_stats(z, a, tau, chunk_size=3, second_moments=True)
    assert got.log_prob.dtype == torch.float64  # float64 logits stay float64 (gradcheck below)
    (g_fused,) = torch.autograd.grad(sum((wi * x).sum() for wi, x in zip(w, got, strict=True)), z)
    (g_ref,) = torch.autograd.grad(sum((wi * x).sum() for wi, x in zip(w, _naive(z, a, tau), strict=True)), z)
    torch.testing.assert_close(g_fused, g_ref)
    # only log pi used (entropy kept for metrics): the unused outputs get no gradient and cost nothing
    (g_lp,) = torch.autograd.grad(token_stats(z, a, tau, 3).log_prob.sum(), z)
    (g_lp_ref,) = torch.autograd.grad(_naive(z, a, tau)[0].sum(), z)
    torch.testing.assert_close(g_lp, g_lp_ref)


@pytest.mark.parametrize("moments", [False, True])
def test_gradcheck_float64(moments: bool) -> None:
    g = torch.Generator().manual_seed(7)
    z = (2 * torch.randn(5, 9, generator=g, dtype=torch.float64)).requires_grad_(True)
    a = torch.randint(0, 9, (5,), generator=g)

    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        st = token_stats(x, a, 0.8, chunk_size=2, second_moments=moments)
        return tuple(t for t in st if t is not None)

    assert torch.autograd.gradcheck(fn, (z,))


def test_sensitivity_from_stats_equals_exact_and_finite_difference() -> None:
    g = torch.Generator().manual_seed(11)
    z = 2 * torch.randn(6, 20, generator=g, dtype=torch.float64)
    a = torch.randint(0, 20, (6,), generator=g)
    s = sensitivity_from_stats(token_stats(z, a, second_moments=True))
    torch.testing.assert_close(s.float(), entropy_sensitivity(z.float(), a), rtol=1e-5, atol=1e-6)
    # S(a) = -dH/d(eta) of the step z += eta * grad_z log pi_a, at eta -> 0
    eta = 1e-6
    lp, h = token_stats(z.requires_grad_(True), a)[:2]
    for i in range(6):
        (gz,) = torch.autograd.grad(lp[i], z, retain_graph=True)
        h_plus = token_stats(z.detach() + eta * gz, a).entropy[i]
        h_minus = token_stats(z.detach() - eta * gz, a).entropy[i]
        fd = -(h_plus - h_minus) / (2 * eta)
        assert float(fd) == pytest.approx(float(s[i]), rel=1e-5, abs=1e-9)


def test_no_grad_path_and_empty_and_errors() -> None:
    z = torch.randn(4, 6, requires_grad=True)
    a = torch.zeros(4, dtype=torch.long)
    with torch.no_grad():
        st = token_stats(z, a, second_moments=True)
    assert not st.log_prob.requires_grad
    empty = token_stats(torch.zeros(0, 5, requires_grad=True), torch.zeros(0, dtype=torch.long))
    assert empty.log_prob.shape == (0,) and empty.entropy.shape == (0,)
    with pytest.raises(ValueError, match="temperature=0"):
        token_stats(z, a, temperature=0)
    with pytest.raises(ValueError, match="chunk_size=0"):
        token_stats(z, a, chunk_size=0)
    with pytest.raises(ValueError, match=r"tokens shape \(3,\)"):
        token_stats(z, a[:3])
    with pytest.raises(ValueError, match="second moments"):
        sensitivity_from_stats(token_stats(z, a))
