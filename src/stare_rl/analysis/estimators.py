"""Per-token entropy-change estimators and the statistics that score them against a measured change.

Three first-order predictions of how a policy-gradient step on ``A * log pi(a)`` changes the entropy H of
each state, all per unit step (the true change is about ``eta_eff`` times these):

* ``exact``:   ``-A * S(a)``, ``S(a) = pi_a (log pi_a + H) - sum_j pi_j^2 (log pi_j + H)`` (STARE §3).
* ``leading``: ``-A * pi_a (log pi_a + H)``, the leading term of S(a) without the policy-average baseline.
* ``omega``:   ``-Omega`` with STEER's signed ``Omega = A * pi (1 - pi) / pi_old * (log pi + H)``.

All three are detached ``(B, T)`` tensors. The scoring helpers take flat 1-D float64 tensors.
"""

from __future__ import annotations

import math

import torch

from stare_rl.core.quadrants import predicted_entropy_change
from stare_rl.core.tokens import (
    entropy_sensitivity,
    entropy_sensitivity_leading,
    sensitivity_from_log_probs,
    steer_omega,
)

ESTIMATORS = ("exact", "leading", "omega")


def predicted_changes(
    logits: torch.Tensor,
    tokens: torch.Tensor,
    advantages: torch.Tensor,
    old_log_prob: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Per-token predicted entropy change per unit step under each of :data:`ESTIMATORS`.

    Args:
        logits: ``(B, T, V)`` logits of the policy at the response positions.
        tokens: ``(B, T)`` sampled tokens.
        advantages: ``(B, T)`` per-token advantages.
        old_log_prob: ``(B, T)`` behaviour-policy log-probs for STEER's ratio (default: on-policy).

    Returns:
        ``{"exact", "leading", "omega"}`` -> ``(B, T)`` detached tensors in the dtype of ``logits``.
    """
    z = logits.detach()
    logp = torch.log_softmax(z, dim=-1)  # (B, T, V)
    log_prob = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, T)
    entropy = -(logp.exp() * logp).sum(-1)  # (B, T)
    old = log_prob if old_log_prob is None else old_log_prob
    if z.dtype == torch.float64:
        # DEVIATION: entropy_sensitivity computes in float32; the probe runs in float64 so that tiny learning
        # rates are measurable, so the same formula is evaluated here in the input precision.
        s_exact = sensitivity_from_log_probs(logp, tokens)
    else:
        s_exact = entropy_sensitivity(z, tokens).to(z.dtype)
    return {
        "exact": predicted_entropy_change(advantages, s_exact),
        "leading": predicted_entropy_change(advantages, entropy_sensitivity_leading(log_prob, entropy)),
        "omega": -steer_omega(log_prob, old, advantages, entropy),
    }


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """Average ranks (ties share the mean rank), 1-D float64."""
    order = torch.argsort(x, stable=True)
    sorted_x = x[order]
    ranks = torch.empty_like(x, dtype=torch.float64)
    ranks[order] = torch.arange(x.numel(), dtype=torch.float64)
    _, inverse, counts = torch.unique_consecutive(sorted_x, return_inverse=True, return_counts=True)
    starts = torch.cumsum(counts, 0) - counts  # (G,) first rank of each tie group
    mean_rank = starts.double() + (counts.double() - 1) / 2  # (G,)
    ranks[order] = mean_rank[inverse]
    return ranks


def pearson(x: torch.Tensor, y: torch.Tensor) -> float:
    """Pearson correlation; 0 when either side is constant or fewer than 2 points."""
    if x.numel() < 2:
        return 0.0
    xc, yc = x.double() - x.double().mean(), y.double() - y.double().mean()
    den = math.sqrt(float((xc * xc).sum()) * float((yc * yc).sum()))
    return float((xc * yc).sum()) / den if den > 0 else 0.0


def spearman(x: torch.Tensor, y: torch.Tensor) -> float:
    """Spearman rank correlation (Pearson of average ranks)."""
    if x.numel() < 2:
        return 0.0
    return pearson(_ranks(x.double()), _ranks(y.double()))


MIN_DISTINCT = 3  # correlations of fewer distinct predictions are trivially +-1 or undefined


def score(pred: torch.Tensor, true: torch.Tensor) -> dict[str, float | int | None]:
    """Score a 1-D prediction against the measured change.

    Returns:
        ``n``; ``n_distinct`` (distinct predicted values: repeated identical responses give identical
        tokens); ``scale`` c minimising ``sum (true - c * pred)^2`` (a fit through the origin: a first-order
        estimate is exact up to the effective step size); ``mse`` after that fit; ``rel_mse`` = mse /
        mean(true^2) (0 = perfect, 1 = no better than predicting 0); ``pearson``; ``spearman``;
        ``sign_agree`` = share of tokens with a nonzero prediction whose sign matches the measured one.
        Correlations are ``None`` with fewer than :data:`MIN_DISTINCT` distinct predictions; everything
        else is 0 on empty input.
    """
    pred, true = pred.double().reshape(-1), true.double().reshape(-1)
    n = int(pred.numel())
    n_distinct = int(torch.unique(pred).numel())
    if n == 0:
        return {"n": 0, "n_distinct": 0, "scale": 0.0, "mse": 0.0, "rel_mse": 0.0, "pearson": None,
                "spearman": None, "sign_agree": 0.0}
    pp = float((pred * pred).sum())
    scale = float((pred * true).sum()) / pp if pp > 0 else 0.0
    resid = true - scale * pred
    mse = float((resid * resid).mean())
    power = float((true * true).mean())
    nz = pred != 0
    sign_agree = float((torch.sign(pred[nz]) == torch.sign(true[nz])).double().mean()) if bool(nz.any()) else 0.0
    enough = n_distinct >= MIN_DISTINCT
    return {"n": n, "n_distinct": n_distinct, "scale": scale, "mse": mse,
            "rel_mse": mse / power if power > 0 else 0.0,
            "pearson": pearson(pred, true) if enough else None,
            "spearman": spearman(pred, true) if enough else None, "sign_agree": sign_agree}
