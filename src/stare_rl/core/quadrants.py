"""Four-quadrant entropy diagnostics, cheap enough to log every training step.

STARE §3: a policy-gradient step of size eta on ``A * log pi(a)`` changes the entropy of the state by about
``dH ~= -eta * A * S(a)``. With the leading term ``S(a) ~= pi_a (log pi_a + H) = pi_a (H - s)``, where
``s = -log pi_a`` is the token's surprisal, the sign of the change is decided by two signs:

    ========  ===========  ==========================================
    quadrant  condition    predicted effect of the update on entropy
    ========  ===========  ==========================================
    pos_high  A > 0, s > H raises entropy (reinforce a surprising token)
    pos_low   A > 0, s <= H lowers entropy (sharpen onto a likely token)
    neg_high  A < 0, s > H lowers entropy (push down an unlikely token)
    neg_low   A < 0, s <= H raises entropy (push down a likely token)
    ========  ===========  ==========================================

Tokens with ``A == 0`` carry no gradient and belong to no quadrant (their fraction is reported as
``quadrant/zero_adv_frac`` so that the five fractions sum to 1 over valid tokens).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from stare_rl.core.tokens import entropy_sensitivity_leading

QUADRANTS = ("pos_high", "pos_low", "neg_high", "neg_low")
PREFIX = "quadrant/"


def quadrant_masks(
    log_prob: torch.Tensor, entropy: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor
) -> dict[str, torch.Tensor]:
    """``(B, T)`` bool masks of the four quadrants over valid tokens (``A == 0`` in none).

    High surprisal means ``-log pi(a) > H`` strictly; a tie counts as low.
    """
    valid = mask > 0  # (B, T)
    adv = advantages.detach()
    high = (-log_prob.detach()) > entropy.detach()  # (B, T) surprisal above the state's entropy
    pos, neg = valid & (adv > 0), valid & (adv < 0)
    return {"pos_high": pos & high, "pos_low": pos & ~high, "neg_high": neg & high, "neg_low": neg & ~high}


def predicted_entropy_change(advantages: torch.Tensor, sensitivity: torch.Tensor) -> torch.Tensor:
    """First-order per-token entropy change ``-A * S(a)`` per unit step (STARE §3). Detached ``(B, T)``."""
    return -(advantages.detach() * sensitivity.detach())


def _check_shapes(ref: torch.Tensor, named: dict[str, torch.Tensor | None]) -> None:
    if ref.dim() != 2:
        raise ValueError(f"log_prob must be a (B, T) tensor, got shape {tuple(ref.shape)}")
    for name, t in named.items():
        if t is not None and t.shape != ref.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(ref.shape)} like log_prob")


def quadrant_stats(
    log_prob: torch.Tensor,
    entropy: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    sensitivity: torch.Tensor | None = None,
    selections: Mapping[str, torch.Tensor] | None = None,
    lr_scale: float = 1.0,
) -> dict[str, torch.Tensor]:
    """Quadrant token fractions, predicted entropy change per quadrant, and the L+/L- shares.

    Args:
        log_prob: ``(B, T)`` log pi(a_t) of the sampled tokens.
        entropy: ``(B, T)`` full-vocabulary entropy H of the policy at each position.
        advantages: ``(B, T)`` per-token advantages.
        mask: ``(B, T)`` 1 on valid tokens.
        sensitivity: optional ``(B, T)`` exact S(a) (:func:`stare_rl.core.tokens.entropy_sensitivity`, needs the
            logits); default: its leading term ``pi_a (log pi_a + H)`` from ``log_prob`` and ``entropy``.
        selections: optional ``{name: (B, T) bool}`` token selections of the method (its ``LossOutput.masks``,
            e.g. STARE's ``l_plus`` / ``l_minus``); each gets a ``<name>_share``.
        lr_scale: multiplies every predicted change (e.g. the learning rate); shares are scale free.

    Returns:
        0-dim detached float32 tensors keyed ``quadrant/<name>``:
        ``{q}_frac`` (tokens in quadrant q / valid tokens) for q in :data:`QUADRANTS`, ``zero_adv_frac``;
        ``{q}_dh_pred`` = ``lr_scale * sum_{t in q} (-A_t S_t) / n_valid`` and ``dh_pred`` (all valid tokens);
        ``<name>_share`` for each selection = ``sum_{t in selection} |dH_t| / sum |dH_t|``.
        Every value is 0 (never NaN) when nothing is valid or all predicted changes are 0.

    Notes:
        Statistics of the tensors handed in (a micro-batch); the engine logs them per step.
    """
    _check_shapes(log_prob, {"entropy": entropy, "advantages": advantages, "mask": mask,
                             "sensitivity": sensitivity, **(selections or {})})
    with torch.no_grad():
        valid = mask > 0  # (B, T)
        if sensitivity is None:
            sensitivity = entropy_sensitivity_leading(log_prob, entropy)  # (B, T)
        dh = predicted_entropy_change(advantages, sensitivity).float() * float(lr_scale)  # (B, T)
        dh = torch.where(valid & torch.isfinite(dh), dh, torch.zeros_like(dh))  # padding / inf -> 0
        n_valid = valid.sum().float().clamp_min(1.0)  # 0-dim; empty mask -> every ratio is 0
        out: dict[str, torch.Tensor] = {}
        masks = quadrant_masks(log_prob, entropy, advantages, mask)
        for name, m in masks.items():
            out[f"{PREFIX}{name}_frac"] = m.sum().float() / n_valid
            out[f"{PREFIX}{name}_dh_pred"] = dh[m].sum() / n_valid
        out[f"{PREFIX}zero_adv_frac"] = (valid & (advantages.detach() == 0)).sum().float() / n_valid
        out[f"{PREFIX}dh_pred"] = dh.sum() / n_valid
        total_abs = dh.abs().sum()  # 0-dim
        denom = torch.where(total_abs > 0, total_abs, torch.ones_like(total_abs))
        for key, sel in (selections or {}).items():
            if sel is not None:
                out[f"{PREFIX}{key}_share"] = dh.abs()[(sel > 0) & valid].sum() / denom
    return out
