"""Token quantities: log-probs, entropy, surprisal and the first-order entropy sensitivities.

All functions are pure. The logits-based ones work in chunks over tokens so that the extra peak memory is
one ``(chunk, V)`` float32 block, never a second full copy of the logits.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

DEFAULT_CHUNK = 1024


def logprobs_and_entropy(
    logits: torch.Tensor,
    tokens: torch.Tensor,
    temperature: float = 1.0,
    chunk_size: int = DEFAULT_CHUNK,
    with_entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probability of the sampled tokens and full-vocabulary entropy from logits.

    Args:
        logits: ``(..., V)`` unnormalised logits (any float dtype; math is float32, float64 stays float64).
        tokens: ``(...)`` sampled token ids, same leading shape as ``logits``.
        temperature: logits are divided by it before the softmax (> 0).
        chunk_size: number of token positions processed at once.
        with_entropy: compute the entropy too.

    Returns:
        ``(log_prob, entropy)`` with the leading shape of ``tokens``; entropy is ``None`` when not requested.
        Gradients flow through both.

    Notes:
        :func:`token_stats` without the second moments: one read of each ``(chunk, V)`` block; the extra peak
        memory is about one ``(chunk, V)`` float32 block with or without autograd (the backward recomputes
        each chunk instead of keeping its softmax), besides the gradient of ``logits`` itself.
    """
    stats = token_stats(logits, tokens, temperature, chunk_size, entropy=with_entropy)
    return stats.log_prob, stats.entropy


class TokenStats(NamedTuple):
    """Per-token quantities of one fused pass over the logits (:func:`token_stats`); ``(...)`` float32 each.

    ``entropy`` is ``None`` unless requested; ``sum_p2`` (``sum_j pi_j^2``) and ``sum_p2_logp``
    (``sum_j pi_j^2 log pi_j``, the policy-average baseline of S(a)) are ``None`` unless ``second_moments``.
    """

    log_prob: torch.Tensor
    entropy: torch.Tensor | None
    sum_p2: torch.Tensor | None
    sum_p2_logp: torch.Tensor | None


def token_stats(
    logits: torch.Tensor,
    tokens: torch.Tensor,
    temperature: float = 1.0,
    chunk_size: int = DEFAULT_CHUNK,
    *,
    entropy: bool = True,
    second_moments: bool = False,
) -> TokenStats:
    """``log pi(a)``, ``H`` and ``sum pi^2``, ``sum pi^2 log pi`` in ONE chunked read of the logits.

    With ``d = z - max z`` and ``e = exp(d)`` per position: ``S0 = sum e``, ``S1 = sum e d``, ``S2 = sum e^2``,
    ``Q = sum e^2 d`` give ``log pi_a = d_a - log S0``, ``H = log S0 - S1 / S0``, ``sum pi^2 = S2 / S0^2`` and
    ``sum pi^2 log pi = (Q - S2 log S0) / S0^2``. These make the exact entropy sensitivity
    ``S(a) = pi_a (log pi_a + H) - (sum pi^2 log pi + H sum pi^2)`` (:func:`sensitivity_from_stats`).

    Args:
        logits: ``(..., V)`` unnormalised logits (any float dtype; math is float32, float64 stays float64).
        tokens: ``(...)`` sampled token ids, the leading shape of ``logits``.
        temperature: logits are divided by it (> 0).
        chunk_size: token positions per chunk.
        entropy: compute ``H``.
        second_moments: compute ``sum pi^2`` and ``sum pi^2 log pi``.

    Returns:
        :class:`TokenStats`, each ``(...)``. Every returned quantity is differentiable w.r.t. ``logits``.

    Notes:
        A custom autograd function: the forward keeps no softmax (only ``logits`` by reference and four
        floats per position) and the backward recomputes each chunk, so with or without autograd the extra
        peak memory is about one ``(chunk, V)`` float32 block besides the gradient of ``logits`` itself
        (closed forms of every derivative in :class:`_FusedTokenStats`). No double backward.
    """
    if temperature <= 0:
        raise ValueError(f"temperature={temperature} must be > 0")
    if chunk_size < 1:
        raise ValueError(f"chunk_size={chunk_size} must be >= 1")
    if logits.shape[:-1] != tokens.shape:
        raise ValueError(f"tokens shape {tuple(tokens.shape)} does not match logits {tuple(logits.shape[:-1])}")
    lead = tokens.shape
    flat_logits = logits.reshape(-1, logits.shape[-1])  # (N, V) view, no copy
    outs = _FusedTokenStats.apply(flat_logits, tokens.reshape(-1), float(temperature), int(chunk_size),
                                  bool(entropy), bool(second_moments))
    return TokenStats(*(None if x is None else x.reshape(lead) for x in outs))


