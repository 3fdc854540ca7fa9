"""``stare``: surprisal-targeted advantage re-weighting with a closed-loop entropy gate (STARE).

STARE (Luo et al., "Surprisal-Guided Token-Level Advantage Reweighting for Policy Entropy Stability"):
inside each advantage sign, the top-P fraction of tokens by surprisal ``s = -log pi(a)`` are the
entropy-critical sets L+ (A > 0) and L- (A < 0). While the batch entropy is below a target (the gate, a
controller in :mod:`stare_rl.methods.stare.gate`), the clipped per-token loss is multiplied by W > 1 on L+ (variant O1)
and additionally by M < 1 on L- (variant C2); everything else keeps weight 1.

Traits (declared at registration): controllers (the §4.3 gate, memoryless; the §4.4 W/M schedule with
``weight_control='paper'``; with ``weight_control='auto'`` this project's PI controller of W/M,
:mod:`stare_rl.methods.stare.auto`, replaces the gate), global statistics (surprisal thresholds) with
``selection_scope='global'``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from stare_rl.core.entropy_bonus import entropy_bonus
from stare_rl.core.registry import GlobalStats, register_method
from stare_rl.core.selection import (
    count_true,
    select_top_fraction,
    top_fraction_threshold,
    topk_count,
)
from stare_rl.core.surrogate import SurrogateConfig, TokenSigns, clipped_surrogate, token_signs
from stare_rl.core.tokens import surprisal
from stare_rl.core.types import LossContext, LossOutput, TokenBatch
from stare_rl.methods.stare.config import (
    STARE_METRICS,
    StareConfig,
    StareControlFields,
    check_stare_weights,
    stare_controllers,
)


@dataclass(frozen=True)
class StareSelection:
    """The candidate sets T+/T- and the entropy-critical sets L+/L- of one batch (STARE §4.1), with their sizes."""

    t_plus: torch.Tensor  # (B, T) bool: valid tokens with A > 0
    t_minus: torch.Tensor  # (B, T) bool: valid tokens with A < 0
    l_plus: torch.Tensor  # (B, T) bool: the top-P of T+ by surprisal
    l_minus: torch.Tensor  # (B, T) bool: the top-P of T- by surprisal (C2); all False for O1
    n_pos: int  # |T+|
    n_neg: int  # |T-|
    k_plus: int  # |L+|
    k_minus: int  # |L-|


@dataclass(frozen=True)
class GatedSurrogate:
    """What the STARE §4.2-4.3 weight/gate step (:func:`gated_weighted_surrogate`) hands a STARE-style loss."""

    token_loss: torch.Tensor  # (B, T) omega * clipped loss (minus c H with the fallback bonus)
    weights: torch.Tensor  # (B, T) omega: W on L+, M on L- (C2), 1 elsewhere and on padding; no gradient
    metrics: dict[str, torch.Tensor]  # the clipped surrogate's metrics
    gate_on: bool  # the §4.3 gate in force (off: omega = 1 everywhere, exactly vanilla)
    reweight_w: float  # W in force (the config's, or the controller's from ctx)
    reweight_m: float  # M in force


def stare_selection(
    batch: TokenBatch, cfg: StareConfig, ctx: LossContext, signs: TokenSigns | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The candidate sets T+/T- and the entropy-critical sets L+/L- (STARE §4.1).

    Returns:
        ``(t_plus, t_minus, l_plus, l_minus)``, all ``(B, T)`` bool. ``l_minus`` is all False for O1.

    Notes:
        Batch scope: k = ceil(P * |T|) of this batch (at least 1, 0 when P = 0 or T is empty), exactly k tokens
        (ties ranked by ``torch.topk``). Global scope (``surprisal_threshold_pos/neg`` in ``ctx`` given): tokens with
        ``s >= threshold``; the thresholds come from :func:`stare_global_thresholds` on the global batch.
        The largest surprisal ``s = -log pi`` is the smallest log pi: the selection runs on log pi directly
        (no surprisal tensor), with ``s >= t`` as ``log pi <= -t`` (negation is exact).
    """
    signs = token_signs(batch.advantages, batch.mask) if signs is None else signs
    sel = _select(batch, cfg, ctx, signs)
    return sel.t_plus, sel.t_minus, sel.l_plus, sel.l_minus


