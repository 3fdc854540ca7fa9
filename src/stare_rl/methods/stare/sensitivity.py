"""``stare_sensitivity``: STARE with L+/L- chosen by the first-order entropy sensitivity (this project's extension).

**Not from the STARE paper.** STARE (§4.1) picks the entropy-critical sets by a batch quantile of surprisal:
the top-P fraction of each advantage sign by ``s = -log pi(a)``. The first-order argument behind it (STARE §3)
says a step on token ``a`` changes the entropy of its state by about ``dH ~ -eta * A * S(a)`` with
``S(a) ~ pi_a (log pi_a + H) = pi_a (H - s)`` (the leading term; :func:`stare_rl.core.tokens.entropy_sensitivity_leading`).
This variant selects on that prediction directly:

- L+ = among A > 0 tokens, those predicted to **raise** entropy (``S < 0``, i.e. ``s > H``), ranked by the
  predicted change ``|A * S|``; at most ``ceil(P * |T+|)`` of them (STARE's count), fewer if fewer raise it.
- L- = among A < 0 tokens, those predicted to **lower** entropy (also ``S < 0``), ranked the same way, at
  most ``ceil(P * |T-|)``.

While the STARE gate is on (batch entropy below the target) the clipped loss is multiplied by W on L+ and,
for variant C2 (the default here), by M on L-; everything else keeps weight 1; gate off = vanilla.
Two differences from surprisal ranking: a token whose surprisal is high but below its state's entropy is
never selected (it would lower entropy with A > 0), and among entropy-raising tokens the ranking by
``pi (s - H)`` prefers tokens with ``s`` near ``H + 1`` over the rarest ones, whose probability is too small
to move the distribution.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from stare_rl.core.registry import register_method
from stare_rl.core.selection import topk_count, topk_mask
from stare_rl.core.surrogate import SurrogateConfig, token_signs
from stare_rl.core.tokens import entropy_sensitivity_leading
from stare_rl.core.types import LossContext, LossOutput, TokenBatch
from stare_rl.methods.stare.config import (
    STARE_METRICS,
    StareControlFields,
    stare_controllers,
)
from stare_rl.methods.stare.loss import gated_weighted_surrogate, without_controller_outputs


@dataclass(frozen=True)
class StareSensitivityConfig(StareControlFields):
    """Extension of STARE (this project's, not the paper's); W, M, P, the target and the W/M control are STARE's."""

    variant: str = field(
        default="C2",
        metadata={"help": "C2: W on L+ and M on L- (default: L- carries most of the entropy drift). O1: W on L+ only."},
    )
    top_p_ratio: float = field(
        default=0.1,
        metadata={"help": "P in [0, 1]: at most ceil(P * |A>0 tokens|) in L+ and ceil(P * |A<0 tokens|) in L-."},
    )


def sensitivity_selection(
    batch: TokenBatch, cfg: StareSensitivityConfig
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """L+ and L- by predicted entropy change, and the predicted change ``-A * S`` itself.

    Returns:
        ``(l_plus, l_minus, dh_pred)``: ``(B, T)`` bool, bool (all False for O1) and float (0 on padding).
    """
    if batch.entropy is None:
        raise ValueError("method 'stare_sensitivity' needs batch.entropy (per-token entropy), got entropy=None")
    signs = token_signs(batch.advantages, batch.mask)
    with torch.no_grad():
        sens = entropy_sensitivity_leading(batch.log_prob, batch.entropy)  # (B, T) pi_a (log pi_a + H)
        sens = torch.where(signs.valid, sens, torch.zeros_like(sens))  # padding may hold anything
        dh_pred = -signs.adv * sens  # (B, T) predicted entropy change per unit step (STARE §3)
        raising = sens < 0  # (B, T) surprisal above the state's entropy
        size = dh_pred.abs()  # (B, T) |A S|
        n_pos, n_neg = int(torch.count_nonzero(signs.positive)), int(torch.count_nonzero(signs.negative))
        l_plus = topk_mask(size, signs.positive & raising, topk_count(cfg.top_p_ratio, n_pos, "ceil"))
        if cfg.variant == "C2":  # A < 0 and S < 0: predicted to lower entropy
            l_minus = topk_mask(size, signs.negative & raising, topk_count(cfg.top_p_ratio, n_neg, "ceil"))
        else:
            l_minus = torch.zeros_like(l_plus)
    return l_plus, l_minus, dh_pred


@register_method("stare_sensitivity", StareSensitivityConfig, needs_entropy=True,
                 controllers=stare_controllers, metrics=STARE_METRICS)
def stare_sensitivity_loss(
    batch: TokenBatch, cfg: StareSensitivityConfig, surrogate: SurrogateConfig, ctx: LossContext
) -> LossOutput:
    """STARE re-weighting with sensitivity-selected L+/L- (project extension; gate as STARE §4.3).

    Objective (token-mean): ``J = (1/N) sum_t omega_t * min(r_t A_t, clip(r_t) A_t)`` with ``omega = W`` on
    L+, ``M`` on L- (C2), 1 elsewhere, and ``omega = 1`` everywhere while the gate is off.

    Args:
        batch: ``(B, T)`` tensors; ``entropy`` is required (the state's entropy H in S).
        cfg: :class:`StareSensitivityConfig`.
        surrogate: clip settings shared with vanilla.
        ctx: stats ``gate_on`` (None = on) and ``reweight_w`` / ``reweight_m`` (the §4.4 schedule's, if any).

    Returns:
        per-token loss ``omega * clipped_loss``; ``token_weights`` omega; masks ``l_plus``, ``l_minus``;
        metrics (selection sizes, predicted dH carried by L+ and L-).

    Notes:
        Selection is per batch handed in (batch scope only).
    """
    signs = token_signs(batch.advantages, batch.mask)
    l_plus, l_minus, dh_pred = sensitivity_selection(batch, cfg)
    out = gated_weighted_surrogate(batch, cfg, surrogate, ctx, signs, l_plus, l_minus)  # STARE §4.2-4.3, shared
    weights, metrics = out.weights, out.metrics
    n = float(max(int(torch.count_nonzero(signs.valid)), 1))
    # float32 whatever the compute dtype: config values (W 1.1) must not be logged with bf16 rounding (1.109375)
    dev, dt = batch.log_prob.device, torch.float32
    k_plus, k_minus = int(torch.count_nonzero(l_plus)), int(torch.count_nonzero(l_minus))
    metrics.update(without_controller_outputs({
        "gate_on": torch.tensor(float(out.gate_on), dtype=dt, device=dev),
        "reweight_w": torch.tensor(out.reweight_w, dtype=dt, device=dev),
        "reweight_m": torch.tensor(out.reweight_m, dtype=dt, device=dev),
        "k_plus": torch.tensor(float(k_plus), dtype=dt, device=dev),
        "k_minus": torch.tensor(float(k_minus), dtype=dt, device=dev),
        "l_plus_frac": torch.tensor(k_plus / n, dtype=dt, device=dev),
        "l_minus_frac": torch.tensor(k_minus / n, dtype=dt, device=dev),
        "l_plus_dh_pred": (dh_pred * l_plus).sum().float() / n,  # predicted dH carried by L+ (>= 0)
        "l_minus_dh_pred": (dh_pred * l_minus).sum().float() / n,  # predicted dH carried by L- (<= 0)
        "mean_weight": (weights * signs.valid).sum().float() / n,
    }, ctx))
    return LossOutput(token_loss=out.token_loss, token_weights=weights, metrics=metrics,
                      masks={"l_plus": l_plus, "l_minus": l_minus})