def sensitivity_from_stats(stats: TokenStats) -> torch.Tensor:
    """Exact S(a) ``= pi_a (log pi_a + H) - (sum pi^2 log pi + H sum pi^2)`` from :func:`token_stats`
    (called with ``entropy=True, second_moments=True``). Detached, ``(...)``."""
    if stats.entropy is None or stats.sum_p2 is None or stats.sum_p2_logp is None:
        raise ValueError("stats must hold entropy and the second moments (token_stats(..., second_moments=True))")
    lp, h = stats.log_prob.detach(), stats.entropy.detach()
    return lp.exp() * (lp + h) - (stats.sum_p2_logp.detach() + h * stats.sum_p2.detach())


def _stats_dtype(logits: torch.Tensor) -> torch.dtype:
    return torch.float64 if logits.dtype == torch.float64 else torch.float32


class _FusedTokenStats(torch.autograd.Function):
    """Forward: one chunked pass (see :func:`token_stats`). Backward, per chunk, with ``l = log pi``, ``p = pi``
    and ``tau`` the temperature (``g_*`` the incoming gradients, per position)::

        d log pi_a / dz_j      = (1[j = a] - p_j) / tau
        d H / dz_j             = -p_j (l_j + H) / tau
        d sum p^2 / dz_j       = 2 p_j (p_j - sum p^2) / tau
        d sum p^2 l / dz_j     = (p_j^2 (2 l_j + 1) - p_j (2 sum p^2 l + sum p^2)) / tau

    so ``dL/dz_j = g_lp 1[j = a] / tau + p_j (alpha + beta l_j + gamma p_j + delta p_j l_j) / tau`` with per-row
    ``alpha = -g_lp - g_H H - 2 g_S2 S2 - g_Q (2 Q + S2)``, ``beta = -g_H``, ``gamma = 2 g_S2 + g_Q``,
    ``delta = 2 g_Q``: a few passes over half a chunk at a time, written straight into the gradient.
    """

    @staticmethod
    def forward(ctx, logits, tokens, temperature, chunk_size, want_entropy, want_moments):  # noqa: ANN001
        ctx.set_materialize_grads(False)  # unused outputs (e.g. an entropy kept for metrics) cost nothing
        n = tokens.numel()
        dt = _stats_dtype(logits)
        log_z = torch.empty(n, dtype=dt, device=logits.device)  # (N,) logZ of z / tau
        log_prob = torch.empty_like(log_z)  # (N,) log pi_a
        ent = torch.empty_like(log_z) if want_entropy else None
        s2 = torch.empty_like(log_z) if want_moments else None
        q = torch.empty_like(log_z) if want_moments else None
        with torch.no_grad():
            for start in range(0, n, chunk_size):
                rows = slice(start, start + chunk_size)
                _fused_chunk(logits[rows], tokens[rows], temperature, log_z[rows], log_prob[rows],
                             None if ent is None else ent[rows], None if s2 is None else s2[rows],
                             None if q is None else q[rows])
        ctx.save_for_backward(logits, tokens, log_z, ent, s2, q)
        ctx.temperature, ctx.chunk_size = temperature, chunk_size
        return log_prob, ent, s2, q

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g_lp, g_h, g_s2, g_q):  # noqa: ANN001
        logits, tokens, log_z, ent, s2, q = ctx.saved_tensors
        if not ctx.needs_input_grad[0] or all(g is None for g in (g_lp, g_h, g_s2, g_q)):
            return None, None, None, None, None, None
        tau, n = ctx.temperature, tokens.numel()
        zero = torch.zeros_like(log_z)
        g_lp, g_h = (zero if g is None else g.to(zero.dtype) for g in (g_lp, g_h))
        g_s2, g_q = (zero if g is None else g.to(zero.dtype) for g in (g_s2, g_q))
        h = zero if ent is None else ent
        s2_, q_ = (zero, zero) if s2 is None else (s2, q)
        alpha = -g_lp - g_h * h - 2 * g_s2 * s2_ - g_q * (2 * q_ + s2_)  # (N,) per-row coefficients
        beta, gamma, delta = -g_h, 2 * g_s2 + g_q, 2 * g_q
        with_p2 = bool((gamma != 0).any() or (delta != 0).any())
        grad = torch.empty_like(logits)  # (N, V) in the logits' dtype, as autograd would make it
        step = max(1, ctx.chunk_size // (3 if with_p2 else 2))  # 2-3 (step, V) temporaries: one chunk block
        for start in range(0, n, step):
            r = slice(start, start + step)
            logp = logits[r].to(zero.dtype, copy=True)  # (c, V) -> log pi, in place
            if tau != 1.0:
                logp.div_(tau)
            logp.sub_(log_z[r].unsqueeze(-1))
            p = logp.exp()  # (c, V)
            if with_p2:  # gamma p + delta p logp = p (gamma + delta logp)
                extra = logp.mul(delta[r].unsqueeze(-1)).add_(gamma[r].unsqueeze(-1)).mul_(p)
                logp.mul_(beta[r].unsqueeze(-1)).add_(alpha[r].unsqueeze(-1)).add_(extra)
                del extra
            else:
                logp.mul_(beta[r].unsqueeze(-1)).add_(alpha[r].unsqueeze(-1))  # alpha + beta logp
            logp.mul_(p)  # p (alpha + beta logp + ...)
            logp.scatter_add_(-1, tokens[r].unsqueeze(-1), g_lp[r].unsqueeze(-1))  # + g_lp 1[j = a]
            if tau != 1.0:
                logp.div_(tau)
            grad[r].copy_(logp)
            del p, logp
        return grad, None, None, None, None, None


def _fused_chunk(
    logits: torch.Tensor,
    tokens: torch.Tensor,
    temperature: float,
    log_z: torch.Tensor,
    log_prob: torch.Tensor,
    ent: torch.Tensor | None,
    s2: torch.Tensor | None,
    q: torch.Tensor | None,
) -> None:
    """One chunk of :func:`token_stats`' forward, written into the given ``(c,)`` slices (no autograd).

    One ``(c, V)`` block ``d = z - max z``; the exponentials are formed 1/64 of the block at a time and every
    sum is a dot product (``bmm``) of them with ``d`` or with themselves.
    """
    d = logits.to(_stats_dtype(logits), copy=True)  # (c, V) the one block
    if temperature != 1.0:
        d.div_(temperature)
    m = d.amax(dim=-1, keepdim=True)  # (c, 1)
    d.sub_(m)  # z - max z <= 0
    c = d.shape[0]
    s0 = torch.empty(c, dtype=d.dtype, device=d.device)  # sum e
    s1 = torch.empty_like(s0)  # sum e d
    sq = torch.empty_like(s0)  # sum e^2
    qq = torch.empty_like(s0)  # sum e^2 d
    rows = max(1, c // 64)
    for r in range(0, c, rows):
        dr = d[r : r + rows]  # (rows, V)
        e = dr.exp()
        s0[r : r + rows] = e.sum(-1)
        if ent is not None:
            s1[r : r + rows] = torch.bmm(e.unsqueeze(1), dr.unsqueeze(2)).reshape(-1)
        if s2 is not None:
            e.mul_(e)  # e^2 in place
            sq[r : r + rows] = e.sum(-1)
            qq[r : r + rows] = torch.bmm(e.unsqueeze(1), dr.unsqueeze(2)).reshape(-1)
    log_s0 = torch.log(s0)  # logZ - max z
    log_z.copy_(log_s0 + m.squeeze(-1))
    log_prob.copy_(d.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) - log_s0)
    if ent is not None:
        ent.copy_(log_s0 - s1 / s0)
    if s2 is not None and q is not None:
        inv = s0.pow(-2)
        s2.copy_(sq * inv)
        q.copy_((qq - sq * log_s0) * inv)


def entropy_from_logits(logits: torch.Tensor, temperature: float = 1.0, chunk_size: int = DEFAULT_CHUNK) -> torch.Tensor:
    """Full-vocabulary entropy ``(...)`` of ``logits`` ``(..., V)``, chunked."""
    dummy = torch.zeros(logits.shape[:-1], dtype=torch.long, device=logits.device)
    return logprobs_and_entropy(logits, dummy, temperature, chunk_size)[1]


def surprisal(log_prob: torch.Tensor) -> torch.Tensor:
    """``s = -log pi(a)``, detached: selection statistics carry no gradient."""
    return -log_prob.detach()


def entropy_sensitivity(
    logits: torch.Tensor, tokens: torch.Tensor, temperature: float = 1.0, chunk_size: int = DEFAULT_CHUNK
) -> torch.Tensor:
    """Exact first-order entropy sensitivity of a softmax policy (STARE §3).

    A logit-space step of size eta on ``A * log pi_a`` changes the entropy by about ``-eta * A * S(a)`` with
    ``S(a) = pi_a (log pi_a + H) - sum_j pi_j^2 (log pi_j + H)``: one fused read of the logits
    (:func:`token_stats` with the second moments, extra memory about one ``(chunk, V)`` block).

    Returns:
        ``(...)`` float32 S(a) at each position, detached.
    """
    with torch.no_grad():
        stats = token_stats(logits.detach(), tokens, temperature, chunk_size, second_moments=True)
    return sensitivity_from_stats(stats).float()


def sensitivity_from_log_probs(logp: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """S(a) of :func:`entropy_sensitivity` from the full log-softmax ``(..., V)`` and the tokens ``(...)``,
    computed in ``logp``'s precision (float64 for the probe's tiny learning rates)."""
    p = logp.exp()  # (..., V)
    h = -(p * logp).sum(-1, keepdim=True)  # (..., 1)
    lp_a = logp.gather(-1, tokens.unsqueeze(-1))  # (..., 1)
    lead_term = lp_a.exp() * (lp_a + h)  # (..., 1)
    baseline = (p * p * (logp + h)).sum(-1, keepdim=True)  # (..., 1)
    return (lead_term - baseline).squeeze(-1)


def entropy_sensitivity_leading(log_prob: torch.Tensor, entropy: torch.Tensor) -> torch.Tensor:
    """Leading term of S(a): ``pi_a (log pi_a + H)`` (drops the policy-average baseline). Detached."""
    lp = log_prob.detach()
    return lp.exp() * (lp + entropy.detach())


def steer_omega(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, entropy: torch.Tensor
) -> torch.Tensor:
    """STEER's signed estimated entropy change ``Omega = A * pi (1 - pi) / pi_old * (log pi + H)``.

    Follows the reference numerics: ``pi = clamp(exp(log_prob), 1e-8, 1 - 1e-8)``,
    ``pi_old = clamp(exp(old_log_prob), 1e-8, 1)``; non-finite values become 0. Detached.

    Returns:
        ``(B, T)`` Omega at every position (padding included; callers mask).
    """
    with torch.no_grad():  # in-place on fresh temporaries: the same values, fewer allocations
        x = torch.exp(log_prob.detach()).clamp_(1e-8, 1.0 - 1e-8)  # (B, T) pi
        p_old = torch.exp(old_log_prob.detach()).clamp_(1e-8, 1.0)  # (B, T) pi_old
        omega = torch.div(advantages.detach(), p_old).mul_(x).mul_(torch.rsub(x, 1.0))  # A / pi_old * pi (1 - pi)
        omega.mul_(torch.log(x).add_(entropy.detach()))  # * (log pi + H)
        return omega.nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0)  # non-finite -> 0


def steer_omega_abs(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, entropy: torch.Tensor
) -> torch.Tensor:
    """STEER's estimated entropy change magnitude ``|Omega|`` (:func:`steer_omega`, in place), ``(B, T)``."""
    return steer_omega(log_prob, old_log_prob, advantages, entropy).abs_()