def _select(batch: TokenBatch, cfg: StareConfig, ctx: LossContext, signs: TokenSigns) -> StareSelection:
    """:func:`stare_selection` plus the counts ``|T+|, |T-|, |L+|, |L-|`` it already knows (no recount)."""
    t_plus, t_minus = signs.positive, signs.negative  # (B, T) A == 0 is in neither set
    n_pos, n_neg = count_true(t_plus), count_true(t_minus)
    with torch.no_grad():
        lp = batch.log_prob.detach()  # (B, T) selection only
        l_plus, k_plus = _top_surprisal(lp, t_plus, n_pos, cfg.top_p_ratio, ctx.get("surprisal_threshold_pos"))
        if cfg.variant == "C2":
            l_minus, k_minus = _top_surprisal(lp, t_minus, n_neg, cfg.top_p_ratio,
                                              ctx.get("surprisal_threshold_neg"))
        else:
            l_minus, k_minus = torch.zeros_like(t_minus), 0
    return StareSelection(t_plus, t_minus, l_plus, l_minus, n_pos, n_neg, k_plus, k_minus)


def _top_surprisal(
    log_prob: torch.Tensor, candidates: torch.Tensor, n_candidates: int, ratio: float, threshold: float | None
) -> tuple[torch.Tensor, int]:
    """``(B, T)`` bool: the top ``ratio`` fraction of candidates by surprisal (= smallest log pi), and its size."""
    if threshold is None:  # batch scope: exactly k = topk_count(ratio, n) tokens (ties ranked)
        mask = select_top_fraction(log_prob, candidates, ratio, "ceil", largest=False, n_candidates=n_candidates)
        return mask, topk_count(ratio, n_candidates, "ceil")
    mask = select_top_fraction(log_prob, candidates, ratio, "ceil", -float(threshold), largest=False)  # s >= t
    return mask, count_true(mask)


def resolve_weights(cfg: StareControlFields, ctx: LossContext) -> tuple[float, float]:
    """(W, M) in force: the adaptive schedule's values from ``ctx`` when given, else the config's."""
    w = float(ctx.get("reweight_w", cfg.reweight_w))
    m = float(ctx.get("reweight_m", cfg.reweight_m))
    check_stare_weights(w, m)
    return w, m


def gated_weighted_surrogate(
    batch: TokenBatch,
    cfg: StareControlFields,
    surrogate: SurrogateConfig,
    ctx: LossContext,
    signs: TokenSigns,
    l_plus: torch.Tensor,
    l_minus: torch.Tensor,
) -> GatedSurrogate:
    """STARE §4.2-4.3 weight/gate step shared by STARE-style methods: W on L+, M on L-, gate off = vanilla.

    With ``auto_fallback='bonus'`` the controller's bonus coefficient ``ctx['entropy_coef']`` adds ``-c H`` per
    valid token (:func:`fallback_bonus`); the returned weights re-weight the policy term only.

    Returns:
        :class:`GatedSurrogate`: the per-token loss, the ``(B, T)`` weights (1 on padding), the surrogate's
        metrics, and the gate, W and M in force.
    """
    w, m = resolve_weights(cfg, ctx)
    gate_on = bool(ctx.get("gate_on", True))  # STARE §4.3: gate from the controller (None = on)
    if gate_on:  # STARE §4.2: W on L+, M on L- (C2), 1 elsewhere (padding included)
        weights = _stare_weights(l_plus, l_minus, w, m, cfg.variant, batch.log_prob.dtype)
        # the weights are folded into -A inside the surrogate: token_loss = weights * clipped loss
        token_loss, metrics = clipped_surrogate(
            batch.log_prob, batch.old_log_prob, batch.advantages, batch.mask, surrogate,
            weights=weights, signs=signs,
        )
    else:  # gate off: exactly vanilla
        token_loss, metrics = clipped_surrogate(
            batch.log_prob, batch.old_log_prob, batch.advantages, batch.mask, surrogate, signs=signs
        )
        weights = torch.ones_like(token_loss).detach()
    return GatedSurrogate(fallback_bonus(token_loss, batch, cfg, ctx), weights, metrics, gate_on, w, m)


def uses_fallback_bonus(cfg: object) -> bool:
    """Whether a STARE-style config asks for the entropy-bonus fallback (``weight_control='auto'`` only)."""
    return getattr(cfg, "weight_control", None) == "auto" and getattr(cfg, "auto_fallback", "none") == "bonus"


