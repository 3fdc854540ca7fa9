"""Token quantities: log-probs, entropy, surprisal and the first-order entropy sensitivities.

All functions are pure. The logits-based ones work in chunks over tokens so that the extra peak memory is
one ``(chunk, V)`` float32 block, never a second full copy of the logits.
"""

from __future__ import annotations

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
        logits: ``(..., V)`` unnormalised logits (any float dtype; math is float32).
        tokens: ``(...)`` sampled token ids, same leading shape as ``logits``.
        temperature: logits are divided by it before the softmax (> 0).
        chunk_size: number of token positions processed at once.
        with_entropy: compute the entropy too.

    Returns:
        ``(log_prob, entropy)`` with the leading shape of ``tokens``, float32; entropy is ``None`` when not
        requested. Gradients flow through both.

    Notes:
        Without autograd (``torch.no_grad()`` or logits not requiring grad) the extra peak memory is one
        ``(chunk, V)`` float32 block (plus 1/16 of one); with autograd every chunk's softmax is kept for the
        backward, as in any unfused implementation.
    """
    if temperature <= 0:
        raise ValueError(f"temperature={temperature} must be > 0")
    if chunk_size < 1:
        raise ValueError(f"chunk_size={chunk_size} must be >= 1")
    if logits.shape[:-1] != tokens.shape:
        raise ValueError(f"tokens shape {tuple(tokens.shape)} does not match logits {tuple(logits.shape[:-1])}")
    lead = tokens.shape
    flat_logits = logits.reshape(-1, logits.shape[-1])  # (N, V) view, no copy
    flat_tokens = tokens.reshape(-1)  # (N,)
    chunk_fn = _chunk_autograd if (torch.is_grad_enabled() and logits.requires_grad) else _chunk_no_grad
    logps, ents = [], []
    for start in range(0, flat_tokens.numel(), chunk_size):
        stop = start + chunk_size
        lp, ent = chunk_fn(flat_logits[start:stop], flat_tokens[start:stop], temperature, with_entropy)
        logps.append(lp)
        ents.append(ent)
    log_prob = torch.cat(logps).reshape(lead) if logps else flat_logits.new_zeros(lead, dtype=torch.float32)
    entropy = None
    if with_entropy:
        entropy = torch.cat(ents).reshape(lead) if ents else flat_logits.new_zeros(lead, dtype=torch.float32)
    return log_prob, entropy


def _chunk_autograd(
    logits: torch.Tensor, tokens: torch.Tensor, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """One chunk with autograd (out-of-place ops; backward keeps the softmax of every chunk)."""
    chunk = logits.float()  # (c, V) float32 block
    if temperature != 1.0:
        chunk = chunk / temperature
    logz = torch.logsumexp(chunk, dim=-1)  # (c,)
    log_prob = chunk.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) - logz
    if not with_entropy:
        return log_prob, logz
    p = torch.softmax(chunk, dim=-1)  # (c, V)
    return log_prob, logz - (p * chunk).sum(-1)  # H = logZ - E_p[z]


def _chunk_no_grad(
    logits: torch.Tensor, tokens: torch.Tensor, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """One chunk without autograd in a single ``(c, V)`` float32 block (in-place ops, dot-product reductions).

    With ``d = z - max z``: ``log pi_a = d_a - log S0`` and ``H = log S0 - S1 / S0`` where ``S0 = sum e^d`` and
    ``S1 = sum e^d d``; the exponentials are formed a few rows at a time, so the extra peak stays one block.
    """
    d = logits.to(torch.float32, copy=True)  # (c, V) the one float32 block
    if temperature != 1.0:
        d.div_(temperature)
    d.sub_(d.amax(dim=-1, keepdim=True))  # (c, V) z - max z <= 0
    s0 = torch.empty(d.shape[0], dtype=torch.float32, device=d.device)  # (c,)
    s1 = torch.zeros_like(s0)
    rows = max(1, d.shape[0] // 64)  # exp of 1/64 of the block at a time
    for r in range(0, d.shape[0], rows):
        e = d[r : r + rows].exp()  # (rows, V)
        s0[r : r + rows] = e.sum(-1)
        if with_entropy:
            s1[r : r + rows] = torch.bmm(e.unsqueeze(1), d[r : r + rows].unsqueeze(2)).reshape(-1)
    log_s0 = torch.log(s0)  # (c,) = logZ - max z
    log_prob = d.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) - log_s0
    return log_prob, log_s0 - s1 / s0


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
    ``S(a) = pi_a (log pi_a + H) - sum_j pi_j^2 (log pi_j + H)``.

    Returns:
        ``(...)`` float32 S(a) at each position, detached.
    """
    flat_logits = logits.detach().reshape(-1, logits.shape[-1])
    flat_tokens = tokens.reshape(-1)
    out = []
    for start in range(0, flat_tokens.numel(), chunk_size):
        z = flat_logits[start : start + chunk_size].float() / temperature  # (c, V)
        out.append(sensitivity_from_log_probs(torch.log_softmax(z, dim=-1), flat_tokens[start : start + chunk_size]))
    if not out:
        return flat_logits.new_zeros(tokens.shape, dtype=torch.float32)
    return torch.cat(out).reshape(tokens.shape)


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