def fallback_bonus(token_loss: torch.Tensor, batch: TokenBatch, cfg: object, ctx: LossContext) -> torch.Tensor:
    """``token_loss - c H`` with the ``auto`` controller's bonus coefficient c (``ctx['entropy_coef']``, 0 when
    absent); ``token_loss`` unchanged without the fallback. The bonus's gradient flows through ``batch.entropy``."""
    if not uses_fallback_bonus(cfg):
        return token_loss
    coef = float(ctx.get("entropy_coef", 0.0) or 0.0)
    if coef == 0.0:  # W alone: no entropy term, not even a zero one (the same graph as without the fallback)
        return token_loss
    if batch.entropy is None:
        raise ValueError("auto_fallback='bonus' needs batch.entropy (per-token entropy with its gradient), got None")
    return token_loss + entropy_bonus(batch.entropy, batch.mask, coef)


def _stare_candidates(batch: TokenBatch, cfg: StareConfig) -> tuple[torch.Tensor, torch.Tensor]:
    return stare_candidate_values(batch)


def _stare_reduce(slots: tuple[torch.Tensor, ...], cfg: StareConfig) -> dict[str, float | None]:
    return stare_global_thresholds(slots[0], slots[1], cfg)


@register_method(
    "stare",
    StareConfig,
    needs_entropy=uses_fallback_bonus,  # the fallback bonus's gradient; the selection itself reads log-probs only
    global_stats=GlobalStats(_stare_candidates, _stare_reduce, enabled=lambda cfg: cfg.selection_scope == "global"),
    controllers=stare_controllers,
    metrics=STARE_METRICS,
)
def stare_loss(
    batch: TokenBatch, cfg: StareConfig, surrogate: SurrogateConfig, ctx: LossContext
) -> LossOutput:
    """STARE: the dual-clip PPO surrogate with gated surprisal-targeted token weights (STARE §4).

    Objective (token-mean): ``J = (1/N) sum_t omega_t * min(r_t A_t, clip(r_t) A_t)`` with
    ``omega = W`` on L+, ``M`` on L- (C2), 1 elsewhere, and ``omega = 1`` everywhere while the gate is off.

    Args:
        batch: ``(B, T)`` tensors; entropy is not used (selection is by surprisal).
        cfg: :class:`StareConfig`.
        surrogate: clip settings shared with vanilla.
        ctx: stats ``gate_on`` (None = on; the gate controller), ``reweight_w`` / ``reweight_m`` (the §4.4
            schedule), ``surprisal_threshold_pos`` / ``surprisal_threshold_neg`` (global scope).

    Returns:
        per-token loss ``omega * clipped_loss``; ``token_weights`` omega (1 on padding, no gradient); masks
        ``l_plus`` and ``l_minus``; metrics of the selection.

    Notes:
        The gate and W/M are per update (controllers, computed outside). The selection is per batch handed
        in unless global thresholds are given (``selection_scope="global"``). Weights multiply the loss
        after clipping, and token-mean still divides by the number of valid tokens (not the sum of weights).
    """
    signs = token_signs(batch.advantages, batch.mask)  # (B, T) masks shared with the surrogate
    sel = _select(batch, cfg, ctx, signs)
    out = gated_weighted_surrogate(batch, cfg, surrogate, ctx, signs, sel.l_plus, sel.l_minus)
    metrics = out.metrics
    metrics.update(without_controller_outputs(_stare_metrics(batch, cfg, out, sel, signs.valid), ctx))
    return LossOutput(
        token_loss=out.token_loss,
        token_weights=out.weights,
        metrics=metrics,
        masks={"l_plus": sel.l_plus, "l_minus": sel.l_minus},
    )


def _stare_weights(
    l_plus: torch.Tensor, l_minus: torch.Tensor, w: float, m: float, variant: str, dtype: torch.dtype
) -> torch.Tensor:
    """``(B, T)`` omega: W on L+, M on L- (C2 only), 1 elsewhere; no gradient.

    Arithmetic ``1 + (W - 1) 1[L+] (+ (M - 1) 1[L-])`` on a uint8 view of the masks: on CPU ~5x cheaper than
    ``where`` / ``masked_fill``; used only where ``1 + (x - 1)`` rounds back to exactly ``x`` in ``dtype``.
    """
    dev = l_plus.device
    c2 = variant == "C2"
    if not (_one_plus_exact(w, dtype) and (not c2 or _one_plus_exact(m, dtype))):
        weights = torch.where(l_plus, torch.tensor(w, dtype=dtype, device=dev), torch.tensor(1.0, dtype=dtype, device=dev))
        if c2:
            weights.masked_fill_(l_minus, m)  # in place on the fresh tensor
        return weights
    weights = l_plus.view(torch.uint8).to(dtype).mul_(w - 1.0).add_(1.0)  # (B, T) W on L+, 1 elsewhere
    if c2:  # L- is disjoint from L+: 1 + (M - 1) there
        weights.add_(l_minus.view(torch.uint8).to(dtype).mul_(m - 1.0))
    return weights


@functools.lru_cache(maxsize=64)
def _one_plus_exact(x: float, dtype: torch.dtype) -> bool:
    """Whether ``1 + (x - 1)`` computed in ``dtype`` (as the weights are) equals ``x`` in ``dtype`` exactly."""
    one = torch.ones(1, dtype=dtype).mul_(x - 1.0).add_(1.0)
    return bool(one[0] == torch.tensor(x, dtype=dtype))


CONTROLLER_OUTPUTS = ("gate_on", "reweight_w", "reweight_m")  # what the gate, the schedule or auto hand the loss


def without_controller_outputs(metrics: dict[str, torch.Tensor], ctx: LossContext) -> dict[str, torch.Tensor]:
    """``metrics`` less the gate and W/M that a controller handed in through ``ctx``: the controller logs those
    (``control/<key>``), so each value is logged once; the loss logs them only when it used its config's own."""
    return {k: v for k, v in metrics.items() if k not in CONTROLLER_OUTPUTS or ctx.get(k) is None}


def _stare_metrics(
    batch: TokenBatch,
    cfg: StareConfig,
    out: GatedSurrogate,
    sel: StareSelection,
    valid: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Detached scalar metrics from the selection's counts ``|T+|, |T-|, |L+|, |L-|`` and the gate, W and M in
    force; fractions are over the valid tokens of this batch."""
    dev = batch.log_prob.device
    n_valid = count_true(batch.mask > 0) if valid is None else count_true(valid)  # bool counts are cheap
    gate_on, w, m = out.gate_on, out.reweight_w, out.reweight_m
    n_pos, n_neg, k_plus, k_minus = sel.n_pos, sel.n_neg, sel.k_plus, sel.k_minus
    denom = float(max(n_valid, 1))
    weight_sum = n_valid + ((w - 1.0) * k_plus + (m - 1.0) * k_minus if gate_on else 0.0)
    values = {
        "gate_on": float(gate_on),
        "reweight_w": w,
        "reweight_m": m,
        "top_p_ratio": cfg.top_p_ratio,
        "n_pos_candidates": n_pos,
        "n_neg_candidates": n_neg,
        "k_plus": k_plus,
        "k_minus": k_minus,
        "pos_candidate_frac": n_pos / denom,
        "neg_candidate_frac": n_neg / denom,
        "l_plus_frac": k_plus / denom,
        "l_minus_frac": k_minus / denom,
        "mean_weight": weight_sum / denom,  # mean of the weights over valid tokens
    }
    # float32 whatever the compute dtype: config values (W 1.1) must not be logged with bf16 rounding (1.109375)
    scalars = torch.tensor([float(v) for v in values.values()], dtype=torch.float32, device=dev).unbind()
    return dict(zip(values, scalars, strict=True))


def stare_global_thresholds(
    surprisals_pos: torch.Tensor, surprisals_neg: torch.Tensor, cfg: StareConfig
) -> dict[str, float | None]:
    """Global-scope STARE thresholds from the surprisals of the *whole* global batch (pure).

    Args:
        surprisals_pos: 1-D surprisals of all valid A > 0 tokens of the global batch (any order).
        surprisals_neg: 1-D surprisals of all valid A < 0 tokens.
        cfg: the STARE config (P and variant).

    Returns:
        ``{"surprisal_threshold_pos": .., "surprisal_threshold_neg": ..}`` for :class:`LossContext`;
        ``inf`` selects nothing; the negative threshold is ``None`` for O1 (unused).
    """
    pos = top_fraction_threshold(surprisals_pos, cfg.top_p_ratio, "ceil")
    neg = top_fraction_threshold(surprisals_neg, cfg.top_p_ratio, "ceil") if cfg.variant == "C2" else None
    return {"surprisal_threshold_pos": pos, "surprisal_threshold_neg": neg}


def stare_candidate_values(batch: TokenBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """1-D surprisals of this batch's valid A > 0 and A < 0 tokens (what an engine gathers across ranks)."""
    s = surprisal(batch.log_prob)
    valid = batch.valid
    return s[valid & (batch.advantages > 0)], s[valid & (batch.advantages < 0)]
